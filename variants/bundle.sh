#!/usr/bin/env bash
# bundle.sh OUT.tar.xz FOLDER RUNTIME_LIB... -- PROGRAM...
# Makes a relocatable archive: FOLDER/bin with the programs, FOLDER/lib with the RUNTIME_LIBs (the
# OpenMP runtime they load, including those opened by name at run time, such as an offload plugin;
# and the project's shared libraries, whose rpath is the same) and every non-glibc library that
# they or the programs need. FOLDER is "." for the
# archive's top. The programs carry the rpath $ORIGIN/../lib as DT_RPATH, which also serves the
# runtime's own dependencies and its dlopen calls, so after `tar xf` they run on a machine that
# has only the NVIDIA driver: the offload runtime opens libcuda from the driver's folder.
set -euo pipefail
out=$1 folder=$2
shift 2
runtime=()
while (( $# )) && [[ "$1" != "--" ]]; do runtime+=("$1"); shift; done
[[ "${1:-}" == "--" ]] || { echo "usage: bundle.sh OUT.tar.xz FOLDER RUNTIME_LIB... -- PROGRAM..." >&2; exit 2; }
shift
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$folder/bin" "$stage/$folder/lib"
cp "$@" "$stage/$folder/bin/"
is_glibc() { case "$1" in libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|linux-vdso*) return 0;; esac; return 1; }
copy_deps() {
  local dep path
  while read -r dep path; do
    is_glibc "$dep" || [[ -z "$path" ]] || copy_with_deps "$path"
  done < <(ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
}
copy_with_deps() {
  local lib=$1 name
  name=$(basename "$lib")
  [[ -e "$stage/$folder/lib/$name" ]] && return 0
  [[ -f "$lib" ]] || { echo "bundle: $lib not found" >&2; exit 1; }
  cp -L "$lib" "$stage/$folder/lib/$name"
  copy_deps "$lib"
}
for lib in "${runtime[@]}"; do copy_with_deps "$lib"; done
for program in "$@"; do copy_deps "$program"; done
mkdir -p "$(dirname "$out")"
if [[ "$folder" == "." ]]; then entries=(bin lib) prefix=""; else entries=("$folder") prefix="$folder/"; fi
tar -C "$stage" -cf - "${entries[@]}" | xz -T0 -6 > "$out.partial"
mv "$out.partial" "$out"
echo "bundle: $out ($(du -h "$out" | cut -f1)); unpack with: tar -xJf $(basename "$out") -C DIR;" \
     "run DIR/${prefix}bin/pragmaclust-gpu info --require-gpu"

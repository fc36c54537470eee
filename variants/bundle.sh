#!/usr/bin/env bash
# bundle.sh LLVM_LIB OUT.tar.xz PROGRAM...
# Makes a relocatable archive: bin/ with the programs, lib/ with the LLVM OpenMP runtime
# (libomp, libomptarget and libLLVM with their non-glibc dependencies). The programs carry
# the rpath $ORIGIN/../lib (as DT_RPATH, which also serves libomptarget's own dependencies),
# so after `tar xf` they run on a machine that has only the NVIDIA driver: libomptarget
# opens libcuda.so from the driver's folder at run time.
set -euo pipefail
llvm_lib=$1 out=$2
shift 2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
cp "$@" "$stage/bin/"
is_glibc() { case "$1" in libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|linux-vdso*) return 0;; esac; return 1; }
copy_with_deps() {
  local lib=$1 name
  name=$(basename "$lib")
  [[ -e "$stage/lib/$name" ]] && return 0
  cp -L "$lib" "$stage/lib/$name"
  while read -r dep path; do
    is_glibc "$dep" || [[ -z "$path" ]] || copy_with_deps "$path"
  done < <(ldd "$lib" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
}
copy_with_deps "$llvm_lib/libomptarget.so.19.1"
copy_with_deps "$llvm_lib/libomp.so.5"
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - bin lib | xz -T0 -6 > "$out.partial"
mv "$out.partial" "$out"
echo "bundle: $out ($(du -h "$out" | cut -f1)); unpack with: tar -xJf $(basename "$out") -C DIR; run DIR/bin/pragmaclust-gpu info --require-gpu"

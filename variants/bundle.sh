#!/usr/bin/env bash
# bundle.sh [--mpi] OUT.tar.xz FOLDER RUNTIME_LIB... -- PROGRAM...
# Makes a relocatable archive: FOLDER/bin with the programs, FOLDER/lib with the RUNTIME_LIBs (the
# OpenMP runtime they load, including those opened by name at run time, such as an offload plugin;
# and the project's shared libraries, whose rpath is the same) and every non-glibc library that
# they or the programs need. FOLDER is "." for the
# archive's top. The programs carry the rpath $ORIGIN/../lib as DT_RPATH, which also serves the
# runtime's own dependencies and its dlopen calls, so after `tar xf` they run on a machine that
# has only the NVIDIA driver: the offload runtime opens libcuda from the driver's folder.
# --mpi: the PROGRAMs include some built with Open MPI's mpicc; the archive also carries the Open
# MPI runtime they need (stage_mpi below) and FOLDER/bin/mpirun to start them.
set -euo pipefail
mpi=no
if [[ "${1:-}" == "--mpi" ]]; then mpi=yes; shift; fi
out=$1 folder=$2
shift 2
runtime=()
while (( $# )) && [[ "$1" != "--" ]]; do runtime+=("$1"); shift; done
usage="usage: bundle.sh [--mpi] OUT.tar.xz FOLDER RUNTIME_LIB... -- PROGRAM..."
[[ "${1:-}" == "--" ]] || { echo "$usage" >&2; exit 2; }
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
# Open MPI as Debian 12 installs it (libopenmpi3, openmpi-bin, openmpi-common, libpmix2), in
# FOLDER/mpi: bin/ mpirun (orterun), orted and ompi_info; lib/openmpi3 the MCA components, lib/pmix
# PMIx's; share/openmpi, share/pmix their help texts; etc/ Debian's openmpi-mca-params.conf (which
# turns off the InfiniBand, UCX and libfabric transports) and default hostfile. PMIx's own
# params file is left out: it holds only the absolute path of its components. The libraries all of
# these load go to FOLDER/lib with the rest (hwloc's plugins are left out: Open MPI needs none).
# FOLDER/bin/mpirun (variants/bundle-mpirun.sh) points Open MPI and PMIx at these folders.
stage_mpi() {
  command -v ompi_info >/dev/null || { echo "bundle: --mpi needs Open MPI's ompi_info" >&2; exit 1; }
  local top=$stage/$folder dir lib bindir pkglibdir pkgdatadir sysconfdir pmix
  ompi_path() { ompi_info --parsable --path "$1" | sed -n "s|^path:$1:||p"; }
  bindir=$(ompi_path bindir) pkglibdir=$(ompi_path pkglibdir) pkgdatadir=$(ompi_path pkgdatadir)
  sysconfdir=$(ompi_path sysconfdir)
  # PMIx from the library Open MPI's PMIx component links: Debian's <prefix>/lib/libpmix.so.2.
  pmix=$(ldd "$pkglibdir"/mca_pmix_ext*.so | awk '$1 ~ /^libpmix[.]so/ {print $3; exit}')
  pmix=$(dirname "$(dirname "$(readlink -f "$pmix")")")
  for dir in "$pkglibdir" "$pkgdatadir" "$pmix/lib/pmix" "$pmix/share/pmix"; do
    [[ -d "$dir" ]] || { echo "bundle: $dir not found (Open MPI not as Debian 12 installs it)" >&2; exit 1; }
  done
  mkdir -p "$top/mpi/bin" "$top/mpi/lib" "$top/mpi/share" "$top/mpi/etc"
  cp "$bindir/orterun" "$bindir/orted" "$bindir/ompi_info" "$top/mpi/bin/"
  ln -s orterun "$top/mpi/bin/mpirun"
  cp -r "$pkglibdir" "$top/mpi/lib/openmpi3"
  cp -r "$pmix/lib/pmix" "$top/mpi/lib/pmix"
  cp -r "$pkgdatadir" "$top/mpi/share/openmpi"
  cp -r "$pmix/share/pmix" "$top/mpi/share/pmix"
  cp "$sysconfdir/openmpi-mca-params.conf" "$sysconfdir/openmpi-default-hostfile" "$top/mpi/etc/"
  cp "$(dirname "${BASH_SOURCE[0]}")/bundle-mpirun.sh" "$top/bin/mpirun"
  for lib in "$top"/mpi/bin/orterun "$top"/mpi/bin/orted "$top"/mpi/bin/ompi_info "$top"/mpi/lib/*/*.so; do
    copy_deps "$lib"
  done
}
for lib in "${runtime[@]}"; do copy_with_deps "$lib"; done
for program in "$@"; do copy_deps "$program"; done
if [[ "$mpi" == yes ]]; then stage_mpi; fi
mkdir -p "$(dirname "$out")"
if [[ "$folder" == "." ]]; then entries=(bin lib) prefix=""; else entries=("$folder") prefix="$folder/"; fi
if [[ "$mpi" == yes && "$folder" == "." ]]; then entries+=(mpi); fi
# xz's preset is its default, 6, unless XZ_OPT names another (the tests' bundles take -0).
tar -C "$stage" -cf - "${entries[@]}" | xz -T0 > "$out.partial"
mv "$out.partial" "$out"
run="run DIR/${prefix}bin/pragmaclust-gpu info --require-gpu"
if [[ "$mpi" == yes ]]; then run+=", DIR/${prefix}bin/mpirun -np 2 DIR/${prefix}bin/pragmaclust-gpu-mpi kmeans ..."; fi
echo "bundle: $out ($(du -h "$out" | cut -f1)); unpack with: tar -xJf $(basename "$out") -C DIR; $run"

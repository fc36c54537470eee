#!/usr/bin/env bash
# install-toolchain.sh - install what pragmaclust builds with, idempotently, on Debian 12.
#
# Usage: variants/install-toolchain.sh [--gcc] [--tests] [--plots] [--paper] [--mpi] [--sm90a] TOOLCHAIN_DIR
#   Installs clang-19 and libomp-19-dev (which carries libomptarget and the NVPTX device
#   runtime) from Debian main, and lays out in TOOLCHAIN_DIR/cuda-11.8 a minimal CUDA tree
#   (ptxas, nvlink, fatbinary, libdevice) taken from Debian non-free's nvidia-cuda-toolkit
#   11.8. Why 11.8: ptxas >= 12.8 writes cubins in a new ELF ABI that libomptarget 19
#   rejects, so the program would silently run on the host (see docs/toolchain.md, "The toolchain trap").
#   With --gcc it also installs GCC 12's nvptx offload compiler and libgomp's nvptx plugin (the
#   gpu variant of TOOLCHAIN=gcc). With --tests it also installs what `make test` needs (NumPy,
#   scikit-learn, pytest, venv and pip for the Python package's install test, gnuplot, the
#   sanitizer runtime, GCC's offload compiler: the tests build the TOOLCHAIN=gcc variants; and
#   the paper's LaTeX: tests/test_paper_build.py builds the PDF; Open MPI: tests/test_mpi.py);
#   with --plots gnuplot for `make plots`; with --paper the LaTeX packages of paper/paper.tex and
#   poppler-utils (pdfinfo, pdftoppm) for `make paper`; with --mpi Open MPI (mpicc, mpirun) for
#   `make MPI=1`; with --sm90a also TOOLCHAIN_DIR/cuda-12.4-sm90a, the tree of GPU_ARCH=sm_90a: CUDA
#   12.4's ptxas (Debian 13's non-free nvidia-cuda-toolkit) behind variants/ptxas-sm90a.sh.
#   The system's apt sources are not modified: non-free is read through a private list.
#   While another apt or dpkg holds its locks (unattended-upgrades on a fresh machine), it
#   waits for them, saying so once, up to INSTALL_TOOLCHAIN_LOCK_TIMEOUT seconds (default 600).
# Exit status: 0 when everything is present afterwards, non-zero with a message otherwise.
set -euo pipefail

want_gcc=0 want_tests=0 want_plots=0 want_paper=0 want_mpi=0 want_sm90a=0
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --gcc) want_gcc=1 ;;
    --tests) want_tests=1 ;;
    --plots) want_plots=1 ;;
    --paper) want_paper=1 ;;
    --mpi) want_mpi=1 ;;
    --sm90a) want_sm90a=1 ;;
    *) echo "install-toolchain: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
toolchain_dir=${1:?usage: install-toolchain.sh [--gcc] [--tests] [--plots] [--paper] [--mpi] [--sm90a] TOOLCHAIN_DIR}

die() { echo "install-toolchain: $*" >&2; exit 1; }
as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

# The packages of paper.tex's \usepackage lines (Debian 12): lmodern is only a Recommends of
# texlive-latex-recommended, so with --no-install-recommends it must be named; placeins is in
# -latex-extra, amssymb in texlive-base (a dependency). About 100 MB to download, 360 MB installed.
paper_packages=(texlive-latex-base texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended lmodern
                poppler-utils)
gcc_packages=(gcc-12-offload-nvptx libgomp-plugin-nvptx1)
mpi_packages=(libopenmpi-dev openmpi-bin)
apt_packages=(clang-19 clang-tools-19 libomp-19-dev llvm-19 binutils python3 xz-utils)
if (( want_gcc )); then apt_packages+=("${gcc_packages[@]}"); fi
if (( want_tests )); then
  apt_packages+=(python3-numpy python3-sklearn python3-pytest python3-venv python3-pip libclang-rt-19-dev gnuplot-nox
                 "${gcc_packages[@]}" "${paper_packages[@]}" "${mpi_packages[@]}")
fi
if (( want_plots )); then apt_packages+=(gnuplot-nox); fi
if (( want_paper )); then apt_packages+=("${paper_packages[@]}"); fi
if (( want_mpi )); then apt_packages+=("${mpi_packages[@]}"); fi

# apt_wait ARGS...: `apt-get ARGS` as root, waiting while another apt or dpkg holds a lock it
# needs. apt 2.6 fails at once with "Could not get lock PATH. It is held by process N" when a
# lock is held: that failure is retried every 3 s until the deadline, after saying once what it
# waits for (nothing was changed by a run that could not get its locks). From the second try on,
# DPkg::Lock::Timeout makes apt-get itself wait for the dpkg locks (and then fail with "...,
# is another process using it?"); the lists lock of `apt-get update` and the archives lock are
# not covered by that option, hence the loop.
lock_timeout=${INSTALL_TOOLCHAIN_LOCK_TIMEOUT:-600}
[[ $lock_timeout =~ ^[0-9]+$ ]] || die "INSTALL_TOOLCHAIN_LOCK_TIMEOUT must be a number of seconds, not '$lock_timeout'"
lock_deadline=$((SECONDS + lock_timeout)) lock_said=0
apt_wait() {
  local err status wait_s
  err=$(mktemp)
  while :; do
    wait_s=0
    if (( lock_said && lock_deadline > SECONDS )); then wait_s=$((lock_deadline - SECONDS)); fi
    status=0
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -o "DPkg::Lock::Timeout=$wait_s" "$@" 2>"$err" || status=$?
    if (( status == 0 )) || ! grep -qE 'Could not get lock|is another process using it' "$err"; then
      cat "$err" >&2; rm -f "$err"; return "$status"
    fi
    if (( SECONDS >= lock_deadline )); then
      sed 's/^/  /' "$err" >&2; rm -f "$err"
      die "gave up after $lock_timeout s waiting for the apt/dpkg lock (INSTALL_TOOLCHAIN_LOCK_TIMEOUT=SECONDS waits longer): run this again when that apt or dpkg has finished"
    fi
    if (( !lock_said )); then
      echo "install-toolchain: waiting up to $lock_timeout s for another apt/dpkg to finish:" \
           "$(grep -m1 -o 'Could not get lock.*' "$err")" >&2
      lock_said=1
    fi
    sleep 3
  done
}

missing=()
for p in "${apt_packages[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == "install ok installed" ]] || missing+=("$p")
done
if (( ${#missing[@]} )); then
  echo "install-toolchain: installing ${missing[*]}"
  apt_wait update -qq || die "apt-get update failed"
  apt_wait install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || die "apt-get install failed"
fi

# install_cuda_tree SUITE VERSION CUDA_VERSION_MACRO DIR [PTXAS_WRAPPER]: lays out in DIR the
# ptxas, nvlink, fatbinary and libdevice of Debian SUITE's non-free nvidia-cuda-toolkit (which must
# be release VERSION), read through a private apt list. With PTXAS_WRAPPER, that script becomes
# bin/ptxas and the real one bin/ptxas-VERSION. Nothing to download where DIR is complete (a
# changed wrapper is copied in again).
work=""
trap '[[ -z "$work" ]] || rm -rf "$work"' EXIT
install_cuda_tree() {
  local suite=$1 version=$2 macro=$3 dir=$4 wrapper=${5:-} staging real=ptxas
  [[ -n "$wrapper" ]] && real=ptxas-$version
  if [[ -x "$dir/bin/$real" && -f "$dir/nvvm/libdevice/libdevice.10.bc" ]]; then
    if [[ -n "$wrapper" ]] && ! cmp -s "$wrapper" "$dir/bin/ptxas"; then
      install -m 0755 "$wrapper" "$dir/bin/ptxas"
    fi
    return 0
  fi
  echo "install-toolchain: fetching ptxas/nvlink/fatbinary $version" \
       "(Debian $suite non-free nvidia-cuda-toolkit, ~85 MB)"
  work=$(mktemp -d)
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
  echo "deb http://deb.debian.org/debian $suite main contrib non-free" > "$work/sources.list"
  local apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
                  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
  apt-get "${apt_opts[@]}" update -qq || die "apt-get update of the $suite non-free list failed"
  (cd "$work" && apt-get "${apt_opts[@]}" download -qq nvidia-cuda-toolkit) \
    || die "could not download nvidia-cuda-toolkit from Debian $suite non-free"
  dpkg -x "$work"/nvidia-cuda-toolkit_*.deb "$work/root"

  staging="$dir.partial"
  rm -rf "$staging"
  mkdir -p "$staging/bin" "$staging/nvvm/libdevice" "$staging/include"
  for tool in nvlink fatbinary; do
    install -m 0755 "$work/root/usr/bin/$tool" "$staging/bin/$tool"
  done
  install -m 0755 "$work/root/usr/bin/ptxas" "$staging/bin/$real"
  [[ -n "$wrapper" ]] && install -m 0755 "$wrapper" "$staging/bin/ptxas"
  install -m 0644 "$work/root/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc" "$staging/nvvm/libdevice/"
  rm -rf "$work"
  work=""
  echo "CUDA Version $version" > "$staging/version.txt"
  # clang reads the CUDA version from cuda.h when version.txt is not enough.
  echo "#define CUDA_VERSION $macro" > "$staging/include/cuda.h"
  ptxas_version=$("$staging/bin/$real" --version) || die "the unpacked ptxas does not run"
  [[ "$ptxas_version" == *"release $version"* ]] || die "the unpacked ptxas is not $version: $ptxas_version"
  rm -rf "$dir"
  mv "$staging" "$dir"
  echo "install-toolchain: CUDA $version tools in $dir"
}

install_cuda_tree bookworm 11.8 11080 "$toolchain_dir/cuda-11.8"
# GPU_ARCH=sm_90a (Hopper's wgmma): CUDA 12.4's ptxas, the newest Debian has below 12.8 (from
# trixie), behind variants/ptxas-sm90a.sh, which assembles clang's sm_90 PTX for sm_90a.
if (( want_sm90a )); then
  install_cuda_tree trixie 12.4 12040 "$toolchain_dir/cuda-12.4-sm90a" "$(dirname "$0")/ptxas-sm90a.sh"
fi

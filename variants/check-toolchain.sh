#!/usr/bin/env bash
# check-toolchain.sh CC CUDA_PATH LLVM_LIB GPU_ARCH
# Refuses a gpu build whose device image libomptarget would silently reject, and says how
# to fix it. ptxas from CUDA >= 12.8 writes cubins in a new ELF ABI (e_flags layout) that
# LLVM before 21 cannot read: the program then runs every kernel on the host.
set -u
cc=$1 cuda=$2 llvm_lib=$3 arch=$4
fix="run 'make toolchain' (installs clang-19 and CUDA 11.8's ptxas into .toolchain/) or set CUDA_PATH to a CUDA <= 12.7"
command -v "$cc" >/dev/null || { echo "gpu build: compiler '$cc' not found; $fix" >&2; exit 1; }
llvm_major=$("$cc" --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
[[ -n "$llvm_major" ]] || { echo "gpu build: '$cc' is not clang; the gpu variant needs clang with OpenMP offload" >&2; exit 1; }
[[ -x "$cuda/bin/ptxas" ]] || { echo "gpu build: no ptxas in CUDA_PATH=$cuda; $fix" >&2; exit 1; }
# GPU_ARCH=sm_90a is built as sm_90 by clang and assembled for sm_90a by the tree's ptxas wrapper.
if [[ "$arch" == sm_90a ]]; then
  fix="run 'make toolchain GPU_ARCH=sm_90a' (installs CUDA 12.4's ptxas with its sm_90a wrapper into .toolchain/)"
  cmp -s "$cuda/bin/ptxas" "$(dirname "$0")/ptxas-sm90a.sh" \
    || { echo "gpu build: GPU_ARCH=sm_90a needs CUDA_PATH=$cuda to hold variants/ptxas-sm90a.sh as bin/ptxas; $fix" >&2
         exit 1; }
  arch=sm_90
fi
[[ -f "$llvm_lib/libomptarget-nvptx-$arch.bc" || -f "$llvm_lib/libomptarget.devicertl.a" ]] \
  || { echo "gpu build: no NVPTX device runtime in $llvm_lib (install libomp-$llvm_major-dev); $fix" >&2; exit 1; }
ver=$("$cuda/bin/ptxas" --version | sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
read -r major minor <<<"$ver"
if [[ -z "${major:-}" ]]; then echo "gpu build: cannot read the version of $cuda/bin/ptxas" >&2; exit 1; fi
if (( llvm_major < 21 )) && (( major > 12 || (major == 12 && minor >= 8) )); then
  echo "gpu build: ptxas $major.$minor (CUDA_PATH=$cuda) writes device images that LLVM $llvm_major's libomptarget" \
       "rejects (new CUDA ELF ABI), so every kernel would run on the host; $fix" >&2
  exit 1
fi
exit 0

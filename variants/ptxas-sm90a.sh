#!/usr/bin/env bash
# ptxas-sm90a.sh - bin/ptxas of the CUDA tree of GPU_ARCH=sm_90a (variants/install-toolchain.sh
# --sm90a), in front of CUDA 12.4's ptxas (bin/ptxas-12.4).
# sm_90a is sm_90 with Hopper's architecture-specific instructions (wgmma). Clang 19 builds
# OpenMP offload code for sm_90 only (LLVM 19 has no device runtime for sm_90a), so the gpu build
# compiles for sm_90 and this assembles that PTX for sm_90a: `.target sm_90` becomes
# `.target sm_90a` and `--gpu-name sm_90` becomes sm_90a; every other argument passes through.
# The cubin still names SM 90 in its ELF flags (ABI version 7), so LLVM 19's offload runtime
# loads it on an H100 or H200; no other GPU runs sm_90a code.
set -euo pipefail
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=()
for arg in "$@"; do
  if [[ "$arg" == sm_90 ]]; then
    args+=(sm_90a)
  elif [[ "$arg" != -* && -f "$arg" && ( "$arg" == *.s || "$arg" == *.ptx ) ]]; then
    copy="$tmp/$(basename "$arg")"
    sed -e 's/^\.target sm_90$/.target sm_90a/' -e 's/^\.target sm_90,/.target sm_90a,/' "$arg" > "$copy"
    args+=("$copy")
  else
    args+=("$arg")
  fi
done
"$here/ptxas-12.4" "${args[@]}"

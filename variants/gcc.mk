# variants/gcc.mk - flags of the three variants with GCC (TOOLCHAIN=gcc).
# Included by the Makefile; everything here can be overridden on the make command line.
# GCC builds the three variants from the same sources: seq and omp with the CPU's tuned assign
# loop, gpu with the portable paths only (the tuned GPU kernels use LLVM's extensions), so that
# its gpu variant runs the standard OpenMP loops of the algorithms' main files on the GPU,
# through libgomp's nvptx plugin.

CC          := $(if $(filter default,$(origin CC)),gcc,$(CC))
# GCC contracts a * b + c into a fused multiply-add across statements by default (GNU modes):
# off, so that host code rounds as it reads, as clang's does within statements (--check's
# recomputation, the references the tests compare with).
CFLAGS_seq  := -Wno-unknown-pragmas -ffp-contract=off
LDFLAGS_seq :=
CFLAGS_omp  := -fopenmp -ffp-contract=off
LDFLAGS_omp := -fopenmp
# What a program linked with the installed library needs besides it and -lm (pkg-config's Libs).
PKG_LIBS_seq :=
PKG_LIBS_omp := -fopenmp

# gpu: GCC's nvptx offloading (Debian: gcc-12-offload-nvptx, libgomp-plugin-nvptx1). The device
# code is compiled when the program is linked (mkoffload), so the -foffload-options go there.
# GCC 12's nvptx backend stops at sm_80 (GCC_GPU_ARCH): the driver compiles that PTX for newer
# GPUs at start-up. libgomp's nvptx library calls libatomic's 16-byte compare-and-swap, which
# GCC 12 does not link by itself. -no-pie: GCC 12's offload table (crtoffloadtable.o) holds
# absolute addresses in read-only data, which a PIE link turns into text relocations.
# libgomp loads its plugin (libgomp-plugin-nvptx.so.1) by name through the loader's search
# path, which takes the program's DT_RPATH: $ORIGIN/../lib finds the bundle's copies.
GCC_GPU_ARCH ?= sm_80
CFLAGS_gpu  := -fopenmp -ffp-contract=off -foffload=nvptx-none
# What linking device code takes, the programs' and a library client's (pkg-config's Libs).
GCC_OFFLOAD_LINK := -fopenmp -foffload=nvptx-none -foffload-options=nvptx-none=-march=$(GCC_GPU_ARCH) \
                    -foffload-options=nvptx-none=-lm -foffload-options=nvptx-none=-latomic -no-pie
LDFLAGS_gpu := -ffp-contract=off $(GCC_OFFLOAD_LINK) -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/../lib'
GPU_SUPPORTED := yes
PKG_LIBS_gpu := $(GCC_OFFLOAD_LINK)
GPU_TOOLCHAIN_CHECK = test -x "$$($(CC) -print-prog-name=accel/nvptx-none/mkoffload)" || { echo "gpu build: $(CC) has \
  no nvptx offload compiler; install gcc-12-offload-nvptx and libgomp-plugin-nvptx1 (make TOOLCHAIN=gcc toolchain)" >&2; exit 1; }

# The tuned kernels each variant links (the seam: algorithms/kmeans_tuned.h): the CPU's
# register-tiled assign loop in seq and omp; none in gpu, whose host fallback (--allow-host) then
# runs the portable loops too.
TUNED_seq := algorithms/kmeans_assign_cpu.c
TUNED_omp := algorithms/kmeans_assign_cpu.c
TUNED_gpu :=

# make bundle: the gpu program with libgomp and its nvptx plugin, in a folder gcc/ of its own
# (bin/, lib/), so that it unpacks beside the clang bundle without replacing its files; no MPI
# program (clang's bundle carries them).
BUNDLE          := dist/pragmaclust-gcc-bundle.tar.xz
BUNDLE_FOLDER   := gcc
BUNDLE_PROGRAMS := bin/pragmaclust-gpu
BUNDLE_MPI_PROGRAMS :=
BUNDLE_LIBRARIES :=
BUNDLE_RUNTIME  := $(shell $(CC) -print-file-name=libgomp-plugin-nvptx.so.1)

# variants/gcc.mk - flags of the host variants with GCC (TOOLCHAIN=gcc).
# GCC builds seq and omp only: its nvptx offloading was 3-15x slower than clang's on our
# k-means (../shared/TOOLCHAIN.md), so the gpu variant is clang's alone.

CC          := $(if $(filter default,$(origin CC)),gcc,$(CC))
# GCC contracts a * b + c into a fused multiply-add across statements by default (GNU modes):
# off, as the clang builds have it where results must match a reference to the bit (dpc_d2).
CFLAGS_seq  := -Wno-unknown-pragmas -ffp-contract=off
LDFLAGS_seq :=
CFLAGS_omp  := -fopenmp -ffp-contract=off
LDFLAGS_omp := -fopenmp
GPU_SUPPORTED := no
# What a program linked with the installed library needs besides it and -lm (pkg-config's Libs).
PKG_LIBS_seq :=
PKG_LIBS_omp := -fopenmp

# The tuned kernels each variant links (the seam: algorithms/kmeans_tuned.h).
TUNED_seq := algorithms/kmeans_assign_cpu.c
TUNED_omp := algorithms/kmeans_assign_cpu.c

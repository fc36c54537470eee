# variants/gcc.mk - flags of the host variants with GCC (TOOLCHAIN=gcc).
# GCC builds seq and omp only: its nvptx offloading was 3-15x slower than clang's on our
# k-means (../shared/TOOLCHAIN.md), so the gpu variant is clang's alone.

CC          := $(if $(filter default,$(origin CC)),gcc,$(CC))
CFLAGS_seq  := -Wno-unknown-pragmas
LDFLAGS_seq :=
CFLAGS_omp  := -fopenmp
LDFLAGS_omp := -fopenmp
GPU_SUPPORTED := no

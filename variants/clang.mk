# variants/clang.mk - flags of the three variants with clang (LLVM $(LLVM_VERSION)).
# Included by the Makefile; everything here can be overridden on the make command line.

LLVM_PREFIX ?= /usr/lib/llvm-$(LLVM_VERSION)
CC          := $(if $(filter default,$(origin CC)),clang-$(LLVM_VERSION),$(CC))
LLVM_LIB    ?= $(LLVM_PREFIX)/lib

# seq: no OpenMP at all (par.h turns every directive into nothing).
CFLAGS_seq  :=
LDFLAGS_seq :=

# omp: multicore host OpenMP.
CFLAGS_omp  := -fopenmp
LDFLAGS_omp := -fopenmp -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/../lib:$(LLVM_LIB)'

# gpu: OpenMP offload to NVIDIA through libomptarget. The device image is built by the ptxas
# in $(CUDA_PATH) (must be < 12.8 with LLVM < 21, see variants/check-toolchain.sh); the NVPTX
# device runtime bitcode sits in $(LLVM_LIB), where Debian's clang does not look by default.
CFLAGS_gpu  := -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda --offload-arch=$(GPU_ARCH) \
               --cuda-path=$(CUDA_PATH) --libomptarget-nvptx-bc-path=$(LLVM_LIB)
LDFLAGS_gpu := $(CFLAGS_gpu) -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/../lib:$(LLVM_LIB)'
GPU_SUPPORTED := yes

# The tuned kernels each variant links (the seam: algorithms/kmeans_tuned.h); every other
# variant gets the portable loops only.
TUNED_seq := algorithms/kmeans_assign_cpu.c
TUNED_omp := algorithms/kmeans_assign_cpu.c
TUNED_gpu := algorithms/kmeans_assign_gpu.c algorithms/kmeanspp_gpu.c

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
# in $(CUDA_PATH) (must be < 12.8 with LLVM < 21, see variants/check-toolchain.sh). The device
# code of all files is linked as one (-foffload-lto), with the device runtime library from
# $(LLVM_LIB), where Debian's clang does not look by default: compiled file by file instead, each
# with its own copy of the runtime's bitcode, the tuned k-means kernel (an ompx_bare region) in a
# file of its own launched and wrote nothing (LLVM 19, H100; cf. llvm-project issue 55943).
# The whole-program device link lets OpenMPOpt turn DBSCAN's chain-expansion kernel (a team
# region with parallel loops) into SPMD mode with guarded sequential parts, which read shared
# memory out of bounds (compute-sanitizer) and abort at 1M points with 16384 chains (LLVM 19):
# GPU_LINK_OPTIONS keeps every generic-mode kernel generic, as the per-file compiles left them
# (docs/performance.md: no kernel is slower for it). -Wl,-mllvm reaches the device link; the
# clang that the link wrapper runs to assemble the result then warns that it did not use it.
# GPU_ARCH=sm_90a: clang compiles for sm_90 (LLVM 19 has no sm_90a device runtime), the CUDA tree's
# ptxas assembles for sm_90a (variants/ptxas-sm90a.sh), and PC_SM90A turns on the tuned kernels
# that use Hopper's wgmma (algorithms/kmeans_assign_gpu.c).
GPU_OFFLOAD_ARCH := $(if $(filter sm_90a,$(GPU_ARCH)),sm_90,$(GPU_ARCH))
GPU_ARCH_DEFINES := $(if $(filter sm_90a,$(GPU_ARCH)),-DPC_SM90A)
CFLAGS_gpu  := -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda --offload-arch=$(GPU_OFFLOAD_ARCH) -foffload-lto \
               --cuda-path=$(CUDA_PATH) $(GPU_ARCH_DEFINES)
GPU_LINK_OPTIONS := -Wl,-mllvm,-openmp-opt-disable-spmdization
LDFLAGS_gpu := $(CFLAGS_gpu) $(GPU_LINK_OPTIONS) -L$(LLVM_LIB) -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/../lib:$(LLVM_LIB)'
# The gpu shared library lists libomptarget before libomp, so that its calls of omp_get_num_devices
# and omp_get_initial_device bind to libomptarget's own. libomp's forwarders of those ask
# libomptarget through dlsym from libomp's lookup scope, which lacks it where another library
# brought libomp into the process first: in a Python process that had used the omp library,
# the gpu library then found 0 devices on a GPU machine (H100, 2026-11-25).
SHARED_LDFLAGS_gpu := -L$(LLVM_LIB) -Wl,--push-state,--no-as-needed -lomptarget -Wl,--pop-state
GPU_SUPPORTED := yes
GPU_TOOLCHAIN_CHECK = variants/check-toolchain.sh "$(CC)" "$(CUDA_PATH)" "$(LLVM_LIB)" "$(GPU_ARCH)"

# What a program linked with the installed library needs besides -lpragmaclust-<v> and -lm (the
# pkg-config files' Libs): the OpenMP runtime, and for gpu clang's offload link (the device code
# of the static archive is linked into the program), with the absolute CUDA tools path.
PKG_LIBS_seq :=
PKG_LIBS_omp := -fopenmp -L$(LLVM_LIB) -Wl,-rpath,$(LLVM_LIB)
PKG_LIBS_gpu := -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda --offload-arch=$(GPU_OFFLOAD_ARCH) -foffload-lto \
                --cuda-path=$(abspath $(CUDA_PATH)) $(GPU_LINK_OPTIONS) -L$(LLVM_LIB) -Wl,-rpath,$(LLVM_LIB)

# The tuned kernels each variant links (the seam: algorithms/kmeans_tuned.h); every other
# variant gets the portable loops only.
TUNED_seq := algorithms/kmeans_assign_cpu.c
TUNED_omp := algorithms/kmeans_assign_cpu.c
TUNED_gpu := algorithms/kmeans_assign_gpu.c algorithms/kmeanspp_gpu.c

# make bundle: the three programs with the LLVM OpenMP runtime (libomp, libomptarget and their
# dependencies), in bin/ and lib/ at the archive's top; where mpicc is installed, also the three
# MPI programs with Open MPI's runtime (mpi/, bin/mpirun).
BUNDLE          := dist/pragmaclust-bundle.tar.xz
BUNDLE_FOLDER   := .
BUNDLE_PROGRAMS  = $(foreach v,$(ALL_VARIANTS),bin/pragmaclust-$(v))
BUNDLE_MPI_PROGRAMS = $(foreach v,$(ALL_VARIANTS),bin/pragmaclust-$(v)-mpi)
BUNDLE_RUNTIME  := $(LLVM_LIB)/libomptarget.so.$(LLVM_VERSION).1 $(LLVM_LIB)/libomp.so.5
BUNDLE_LIBRARIES = $(foreach v,$(ALL_VARIANTS),lib/libpragmaclust-$(v).so)

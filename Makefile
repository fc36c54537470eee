# pragmaclust - one source, three variants (seq, omp, gpu). The control panel:
VARIANT       ?= all            # seq | omp | gpu | all
TOOLCHAIN     ?= clang          # clang (all variants, tuned kernels) | gcc (all variants, portable loops on the GPU)
LLVM_VERSION  ?= 19
GPU_ARCH      ?= sm_90a         # NVIDIA architecture of the gpu variant (sm_90a: H100/H200 + wgmma; sm_90; sm_80: A100)
TOOLCHAIN_DIR ?= .toolchain     # where `make toolchain` puts CUDA 11.8's ptxas, and for sm_90a CUDA 12.4's
CUDA_PATH     ?= $(TOOLCHAIN_DIR)/$(if $(filter sm_90a,$(strip $(GPU_ARCH))),cuda-12.4-sm90a,cuda-11.8)
HOST_ARCH     ?= x86-64-v3      # -march of host code (x86-64-v3 = AVX2+FMA; `native` for this CPU only)
OPT           ?= -O3
KNOBS         ?=                # tuning knobs, e.g. KNOBS='-DKM_GPU_TEAMS_PER_SM=4' (`pragmaclust-<v> info` lists them)
PYTHON        ?= /usr/bin/python3   # Debian's, with numpy and scikit-learn (tests)
SCALE         ?= default        # experiments: smoke (2 minutes) | default (minutes with a GPU) | paper (the papers' grids)
RESULTS       ?= results        # where experiments write results/<scale>/{results.csv,tables/}
DATA_DIR      ?= data           # real data sets: `make datasets` downloads them here
DATASETS      ?=                # names for `make datasets` (comma-separated; empty = all)
PREFIX        ?= /usr/local     # `make install`: programs, header, libraries, pkg-config files (DESTDIR honoured)
BUNDLE_MPI    ?= auto           # `make bundle` with the MPI programs and Open MPI: auto (where mpicc is) | yes | no

VARIANT       := $(strip $(VARIANT))
TOOLCHAIN     := $(strip $(TOOLCHAIN))
GPU_ARCH      := $(strip $(GPU_ARCH))
TOOLCHAIN_DIR := $(strip $(TOOLCHAIN_DIR))
CUDA_PATH     := $(strip $(CUDA_PATH))
HOST_ARCH     := $(strip $(HOST_ARCH))
KNOBS         := $(strip $(KNOBS))
PYTHON        := $(strip $(PYTHON))
SCALE         := $(strip $(SCALE))
RESULTS       := $(strip $(RESULTS))
DATA_DIR      := $(strip $(DATA_DIR))
DATASETS      := $(strip $(DATASETS))
PREFIX        := $(strip $(PREFIX))
BUNDLE_MPI    := $(strip $(BUNDLE_MPI))

include variants/$(TOOLCHAIN).mk

ALL_VARIANTS := seq omp $(if $(filter yes,$(GPU_SUPPORTED)),gpu)
VARIANTS     := $(if $(filter all,$(VARIANT)),$(ALL_VARIANTS),$(VARIANT))
$(foreach v,$(VARIANTS),$(if $(filter seq omp gpu,$(v)),,$(error VARIANT must be seq, omp, gpu or all, not '$(v)')))
$(if $(filter-out auto yes no,$(BUNDLE_MPI)),$(error BUNDLE_MPI must be auto, yes or no, not '$(BUNDLE_MPI)'))
$(if $(and $(filter gpu,$(VARIANTS)),$(filter-out yes,$(GPU_SUPPORTED))),$(error TOOLCHAIN=$(TOOLCHAIN) has no gpu variant))

WARNINGS := -Wall -Wextra -Wshadow -Wconversion -Wno-sign-conversion
# -fPIC: the same objects make the static and the shared library (and the PIE programs). KNOBS:
# -DNAME=value overrides of the tuning knobs (each file's block at its top; reports list them).
BASE_CFLAGS := -std=gnu11 $(OPT) -march=$(HOST_ARCH) $(WARNINGS) -fPIC $(KNOBS)
# The layers: common/ (data, outputs, devices, the parallel vocabulary) <- algorithms/ <- api/ (the
# library's public API, include/pragmaclust.h) and cli/ (the programs' front end). Each layer's
# files are compiled with its own and the lower layers' folders on the include path only, so
# that none can include a file from a layer above it.
INCLUDES_common     := -Icommon
INCLUDES_algorithms := -Icommon -Ialgorithms
INCLUDES_api        := -Icommon -Ialgorithms -Iinclude
INCLUDES_cli        := -Icommon -Ialgorithms -Icli
# The tuned kernels behind the seams algorithms/kmeans_tuned.h and kmeanspp_tuned.h: each
# variant links the files its toolchain lists in TUNED_<variant> (variants/clang.mk, gcc.mk) and,
# for a seam it lists none for, that seam's <seam>_no_tuned.c (the portable loops then run).
TUNED_SEAMS := kmeans kmeanspp
TUNED_ALL := algorithms/kmeans_assign_cpu.c algorithms/kmeans_assign_gpu.c algorithms/kmeanspp_gpu.c \
             $(foreach s,$(TUNED_SEAMS),algorithms/$(s)_no_tuned.c)
# The library (lib/libpragmaclust-<v>.a and .so): every layer but cli/; the programs link it.
LIB_SOURCES := $(wildcard common/*.c) $(filter-out $(TUNED_ALL),$(wildcard algorithms/*.c)) $(wildcard api/*.c)
CLI_SOURCES := $(wildcard cli/*.c)
tuned_of = $(TUNED_$(1)) $(foreach s,$(TUNED_SEAMS),$(if $(filter algorithms/$(s)_%,$(TUNED_$(1))),,algorithms/$(s)_no_tuned.c))
VERSION := $(strip $(file < VERSION))
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)

.PHONY: all build lib install info toolchain test test-deps paper-deps bundle bench bench-kmeans bench-python bench-dbscan bench-dpc bench-mpi experiments tables plots paper datasets \
        datasets-verify clean distclean exercise exercises mpi
all: build
build: $(foreach v,$(VARIANTS),bin/pragmaclust-$(v)) $(if $(MPI),mpi)
lib: $(foreach v,$(VARIANTS),lib/libpragmaclust-$(v).a lib/libpragmaclust-$(v).so)

# One set of rules per variant: build/<v>/*.o from the same sources, the library
# lib/libpragmaclust-<v>.a and .so, and bin/pragmaclust-<v> (cli/ linked with the archive).
# $(1) variant name (flags in CFLAGS_$(1), LDFLAGS_$(1)), $(2) its -D define, $(3) extra prerequisites,
# $(4) the variant whose tuned kernels it links.
define variant_rules
CFLAGS_ALL_$(1) = $(BASE_CFLAGS) $(2) $$(CFLAGS_$(1)) -Ibuild/$(1)
LIB_OBJECTS_$(1) := $(patsubst %.c,build/$(1)/%.o,$(notdir $(LIB_SOURCES) $(call tuned_of,$(4))))
CLI_OBJECTS_$(1) := $(patsubst %.c,build/$(1)/%.o,$(notdir $(CLI_SOURCES)))
OBJECTS_$(1) := $$(LIB_OBJECTS_$(1)) $$(CLI_OBJECTS_$(1))
build/$(1)/buildinfo.h: FORCE
	@mkdir -p $$(@D)
	@printf '#define PC_BUILD_COMPILER "%s"\n#define PC_BUILD_FLAGS "%s"\n#define PC_BUILD_COMMIT "%s"\n#define PC_BUILD_VERSION "%s"\n' \
	  "$$$$($(CC) --version 2>/dev/null | head -1)" "$$(strip $$(CFLAGS_ALL_$(1)))" "$(GIT_COMMIT)" "$(VERSION)" > $$@.new
	@cmp -s $$@.new $$@ && rm -f $$@.new || mv $$@.new $$@
build/$(1)/%.o: common/%.c common/*.h build/$(1)/buildinfo.h $(3) | build/$(1)
	$(CC) $$(CFLAGS_ALL_$(1)) $(INCLUDES_common) -c $$< -o $$@
build/$(1)/%.o: algorithms/%.c algorithms/*.h common/*.h build/$(1)/buildinfo.h $(3) | build/$(1)
	$(CC) $$(CFLAGS_ALL_$(1)) $(INCLUDES_algorithms) -c $$< -o $$@
build/$(1)/%.o: api/%.c include/pragmaclust.h algorithms/*.h common/*.h build/$(1)/buildinfo.h $(3) | build/$(1)
	$(CC) $$(CFLAGS_ALL_$(1)) $(INCLUDES_api) -c $$< -o $$@
build/$(1)/%.o: cli/%.c cli/*.h algorithms/*.h common/*.h build/$(1)/buildinfo.h $(3) | build/$(1)
	$(CC) $$(CFLAGS_ALL_$(1)) $(INCLUDES_cli) -c $$< -o $$@
lib/libpragmaclust-$(1).a: $$(LIB_OBJECTS_$(1))
	@mkdir -p $$(@D) && rm -f $$@
	$(AR) rcs $$@ $$^
# The shared library exports the API's functions only (api/pragmaclust.map).
lib/libpragmaclust-$(1).so: $$(LIB_OBJECTS_$(1)) api/pragmaclust.map
	@mkdir -p $$(@D)
	$(CC) -shared $$(SHARED_LDFLAGS_$(1)) $$(LIB_OBJECTS_$(1)) -o $$@ -Wl,-soname,libpragmaclust-$(1).so \
	  -Wl,--version-script=api/pragmaclust.map \
	  $$(LDFLAGS_$(1)) -lm
bin/pragmaclust-$(1): $$(CLI_OBJECTS_$(1)) lib/libpragmaclust-$(1).a | bin
	$(CC) $$^ -o $$@ $$(LDFLAGS_$(1)) -lm
build/$(1):
	@mkdir -p $$@
endef
FORCE:
bin:
	@mkdir -p $@

# The gpu variant is refused with a fix when its toolchain lacks the offload compiler or would
# make images the runtime rejects (GPU_TOOLCHAIN_CHECK in variants/$(TOOLCHAIN).mk).
build/gpu/toolchain.ok: variants/check-toolchain.sh variants/$(TOOLCHAIN).mk | build/gpu
	@$(GPU_TOOLCHAIN_CHECK)
	@touch $@

# AddressSanitizer + UndefinedBehaviorSanitizer build of the seq variant (used by make test).
CFLAGS_seq-asan  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDFLAGS_seq-asan := -fsanitize=address,undefined
$(eval $(call variant_rules,seq,-DPC_VARIANT_SEQ,,seq))
$(eval $(call variant_rules,omp,-DPC_VARIANT_OMP,,omp))
$(eval $(call variant_rules,gpu,-DPC_VARIANT_GPU,build/gpu/toolchain.ok,gpu))
$(eval $(call variant_rules,seq-asan,-DPC_VARIANT_SEQ,,seq))

# MPI programs (issue 22, common/dist.h): `make MPI=1` also builds bin/pragmaclust-<variant>-mpi,
# the same sources with PC_MPI and the flags of Open MPI's compiler wrapper (`make mpi` builds
# only them); `variants/install-toolchain.sh --mpi` installs Open MPI.
MPI ?=
MPI_CFLAGS = $(shell mpicc --showme:compile 2>/dev/null)
MPI_LDFLAGS = $(shell mpicc --showme:link 2>/dev/null)
$(foreach v,seq omp gpu,$(eval CFLAGS_$(v)-mpi = $$(CFLAGS_$(v)) $$(MPI_CFLAGS))$(eval LDFLAGS_$(v)-mpi = $$(LDFLAGS_$(v)) $$(MPI_LDFLAGS)))
$(eval $(call variant_rules,seq-mpi,-DPC_VARIANT_SEQ -DPC_MPI,build/mpi.ok,seq))
$(eval $(call variant_rules,omp-mpi,-DPC_VARIANT_OMP -DPC_MPI,build/mpi.ok,omp))
$(eval $(call variant_rules,gpu-mpi,-DPC_VARIANT_GPU -DPC_MPI,build/mpi.ok build/gpu/toolchain.ok,gpu))
mpi: $(foreach v,$(VARIANTS),bin/pragmaclust-$(v)-mpi)
build/mpi.ok:
	@command -v mpicc >/dev/null || { echo "make: MPI=1 needs Open MPI's mpicc: variants/install-toolchain.sh --mpi" >&2; exit 2; }
	@mkdir -p $(@D) && touch $@
include $(wildcard teaching/exercises.mk)

# The seq program with one wrong value planted in each result --check reads (cli/check.c,
# PC_CHECK_PLANTED_FAULT), for the tests that show every check catches a wrong result.
build/seq-fault/check.o: cli/check.c cli/*.h algorithms/*.h common/*.h build/seq/buildinfo.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL_seq) -DPC_CHECK_PLANTED_FAULT $(INCLUDES_cli) -c $< -o $@
bin/pragmaclust-seq-fault: $(filter-out build/seq/check.o,$(OBJECTS_seq)) build/seq-fault/check.o | bin
	$(CC) $^ -o $@ $(LDFLAGS_seq) -lm

# `make install PREFIX=... [DESTDIR=...]`: bin/ the programs, include/ the API's header, lib/ the
# static and shared libraries, lib/pkgconfig/pragmaclust-<v>.pc (cflags and libs of each variant).
install: build lib
	install -d "$(DESTDIR)$(PREFIX)/bin" "$(DESTDIR)$(PREFIX)/include" "$(DESTDIR)$(PREFIX)/lib/pkgconfig"
	install -m 0755 $(foreach v,$(VARIANTS),bin/pragmaclust-$(v)) "$(DESTDIR)$(PREFIX)/bin/"
	install -m 0644 include/pragmaclust.h "$(DESTDIR)$(PREFIX)/include/"
	install -m 0644 $(foreach v,$(VARIANTS),lib/libpragmaclust-$(v).a) "$(DESTDIR)$(PREFIX)/lib/"
	install -m 0755 $(foreach v,$(VARIANTS),lib/libpragmaclust-$(v).so) "$(DESTDIR)$(PREFIX)/lib/"
	@$(foreach v,$(VARIANTS),printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
	  'Name: pragmaclust-$(v)' 'Description: clustering (k-means, streaming, DBSCAN, density peaks), $(v) variant' \
	  'Version: $(VERSION)' 'Cflags: -I$${includedir}' \
	  'Libs: -L$${libdir} -Wl,-rpath,$${libdir} -lpragmaclust-$(v) $(strip $(PKG_LIBS_$(v))) -lm' \
	  > "$(DESTDIR)$(PREFIX)/lib/pkgconfig/pragmaclust-$(v).pc" &&) true
	@echo "installed into $(DESTDIR)$(PREFIX): $(foreach v,$(VARIANTS),pragmaclust-$(v))"

info:
	@$(foreach v,$(VARIANTS),echo "[$(v)]"; echo "  compiler: $$($(CC) --version | head -1) ($(CC))"; \
	  echo "  cflags:   $(strip $(CFLAGS_ALL_$(v)))"; echo "  ldflags:  $(strip $(LDFLAGS_$(v))) -lm"; \
	  echo "  program:  bin/pragmaclust-$(v)";)
	@echo "[settings] TOOLCHAIN=$(TOOLCHAIN) GPU_ARCH=$(GPU_ARCH) CUDA_PATH=$(CUDA_PATH) HOST_ARCH=$(HOST_ARCH) DATA_DIR=$(DATA_DIR)"

# The CUDA tree the gpu variant's GPU_ARCH needs besides CUDA 11.8's (variants/install-toolchain.sh).
TOOLCHAIN_GPU := $(if $(and $(filter clang,$(TOOLCHAIN)),$(filter sm_90a,$(GPU_ARCH))),--sm90a)
toolchain:
	@variants/install-toolchain.sh $(if $(filter gcc,$(TOOLCHAIN)),--gcc) $(TOOLCHAIN_GPU) "$(TOOLCHAIN_DIR)"

test-deps:
	@variants/install-toolchain.sh --tests $(TOOLCHAIN_GPU) "$(TOOLCHAIN_DIR)"

# The README's test command: installs what it needs, builds every variant, its library, the
# sanitizer build, the planted-fault program and the seq and omp MPI programs, then runs the unit
# and end-to-end tests
# (tests/test_library.py installs the libraries into a temporary prefix and builds C programs
# against them).
test: test-deps
	@$(MAKE) --no-print-directory VARIANT=all build lib bin/pragmaclust-seq-asan bin/pragmaclust-seq-fault \
	  bin/pragmaclust-seq-mpi bin/pragmaclust-omp-mpi build/seq/unit_tests build/omp/unit_tests build/seq-asan/unit_tests
	@PRAGMACLUST_BIN=bin DATA_DIR="$(DATA_DIR)" $(PYTHON) -m pytest -q tests

# The unit tests, against the seq objects, the omp objects (where the tests of lock-free steps
# race them on many threads) and the sanitizer build's.
build/seq/unit_tests: tests/unit_tests.c $(filter-out build/seq/main.o,$(OBJECTS_seq))
	$(CC) $(CFLAGS_ALL_seq) $(INCLUDES_algorithms) $^ -o $@ $(LDFLAGS_seq) -lm
build/omp/unit_tests: tests/unit_tests.c $(filter-out build/omp/main.o,$(OBJECTS_omp))
	$(CC) $(CFLAGS_ALL_omp) $(INCLUDES_algorithms) $^ -o $@ $(LDFLAGS_omp) -lm
build/seq-asan/unit_tests: tests/unit_tests.c $(filter-out build/seq-asan/main.o,$(OBJECTS_seq-asan))
	$(CC) $(CFLAGS_ALL_seq-asan) $(INCLUDES_algorithms) $^ -o $@ $(LDFLAGS_seq-asan) -lm

# The variant comparisons (benchmarks, not tests; see experiments/README.md): k-means per
# iteration, DBSCAN on 1M points (20 Gaussian clusters, 5% noise, d = 2 and 3), density peaks
# on 1M points (d = 2, mean rho ~50) and a batch of 1000 inserted into them.
bench: bench-kmeans bench-dbscan bench-dpc

bench-kmeans: toolchain
	@$(MAKE) --no-print-directory VARIANT=all build
	@$(PYTHON) experiments/bench_kmeans.py --bin bin

# The Python package's KMeans against the program (the gpu variant; VARIANT_BENCH=omp on a host).
VARIANT_BENCH ?= gpu
bench-python: toolchain
	@$(MAKE) --no-print-directory VARIANT=all build lib
	@cd experiments && $(PYTHON) bench_python.py --bin ../bin --lib ../lib --variant $(VARIANT_BENCH)

bench-dbscan: toolchain
	@variants/install-toolchain.sh --tests $(TOOLCHAIN_GPU) "$(TOOLCHAIN_DIR)"
	@$(MAKE) --no-print-directory VARIANT=all build
	@$(PYTHON) experiments/bench_dbscan.py --bin bin

bench-dpc: toolchain
	@variants/install-toolchain.sh --tests $(TOOLCHAIN_GPU) "$(TOOLCHAIN_DIR)"
	@$(MAKE) --no-print-directory VARIANT=all build
	@$(PYTHON) experiments/bench_dpc.py --bin bin

# Strong and weak scaling across MPI ranks (issue 22): k-means, streaming k-means and DBSCAN on
# 1, 2 and 4 ranks of $(VARIANT_BENCH_MPI) (seq: a core each), outputs checked against one rank.
VARIANT_BENCH_MPI ?= seq
bench-mpi: toolchain
	@variants/install-toolchain.sh --mpi
	@$(MAKE) --no-print-directory VARIANT=all MPI=1 build
	@$(PYTHON) experiments/bench_mpi.py --bin bin --variant $(VARIANT_BENCH_MPI)

# The main job: run the papers' comparisons at $(SCALE) (resuming a previous run) and
# regenerate their tables under $(RESULTS)/$(SCALE)/tables. See experiments/README.md.
experiments: toolchain
	@$(MAKE) --no-print-directory VARIANT=all build
	@$(PYTHON) experiments/run.py --scale $(SCALE) --bin bin --data-dir "$(DATA_DIR)" --results "$(RESULTS)"
	@$(MAKE) --no-print-directory plots

paper-deps:
	@variants/install-toolchain.sh --plots --paper "$(TOOLCHAIN_DIR)"

# Figures (PNG and SVG) from $(RESULTS)/<scale>/results.csv into $(RESULTS)/<scale>/plots.
# <scale> (plots and paper): SCALE when given (on the command line or in the environment, so
# the recipe's shell has it), else default when $(RESULTS)/default/results.csv exists, else
# the most recently run scale, with a note saying so; paper/build.sh --scale-of decides.
plots:
	@variants/install-toolchain.sh --plots "$(TOOLCHAIN_DIR)"
	@scale=$$(paper/build.sh --scale-of "$(RESULTS)" $${SCALE+"$(SCALE)"}) && \
	  $(PYTHON) plots/plot.py --results "$(RESULTS)" --scale "$$scale"

# paper/paper.pdf from the generated tables and figures (after `make experiments`), at the
# scale of `make plots` (which has already named it when it was not given).
paper: paper-deps plots
	@paper/build.sh --no-scale-note "$(RESULTS)" $${SCALE+"$(SCALE)"}

# Downloads, cleans and checks the real data sets into DATA_DIR (those already there and intact
# are skipped); see experiments/datasets.py for the sources and checksums.
datasets:
	@$(PYTHON) experiments/datasets.py --data-dir "$(DATA_DIR)" $(if $(DATASETS),--only $(DATASETS))
datasets-verify:
	@$(PYTHON) experiments/datasets.py --data-dir "$(DATA_DIR)" --verify $(if $(DATASETS),--only $(DATASETS))

# The tables again from $(RESULTS)/$(SCALE)/results.csv, without running anything.
tables:
	@$(PYTHON) experiments/run.py --tables-only --scale $(SCALE) --results "$(RESULTS)"

# Relocatable archive of the toolchain's programs plus the OpenMP offload runtime they need
# (BUNDLE* in variants/$(TOOLCHAIN).mk): clang's three programs and shared libraries (for the
# Python package and C clients) in dist/pragmaclust-bundle.tar.xz, GCC's gpu program in
# dist/pragmaclust-gcc-bundle.tar.xz (folder gcc/). With BUNDLE_MPI (auto: where mpicc is
# installed), clang's also carries the MPI programs, Open MPI's runtime (mpi/) and bin/mpirun.
BUNDLE_WITH_MPI := $(and $(BUNDLE_MPI_PROGRAMS),$(filter-out no,$(BUNDLE_MPI)),\
                   $(if $(filter auto,$(BUNDLE_MPI)),$(shell command -v mpicc 2>/dev/null),yes))
BUNDLE_ALL_PROGRAMS := $(BUNDLE_PROGRAMS) $(if $(BUNDLE_WITH_MPI),$(BUNDLE_MPI_PROGRAMS))
bundle: $(BUNDLE_ALL_PROGRAMS) $(BUNDLE_LIBRARIES)
	@$(if $(BUNDLE_MPI_PROGRAMS),$(if $(BUNDLE_WITH_MPI),,echo "bundle: without the MPI programs" \
	  "($(if $(filter no,$(BUNDLE_MPI)),BUNDLE_MPI=no,no mpicc: variants/install-toolchain.sh --mpi installs it))";))
	@variants/bundle.sh $(if $(BUNDLE_WITH_MPI),--mpi) $(BUNDLE) "$(BUNDLE_FOLDER)" $(BUNDLE_RUNTIME) \
	  $(BUNDLE_LIBRARIES) -- $(BUNDLE_ALL_PROGRAMS)

clean:
	rm -rf build bin lib dist
distclean: clean
	rm -rf $(TOOLCHAIN_DIR)

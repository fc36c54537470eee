# teaching/exercises.mk - the course pack's exercises (teaching/README.md); included by the Makefile.
#
#   make exercise N=3               exercise 3 (teaching/exercises/03-*) in each variant of VARIANT: build, run, verdict
#   make exercise-3                 the same
#   make exercise N=3 SOLUTION=1    the reference solution (teaching/solutions/03-*/exercise.c) instead of yours
#   make exercise N=3 ARGS='--n 4000000 --repeat 10 --threads 8'   options for the harness
#   make exercise N=3 VARIANT=omp   one variant
#   make exercises [SOLUTION=1]     every exercise, one after the other
#   make exercises-build            every program (yours and the solutions) built, none run
#
# Each variant is built with the project's compiler and flags (CC, CFLAGS_ALL_<v>, LDFLAGS_<v>, as
# bin/pragmaclust-<v>) from the exercise's exercise.c (or its solution) and harness.c, the shared
# teaching/common/harness.c, and common/device.c, util.c, knobs.c and dist.c (the device check, the
# timers, and dist.h's one-process answers that util.c calls), into
# build/teaching/<exercise|solution>/NN-name/<v>/. The gpu program gets --allow-host, as the tests
# give it, so that without a GPU it runs its target regions on the host and says so in its verdict
# ("[gpu, on the host]"); PRAGMACLUST_REQUIRE_GPU=1 (a GPU machine) leaves the flag out.

TH_EXERCISES := $(sort $(notdir $(wildcard teaching/exercises/[0-9][0-9]-*)))
TH_FROM      := $(if $(filter 1 yes,$(SOLUTION)),solution,exercise)
TH_NUMBER    := $(if $(filter 1 2 3 4 5 6 7 8 9,$(N)),0$(N),$(N))
TH_NAME      := $(if $(N),$(filter $(TH_NUMBER)-%,$(TH_EXERCISES)))
TH_GPU_FLAGS := $(if $(filter 1,$(PRAGMACLUST_REQUIRE_GPU)),,--allow-host)
TH_PC_SOURCES := device util knobs dist
TH_PREREQ_gpu := build/gpu/toolchain.ok

# Per variant $(1): the project's common/ objects the harnesses link.
define th_variant_rules
build/teaching/$(1)/pc/%.o: common/%.c common/*.h $(TH_PREREQ_$(1))
	@mkdir -p $$(@D)
	$(CC) $$(CFLAGS_ALL_$(1)) $(INCLUDES_common) -c $$< -o $$@
endef

# Per source $(1) (exercise or solution), exercise $(2), variant $(3): the program
# build/teaching/$(1)/$(2)/$(3)/$(2). TH_SOURCE names the student's file, which harness.c embeds for
# the static checks (relative to the repository's root, where make runs the compiler).
define th_program_rules
TH_SRC_$(1)_$(2) := teaching/$(1)s/$(2)/exercise.c
TH_CFLAGS_$(1)_$(2)_$(3) = $$(CFLAGS_ALL_$(3)) -Icommon -Iteaching/common -Iteaching/exercises/$(2) \
  -DTH_EXERCISE='"$(2)"' -DTH_SOURCE='"$$(TH_SRC_$(1)_$(2))"'
build/teaching/$(1)/$(2)/$(3)/exercise.o: $$(TH_SRC_$(1)_$(2)) teaching/exercises/$(2)/exercise.h common/*.h \
                                          $(TH_PREREQ_$(3))
	@mkdir -p $$(@D)
	$(CC) $$(TH_CFLAGS_$(1)_$(2)_$(3)) -c $$< -o $$@
build/teaching/$(1)/$(2)/$(3)/harness.o: teaching/exercises/$(2)/harness.c teaching/exercises/$(2)/exercise.h \
                                         teaching/common/harness.h common/*.h $(TH_PREREQ_$(3))
	@mkdir -p $$(@D)
	$(CC) $$(TH_CFLAGS_$(1)_$(2)_$(3)) -c $$< -o $$@
build/teaching/$(1)/$(2)/$(3)/th.o: teaching/common/harness.c teaching/common/harness.h $$(TH_SRC_$(1)_$(2)) \
                                    common/*.h $(TH_PREREQ_$(3))
	@mkdir -p $$(@D)
	$(CC) $$(TH_CFLAGS_$(1)_$(2)_$(3)) -c $$< -o $$@
build/teaching/$(1)/$(2)/$(3)/$(2): $(addprefix build/teaching/$(1)/$(2)/$(3)/,exercise.o harness.o th.o) \
                                    $(foreach f,$(TH_PC_SOURCES),build/teaching/$(3)/pc/$(f).o)
	$(CC) $$^ -o $$@ $$(LDFLAGS_$(3)) -lm
endef

$(foreach v,$(ALL_VARIANTS),$(eval $(call th_variant_rules,$(v))))
$(foreach s,exercise solution,$(foreach e,$(TH_EXERCISES),$(foreach v,$(ALL_VARIANTS),\
  $(eval $(call th_program_rules,$(s),$(e),$(v))))))

exercise: $(if $(TH_NAME),$(foreach v,$(VARIANTS),build/teaching/$(TH_FROM)/$(TH_NAME)/$(v)/$(TH_NAME)))
	@$(if $(TH_NAME),,echo "make exercise N=<number>: N names one of $(TH_EXERCISES)" >&2; exit 2)
	@TH_GPU_FLAGS="$(TH_GPU_FLAGS)" teaching/run-exercise.sh $(TH_NAME) $(TH_FROM) "$(ARGS)" $(VARIANTS)

# Every program of VARIANTS, yours and the solutions, built and not run (tests/test_teaching.py).
.PHONY: exercises-build
exercises-build: $(foreach s,exercise solution,$(foreach e,$(TH_EXERCISES),$(foreach v,$(VARIANTS),\
  build/teaching/$(s)/$(e)/$(v)/$(e))))

exercise-%:
	@$(MAKE) --no-print-directory exercise N=$*

exercises:
	@status=0; for e in $(TH_EXERCISES); do \
	  $(MAKE) --no-print-directory exercise N=$${e%%-*} || status=1; done; exit $$status

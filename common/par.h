/*
 * par.h - the parallel vocabulary of pragmaclust: one source, three variants.
 *
 * Every algorithm marks its parallel loops and its device data with the macros below.
 * The build defines exactly one of PC_VARIANT_SEQ, PC_VARIANT_OMP, PC_VARIANT_GPU
 * (see the variants/ folder), and this header turns each macro into the directive that variant
 * needs. The directive text is written at the call site, so a reader of an algorithm sees
 * the OpenMP it becomes:
 *
 *   macro                 seq        omp                        gpu
 *   PC_HAS_DEVICE         0          0                          1   (an accelerator apart from the host)
 *   PAR_FOR(c)            (nothing)  omp parallel for c         omp target teams distribute parallel for c
 *   HOST_PAR_FOR(c)       (nothing)  omp parallel for c         omp parallel for c   (host threads)
 *   GPU_ONLY(c)           (nothing)  (nothing)                  c   (clauses only a target region takes)
 *   HOST_ONLY(c)          (nothing)  c                          (nothing)
 *   GPU_ATOMIC            (nothing)  (nothing)                  omp atomic update
 *   PAR_ATOMIC            (nothing)  omp atomic update          omp atomic update
 *   PAR_ATOMIC_CAPTURE    (nothing)  omp atomic capture         omp atomic capture
 *   PAR_ATOMIC_READ       (nothing)  omp atomic read            omp atomic read
 *   PAR_FLUSH             (nothing)  omp flush                  omp flush   (a full memory fence)
 *   PAR_TEAMS_FOR(c)      (nothing)  omp parallel for           omp target teams distribute c
 *                                    schedule(dynamic, 1)       (one team per iteration; its
 *   TEAM_PAR_FOR(c)       (nothing)  (nothing)                  omp parallel for c   threads share inner loops)
 *   DEV_ENTER(c)          (nothing)  (nothing)                  omp target enter data c
 *   DEV_UPDATE(c)         (nothing)  (nothing)                  omp target update c
 *   DEV_EXIT(c)           (nothing)  (nothing)                  omp target exit data c
 *   DEV_WAIT(c)           (nothing)  (nothing)                  omp taskwait c   (waits for DEV_UPDATE(... nowait))
 *   DEV_FUNCS_BEGIN/END   (nothing)  (nothing)                  omp declare target / omp end declare target
 *   TEAM_LOCAL(v)         (nothing)  (nothing)                  omp allocate(v) allocator(omp_pteam_mem_alloc)
 *                                                               (clang's device pass only; see below)
 *
 * Clause bundles that many loops share (defined at the end of this file; nothing in seq and omp):
 *   GPU_THREADS               gpu: thread_limit(PC_GPU_THREADS)
 *   GPU_REDUCTION(n)          gpu: num_teams(pc_reduction_teams(n)) thread_limit(PC_GPU_THREADS)
 *                             (a loop of n iterations that carries a reduction)
 *   GPU_TEAMS(count, threads) gpu: num_teams(pc_device_teams(count)) thread_limit(threads)
 *                             (a PAR_TEAMS_FOR of count teams; device.h)
 *
 * Rules the algorithms follow:
 *  - Data a PAR_FOR loop touches is put on the device once per run with DEV_ENTER and
 *    released with DEV_EXIT; pointers inside a region then refer to the present copies.
 *    No map clause appears on a loop that runs every iteration.
 *  - On the CPU variants a loop that accumulates into shared arrays uses an OpenMP
 *    reduction (HOST_ONLY(reduction(...))); on the GPU the same loop uses GPU_ATOMIC.
 *  - Functions called inside PAR_FOR loops sit between DEV_FUNCS_BEGIN and DEV_FUNCS_END.
 *  - PAR_ATOMIC(_CAPTURE) marks an update that several iterations of a PAR_FOR loop may make
 *    to one location in every parallel variant; GPU_ATOMIC one that only the GPU shares
 *    (the CPU variants privatise it with a reduction instead).
 */
#ifndef PC_PAR_H
#define PC_PAR_H

#if defined(PC_VARIANT_SEQ) + defined(PC_VARIANT_OMP) + defined(PC_VARIANT_GPU) != 1
#error "define exactly one of PC_VARIANT_SEQ, PC_VARIANT_OMP, PC_VARIANT_GPU (the Makefile does)"
#endif

#define PC_PRAGMA(...) _Pragma(#__VA_ARGS__)

#if defined(PC_VARIANT_SEQ)
#define PC_VARIANT_NAME "seq"
#define PC_HAS_DEVICE 0
#define PAR_FOR(...)
#define HOST_PAR_FOR(...)
#define GPU_ONLY(...)
#define HOST_ONLY(...)
#define GPU_ATOMIC
#define PAR_ATOMIC
#define PAR_ATOMIC_CAPTURE
#define PAR_ATOMIC_READ
#define PAR_FLUSH
#define PAR_TEAMS_FOR(...)
#define TEAM_PAR_FOR(...)
#define DEV_ENTER(...)
#define DEV_UPDATE(...)
#define DEV_EXIT(...)
#define DEV_WAIT(...)
#define DEV_FUNCS_BEGIN
#define DEV_FUNCS_END

#elif defined(PC_VARIANT_OMP)
#define PC_VARIANT_NAME "omp"
#define PC_HAS_DEVICE 0
#define PAR_FOR(...) PC_PRAGMA(omp parallel for __VA_ARGS__)
#define HOST_PAR_FOR(...) PC_PRAGMA(omp parallel for __VA_ARGS__)
#define GPU_ONLY(...)
#define HOST_ONLY(...) __VA_ARGS__
#define GPU_ATOMIC
#define PAR_ATOMIC PC_PRAGMA(omp atomic update)
#define PAR_ATOMIC_CAPTURE PC_PRAGMA(omp atomic capture)
#define PAR_ATOMIC_READ PC_PRAGMA(omp atomic read)
#define PAR_FLUSH PC_PRAGMA(omp flush)
#define PAR_TEAMS_FOR(...) PC_PRAGMA(omp parallel for schedule(dynamic, 1))
#define TEAM_PAR_FOR(...)
#define DEV_ENTER(...)
#define DEV_UPDATE(...)
#define DEV_EXIT(...)
#define DEV_WAIT(...)
#define DEV_FUNCS_BEGIN
#define DEV_FUNCS_END

#else /* PC_VARIANT_GPU */
#define PC_VARIANT_NAME "gpu"
#define PC_HAS_DEVICE 1
#define PAR_FOR(...) PC_PRAGMA(omp target teams distribute parallel for __VA_ARGS__)
#define HOST_PAR_FOR(...) PC_PRAGMA(omp parallel for __VA_ARGS__)
#define GPU_ONLY(...) __VA_ARGS__
#define HOST_ONLY(...)
#define GPU_ATOMIC PC_PRAGMA(omp atomic update)
#define PAR_ATOMIC PC_PRAGMA(omp atomic update)
#define PAR_ATOMIC_CAPTURE PC_PRAGMA(omp atomic capture)
#define PAR_ATOMIC_READ PC_PRAGMA(omp atomic read)
#define PAR_FLUSH PC_PRAGMA(omp flush)
#define PAR_TEAMS_FOR(...) PC_PRAGMA(omp target teams distribute __VA_ARGS__)
#define TEAM_PAR_FOR(...) PC_PRAGMA(omp parallel for __VA_ARGS__)
#define DEV_ENTER(...) PC_PRAGMA(omp target enter data __VA_ARGS__)
#define DEV_UPDATE(...) PC_PRAGMA(omp target update __VA_ARGS__)
#define DEV_EXIT(...) PC_PRAGMA(omp target exit data __VA_ARGS__)
#define DEV_WAIT(...) PC_PRAGMA(omp taskwait __VA_ARGS__)
#define DEV_FUNCS_BEGIN PC_PRAGMA(omp declare target)
#define DEV_FUNCS_END PC_PRAGMA(omp end declare target)
#endif

/* Team-local arrays. TEAM_LOCAL(v), right after an array v is declared in a PAR_TEAMS_FOR body,
 * puts v in the team's shared memory on the GPU: its threads (TEAM_PAR_FOR) share it, each team
 * has its own. It only says where v lives, never who shares it: elsewhere v is an ordinary local
 * array, which OpenMP's data-sharing rules give the same sharing. In the host programs an
 * iteration of PAR_TEAMS_FOR is one thread's; on the gpu program's host fallback its team is a
 * host thread team (the host runtime has no team memory to put v in); in GCC's device code, whose
 * GCC 12 has no `omp allocate` directive, v lives on the team's stack in global memory, which
 * its threads share. (__NVPTX__ is clang's device pass; GCC's defines __nvptx__.) */
#if defined(PC_VARIANT_GPU) && defined(__NVPTX__)
#include <omp.h> /* omp_pteam_mem_alloc */
#define TEAM_LOCAL(var) PC_PRAGMA(omp allocate(var) allocator(omp_pteam_mem_alloc))
#else
#define TEAM_LOCAL(var)
#endif

/* Sequentially consistent load and store of an int shared between parallel iterations, in
 * every variant. Both are read-modify-write operations: LLVM 19's NVPTX backend cannot lower
 * ordered atomic loads and stores (`omp atomic read/write seq_cst` fails to compile there). */
DEV_FUNCS_BEGIN
static inline int pc_load_sc(int *p) { return __atomic_fetch_or(p, 0, __ATOMIC_SEQ_CST); }
static inline void pc_store_sc(int *p, int v) { (void)__atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
DEV_FUNCS_END

/* Unrolling hints in the spelling of the compiler at hand (not OpenMP directives: OpenMP 5.1's
 * `unroll` is not in GCC 12): PC_UNROLL unrolls a short loop of constant trip count fully,
 * PC_UNROLL_BY(n) by n (1: not at all). */
#if defined(__clang__)
#define PC_UNROLL _Pragma("unroll")
#define PC_UNROLL_BY(count) PC_PRAGMA(clang loop unroll_count(count))
#elif defined(__GNUC__)
#define PC_UNROLL _Pragma("GCC unroll 64")
#define PC_UNROLL_BY(count) PC_PRAGMA(GCC unroll count)
#else
#define PC_UNROLL
#define PC_UNROLL_BY(count)
#endif

/* Threads per team for GPU loops that carry a reduction, and the most teams such a loop gets:
 * the LLVM 19 device runtime keeps 1024 slots for team results and makes further teams wait.
 * Tuning knobs (knobs.h), recorded by device.c. */
#define PC_GPU_THREADS_DEFAULT 256
#ifndef PC_GPU_THREADS
#define PC_GPU_THREADS PC_GPU_THREADS_DEFAULT
#endif
#define PC_GPU_REDUCTION_TEAMS_DEFAULT 1024
#ifndef PC_GPU_REDUCTION_TEAMS
#define PC_GPU_REDUCTION_TEAMS PC_GPU_REDUCTION_TEAMS_DEFAULT
#endif

/* The clause bundles of the table above. GPU_REDUCTION and GPU_TEAMS call device.h's
 * pc_reduction_teams and pc_device_teams, so a file that uses them includes device.h. */
#define GPU_THREADS GPU_ONLY(thread_limit(PC_GPU_THREADS))
#define GPU_REDUCTION(n) GPU_ONLY(num_teams(pc_reduction_teams(n)) thread_limit(PC_GPU_THREADS))
#define GPU_TEAMS(count, threads) GPU_ONLY(num_teams(pc_device_teams(count)) thread_limit(threads))

#endif /* PC_PAR_H */

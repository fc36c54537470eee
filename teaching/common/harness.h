/*
 * harness.h - what the exercises' harnesses share: options and the device, deterministic data,
 * timing, the checks of the parallel property an exercise teaches, and the verdict.
 *
 * Every harness (teaching/exercises/NN-name/harness.c) does the same five things: th_start
 * (options, device, first line), make its data (th_uniform), call the student's function
 * (exercise.c) and compare its result with a sequential reference of its own, check the parallel
 * property (th_watch_* through OpenMP's tool interface on the host, th_poison on a GPU,
 * th_source_* on the student's source),
 * print the timings (th_time) and end with one verdict line:
 *   PASS NN-name [variant]: <what was checked>            exit status 0
 *   FAIL NN-name [variant]: <the first thing wrong>       exit status 1
 * The verdict names "[gpu, on the host]" when the gpu build ran its target regions on the host
 * (no GPU; --allow-host, common/device.h); without --allow-host and without a GPU the gpu build
 * stops at th_start with common/device.c's message and exit status 3.
 */
#ifndef TH_HARNESS_H
#define TH_HARNESS_H

#include <stddef.h>
#include <stdint.h>

/* The command line of every harness: --n N (problem size, default: the harness's), --repeat R
 * (timed runs after one warm-up), --threads T (host threads; at least 2 by default, so that a
 * race or a missing parallel loop shows), --allow-host (gpu build without a GPU). */
typedef struct {
  size_t n;
  int repeat;
} th_options;

/* Parses the options, brings the device up and prints where the loops run. Exits 2 on a bad
 * option, 3 when the gpu build has no GPU and no --allow-host. */
th_options th_start(int argc, char **argv, const char *exercise, size_t default_n, int default_repeat);

/* 1 when target regions run on a GPU (only ever in the gpu build). */
int th_on_gpu(void);

/* The verdict: prints the line and ends the program (status 0 for PASS, 1 for FAIL). */
_Noreturn void th_pass(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void th_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Memory that th_fail reports instead of returning NULL. */
void *th_alloc(size_t count, size_t size);

/* A uniform double in [0, 1) that depends on (seed, index) alone: the same data in every
 * variant, run and thread count. */
double th_uniform(uint64_t seed, uint64_t index);

/* v rounded down to a multiple of 1/TH_GRID. Coordinates on this grid, of magnitude below 1, make
 * the differences, squares and sums of the exercises exact in float and double, in any order and
 * on any device: results that depend on them then compare exactly. */
#define TH_GRID 1024
float th_on_grid(double v);

/* Times fn(arg): one untimed warm-up, then `repeat` runs; prints "time <what>: median (min, max)"
 * and returns the median in seconds. Target regions are synchronous, so device work is done
 * when a run returns. */
double th_time(const char *what, void (*fn)(void *), void *arg, int repeat);

/* What OpenMP's tool interface (OMPT) saw on the host between th_watch_start and th_watch_stop:
 * the parallel regions and the largest team among them (the gpu build's target regions on the
 * host included). `active` is 0 where nothing can be seen: the seq build (no OpenMP) or a runtime
 * without OMPT. On a GPU OMPT could also report target regions and copies, but LLVM 19's
 * libomptarget delivered none of those callbacks on an H100 (2026-11-25); there the harnesses
 * prove where a loop ran with th_poison instead. */
typedef struct {
  int active;
  long parallel_regions, largest_team;
} th_watch;

void th_watch_start(void);
th_watch th_watch_stop(void);
/* Prints one line saying what the watch saw, under a label. */
void th_watch_print(const char *label, const th_watch *w);

/* The parallel check of the "make it a PAR_FOR" exercises: fails (th_fail, with `what` and a
 * hint) unless the watched call ran a parallel region of 2 threads or more on the host. Where the
 * watch sees nothing (seq) it only says so; on a GPU it passes, the poisoned inputs having told. */
void th_require_parallel(const th_watch *w, const char *what);

/* Where target regions run on a GPU: fills a host copy with 0xff bytes (NaN for floats and
 * doubles, -1 for integers), after the harness's DEV_ENTER has copied it to the device. A loop
 * that ran on the host instead then reads poison and gets a wrong result. Elsewhere nothing. */
void th_poison(void *host_copy, size_t bytes);

/* Static checks of the student's source (the file the harness was built with, TH_SOURCE), with
 * its comments removed, so that a TODO naming a macro counts for nothing. */
/* How many times the identifier `name` appears (whole words). */
int th_source_count(const char *name);
/* 1 when some use `macro(...)` has `text` in its arguments (nested macros included), e.g.
 * th_source_macro_has("PAR_FOR", "reduction(") for PAR_FOR(reduction(+ : s) GPU_REDUCTION(n)). */
int th_source_macro_has(const char *macro, const char *text);

#endif

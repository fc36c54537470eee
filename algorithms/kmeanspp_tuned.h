/*
 * kmeanspp_tuned.h - the seam between D^2 sampling's portable distance passes (kmeanspp.c:
 * standard OpenMP through par.h) and a variant's tuned ones (kmeanspp_gpu.c, the gpu variant built
 * by clang: the points in registers, the chosen points staged in team-local memory, a register
 * budget by launch bounds), or kmeanspp_no_tuned.c where a build has none. The Makefile links
 * one of them into each program (TUNED_<variant> in variants/clang.mk and gcc.mk). Tuned and
 * portable passes sum each distance in double in dimension order and the masses in the scan's
 * order, so they pick the same points.
 */
#ifndef KMPP_TUNED_H
#define KMPP_TUNED_H

#include <math.h>
#include <stddef.h>

#include "device.h"
#include "kmeanspp.h"
#include "par.h"
#include "scan.h"

typedef struct {
  const char *name;
  /* kmpp_masses (pass 1 of a round) for the run's shape, when these kernels take it: returns
   * 1 when it ran the pass, 0 to leave it to the portable loop. */
  int (*masses)(const kmpp_points *p, kmpp_sampler *s, const long *fresh, size_t stride);
  /* kmpp_nearest likewise: run e's `count` chosen points `row`, nearest[] on the device. */
  int (*nearest)(const kmpp_points *p, const long *row, size_t count, int *nearest);
} kmpp_tuned_kernels;

/* The tuned passes linked into this program, or NULL where there are none. */
const kmpp_tuned_kernels *kmpp_tuned(void);

/* Blocks of the scan (PC_SCAN_BLOCK points each) over n points: the wheel's block totals. */
static inline size_t kmpp_blocks(size_t n) { return (n + PC_SCAN_BLOCK - 1) / PC_SCAN_BLOCK; }

/* Tuning knobs shared by kmeanspp.c and kmeanspp_gpu.c (knobs.h; kmeanspp.c records them). */
/* Points a team of the masses pass takes (a multiple of PC_SCAN_BLOCK: each thread of the team's
 * last step sums one block of the scan). */
#define KMPP_TEAM_POINTS_DEFAULT (8 * PC_SCAN_BLOCK)
#ifndef KMPP_TEAM_POINTS
#define KMPP_TEAM_POINTS KMPP_TEAM_POINTS_DEFAULT
#endif
/* Teams of the masses pass wanted per multiprocessor of the GPU: a small chunk of a stream (a
 * few thousand points, some 40 runs) fills that many with teams of fewer points (kmpp_team_span). */
#define KMPP_TEAMS_PER_SM_DEFAULT 4
#ifndef KMPP_TEAMS_PER_SM
#define KMPP_TEAMS_PER_SM KMPP_TEAMS_PER_SM_DEFAULT
#endif
/* Unrolling of the serial in-block sums at the end of the masses pass, on the GPU (8 is faster
 * than no unrolling: docs/performance.md). */
#define KMPP_UNROLL_TAIL_DEFAULT 8
#ifndef KMPP_UNROLL_TAIL
#define KMPP_UNROLL_TAIL KMPP_UNROLL_TAIL_DEFAULT
#endif

/* Neighbouring points a work item of the generic distance loop (kmpp_lanes_masses) takes. The
 * CPU steps through KMPP_LANES points at once, so the loop over them becomes SIMD instructions
 * (each point's sum still runs over the dimensions in order: the same bits); a GPU thread takes
 * one. */
#if defined(PC_VARIANT_GPU)
#define KMPP_LANES_DEFAULT 1
#else
#define KMPP_LANES_DEFAULT 8
#endif
#ifndef KMPP_LANES
#define KMPP_LANES KMPP_LANES_DEFAULT
#endif
/* The loop over the dimensions of a distance on the GPU: not unrolled by default (unrolled by 4
 * the masses pass took 164 registers a thread, one team per SM). */
#define KMPP_UNROLL_DIMS_DEFAULT 1
#ifndef KMPP_UNROLL_DIMS
#define KMPP_UNROLL_DIMS KMPP_UNROLL_DIMS_DEFAULT
#endif

/* Points a team of the masses pass takes over n points of each of `runs` runs: KMPP_TEAM_POINTS,
 * or on a GPU fewer (whole blocks of the scan, halved) while the pass would leave multiprocessors
 * idle, so a chunk of 1,414 points in 42 runs takes 252 teams, not 42. A block's masses are summed
 * in order by one thread whatever the span, so the picks do not depend on it. */
static inline size_t kmpp_team_span(size_t n, int runs) {
  size_t span = KMPP_TEAM_POINTS;
  if (!pc_offloading()) return span;
  const size_t wanted = (size_t)KMPP_TEAMS_PER_SM * (size_t)pc_device_multiprocessors();
  while (span > PC_SCAN_BLOCK && (n + span - 1) / span * (size_t)runs < wanted)
    span = span / PC_SCAN_BLOCK / 2 * PC_SCAN_BLOCK;
  return span;
}

DEV_FUNCS_BEGIN
/* One step of the generic masses loop: points i0 .. i0 + KMPP_LANES - 1 (below end) of a run,
 * their D^2 against the run's `count` points of the previous round (picked; none in the first
 * round, picked NULL: D^2 stays infinite and the mass is the weight) into dist_e, and their
 * masses w_i D(i)^2 into the team's mass[i - begin]. Summed in double in dimension order. */
static inline void kmpp_lanes_masses(const double *x, const float *w, size_t d, size_t ps, size_t ds,
                                     const long *picked, int count, size_t i0, size_t end, double *dist_e, double *mass,
                                     size_t begin) {
  const size_t lanes = end - i0 < KMPP_LANES ? end - i0 : KMPP_LANES;
  double best[KMPP_LANES];
  for (size_t l = 0; l < KMPP_LANES; l++) best[l] = picked && l < lanes ? dist_e[i0 + l] : INFINITY;
  for (int q = 0; q < count; q++) {
    const size_t c = (size_t)picked[q];
    double s2[KMPP_LANES] = {0.0};
    GPU_ONLY(PC_UNROLL_BY(KMPP_UNROLL_DIMS))
    for (size_t j = 0; j < d; j++) {
      const double cj = x[c * ps + j * ds];
      for (size_t l = 0; l < KMPP_LANES; l++) { /* a short last step re-reads its first point */
        const double diff = x[(i0 + (l < lanes ? l : 0)) * ps + j * ds] - cj;
        s2[l] += diff * diff;
      }
    }
    for (size_t l = 0; l < KMPP_LANES; l++)
      if (s2[l] < best[l]) best[l] = s2[l];
  }
  for (size_t l = 0; l < lanes; l++) {
    const size_t i = i0 + l;
    dist_e[i] = best[l];
    mass[i - begin] = !picked ? (double)w[i] : w[i] == 0.0f ? 0.0 : (double)w[i] * best[l];
  }
}

/* The end of the masses pass for block b of a team's points [begin, end): the exclusive prefix
 * sums of the team-local masses (mass[i - begin]) into the run's wheel, in order (the scan's
 * additions), and the block's total into block_sums_e[b]. */
static inline void kmpp_block_prefix(const double *mass, size_t begin, size_t end, size_t b, double *wheel_e,
                                     double *block_sums_e) {
  const size_t lo = b * PC_SCAN_BLOCK, hi = lo + PC_SCAN_BLOCK < end ? lo + PC_SCAN_BLOCK : end;
  double running = 0.0;
  GPU_ONLY(PC_UNROLL_BY(KMPP_UNROLL_TAIL))
  for (size_t i = lo; i < hi; i++) {
    const double v = mass[i - begin];
    wheel_e[i] = running;
    running += v;
  }
  block_sums_e[b] = running;
}
DEV_FUNCS_END

#endif

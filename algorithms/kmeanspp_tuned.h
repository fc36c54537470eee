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

#include <stddef.h>

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

/* Points a team of the masses pass takes (a multiple of PC_SCAN_BLOCK: each thread of the team's
 * last step sums one block of the scan). */
#ifndef KMPP_TEAM_POINTS
#define KMPP_TEAM_POINTS (8 * PC_SCAN_BLOCK)
#endif
/* Unrolling of the serial in-block sums at the end of the masses pass, on the GPU (8: the
 * distance phase of 16 chunks of 65536 points, k = 64, 0.257 -> 0.224 s on an H100). */
#ifndef KMPP_UNROLL_TAIL
#define KMPP_UNROLL_TAIL 8
#endif

DEV_FUNCS_BEGIN
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

/*
 * 02-dbscan-core-count, the reference solution: ex_within compiled for the device too, and the
 * loop over the points a PAR_FOR (each iteration writes only core[i]; count is its own).
 */
#include "exercise.h"
#include "par.h"

DEV_FUNCS_BEGIN
/* 1 when points p and q are within eps: the squared distance in double, features in order. */
static inline int ex_within(const float *x, size_t d, size_t p, size_t q, double eps2) {
  double s = 0.0;
  for (size_t j = 0; j < d; j++) {
    const double diff = (double)x[p * d + j] - (double)x[q * d + j];
    s += diff * diff;
  }
  return s <= eps2;
}
DEV_FUNCS_END

void ex_core_flags(const float *x, size_t n, size_t d, double eps2, long min_pts, int *core) {
  PAR_FOR(GPU_THREADS)
  for (size_t i = 0; i < n; i++) {
    long count = 0;
    for (size_t q = 0; q < n && count < min_pts; q++) count += ex_within(x, d, i, q, eps2); /* stops at min_pts */
    core[i] = count >= min_pts;
  }
}

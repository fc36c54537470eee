/*
 * 02-dbscan-core-count - DBSCAN's core-count loop as a PAR_FOR.
 *
 * Each iteration of the loop over the points reads the shared points and writes one flag of its
 * own, core[i]: the iterations are independent, so the loop can run in any order on any number
 * of threads, with no reduction and no atomic. What needs care is the function the loop calls:
 * in the gpu build the loop body runs on the GPU, so ex_within must be compiled for it too.
 *
 * TODO 1: put ex_within between DEV_FUNCS_BEGIN and DEV_FUNCS_END (common/par.h: `omp declare
 *   target` in gpu, nothing elsewhere), as dbscan.c does with db_within.
 * TODO 2: put one line before `for (size_t i ...`:
 *     PAR_FOR(GPU_THREADS)
 *   GPU_THREADS is thread_limit(PC_GPU_THREADS) on the GPU and nothing on the host. Why is
 *   `count` safe without a reduction?
 * Then read db_connect_union_find in algorithms/dbscan.c: its first loop is this one, over a
 * grid index instead of all points. Run: make exercise N=2
 */
#include "exercise.h"
#include "par.h"

/* 1 when points p and q are within eps: the squared distance in double, features in order. */
static inline int ex_within(const float *x, size_t d, size_t p, size_t q, double eps2) {
  double s = 0.0;
  for (size_t j = 0; j < d; j++) {
    const double diff = (double)x[p * d + j] - (double)x[q * d + j];
    s += diff * diff;
  }
  return s <= eps2;
}

void ex_core_flags(const float *x, size_t n, size_t d, double eps2, long min_pts, int *core) {
  for (size_t i = 0; i < n; i++) {
    long count = 0;
    for (size_t q = 0; q < n && count < min_pts; q++) count += ex_within(x, d, i, q, eps2); /* stops at min_pts */
    core[i] = count >= min_pts;
  }
}

/*
 * 06-dpc-rho-schedule, the reference solution: schedule(dynamic, 64) on the host. Threads take 64
 * points at a time as they become free, so the dense points are spread over all of them; 64
 * keeps the cost of taking a chunk (one atomic add on a shared counter) small beside the work of
 * 64 points. schedule(guided) does as well here. On the GPU the clause is dropped (HOST_ONLY):
 * every point is one GPU thread, and a warp's threads, neighbours in the sorted order, do about
 * the same work.
 */
#include "exercise.h"
#include "par.h"

DEV_FUNCS_BEGIN
/* The squared distance of points p and q, in double, features in order. */
static inline double ex_d2(const float *x, size_t d, size_t p, size_t q) {
  double s = 0.0;
  for (size_t j = 0; j < d; j++) {
    const double diff = (double)x[p * d + j] - (double)x[q * d + j];
    s += diff * diff;
  }
  return s;
}

/* The squared gap of points p and q along the first feature: the scan stops where it reaches dc2. */
static inline double ex_gap2(const float *x, size_t d, size_t p, size_t q) {
  const double gap = (double)x[p * d] - (double)x[q * d];
  return gap * gap;
}
DEV_FUNCS_END

void ex_rho(const float *x, size_t n, size_t d, double dc2, int *rho) {
  PAR_FOR(HOST_ONLY(schedule(dynamic, 64)) GPU_THREADS)
  for (size_t i = 0; i < n; i++) {
    int count = 1; /* the point itself */
    for (size_t q = i; q-- > 0 && ex_gap2(x, d, i, q) < dc2;) count += ex_d2(x, d, i, q) < dc2;
    for (size_t q = i + 1; q < n && ex_gap2(x, d, i, q) < dc2; q++) count += ex_d2(x, d, i, q) < dc2;
    rho[i] = count;
  }
}

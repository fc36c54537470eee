/*
 * 06-dpc-rho-schedule - choose the schedule of a loop whose iterations do uneven work.
 *
 * Each point counts the points within d_c of it, scanning outwards from itself while the first
 * feature is still within d_c. The points are sorted by that feature and are far denser at its
 * low end, so the first points scan thousands of candidates and the last ones a few hundred.
 * schedule(static) gives each thread one block of n / T consecutive points: the thread with the
 * dense block works while the others wait. The results are right; the speedup is poor. Run it as
 * it is first (make exercise N=6 VARIANT=omp) and note the speedup the harness prints.
 *
 * TODO: choose a schedule that hands out the points as the threads become free, e.g.
 *   HOST_ONLY(schedule(dynamic, 64)) or HOST_ONLY(schedule(guided)), run again, and explain the
 *   new speedup. Try a few chunk sizes (1, 64, 4096): what do small and large chunks cost?
 *   Try more threads: ARGS='--threads 8'. Why is the schedule HOST_ONLY, and what does a GPU do
 *   with uneven iterations instead? (dpc.c runs this loop over the leaves of a VP-tree, so that
 *   the 32 threads of a warp hold neighbouring points, with about the same work.)
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
  PAR_FOR(HOST_ONLY(schedule(static)) GPU_THREADS)
  for (size_t i = 0; i < n; i++) {
    int count = 1; /* the point itself */
    for (size_t q = i; q-- > 0 && ex_gap2(x, d, i, q) < dc2;) count += ex_d2(x, d, i, q) < dc2;
    for (size_t q = i + 1; q < n && ex_gap2(x, d, i, q) < dc2; q++) count += ex_d2(x, d, i, q) < dc2;
    rho[i] = count;
  }
}

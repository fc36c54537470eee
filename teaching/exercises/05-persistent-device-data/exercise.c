/*
 * 05-persistent-device-data - map the data once, not once per pass.
 *
 * In the gpu build the map clauses below copy all n points to the device and the labels there
 * and back on every pass, although the points never change and the labels are needed on the host
 * only at the end. Only the centroids, moved on the host, must go down each pass. Copies over the
 * host-device link cost far more than the pass itself: time it on a GPU.
 *
 * TODO: make the device data outlive the passes (common/par.h's rules):
 *   1. before the loop over the passes, DEV_ENTER(map(to : ...)) the points, the centroids and
 *      the labels (`omp target enter data`; nothing in seq and omp);
 *   2. in the loop, after ex_move_centroids, DEV_UPDATE(to(c[0 : (size_t)k * d])): only the centroids;
 *   3. drop the GPU_ONLY(map(...)) from the PAR_FOR: the arrays are present on the device;
 *   4. after the loop, DEV_EXIT(map(from : labels[0 : n]) map(delete : ...)) for the rest.
 * Write a "device:" comment above the DEV_ENTER listing each array and its length, as km_run in
 * algorithms/kmeans.c does. How many bytes cross the link now, per pass and in all?
 * Run: make exercise N=5 (on a GPU the harness watches whether the points stay on the device).
 */
#include "exercise.h"
#include "device.h" /* pc_reduction_teams, which GPU_REDUCTION calls */
#include "par.h"

DEV_FUNCS_BEGIN
/* The nearest of the k centroids c to the point p, ties to the lower index. */
static inline int ex_nearest(const float *p, const float *c, int k, size_t d) {
  int best = 0;
  float best_d2 = 0.0f;
  for (int q = 0; q < k; q++) {
    float d2 = 0.0f;
    for (size_t j = 0; j < d; j++) {
      const float diff = p[j] - c[(size_t)q * d + j];
      d2 += diff * diff;
    }
    if (q == 0 || d2 < best_d2) best = q, best_d2 = d2;
  }
  return best;
}
DEV_FUNCS_END

long ex_assign_passes(const float *x, size_t n, size_t d, float *c, int k, int passes, int *labels) {
  long changed = 0;
  for (int pass = 0; pass < passes; pass++) {
    ex_move_centroids(c, k, d, pass);
    PAR_FOR(reduction(+ : changed) GPU_REDUCTION(n)
                GPU_ONLY(map(to : x[0 : n * d], c[0 : (size_t)k * d]) map(tofrom : labels[0 : n])))
    for (size_t i = 0; i < n; i++) {
      const int best = ex_nearest(x + i * d, c, k, d);
      changed += labels[i] != best;
      labels[i] = best;
    }
  }
  return changed;
}

/*
 * 05-persistent-device-data, the reference solution: the points, centroids and labels are put on
 * the device once (DEV_ENTER) and taken off once (DEV_EXIT); each pass sends only the moved
 * centroids (DEV_UPDATE). Per call n*d*4 + n*4 bytes go down once, passes*k*d*4 bytes in the
 * passes, and the n*4 bytes of labels come back once.
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
  /* device: in, x[n * d] points, c[k * d] centroids (again each pass), labels[n] (-1); out, labels. */
  DEV_ENTER(map(to : x[0 : n * d], c[0 : (size_t)k * d], labels[0 : n]))
  for (int pass = 0; pass < passes; pass++) {
    ex_move_centroids(c, k, d, pass);
    DEV_UPDATE(to(c[0 : (size_t)k * d]))
    PAR_FOR(reduction(+ : changed) GPU_REDUCTION(n))
    for (size_t i = 0; i < n; i++) {
      const int best = ex_nearest(x + i * d, c, k, d);
      changed += labels[i] != best;
      labels[i] = best;
    }
  }
  DEV_EXIT(map(from : labels[0 : n]) map(delete : x[0 : n * d], c[0 : (size_t)k * d]))
  return changed;
}

/*
 * 01-sse-reduction, the reference solution: the loop over the points is a PAR_FOR with a sum
 * reduction, as km_sse in algorithms/kmeans.c.
 */
#include "exercise.h"
#include "device.h" /* pc_reduction_teams, which GPU_REDUCTION calls */
#include "par.h"

double ex_sse(const float *xt, const float *ct, const int *labels, size_t n, size_t d, int k) {
  double sse = 0.0;
  PAR_FOR(reduction(+ : sse) GPU_REDUCTION(n))
  for (size_t i = 0; i < n; i++) {
    const int c = labels[i];
    double s = 0.0;
    for (size_t j = 0; j < d; j++) {
      const double diff = (double)xt[j * n + i] - (double)ct[j * (size_t)k + (size_t)c];
      s += diff * diff;
    }
    sse += s;
  }
  return sse;
}

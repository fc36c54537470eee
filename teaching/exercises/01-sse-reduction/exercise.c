/*
 * 01-sse-reduction - make the k-means cost a parallel reduction.
 *
 * Every iteration of the loop over the points adds its point's squared distance to one shared
 * variable, sse. Run the iterations on several threads as they are and the threads race on sse:
 * two read the same old value, both add, one addition is lost. A reduction gives every thread
 * (every GPU team) a private sse, and OpenMP adds the private sums when the loop ends.
 *
 * TODO: put one line before `for (size_t i ...`:
 *     PAR_FOR(reduction(+ : sse) GPU_REDUCTION(n))
 *   PAR_FOR(...) is nothing in seq, `omp parallel for ...` in omp and `omp target teams distribute
 *   parallel for ...` in gpu (common/par.h); GPU_REDUCTION(n) sizes the GPU's teams for n
 *   iterations (device.h's pc_reduction_teams) and is nothing on the host.
 * Then read km_sse in algorithms/kmeans.c: the same loop. Run: make exercise N=1
 */
#include "exercise.h"
#include "device.h" /* pc_reduction_teams, which GPU_REDUCTION calls */
#include "par.h"

double ex_sse(const float *xt, const float *ct, const int *labels, size_t n, size_t d, int k) {
  double sse = 0.0;
  for (size_t i = 0; i < n; i++) {
    const int c = labels[i];
    double s = 0.0; /* declared in the loop body: private to each iteration, so no race here */
    for (size_t j = 0; j < d; j++) {
      const double diff = (double)xt[j * n + i] - (double)ct[j * (size_t)k + (size_t)c];
      s += diff * diff;
    }
    sse += s;
  }
  return sse;
}

/*
 * 03-kmeans-update-race, the reference solution, as km_accumulate in algorithms/kmeans.c: host
 * threads sum into private copies (an array reduction), GPU threads add with atomics. The other
 * way, PAR_ATOMIC before both updates, is right too; on a CPU it is slower (every update of a
 * shared counter takes its cache line from the other cores).
 */
#include "exercise.h"
#include "par.h"

void ex_cluster_sums(const float *xt, const int *labels, size_t n, size_t d, int k, double *sums, long *counts) {
  PAR_FOR(HOST_ONLY(reduction(+ : sums[0 : (size_t)k * d], counts[0 : k])) GPU_THREADS)
  for (size_t i = 0; i < n; i++) {
    const size_t c = (size_t)labels[i];
    for (size_t j = 0; j < d; j++) {
      GPU_ATOMIC
      sums[j * (size_t)k + c] += xt[j * n + i];
    }
    GPU_ATOMIC
    counts[c] += 1;
  }
}

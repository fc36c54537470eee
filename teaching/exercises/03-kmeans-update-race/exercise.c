/*
 * 03-kmeans-update-race - find and fix the data race in a k-means update step.
 *
 * This loop is already a PAR_FOR, and it is wrong in the omp and gpu builds: run it (make
 * exercise N=3; the harness calls it ten times) and look at the counts. Many points belong to
 * the same cluster, so several threads update sums[...] and counts[c] at the same moment; an
 * update `a += v` is a load, an add and a store, and two threads that interleave them lose one
 * of the two additions.
 *
 * TODO: make every shared update safe, in one of two ways (try both and compare the times):
 *   a. PAR_ATOMIC on the line before each `+=`: `omp atomic update` in omp and gpu.
 *   b. as km_accumulate in algorithms/kmeans.c: on the host an array reduction, each thread
 *      summing into a private copy of the arrays, and on the GPU (thousands of threads: no room
 *      for private copies) atomics:
 *        PAR_FOR(HOST_ONLY(reduction(+ : sums[0 : (size_t)k * d], counts[0 : k])) GPU_THREADS)
 *      and GPU_ATOMIC (`omp atomic update` in gpu only) on the line before each `+=`.
 * Why does the seq build give the right answer either way?
 */
#include "exercise.h"
#include "par.h"

void ex_cluster_sums(const float *xt, const int *labels, size_t n, size_t d, int k, double *sums, long *counts) {
  PAR_FOR(GPU_THREADS)
  for (size_t i = 0; i < n; i++) {
    const size_t c = (size_t)labels[i];
    for (size_t j = 0; j < d; j++) sums[j * (size_t)k + c] += xt[j * n + i];
    counts[c] += 1;
  }
}

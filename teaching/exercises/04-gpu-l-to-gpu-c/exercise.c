/*
 * 04-gpu-l-to-gpu-c - move the k-means update from the host to the device (Cao et al.'s GPU-L to
 * their GPU-C).
 *
 * GPU-L, below, computes the new centroids on the host: every iteration the n labels cross to
 * the host (DEV_UPDATE from), one host thread sums the points, and the k x d centroids cross back
 * (DEV_UPDATE to). GPU-C keeps the whole update where the data already is: nothing crosses the
 * bus, and the sums are made by thousands of GPU threads (or all the host's cores in omp).
 *
 * TODO: rewrite ex_update without any DEV_UPDATE, as three loops that run where the arrays are:
 *   1. PAR_FOR(GPU_THREADS) zeroing sums and counts;
 *   2. the sums, a PAR_FOR over the points made race-free as in exercise 3:
 *        PAR_FOR(HOST_ONLY(reduction(+ : sums[0 : (size_t)k * d], counts[0 : k])) GPU_THREADS)
 *      with GPU_ATOMIC before each `+=`;
 *   3. PAR_FOR(GPU_THREADS) over the k * d entries e of ct: ct[e] = sums[e] / counts[e % k] where
 *      that count is not 0.
 * Then compare with the two paths of km_run in algorithms/kmeans.c (`if (on_device)`), and with
 * `pragmaclust-gpu kmeans --update host|device`. Run: make exercise N=4
 */
#include "exercise.h"
#include "par.h"

#include <string.h>

void ex_update(const float *xt, int *labels, size_t n, size_t d, int k, float *ct, double *sums, long *counts) {
  const size_t kd = (size_t)k * d;
  DEV_UPDATE(from(labels[0 : n])) /* GPU-L: the labels to the host ... */
  memset(sums, 0, kd * sizeof *sums);
  memset(counts, 0, (size_t)k * sizeof *counts);
  for (size_t i = 0; i < n; i++) {
    const size_t c = (size_t)labels[i];
    for (size_t j = 0; j < d; j++) sums[j * (size_t)k + c] += xt[j * n + i];
    counts[c] += 1;
  }
  for (size_t e = 0; e < kd; e++) {
    const long count = counts[e % (size_t)k];
    if (count > 0) ct[e] = (float)(sums[e] / (double)count);
  }
  DEV_UPDATE(to(ct[0 : kd])) /* ... and the new centroids back to the device */
}

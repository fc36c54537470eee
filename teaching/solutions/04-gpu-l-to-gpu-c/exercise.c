/*
 * 04-gpu-l-to-gpu-c, the reference solution (GPU-C): the update in three loops on the device,
 * nothing copied. km_run in algorithms/kmeans.c does the same with exact fixed-point sums
 * (km_accumulate, km_finalize).
 */
#include "exercise.h"
#include "par.h"

void ex_update(const float *xt, int *labels, size_t n, size_t d, int k, float *ct, double *sums, long *counts) {
  const size_t kd = (size_t)k * d;
  PAR_FOR(GPU_THREADS)
  for (size_t e = 0; e < kd; e++) sums[e] = 0;
  PAR_FOR(GPU_THREADS)
  for (int c = 0; c < k; c++) counts[c] = 0;

  /* the one loop where the variants differ: a reduction on the host, atomics on the GPU */
  PAR_FOR(HOST_ONLY(reduction(+ : sums[0 : kd], counts[0 : k])) GPU_THREADS)
  for (size_t i = 0; i < n; i++) {
    const size_t c = (size_t)labels[i];
    for (size_t j = 0; j < d; j++) {
      GPU_ATOMIC
      sums[j * (size_t)k + c] += xt[j * n + i];
    }
    GPU_ATOMIC
    counts[c] += 1;
  }

  PAR_FOR(GPU_THREADS)
  for (size_t e = 0; e < kd; e++) {
    const long count = counts[e % (size_t)k];
    if (count > 0) ct[e] = (float)(sums[e] / (double)count);
  }
}

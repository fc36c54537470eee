/* 03-kmeans-update-race: the contract between exercise.c (yours) and harness.c. */
#ifndef EX_EXERCISE_H
#define EX_EXERCISE_H

#include <stddef.h>

/* The sums of k-means' update step (algorithms/kmeans.c, km_accumulate): for every cluster c,
 * counts[c] = the number of points i with labels[i] == c, and sums[j * k + c] = the sum of
 * feature j over them. xt is dimension-major (xt[j * n + i]). sums (k * d) and counts (k) arrive
 * zeroed. In the gpu build all five arrays are present on the device (the harness's DEV_ENTER),
 * where the loop must run. */
void ex_cluster_sums(const float *xt, const int *labels, size_t n, size_t d, int k, double *sums, long *counts);

#endif

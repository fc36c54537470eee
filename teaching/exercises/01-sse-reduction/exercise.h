/* 01-sse-reduction: the contract between exercise.c (yours) and harness.c. */
#ifndef EX_EXERCISE_H
#define EX_EXERCISE_H

#include <stddef.h>

/* The k-means cost (algorithms/kmeans.c, km_sse): the sum over the n points of the squared
 * distance to the centroid of their cluster. Points are dimension-major, xt[j * n + i] being
 * feature j of point i (consecutive GPU threads then read consecutive addresses); centroids too,
 * ct[j * k + c]; labels[i] in [0, k) is point i's cluster. In the gpu build xt, ct and labels are
 * present on the device (the harness's DEV_ENTER), where the loop must run. */
double ex_sse(const float *xt, const float *ct, const int *labels, size_t n, size_t d, int k);

#endif

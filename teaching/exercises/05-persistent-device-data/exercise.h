/* 05-persistent-device-data: the contract between exercise.c (yours) and harness.c. */
#ifndef EX_EXERCISE_H
#define EX_EXERCISE_H

#include <stddef.h>

/* The harness's look at the device between two passes (harness.c): on a GPU it notes whether the
 * points are on the device at that moment. */
void ex_between_passes(void);

/* The host's part of an iteration, between two assign passes: every centroid moves one grid step
 * (1/1024) along one feature, a different one each pass. Only the k x d centroids change. */
static inline void ex_move_centroids(float *c, int k, size_t d, int pass) {
  ex_between_passes();
  for (int q = 0; q < k; q++) c[(size_t)q * d + (size_t)(pass + q) % d] += (q % 2 ? 1.0f : -1.0f) / 1024;
}

/* `passes` assign passes of the n points x (row-major, x[i * d + j]) against the k centroids c
 * (row-major too), with ex_move_centroids(c, k, d, pass) on the host before each pass. A pass
 * gives each point the nearest centroid (squared Euclidean distance in float, features in order,
 * ties to the lower index) and counts the labels that changed. On return labels[i] is point i's
 * label after the last pass and c the centroids as last moved; returns the number of changes over
 * all passes (labels arrive as -1, so the first pass changes all n). x, c and labels are host
 * arrays: in the gpu build the function puts them on the device and takes them off again. */
long ex_assign_passes(const float *x, size_t n, size_t d, float *c, int k, int passes, int *labels);

#endif

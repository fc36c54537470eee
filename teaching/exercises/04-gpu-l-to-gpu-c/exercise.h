/* 04-gpu-l-to-gpu-c: the contract between exercise.c (yours) and harness.c. */
#ifndef EX_EXERCISE_H
#define EX_EXERCISE_H

#include <stddef.h>

/* One k-means update step from the labels that the assign step left on the device: ct[j * k + c]
 * = the mean of feature j over the points of cluster c, computed in double and stored as float;
 * ct[.., c] unchanged when c has no point. xt is dimension-major (xt[j * n + i]), ct too. In the
 * gpu build xt, labels, ct, sums (k * d) and counts (k) are present on the device (the harness's
 * DEV_ENTER, as in km_run), and the new centroids must be in the device's ct on return: the next
 * assign step reads them there. sums and counts are scratch, in any state on entry. */
void ex_update(const float *xt, int *labels, size_t n, size_t d, int k, float *ct, double *sums, long *counts);

#endif

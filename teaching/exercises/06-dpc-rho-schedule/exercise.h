/* 06-dpc-rho-schedule: the contract between exercise.c (yours) and harness.c. */
#ifndef EX_EXERCISE_H
#define EX_EXERCISE_H

#include <stddef.h>

/* Density peaks' local density with a cut-off (algorithms/dpc.c, compute_rho): rho[i] = the
 * number of the n points, point i itself included, whose squared distance from point i (in
 * double, features in order) is < dc2. x is row-major (x[i * d + j]) and sorted by its first
 * feature, so the candidates of point i are the points around i whose first feature differs from
 * point i's by less than dc. In the gpu build x and rho are present on the device. */
void ex_rho(const float *x, size_t n, size_t d, double dc2, int *rho);

#endif

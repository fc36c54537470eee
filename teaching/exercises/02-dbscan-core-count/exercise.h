/* 02-dbscan-core-count: the contract between exercise.c (yours) and harness.c. */
#ifndef EX_EXERCISE_H
#define EX_EXERCISE_H

#include <stddef.h>

/* DBSCAN's core flags (algorithms/dbscan.c, phase 2 "core"): core[i] = 1 when at least min_pts
 * of the n points, point i itself included, lie within eps of point i (squared distance, summed
 * in double over the d features, <= eps2), else 0. x is row-major (x[i * d + j]). In the gpu
 * build x and core are present on the device (the harness's DEV_ENTER), where the loop must run. */
void ex_core_flags(const float *x, size_t n, size_t d, double eps2, long min_pts, int *core);

#endif

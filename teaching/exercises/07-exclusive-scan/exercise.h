/* 07-exclusive-scan: the contract between exercise.c (yours) and harness.c. */
#ifndef EX_EXERCISE_H
#define EX_EXERCISE_H

#include <stddef.h>

/* Replaces a[0 .. n) by its exclusive prefix sums, a[i] = the sum of the values before i (a[0] =
 * 0), and returns the total of all n values, as pc_exclusive_scan in common/scan.c does. The
 * values are non-negative and their total fits a long. In the gpu build a is present on the
 * device (the harness's DEV_ENTER), and the scan must happen there: the harness reads the
 * device's copy back. Returns -1 when memory for partial sums cannot be had. */
long ex_exclusive_scan(long *a, size_t n);

#endif

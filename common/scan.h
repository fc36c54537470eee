/* scan.h - parallel prefix sums on data that lives where the PAR_FOR loops run. */
#ifndef PC_SCAN_H
#define PC_SCAN_H

#include <stddef.h>

/* Replace a[0..n) by its exclusive prefix sums and return the total, or -1 (NAN) with a
 * pc_fail message, a untouched, when memory for the partial sums cannot be allocated. In the gpu
 * variant a must be present on the device (DEV_ENTER); the scan runs there.
 * The double scan's order of additions is part of its contract (the k-means++ wheel and its
 * tests follow it): blocks of PC_SCAN_BLOCK are summed in parallel, the block sums scanned
 * serially, then added back in parallel, so the result depends only on n, never on the number of
 * threads, and has the same bits in every variant. The integer scan, of counts (non-negative:
 * -1 is its failure), is exact in any order and takes a GPU's shape instead (scan.c). */
long pc_exclusive_scan(long *a, size_t n);
/* The same over int counts whose total is below 2^31 (positions and counts of at most
 * PC_MAX_POINTS points): half the bytes of the long scan. */
long pc_exclusive_scan_int(int *a, size_t n);
double pc_exclusive_scan_f64(double *a, size_t n);

#ifndef PC_SCAN_BLOCK
#define PC_SCAN_BLOCK 256
#endif

#endif

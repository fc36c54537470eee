/* scan.h - parallel prefix sums on data that lives where the PAR_FOR loops run. */
#ifndef PC_SCAN_H
#define PC_SCAN_H

#include <stddef.h>

/* Replace a[0..n) by its exclusive prefix sums and return the total, or -1 (NAN) with a
 * pc_fail message, a untouched, when the block sums cannot be allocated. In the gpu variant a must
 * be present on the device (DEV_ENTER); the scan runs there. Blocks of PC_SCAN_BLOCK are summed
 * in parallel, the block sums scanned serially, then added back in parallel. The order of the
 * additions depends only on n, never on the number of threads, so the double version gives the
 * same bits in every variant. */
long pc_exclusive_scan(long *a, size_t n);
double pc_exclusive_scan_f64(double *a, size_t n);

#ifndef PC_SCAN_BLOCK
#define PC_SCAN_BLOCK 256
#endif

#endif

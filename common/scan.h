/* scan.h - parallel prefix sums on data that lives where the PAR_FOR loops run. */
#ifndef PC_SCAN_H
#define PC_SCAN_H

#include <stddef.h>

/* Replaces a[0..n) by its exclusive prefix sums and returns the total. In the gpu variant a
 * must be present on the device (DEV_ENTER); the scan runs there. Blocks of PC_SCAN_BLOCK are
 * summed in parallel, the block sums scanned serially, then added back in parallel. */
long pc_exclusive_scan(long *a, size_t n);

#endif

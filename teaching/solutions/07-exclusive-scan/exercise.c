/*
 * 07-exclusive-scan, the reference solution: the two-pass blocked scan of pc_exclusive_scan_f64 in
 * common/scan.c, for longs. The order of the additions depends on n and EX_BLOCK only, never on
 * the number of threads (for doubles that makes the result the same bits in every variant).
 */
#include "exercise.h"
#include "par.h"

#include <stdlib.h>

#define EX_BLOCK 4096 /* elements a thread scans in pass 1 */

long ex_exclusive_scan(long *a, size_t n) {
  const size_t blocks = (n + EX_BLOCK - 1) / EX_BLOCK;
  long *sums = malloc((blocks + 1) * sizeof *sums);
  if (!sums) return -1;
  /* device: made there, sums[blocks + 1] the blocks' totals, then their offsets and the total. */
  DEV_ENTER(map(alloc : sums[0 : blocks + 1]))
  PAR_FOR()
  for (size_t b = 0; b < blocks; b++) { /* 1. each block from 0, and its total */
    const size_t end = (b + 1) * EX_BLOCK < n ? (b + 1) * EX_BLOCK : n;
    long running = 0;
    for (size_t i = b * EX_BLOCK; i < end; i++) {
      const long v = a[i];
      a[i] = running;
      running += v;
    }
    sums[b] = running;
  }
  PAR_FOR() /* 2. one iteration: the block totals scanned serially where they live */
  for (int once = 0; once < 1; once++) {
    long running = 0;
    for (size_t b = 0; b < blocks; b++) {
      const long v = sums[b];
      sums[b] = running;
      running += v;
    }
    sums[blocks] = running;
  }
  PAR_FOR()
  for (size_t i = 0; i < n; i++) a[i] += sums[i / EX_BLOCK]; /* 3. each element, its block's offset */
  DEV_UPDATE(from(sums[blocks : 1]))
  const long total = sums[blocks];
  DEV_EXIT(map(delete : sums[0 : blocks + 1]))
  free(sums);
  return total;
}

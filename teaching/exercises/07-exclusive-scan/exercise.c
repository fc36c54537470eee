/*
 * 07-exclusive-scan - an exclusive prefix sum in PAR_FOR form.
 *
 * The loop below carries a dependence from each iteration to the next (`running`), so it cannot
 * simply become a PAR_FOR. The classic way out cuts a into blocks and makes two parallel passes:
 *   1. each block is scanned on its own, from 0, by one thread (PAR_FOR over the blocks), which
 *      also stores the block's total into sums[b];
 *   2. the few block totals are scanned serially into each block's offset, where they live: a
 *      PAR_FOR of one iteration, as scan.c does (on the GPU, one device thread; it saves copying
 *      sums to the host and back);
 *   3. every element adds its block's offset (PAR_FOR over the elements).
 * Passes 1 and 3 hold all the work and are parallel; pass 2 is n / EX_BLOCK additions.
 *
 * TODO: write ex_exclusive_scan as those three loops. Allocate sums (blocks + 1 longs, the last
 *   one for the total) with malloc; give it a device copy with DEV_ENTER(map(alloc : sums[0 :
 *   blocks + 1])) before the loops, bring the total back with DEV_UPDATE(from(sums[blocks : 1])),
 *   and release the copy with DEV_EXIT(map(delete : ...)) before free. Before you start, run the
 *   gpu build of this file: its loop scans the host's copy of a, which the harness never reads.
 * Then compare with pc_exclusive_scan_f64 in common/scan.c. Run: make exercise N=7
 */
#include "exercise.h"
#include "par.h"

#include <stdlib.h>

#define EX_BLOCK 4096 /* elements a thread scans in pass 1 */

long ex_exclusive_scan(long *a, size_t n) {
  long running = 0;
  for (size_t i = 0; i < n; i++) {
    const long v = a[i];
    a[i] = running;
    running += v;
  }
  return running;
}

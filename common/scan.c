/* scan.c - see scan.h. */
#include "scan.h"
#include "par.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>

/* One definition for each element type (the algorithm is the same; only the type differs), and
 * what it returns when its block sums cannot be allocated (`failed`).
 * device: a[n] (present, the caller's), sums[blocks + 1] the blocks' totals. */
#define PC_DEFINE_EXCLUSIVE_SCAN(name, type, failed)                                             \
  type name(type *a, size_t n) {                                                                 \
    const size_t blocks = (n + PC_SCAN_BLOCK - 1) / PC_SCAN_BLOCK;                               \
    type *sums = pc_try_alloc(blocks + 1, sizeof *sums, "scan block sums");                     \
    if (!sums) return failed;                                                                    \
    DEV_ENTER(map(alloc : sums[0 : blocks + 1]))                                                 \
    PAR_FOR()                                                                                    \
    for (size_t b = 0; b < blocks; b++) {                                                        \
      const size_t end = (b + 1) * PC_SCAN_BLOCK < n ? (b + 1) * PC_SCAN_BLOCK : n;              \
      type running = 0;                                                                          \
      for (size_t i = b * PC_SCAN_BLOCK; i < end; i++) {                                         \
        const type v = a[i];                                                                     \
        a[i] = running;                                                                          \
        running += v;                                                                            \
      }                                                                                          \
      sums[b] = running;                                                                         \
    }                                                                                            \
    PAR_FOR() /* one iteration: the few block sums are scanned serially where they live */      \
    for (int once = 0; once < 1; once++) {                                                       \
      type running = 0;                                                                          \
      for (size_t b = 0; b < blocks; b++) {                                                      \
        const type v = sums[b];                                                                  \
        sums[b] = running;                                                                       \
        running += v;                                                                            \
      }                                                                                          \
      sums[blocks] = running;                                                                    \
    }                                                                                            \
    PAR_FOR()                                                                                    \
    for (size_t i = 0; i < n; i++) a[i] += sums[i / PC_SCAN_BLOCK];                              \
    DEV_UPDATE(from(sums[blocks : 1]))                                                           \
    const type total = sums[blocks];                                                             \
    DEV_EXIT(map(delete : sums[0 : blocks + 1]))                                                 \
    free(sums);                                                                                  \
    return total;                                                                                \
  }

PC_DEFINE_EXCLUSIVE_SCAN(pc_exclusive_scan, long, -1)
PC_DEFINE_EXCLUSIVE_SCAN(pc_exclusive_scan_f64, double, NAN)

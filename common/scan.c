/* scan.c - see scan.h. */
#include "scan.h"
#include "device.h"
#include "par.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

/* The double scan, in scan.h's order. device: a[n] (present, the caller's), sums[blocks + 1] the
 * blocks' totals. */
double pc_exclusive_scan_f64(double *a, size_t n) {
  const size_t blocks = (n + PC_SCAN_BLOCK - 1) / PC_SCAN_BLOCK;
  double *sums = pc_try_alloc(blocks + 1, sizeof *sums, "scan block sums");
  if (!sums) return NAN;
  DEV_ENTER(map(alloc : sums[0 : blocks + 1]))
  PAR_FOR()
  for (size_t b = 0; b < blocks; b++) {
    const size_t end = (b + 1) * PC_SCAN_BLOCK < n ? (b + 1) * PC_SCAN_BLOCK : n;
    double running = 0;
    for (size_t i = b * PC_SCAN_BLOCK; i < end; i++) {
      const double v = a[i];
      a[i] = running;
      running += v;
    }
    sums[b] = running;
  }
  PAR_FOR() /* one iteration: the block sums are scanned serially where they live */
  for (int once = 0; once < 1; once++) {
    double running = 0;
    for (size_t b = 0; b < blocks; b++) {
      const double v = sums[b];
      sums[b] = running;
      running += v;
    }
    sums[blocks] = running;
  }
  PAR_FOR()
  for (size_t i = 0; i < n; i++) a[i] += sums[i / PC_SCAN_BLOCK];
  DEV_UPDATE(from(sums[blocks : 1]))
  const double total = sums[blocks];
  DEV_EXIT(map(delete : sums[0 : blocks + 1]))
  free(sums);
  return total;
}

/* The integer scans: one team per tile of PC_SCAN_TEAM_THREADS runs of PC_SCAN_RUN elements.
 * Integer sums are exact in any order, so they need not keep the double scan's order, and they take
 * the shape that suits a GPU: a warp reads consecutive runs (nearby in memory), and the tiles'
 * totals are scanned by the long scan, not by one thread (at 33M elements the serial scan of 131k
 * block sums alone took 7 ms on an H100). One body serves both element types (PC_COUNT_SCAN): the
 * int scan moves half the bytes of the long one, and the tiles' totals are long in both.
 * device: a[n] (present, the caller's), sums[tiles + 1] the tiles' offsets, then the total. */
#define PC_SCAN_RUN 8
#define PC_SCAN_TEAM_THREADS 256
#define PC_SCAN_TILE (PC_SCAN_RUN * PC_SCAN_TEAM_THREADS)

/* part[t] = the sum of run t of tile b (the elements of a[0 .. n) among them), for each of the
 * team's runs: part in team memory, a run a thread. */
#define PC_SCAN_TEAM_RUN_SUMS(a, n, b, part)                                                          \
  long part[PC_SCAN_TEAM_THREADS];                                                                    \
  TEAM_LOCAL(part)                                                                                    \
  TEAM_PAR_FOR(default(firstprivate) shared(part))                                                    \
  for (size_t t = 0; t < PC_SCAN_TEAM_THREADS; t++) {                                                 \
    const size_t first_ = (b) * PC_SCAN_TILE + t * PC_SCAN_RUN;                                       \
    long sum_ = 0;                                                                                    \
    for (size_t i_ = first_; i_ < first_ + PC_SCAN_RUN && i_ < (n); i_++) sum_ += (a)[i_];             \
    part[t] = sum_;                                                                                   \
  }

/* The body of pc_exclusive_scan (T long) and pc_exclusive_scan_int (T int): two parallel loops
 * over the tiles, the tiles' totals scanned between them. */
#define PC_COUNT_SCAN(T, a, n)                                                                                    \
  const size_t tiles = (n) > PC_SCAN_TILE ? ((n) + PC_SCAN_TILE - 1) / PC_SCAN_TILE : 1;                         \
  long *sums = pc_try_alloc(tiles + 1, sizeof *sums, "scan tile sums");                                         \
  if (!sums) return -1;                                                                                         \
  DEV_ENTER(map(alloc : sums[0 : tiles + 1]))                                                                   \
  long total = 0;                                                                                               \
  if (tiles > 1) { /* each tile's total, then their exclusive scan: the tiles' offsets, sums[tiles] the total */ \
    PAR_TEAMS_FOR(GPU_TEAMS(tiles < INT_MAX ? (int)tiles : INT_MAX, PC_SCAN_TEAM_THREADS))                      \
    for (size_t b = 0; b < tiles; b++) {                                                                        \
      PC_SCAN_TEAM_RUN_SUMS(a, n, b, part)                                                                      \
      long tile_sum = 0;                                                                                        \
      for (size_t t = 0; t < PC_SCAN_TEAM_THREADS; t++) tile_sum += part[t];                                    \
      sums[b] = tile_sum;                                                                                       \
      if (b == 0) sums[tiles] = 0;                                                                              \
    }                                                                                                           \
    total = pc_exclusive_scan(sums, tiles + 1);                                                                 \
  }                                                                                                             \
  if (total >= 0) { /* each tile from its offset: the runs' offsets by the team's first thread, then each run */ \
    PAR_TEAMS_FOR(GPU_TEAMS(tiles < INT_MAX ? (int)tiles : INT_MAX, PC_SCAN_TEAM_THREADS))                      \
    for (size_t b = 0; b < tiles; b++) {                                                                        \
      PC_SCAN_TEAM_RUN_SUMS(a, n, b, part)                                                                      \
      long running = tiles > 1 ? sums[b] : 0;                                                                   \
      for (size_t t = 0; t < PC_SCAN_TEAM_THREADS; t++) {                                                       \
        const long v = part[t];                                                                                 \
        part[t] = running;                                                                                      \
        running += v;                                                                                           \
      }                                                                                                         \
      if (b == tiles - 1) sums[tiles] = running;                                                                \
      TEAM_PAR_FOR(default(firstprivate) shared(part))                                                          \
      for (size_t t = 0; t < PC_SCAN_TEAM_THREADS; t++) {                                                       \
        long at = part[t];                                                                                      \
        const size_t first = b * PC_SCAN_TILE + t * PC_SCAN_RUN;                                                \
        for (size_t i = first; i < first + PC_SCAN_RUN && i < (n); i++) {                                       \
          const long v = (a)[i];                                                                                \
          (a)[i] = (T)at;                                                                                       \
          at += v;                                                                                              \
        }                                                                                                       \
      }                                                                                                         \
    }                                                                                                           \
    DEV_UPDATE(from(sums[tiles : 1]))                                                                           \
    total = sums[tiles];                                                                                        \
  }                                                                                                             \
  DEV_EXIT(map(delete : sums[0 : tiles + 1]))                                                                   \
  free(sums);                                                                                                   \
  return total

long pc_exclusive_scan(long *a, size_t n) { PC_COUNT_SCAN(long, a, n); }

long pc_exclusive_scan_int(int *a, size_t n) { PC_COUNT_SCAN(int, a, n); }

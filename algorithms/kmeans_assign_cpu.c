/*
 * kmeans_assign_cpu.c - k-means' tuned assign kernel for the host variants, seq and omp (the
 * seam: kmeans_tuned.h; the portable assign step is kmeans.c's). Plain C, shaped for AVX2 and
 * the caches of a CPU as a BLAS GEMM is: an item of 6 points x 16 centroids (12 AVX2
 * accumulators) in a function of its own, and around it a block of points copied into a
 * contiguous buffer feature chunk by feature chunk, each chunk of a centroid tile serving all the
 * block's items from L1. Sums run over the features in order, so the labels are the portable
 * loop's.
 */
#include "kmeans_tuned.h"
#include "knobs.h"
#include "par.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Tuning knobs: settings of speed, not of results; -DNAME=value (make KNOBS='-DNAME=value')
 * overrides one, `info` lists them and a report names those changed (knobs.h). */
/* points per register tile (km_host_kernel; KM_TILE centroids across) */
#define KM_ROWS_DEFAULT 6
#ifndef KM_ROWS
#define KM_ROWS KM_ROWS_DEFAULT
#endif
PC_KNOB(KM_ROWS)
/* work items per cache block of points (km_assign_host) */
#define KM_HOST_ITEMS_DEFAULT 8
#ifndef KM_HOST_ITEMS
#define KM_HOST_ITEMS KM_HOST_ITEMS_DEFAULT
#endif
PC_KNOB(KM_HOST_ITEMS)
/* features per copied chunk of a block */
#define KM_HOST_DEPTH_DEFAULT 128
#ifndef KM_HOST_DEPTH
#define KM_HOST_DEPTH KM_HOST_DEPTH_DEFAULT
#endif
PC_KNOB(KM_HOST_DEPTH)
/* centroid tiles whose partial sums a block keeps in L2 */
#define KM_HOST_RANGE_DEFAULT 32
#ifndef KM_HOST_RANGE
#define KM_HOST_RANGE KM_HOST_RANGE_DEFAULT
#endif
PC_KNOB(KM_HOST_RANGE)

/* Register blocking (km_host_kernel): a work item compares KM_ROWS consecutive points with a
 * tile of KM_TILE centroids at a time, holding KM_ROWS x KM_TILE partial sums in registers
 * (6 x 16 = 12 AVX2 accumulators): per feature it loads KM_ROWS point values and KM_TILE centroid
 * values for KM_ROWS * KM_TILE multiply-adds. */
/* Cache blocking of the CPU assign step (km_assign_host), after the loops around a BLAS GEMM's
 * micro-kernel: a block of KM_HOST_ITEMS items (48 points) is copied, KM_HOST_DEPTH features at
 * a time, into a buffer laid out as the micro-kernel reads it (6 KB per item for 256
 * features); the same features of one centroid tile (16 KB) then serve the block's 8 items from
 * L1. Partial sums of the block against KM_HOST_RANGE tiles (48 x 512 floats, 96 KB, L2) carry
 * over from one feature chunk to the next. Without this, at d = 1000 every feature of an item's
 * points and of a tile sits on its own 4 KB page (stride n or kpad floats), and each item
 * streamed all k x d centroids from L3. */

/* The CPU's micro-kernel, for KM_ROWS points (xq[j * xld + r], `depth` features) and
 * `ntiles` consecutive tiles (tile u at tiles + u * tstride, tile[j * KM_TILE + c]): each tile's
 * sums continue from sums[r * ld + u * KM_TILE + c] (from 0 when `first`). Unless `last`, they
 * go back to sums; after the last chunk they become distances (direct: sum + cn[c]; dot:
 * cn[c] - 2 sum, cn from the first tile's centroid c0 on) that update the rows' best per lane,
 * best[r * KM_TILE + c] and its centroid best_c (compare and blend, no branches). Called, not
 * inlined (km_host_dot, km_host_direct): in a function of its own clang keeps the accumulators
 * in 12 AVX2 registers; inlined into km_assign_host they were spilled on every feature. */
static inline __attribute__((always_inline)) void
km_host_kernel(const float *restrict xq, size_t xld, const float *restrict tiles, size_t tstride, int ntiles, size_t depth,
               float *restrict sums, size_t ld, const int first, const int last, const float *restrict cn, int c0,
               float *restrict best, int *restrict best_c, const int direct) {
  for (int u = 0; u < ntiles; u++) {
    const float *tile = tiles + (size_t)u * tstride;
    float *su = sums + (size_t)u * KM_TILE;
    float acc[KM_ROWS][KM_TILE];
    for (int r = 0; r < KM_ROWS; r++)
      for (int c = 0; c < KM_TILE; c++) acc[r][c] = first ? 0.0f : su[(size_t)r * ld + c];
    for (size_t j = 0; j < depth; j++) {
      const float *cj = __builtin_assume_aligned(tile + j * KM_TILE, 64);
      float xv[KM_ROWS];
      for (int r = 0; r < KM_ROWS; r++) xv[r] = xq[j * xld + r];
      for (int r = 0; r < KM_ROWS; r++)
        for (int c = 0; c < KM_TILE; c++) {
          if (direct) {
            const float diff = xv[r] - cj[c];
            acc[r][c] += diff * diff;
          } else {
            acc[r][c] += xv[r] * cj[c];
          }
        }
    }
    if (!last) {
      for (int r = 0; r < KM_ROWS; r++)
        for (int c = 0; c < KM_TILE; c++) su[(size_t)r * ld + c] = acc[r][c];
      continue;
    }
    const int cu = c0 + u * KM_TILE;
    for (int r = 0; r < KM_ROWS; r++)
      for (int c = 0; c < KM_TILE; c++) { /* the index by a mask, not ?:, so that clang emits blends */
        const float dist = direct ? acc[r][c] + cn[cu + c] : cn[cu + c] - 2.0f * acc[r][c];
        const int better = dist < best[r * KM_TILE + c];
        best[r * KM_TILE + c] = better ? dist : best[r * KM_TILE + c];
        best_c[r * KM_TILE + c] += -better & (cu + c - best_c[r * KM_TILE + c]);
      }
  }
}
#define KM_HOST_KERNEL_ARGS                                                                                          \
  const float *restrict xq, size_t xld, const float *restrict tiles, size_t tstride, int ntiles, size_t depth,      \
      float *restrict sums, size_t ld, int first, int last, const float *restrict cn, int c0, float *restrict best,   \
      int *restrict best_c
static __attribute__((noinline)) void km_host_dot(KM_HOST_KERNEL_ARGS) {
  km_host_kernel(xq, xld, tiles, tstride, ntiles, depth, sums, ld, first, last, cn, c0, best, best_c, 0);
}
static __attribute__((noinline)) void km_host_direct(KM_HOST_KERNEL_ARGS) {
  km_host_kernel(xq, xld, tiles, tstride, ntiles, depth, sums, ld, first, last, cn, c0, best, best_c, 1);
}

/* The CPU's tuned assign step (see KM_HOST_ITEMS): every point's nearest centroid among the
 * tiles (tile by tile, km_tile_at), by the direct form sum((x - c)^2) + cn[c] or the dot form
 * cn[c] - 2 x.cs_c; returns how many labels changed. Per block of KM_HOST_ITEMS items of
 * KM_ROWS consecutive points, per range of KM_HOST_RANGE tiles, per chunk of KM_HOST_DEPTH
 * features: copy the chunk of the block's points (xp[feature][point]), then for each item run
 * the 6 x 16 micro-kernel over the chunk and the range's tiles, its sums carried in
 * part[] from one chunk to the next (km_host_kernel). Each point's sum for a centroid is still one float chain
 * over j = 0..d-1, so the distances, and the labels, are the unblocked loop's. After the last
 * chunk each item keeps a best per lane of the tile (KM_ROWS x KM_TILE values and indices:
 * compare-and-blend SIMD, no branches), reduced once at the end (ties to the lowest index).
 * Padding centroids never win (cn = +inf). */
static long km_assign_host(const float *restrict xt, const float *restrict tiles, const float *restrict cn,
                           int *restrict labels, size_t n, size_t d, int kpad, int direct) {
  const size_t block = (size_t)KM_HOST_ITEMS * KM_ROWS, blocks = (n + block - 1) / block;
  const int ntiles = kpad / KM_TILE;
  long changed = 0;
  PAR_FOR(reduction(+ : changed) HOST_ONLY(schedule(dynamic, 1)))
  for (size_t b = 0; b < blocks; b++) {
    float xp[KM_HOST_DEPTH][KM_HOST_ITEMS * KM_ROWS];
    float part[KM_HOST_ITEMS][KM_ROWS][KM_HOST_RANGE * KM_TILE];
    float lane_best[KM_HOST_ITEMS][KM_ROWS][KM_TILE];
    int lane_c[KM_HOST_ITEMS][KM_ROWS][KM_TILE];
    const size_t first = b * block, have = n - first < block ? n - first : block, left = (have + KM_ROWS - 1) / KM_ROWS;
    const int items = left < KM_HOST_ITEMS ? (int)left : KM_HOST_ITEMS; /* the last block may hold fewer */
    for (int q = 0; q < items; q++)
      for (int r = 0; r < KM_ROWS; r++)
        for (int c = 0; c < KM_TILE; c++) {
          lane_best[q][r][c] = INFINITY;
          lane_c[q][r][c] = c;
        }
    for (int t0 = 0; t0 < ntiles; t0 += KM_HOST_RANGE) {
      const int t1 = t0 + KM_HOST_RANGE < ntiles ? t0 + KM_HOST_RANGE : ntiles;
      for (size_t j0 = 0; j0 < d; j0 += KM_HOST_DEPTH) {
        const size_t depth = d - j0 < KM_HOST_DEPTH ? d - j0 : KM_HOST_DEPTH;
        const int first_chunk = j0 == 0, last_chunk = j0 + depth == d;
        for (size_t j = 0; j < depth; j++) { /* one feature of the block's points: a contiguous copy */
          const float *row = xt + (j0 + j) * n + first;
          memcpy(xp[j], row, have * sizeof(float));
          for (size_t i = have; i < (size_t)items * KM_ROWS; i++) xp[j][i] = row[have - 1]; /* the last point again, written nowhere */
        }
        for (int q = 0; q < items; q++) /* the range's chunk of tiles (KM_HOST_RANGE x 8 KB) stays in L2 */
          (direct ? km_host_direct : km_host_dot)(&xp[0][q * KM_ROWS], KM_HOST_ITEMS * KM_ROWS,
                                                   tiles + ((size_t)t0 * d + j0) * KM_TILE, d * KM_TILE,
                                                   t1 - t0, depth, &part[q][0][0], KM_HOST_RANGE * KM_TILE, first_chunk,
                                                   last_chunk, cn, t0 * KM_TILE, &lane_best[q][0][0], &lane_c[q][0][0]);
      }
    }
    for (int q = 0; q < items; q++)
      for (int r = 0; r < KM_ROWS; r++) {
        const size_t i = first + (size_t)(q * KM_ROWS + r);
        if (i >= n) break;
        float best = lane_best[q][r][0];
        int best_c = lane_c[q][r][0];
        for (int c = 1; c < KM_TILE; c++)
          if (lane_best[q][r][c] < best || (lane_best[q][r][c] == best && lane_c[q][r][c] < best_c)) {
            best = lane_best[q][r][c];
            best_c = lane_c[q][r][c];
          }
        changed += labels[i] != best_c;
        labels[i] = best_c;
      }
  }
  return changed;
}

/* ---- the seam (kmeans_tuned.h) ------------------------------------------------------------- */

struct km_tuned_run {
  int unused; /* the CPU kernel keeps no state between steps */
};
static km_tuned_run km_cpu_run;

static km_tuned_run *km_cpu_open(size_t n, size_t d, int kpad, int tensor, int *applies, int *splits) {
  (void)n, (void)d, (void)kpad;
  *applies = !tensor;
  *splits = 1;
  return tensor ? NULL : &km_cpu_run;
}

static long km_cpu_assign(km_tuned_run *run, const km_assign_job *j) {
  (void)run;
  return km_assign_host(j->xt, j->cs, j->cn, j->labels, j->n, j->d, j->kpad, j->direct);
}

static void km_cpu_close(km_tuned_run *run) { (void)run; }

static const km_tuned_kernels km_cpu_kernels = {
    "cpu: cache-blocked 6 x 16 register tiles", 0, 0, 0, NULL, km_cpu_open, NULL, km_cpu_assign, NULL, NULL, NULL,
    NULL, km_cpu_close};

const km_tuned_kernels *km_tuned(void) { return &km_cpu_kernels; }

/*
 * kmeans.c - Lloyd's k-means in one source for three variants (see common/par.h).
 *
 * Per iteration:
 *  1. assign: each point finds its nearest centroid (squared Euclidean distance, ties to
 *     the lowest index) and counts whether its label changed. By default the distance is
 *     sum((x - c)^2); with KM_DISTANCE_DOT (--distance dot) it is |c|^2 - 2 x.c (dropping
 *     |x|^2, the same for every centroid), one multiply-add per feature, on centroids shifted
 *     by their initial mean (km_prepare); --distance gemm and gemm-tf32 (gpu variant) take the
 *     dot products of that form from cuBLAS instead (kmeans_gemm.c), --distance dot-3xtf32 (gpu
 *     variant on a GPU) from the TF32 tensor cores in km_assign_mma. The CPU and the GPU take
 *     different loops here (the one exception in this file), each blocked for its memory:
 *     - GPU (km_assign_tiled): a GEMM-style kernel. A team of 128 threads takes 128 points
 *       against 64 centroids at a time; chunks of 8 features of both are copied into team-local
 *       memory (cp.async, double-buffered: the next chunk lands while this one is used), and
 *       each thread accumulates 8 points x 8 centroids in registers, then the threads of a row
 *       compare their candidates by warp shuffles. When n is too small to fill the GPU, the
 *       centroid blocks are split into ranges whose winners a second pass compares.
 *     - CPU (km_assign_host): an item of 6 points x 16 centroids (12 AVX2 accumulators), with
 *       the loops around it blocked for the caches as a BLAS GEMM is: a block of points is
 *       copied into a contiguous buffer feature chunk by feature chunk, and each chunk of a
 *       centroid tile serves all the block's items from L1.
 *     Both sum each distance over the features in order, so every variant finds the same labels.
 *  2. update: per-cluster sums and counts, then new centroid = sum / count (km_plan_update
 *     chooses how). The sums are exact 64-bit fixed point (km_to_fixed: each value times a
 *     power of two per dimension), so every variant gets the same centroids from the same
 *     labels, and they stay accurate for n = 10^7. Where k * (d + 1) sums fit in 32 KB, each
 *     team (GPU) or thread (CPU) sums its share of the points in team-local memory and adds it
 *     to the global sums once. Where only k fit, the sums are taken by dimension: a team
 *     (thread) takes one dimension of a range of the points (the counts are one more
 *     dimension), reads it in order (coalesced on the GPU), sums it into k team-local sums and
 *     stores them into the global sums (adds them, where a dimension has several ranges).
 *     Beyond that (k > 4096) CPU variants privatise the sums through an OpenMP array reduction
 *     and GPU threads add with atomics into several copies of the sums (fewer collisions on one
 *     address), which are then added up per centroid.
 * Layout: points are dimension-major (xt[j*n + i]) so that the threads of a GPU warp read
 * consecutive addresses; centroids are dimension-major too, padded to a whole number of
 * tiles (ct[j*kpad + c]). The assign step's copy of the centroids (cs, km_tile_at) is
 * dimension-major on the GPU and tile by tile on the CPU (a tile's d x 16 values contiguous).
 * Device data (gpu variant): xt, ct, labels and the sums are mapped once per run
 * (DEV_ENTER) and stay on the GPU across iterations; per iteration only the number of
 * changed labels comes back (one count). With KM_UPDATE_HOST (Cao's GPU-L) the
 * labels go to the host, the update runs there, and the centroids go back.
 */
#include "kmeans.h"
#include "device.h"
#include "kmeans_gemm.h"
#include "par.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if !defined(PC_VARIANT_SEQ)
#include <omp.h>
#endif
#if defined(PC_VARIANT_GPU)
#include <ompx.h>
#endif

const char *const km_phase_names[KM_NPHASES] = {"h2d", "assign", "update", "d2h"};
const char *const km_distance_names[KM_NDISTANCES] = {"direct", "dot", "gemm", "gemm-tf32", "dot-3xtf32"};

/* Register blocking of the CPU assign step (km_assign_host): a work item compares KM_ROWS
 * consecutive points with a tile of KM_TILE centroids at a time, holding KM_ROWS x KM_TILE
 * partial sums in registers (6 x 16 = 12 AVX2 accumulators): per feature it loads KM_ROWS point
 * values and KM_TILE centroid values for KM_ROWS * KM_TILE multiply-adds. Centroids are padded
 * to a whole number of tiles (kpad) in every variant. */
#ifndef KM_ROWS
#define KM_ROWS 6
#endif
#ifndef KM_TILE
#define KM_TILE 16
#endif
/* Full unrolling keeps the GPU's per-thread arrays in registers (the CPU's loops leave it to
 * clang, which vectorises them better). */
#if defined(PC_VARIANT_GPU)
#define KM_UNROLL _Pragma("unroll")
#else
#define KM_UNROLL
#endif
#define KM_NO_UNROLL _Pragma("clang loop unroll(disable)") /* keeps a loop of unrolled bodies within the registers */
/* Cache blocking of the CPU assign step (km_assign_host), after the loops around a BLAS GEMM's
 * micro-kernel: a block of KM_HOST_ITEMS items (48 points) is copied, KM_HOST_DEPTH features at
 * a time, into a buffer laid out as the micro-kernel reads it (6 KB per item for 256
 * features); the same features of one centroid tile (16 KB) then serve the block's 8 items from
 * L1. Partial sums of the block against KM_HOST_RANGE tiles (48 x 512 floats, 96 KB, L2) carry
 * over from one feature chunk to the next. Without this, at d = 1000 every feature of an item's
 * points and of a tile sits on its own 4 KB page (stride n or kpad floats), and each item
 * streamed all k x d centroids from L3. */
#ifndef KM_HOST_ITEMS
#define KM_HOST_ITEMS 8
#endif
#ifndef KM_HOST_DEPTH
#define KM_HOST_DEPTH 128
#endif
#ifndef KM_HOST_RANGE
#define KM_HOST_RANGE 32
#endif
/* Team-tiled assign step (GPU, km_assign_tiled): a team of KM_BLOCK_THREADS threads takes a
 * block of KM_BLOCK_POINTS points against blocks of KM_BLOCK_CENTROIDS centroids, as a GEMM
 * kernel does: per chunk of KM_BLOCK_DEPTH features the team stages the block's points and
 * centroids in team-local memory, and each thread multiplies 8 points by 8 centroids from there
 * into 64 register sums. A point value fetched from global memory serves KM_BLOCK_CENTROIDS
 * centroids, a centroid value KM_BLOCK_POINTS points. Teams of 128 threads (128 x 64) at 160
 * registers each let three teams share an SM, so that one team's barriers overlap the others'
 * multiply-adds; 64 centroids a block waste nothing at k = 64 (H100 measurements and the
 * shapes tried: see the README). KM_GPU_TEAMS: with fewer point blocks than this, the centroid
 * blocks are split among several teams (a second pass keeps the best). */
#ifndef KM_BLOCK_POINTS
#define KM_BLOCK_POINTS 128
#endif
#ifndef KM_BLOCK_CENTROIDS
#define KM_BLOCK_CENTROIDS 64
#endif
#define KM_THREAD_POINTS 8
#define KM_THREAD_CENTROIDS 8
#define KM_BLOCK_ROWS (KM_BLOCK_POINTS / KM_THREAD_POINTS)       /* threads down the points */
#define KM_BLOCK_COLS (KM_BLOCK_CENTROIDS / KM_THREAD_CENTROIDS) /* threads across the centroids */
#define KM_BLOCK_THREADS (KM_BLOCK_ROWS * KM_BLOCK_COLS)
#ifndef KM_BLOCK_DEPTH
#define KM_BLOCK_DEPTH 8
#endif
#ifndef KM_GPU_TEAMS
#define KM_GPU_TEAMS 1056 /* 8 per SM of an H100 */
#endif

void km_transpose(const float *x, size_t n, size_t d, float *xt) {
  HOST_PAR_FOR(schedule(static))
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < d; j++) xt[j * n + i] = x[i * d + j];
}

/* How the GPU's assign step is cut (km_assign_tiled): `groups` blocks of KM_BLOCK_POINTS
 * points, `tiles` blocks of KM_BLOCK_CENTROIDS centroids in `splits` ranges of
 * `tiles_per_split`. The CPU's takes all centroids at once (splits = 1). */
typedef struct {
  size_t groups;
  int tiles, tiles_per_split, splits;
} km_layout;

static km_layout km_plan(size_t n, int kpad) {
  km_layout l = {0, 1, 1, 1};
#if defined(PC_VARIANT_GPU)
  l.groups = (n + KM_BLOCK_POINTS - 1) / KM_BLOCK_POINTS;
  l.tiles = (kpad + KM_BLOCK_CENTROIDS - 1) / KM_BLOCK_CENTROIDS;
  if (l.groups < KM_GPU_TEAMS && l.tiles > 1) {
    const size_t want = (KM_GPU_TEAMS + l.groups - 1) / l.groups;
    l.splits = want < (size_t)l.tiles ? (int)want : l.tiles;
  }
  l.tiles_per_split = (l.tiles + l.splits - 1) / l.splits;
  l.splits = (l.tiles + l.tiles_per_split - 1) / l.tiles_per_split;
#else
  (void)n, (void)kpad;
#endif
  return l;
}

DEV_FUNCS_BEGIN
/* Where feature j of centroid c sits in the assign step's tiles (cs): dimension-major on the
 * GPU (a team copies one feature of a block of centroids from consecutive addresses), tile by
 * tile on the CPU, so that the blocked loop reads a tile's features in order from contiguous
 * memory. */
static inline size_t km_tile_at(int c, size_t j, size_t d, int kpad) {
#if defined(PC_VARIANT_GPU)
  (void)d;
  return j * (size_t)kpad + (size_t)c;
#else
  (void)kpad;
  return ((size_t)(c / KM_TILE) * d + j) * KM_TILE + (size_t)(c % KM_TILE);
#endif
}
DEV_FUNCS_END

DEV_FUNCS_BEGIN
/* x as a TF32 head and tail for the tensor-core assign step (km_assign_mma): hi = x rounded to
 * 10 mantissa bits (to nearest, ties away from zero: add half of the dropped part, then clear
 * it), lo = x - hi (exact in float32) rounded likewise, so that hi + lo keeps about 23 of x's
 * 24 bits. Bit operations and a subtraction: the device's cvt.rna.tf32.f32 ran on the ALU pipe
 * as several instructions, which then bounded the kernel (H100: ALU pipe 58% busy, tensor pipe
 * 34%); clearing the bits without rounding was faster still but lost two bits, enough to change
 * labels of data far from the origin. */
static inline unsigned km_float_bits(float x) {
  unsigned u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static inline float km_bits_float(unsigned u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
static inline void km_tf32_split(float x, unsigned *hi, unsigned *lo) {
  const unsigned head = (km_float_bits(x) + 0x1000u) & 0xffffe000u;
  *hi = head;
  *lo = (km_float_bits(x - km_bits_float(head)) + 0x1000u) & 0xffffe000u;
}
DEV_FUNCS_END

#if defined(PC_VARIANT_GPU) /* the CPU's assign step is km_assign_host, further down */
/* The second pass of a split assign step: each point's best of the `splits` candidates in
 * part_d / part_c (the lowest split on ties, whose centroid indices are lower) becomes its
 * label; returns how many labels changed. */
static long km_merge_splits(int *restrict labels, const float *restrict part_d, const int *restrict part_c, size_t n,
                            int splits) {
  long changed = 0;
  PAR_FOR(reduction(+ : changed) GPU_ONLY(num_teams(pc_reduction_teams(n)) thread_limit(PC_GPU_THREADS)))
  for (size_t i = 0; i < n; i++) {
    float best = part_d[i];
    int best_c = part_c[i];
    for (int s = 1; s < splits; s++)
      if (part_d[(size_t)s * n + i] < best) {
        best = part_d[(size_t)s * n + i];
        best_c = part_c[(size_t)s * n + i];
      }
    changed += labels[i] != best_c;
    labels[i] = best_c;
  }
  return changed;
}

DEV_FUNCS_BEGIN
/* Point i's candidate from centroid range s: its label (one range; counts a change) or its
 * entry in part_d / part_c (several ranges, merged by km_merge_splits). */
static inline void km_keep(int *restrict labels, float *restrict part_d, int *restrict part_c, size_t n, size_t i,
                           int s, int splits, float best, int best_c, long *changed) {
  if (splits == 1) {
    *changed += labels[i] != best_c;
    labels[i] = best_c;
  } else {
    part_d[(size_t)s * n + i] = best;
    part_c[(size_t)s * n + i] = best_c;
  }
}
DEV_FUNCS_END

/* Point i's candidate in an assign kernel, held by `width` neighbouring threads (best, centroid
 * best_c; `first`: this thread is the first of them): halving shuffles leave the best, ties to
 * the lowest index, in the first thread, which keeps it (km_keep) when i < n. Returns 1 when
 * that changed the label, else 0. */
static inline __attribute__((always_inline)) int km_keep_lanes_best(int *restrict labels, float *restrict part_d,
                                                                    int *restrict part_c, size_t n, size_t i, int s,
                                                                    int splits, float best, int best_c,
                                                                    const int width, int first) {
  KM_UNROLL for (int step = width / 2; step > 0; step /= 2) {
    const float other = ompx_shfl_down_sync_f(~0ull, best, (unsigned)step, width);
    const int other_c = ompx_shfl_down_sync_i(~0ull, best_c, (unsigned)step, width);
    if (other < best || (other == best && other_c < best_c)) {
      best = other;
      best_c = other_c;
    }
  }
  long changed = 0;
  if (first && i < n) km_keep(labels, part_d, part_c, n, i, s, splits, best, best_c, &changed);
  return (int)changed;
}

/* Adds the changed labels of thread tid's warp (`mine` in each thread) to *changed: a warp sum
 * by shuffles, then one atomic from the warp's first thread. */
static inline __attribute__((always_inline)) void km_add_warp_changes(long *changed, int mine, int tid) {
  for (unsigned step = 16; step > 0; step /= 2) mine += ompx_shfl_down_sync_i(~0ull, mine, step, 32);
  if (tid % 32 == 0 && mine) {
#pragma omp atomic update
    *changed += mine;
  }
}

/* Where thread (ty, tx)'s row r / column c of a block lies: two runs of four, half a block
 * apart, so that the 16 threads across a row read consecutive 16-byte pieces of team memory
 * (no bank conflicts) and a thread's four values are one 16-byte load. */
#define KM_BLOCK_ROW(ty, r) (((r) / 4) * (KM_BLOCK_POINTS / 2) + (ty) * 4 + (r) % 4)
#define KM_BLOCK_COL(tx, c) (((c) / 4) * (KM_BLOCK_CENTROIDS / 2) + (tx) * 4 + (c) % 4)

/* Staging without registers: cp.async (sm_80 and later) copies a global value into team
 * memory while the thread goes on; km_staged_but_last / km_staged_all wait until all but the
 * latest / all of this thread's groups of copies have landed. The host pass of the kernel (never
 * run, see km_assign_tiled) copies directly. */
static inline __attribute__((always_inline)) void km_copy_async(float *team_dst, const float *src, int valid) {
#if defined(__NVPTX__)
  __nvvm_cp_async_ca_shared_global_4((__attribute__((address_space(3))) void *)team_dst,
                                     (__attribute__((address_space(1))) const void *)src, valid ? 4 : 0);
#else
  *team_dst = valid ? *src : 0.0f;
#endif
}
/* km_copy_async for four consecutive floats, 16-byte aligned at both ends. */
static inline __attribute__((always_inline)) void km_copy_async4(float *team_dst, const float *src, int valid) {
#if defined(__NVPTX__)
  __nvvm_cp_async_cg_shared_global_16((__attribute__((address_space(3))) void *)team_dst,
                                      (__attribute__((address_space(1))) const void *)src, valid ? 16 : 0);
#else
  for (int e = 0; e < 4; e++) team_dst[e] = valid ? src[e] : 0.0f;
#endif
}
static inline __attribute__((always_inline)) void km_staged_but_last(void) {
#if defined(__NVPTX__)
  __nvvm_cp_async_wait_group(1);
#endif
}
static inline __attribute__((always_inline)) void km_staged_all(void) {
#if defined(__NVPTX__)
  __nvvm_cp_async_wait_group(0);
#endif
}

/* Starts thread tid's copies of the chunk of `depth` features j0.. of a tiled block (points from
 * i0, centroids from c0) into xs and cs, as one group: row r of xs (xs[r * xs_row ..]) gets feature
 * j0 + r of points i0 .., row r of cs feature j0 + r of centroids c0 ..; thread tid copies
 * element tid % KM_BLOCK_POINTS of rows tid / KM_BLOCK_POINTS, + KM_BLOCK_THREADS /
 * KM_BLOCK_POINTS, ... (consecutive threads read consecutive addresses; as the threads are a
 * multiple of the points, a thread always copies the same point), centroids likewise; 0 past
 * the ends. Rows longer than a block (xs_row > KM_BLOCK_POINTS) move the tensor-core kernel's
 * reads of a column onto different banks; that kernel also has the centroids' TF32 tails
 * (tiles_lo, into cs_lo like cs; NULL for the other). */
static inline __attribute__((always_inline)) void
km_stage_rows(const float *restrict xt, const float *restrict tiles, const float *restrict tiles_lo, size_t n, size_t d,
              int kpad, size_t i0, int c0, size_t j0, int depth, int tid, float *xs, int xs_row, float *cs,
              float *cs_lo, int cs_row) {
  const size_t i = i0 + (size_t)(tid % KM_BLOCK_POINTS);
  KM_NO_UNROLL for (int u = 0; u < depth * KM_BLOCK_POINTS / KM_BLOCK_THREADS; u++) {
    const int r = tid / KM_BLOCK_POINTS + u * (KM_BLOCK_THREADS / KM_BLOCK_POINTS);
    const size_t j = j0 + (size_t)r;
    const int valid = j < d && i < n;
    km_copy_async(xs + r * xs_row + tid % KM_BLOCK_POINTS, valid ? xt + j * n + i : xt, valid);
  }
  /* centroids four at a time where the arrays start on 16 bytes (the device's allocations do):
   * rows are then whole 16-byte pieces (kpad and cs_row are multiples of 4), and a piece lies
   * wholly below kpad or wholly above it; else one at a time */
  const int pieces = ((uintptr_t)tiles | (uintptr_t)(tiles_lo ? tiles_lo : tiles)) % 16 == 0;
  const int per_row = pieces ? KM_BLOCK_CENTROIDS / 4 : KM_BLOCK_CENTROIDS, width = pieces ? 4 : 1;
  const int col = c0 + width * (tid % per_row);
  KM_NO_UNROLL for (int u = 0; u < depth * per_row / KM_BLOCK_THREADS; u++) {
    const int r = tid / per_row + u * (KM_BLOCK_THREADS / per_row);
    const size_t j = j0 + (size_t)r, at = j * (size_t)kpad + (size_t)col;
    const int valid = j < d && col < kpad;
    float *dst = cs + r * cs_row + (col - c0), *dst_lo = cs_lo + r * cs_row + (col - c0);
    if (pieces) {
      km_copy_async4(dst, valid ? tiles + at : tiles, valid);
      if (tiles_lo) km_copy_async4(dst_lo, valid ? tiles_lo + at : tiles_lo, valid);
    } else {
      km_copy_async(dst, valid ? tiles + at : tiles, valid);
      if (tiles_lo) km_copy_async(dst_lo, valid ? tiles_lo + at : tiles_lo, valid);
    }
  }
#if defined(__NVPTX__)
  __nvvm_cp_async_commit_group();
#endif
}
_Static_assert(KM_BLOCK_THREADS % KM_BLOCK_POINTS == 0 && KM_BLOCK_THREADS % (KM_BLOCK_CENTROIDS / 4) == 0 &&
                   KM_TILE % 4 == 0,
               "km_stage_rows: a thread copies one point and one piece of four centroids");

/* km_stage_rows for km_tiled_block: KM_BLOCK_DEPTH rows of a block's width, no tails. */
static inline __attribute__((always_inline)) void km_stage_chunk(const float *restrict xt, const float *restrict tiles,
                                                                 size_t n, size_t d, int kpad, size_t i0, int c0,
                                                                 size_t j0, int tid, float *xs, float *cs) {
  km_stage_rows(xt, tiles, NULL, n, d, kpad, i0, c0, j0, KM_BLOCK_DEPTH, tid, xs, KM_BLOCK_POINTS, cs, NULL,
                KM_BLOCK_CENTROIDS);
}

/* One team's share of km_assign_tiled, by thread `tid` of KM_BLOCK_THREADS: point block
 * b / splits against the centroid blocks of range s = b % splits, through the team memory xs
 * and cs. Thread (ty, tx) keeps the best of its 8 columns for each of its 8 points
 * over the range's blocks (ties to the lowest index: its columns come in increasing order); then
 * the candidates of each point are compared across its row of threads. Returns how many labels
 * this thread changed. `direct` is a constant after inlining. */
static inline __attribute__((always_inline)) int
km_tiled_block(const float *restrict xt, const float *restrict tiles, const float *restrict cn, int *restrict labels,
               float *restrict part_d, int *restrict part_c, size_t n, size_t d, int kpad, km_layout l, int b, int tid,
               float *restrict xs, float *restrict cs, const int direct) {
  const int s = b % l.splits, tx = tid % KM_BLOCK_COLS, ty = tid / KM_BLOCK_COLS;
  const size_t i0 = (size_t)(b / l.splits) * KM_BLOCK_POINTS;
  const int cb_begin = s * l.tiles_per_split;
  const int cb_end = cb_begin + l.tiles_per_split < l.tiles ? cb_begin + l.tiles_per_split : l.tiles;
  const float *xs_rows = __builtin_assume_aligned(xs + ty * 4, 16), *cs_cols = __builtin_assume_aligned(cs + tx * 4, 16);
  float best[KM_THREAD_POINTS];
  int best_c[KM_THREAD_POINTS];
  KM_UNROLL for (int r = 0; r < KM_THREAD_POINTS; r++) {
    best[r] = INFINITY;
    best_c[r] = cb_begin * KM_BLOCK_CENTROIDS;
  }
  KM_NO_UNROLL for (int cb = cb_begin; cb < cb_end; cb++) {
    const int c0 = cb * KM_BLOCK_CENTROIDS;
    float acc[KM_THREAD_POINTS][KM_THREAD_CENTROIDS];
    KM_UNROLL for (int r = 0; r < KM_THREAD_POINTS; r++)
      KM_UNROLL for (int c = 0; c < KM_THREAD_CENTROIDS; c++) acc[r][c] = 0.0f;
    /* chunk q is staged in buffer q % 2 while chunk q - 1 is multiplied from the other */
    const size_t chunks = (d + KM_BLOCK_DEPTH - 1) / KM_BLOCK_DEPTH;
    km_stage_chunk(xt, tiles, n, d, kpad, i0, c0, 0, tid, xs, cs);
    KM_NO_UNROLL for (size_t q = 0; q < chunks; q++) {
      const float *xs_q = xs_rows + (q % 2) * KM_BLOCK_DEPTH * KM_BLOCK_POINTS;
      const float *cs_q = cs_cols + (q % 2) * KM_BLOCK_DEPTH * KM_BLOCK_CENTROIDS;
      if (q + 1 < chunks) {
        km_stage_chunk(xt, tiles, n, d, kpad, i0, c0, (q + 1) * KM_BLOCK_DEPTH, tid,
                       xs + ((q + 1) % 2) * KM_BLOCK_DEPTH * KM_BLOCK_POINTS,
                       cs + ((q + 1) % 2) * KM_BLOCK_DEPTH * KM_BLOCK_CENTROIDS);
        km_staged_but_last(); /* this thread's copies of chunk q have landed */
      } else {
        km_staged_all();
      }
      ompx_sync_block_acq_rel(); /* ... and every thread's */
      KM_UNROLL for (int jj = 0; jj < KM_BLOCK_DEPTH; jj++) {
        float xv[KM_THREAD_POINTS], cv[KM_THREAD_CENTROIDS];
        KM_UNROLL for (int r = 0; r < KM_THREAD_POINTS; r++) xv[r] = xs_q[jj * KM_BLOCK_POINTS + KM_BLOCK_ROW(0, r)];
        KM_UNROLL for (int c = 0; c < KM_THREAD_CENTROIDS; c++) cv[c] = cs_q[jj * KM_BLOCK_CENTROIDS + KM_BLOCK_COL(0, c)];
        KM_UNROLL for (int r = 0; r < KM_THREAD_POINTS; r++)
          KM_UNROLL for (int c = 0; c < KM_THREAD_CENTROIDS; c++) {
            if (direct) acc[r][c] += (xv[r] - cv[c]) * (xv[r] - cv[c]);
            else acc[r][c] += xv[r] * cv[c];
          }
      }
      ompx_sync_block_acq_rel(); /* buffer q % 2 is free for chunk q + 2 */
    }
    KM_UNROLL for (int c = 0; c < KM_THREAD_CENTROIDS; c++) {
      const int col = c0 + KM_BLOCK_COL(tx, c);
      const float norm = col < kpad ? cn[col] : INFINITY;
      KM_UNROLL for (int r = 0; r < KM_THREAD_POINTS; r++) {
        const float dist = direct ? acc[r][c] + norm : norm - 2.0f * acc[r][c];
        if (dist < best[r]) {
          best[r] = dist;
          best_c[r] = col;
        }
      }
    }
  }
  /* the KM_BLOCK_COLS neighbouring threads of a row hold its points' candidates: halving
   * shuffles leave each point's best, ties to the lowest index, in the row's first thread */
  int mine = 0;
  KM_UNROLL for (int r = 0; r < KM_THREAD_POINTS; r++)
    mine += km_keep_lanes_best(labels, part_d, part_c, n, i0 + (size_t)KM_BLOCK_ROW(ty, r), s, l.splits, best[r],
                               best_c[r], KM_BLOCK_COLS, tx == 0);
  return mine;
}

/* Assigns every point to its nearest centroid by the team-tiled kernel (see KM_BLOCK_POINTS,
 * km_tiled_block); returns how many labels changed. Team b takes point block b / splits
 * against the centroid blocks of range b % splits. Sums run over j = 0..d-1 in order, so
 * distances and labels are those of the other variants' loops.
 * The kernel is written in LLVM's OpenMP kernel language (ompx_bare: each team a CUDA block
 * of KM_BLOCK_THREADS threads, ompx_sync_block_acq_rel its barrier), because its threads keep
 * register sums from one staged chunk to the next, which `parallel for` loops cannot (a
 * `teams` + `parallel` region with barriers compiled to 255 registers and spills). A bare
 * region does not run on the host, so the gpu program without a GPU (--allow-host) takes one
 * point per iteration instead (the same sums, so the same labels). */
static long km_assign_tiled(const float *restrict xt, const float *restrict tiles, const float *restrict cn,
                            int *restrict labels, float *restrict part_d, int *restrict part_c, size_t n, size_t d,
                            int kpad, km_layout l, int direct) {
  long changed = 0;
  if (!pc_offloading()) {
    PAR_FOR(reduction(+ : changed))
    for (size_t i = 0; i < n; i++) {
      float low = INFINITY;
      int low_c = 0;
      for (int col = 0; col < kpad; col++) {
        float acc = 0.0f;
        for (size_t j = 0; j < d; j++) {
          const float xv = xt[j * n + i], cv = tiles[j * (size_t)kpad + (size_t)col];
          if (direct) acc += (xv - cv) * (xv - cv);
          else acc += xv * cv;
        }
        const float dist = direct ? acc + cn[col] : cn[col] - 2.0f * acc;
        if (dist < low) {
          low = dist;
          low_c = col;
        }
      }
      changed += labels[i] != low_c;
      labels[i] = low_c;
    }
    return changed;
  }
  const int teams = (int)(l.groups * (size_t)l.splits);
#pragma omp target teams ompx_bare num_teams(teams) thread_limit(KM_BLOCK_THREADS) map(tofrom : changed)
  {
    static float xs[2 * KM_BLOCK_DEPTH * KM_BLOCK_POINTS] __attribute__((aligned(16)));
    TEAM_LOCAL(xs)
    static float cs[2 * KM_BLOCK_DEPTH * KM_BLOCK_CENTROIDS] __attribute__((aligned(16)));
    TEAM_LOCAL(cs)
    const int b = ompx_block_id_x(), tid = ompx_thread_id_x();
    int mine = direct ? km_tiled_block(xt, tiles, cn, labels, part_d, part_c, n, d, kpad, l, b, tid, xs, cs, 1)
                      : km_tiled_block(xt, tiles, cn, labels, part_d, part_c, n, d, kpad, l, b, tid, xs, cs, 0);
    km_add_warp_changes(&changed, mine, tid);
  }
  return l.splits == 1 ? changed : km_merge_splits(labels, part_d, part_c, n, l.splits);
}

/* The tensor-core assign step (--distance dot-3xtf32, KM_DISTANCE_DOT_3XTF32): the dot form's
 * x.c by the TF32 tensor cores' mma.sync (m16n8k8: a warp multiplies 16 points by 8 centroids
 * over 8 features), each float split into a TF32 head and tail (km_tf32_split; the centroids
 * once per iteration by km_prepare, the points as they are read) and x.c taken as
 * lo.hi + hi.lo + hi.hi: CUTLASS's "3xTF32", about as accurate as float32 (the lo.lo term it
 * drops is about 2^-24 of the product) at the tensor cores' rate. The blocks, the staging in
 * team-local memory (cp.async, double buffered), the splits and the candidates' merge are
 * km_assign_tiled's; warp w of a team takes the block's points 32w .. 32w + 31 against all its
 * 64 centroids (2 x 8 mma tiles, 64 sums a thread). Rows of the staged chunk are 8 floats
 * longer than a block, so that the 32 threads' fragment loads (rows t and t + 4, columns g and
 * g + 8, with g = lane / 4 and t = lane % 4) fall on 32 different banks. Sums run in the tensor
 * cores' order, not feature by feature, so labels can differ from the other forms' on
 * near-ties (as cuBLAS' do). */
#define KM_MMA_XS_ROW (KM_BLOCK_POINTS + 8)
#define KM_MMA_CS_ROW (KM_BLOCK_CENTROIDS + 8)
#ifndef KM_MMA_DEPTH
#define KM_MMA_DEPTH 8 /* features a chunk (16: 2% faster at d = 1000, 37% slower at d = 8; H100) */
#endif
_Static_assert(KM_BLOCK_POINTS == 32 * (KM_BLOCK_THREADS / 32) && KM_BLOCK_CENTROIDS == 64 && KM_MMA_DEPTH % 8 == 0,
               "km_mma_block: a warp takes 32 points and 64 centroids, chunks of whole mma K steps");

/* acc += a b for one m16n8k8 tile (a: the thread's 4 TF32 values of the 16 x 8 A fragment, b:
 * its 2 of the 8 x 8 B fragment, acc: its 4 of the 16 x 8 sums). */
static inline __attribute__((always_inline)) void km_mma_tf32(float acc[4], const unsigned a[4], const unsigned b[2]) {
#if defined(__NVPTX__)
  __asm__ volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                   "{%0, %1, %2, %3};"
                   : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  (void)acc, (void)a, (void)b;
#endif
}

/* One team's share of km_assign_mma, by thread `tid`: as km_tiled_block, with warp w's points
 * 32w + 16 mi + g + 8 h (mi, h in {0, 1}) and, in the sums acc[mi][ni][2 h + e], centroid
 * 8 ni + 2 t + e of the current block. Each thread keeps the best of its columns for its 4
 * points, then the 4 threads of a group compare theirs by shuffles (ties to the lowest index).
 * The centroids come split (tiles, tiles_lo: km_prepare), the points are split here. Returns
 * how many labels this thread changed. */
static inline __attribute__((always_inline)) int
km_mma_block(const float *restrict xt, const float *restrict tiles, const float *restrict tiles_lo,
             const float *restrict cn, int *restrict labels, float *restrict part_d, int *restrict part_c, size_t n,
             size_t d, int kpad, km_layout l, int b, int tid, float *restrict xs, float *restrict cs,
             float *restrict cs_lo) {
  const int s = b % l.splits, warp = tid / 32, g = tid % 32 / 4, t = tid % 4;
  const size_t i0 = (size_t)(b / l.splits) * KM_BLOCK_POINTS;
  const int cb_begin = s * l.tiles_per_split;
  const int cb_end = cb_begin + l.tiles_per_split < l.tiles ? cb_begin + l.tiles_per_split : l.tiles;
  float best[4];
  int best_c[4];
  KM_UNROLL for (int r = 0; r < 4; r++) {
    best[r] = INFINITY;
    best_c[r] = cb_begin * KM_BLOCK_CENTROIDS;
  }
  KM_NO_UNROLL for (int cb = cb_begin; cb < cb_end; cb++) {
    const int c0 = cb * KM_BLOCK_CENTROIDS;
    float acc[2][8][4];
    KM_UNROLL for (int mi = 0; mi < 2; mi++)
      KM_UNROLL for (int ni = 0; ni < 8; ni++)
        KM_UNROLL for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.0f;
    const size_t chunks = (d + KM_MMA_DEPTH - 1) / KM_MMA_DEPTH;
    km_stage_rows(xt, tiles, tiles_lo, n, d, kpad, i0, c0, 0, KM_MMA_DEPTH, tid, xs, KM_MMA_XS_ROW, cs, cs_lo,
                  KM_MMA_CS_ROW);
    KM_NO_UNROLL for (size_t q = 0; q < chunks; q++) {
      if (q + 1 < chunks) {
        const size_t next = ((q + 1) % 2) * KM_MMA_DEPTH;
        km_stage_rows(xt, tiles, tiles_lo, n, d, kpad, i0, c0, (q + 1) * KM_MMA_DEPTH, KM_MMA_DEPTH, tid,
                      xs + next * KM_MMA_XS_ROW, KM_MMA_XS_ROW, cs + next * KM_MMA_CS_ROW, cs_lo + next * KM_MMA_CS_ROW,
                      KM_MMA_CS_ROW);
        km_staged_but_last();
      } else {
        km_staged_all();
      }
      ompx_sync_block_acq_rel();
      KM_UNROLL for (int ks = 0; ks < KM_MMA_DEPTH / 8; ks++) {
        const float *xq = xs + ((q % 2) * KM_MMA_DEPTH + ks * 8) * KM_MMA_XS_ROW + warp * 32 + g;
        const size_t row = ((q % 2) * KM_MMA_DEPTH + ks * 8) * KM_MMA_CS_ROW + g;
        const float *cq = cs + row, *cq_lo = cs_lo + row;
        unsigned a_hi[2][4], a_lo[2][4];
        KM_UNROLL for (int mi = 0; mi < 2; mi++)
          KM_UNROLL for (int e = 0; e < 4; e++) /* rows t, t + 4 (features) x columns g, g + 8 (points) */
            km_tf32_split(xq[(t + 4 * (e / 2)) * KM_MMA_XS_ROW + mi * 16 + 8 * (e % 2)], &a_hi[mi][e], &a_lo[mi][e]);
        KM_UNROLL for (int nn = 0; nn < 8; nn += 2) { /* two centroid tiles: four sums in flight */
          unsigned b_hi[2][2], b_lo[2][2];
          KM_UNROLL for (int ni = 0; ni < 2; ni++)
            KM_UNROLL for (int e = 0; e < 2; e++) {
              b_hi[ni][e] = km_float_bits(cq[(t + 4 * e) * KM_MMA_CS_ROW + (nn + ni) * 8]);
              b_lo[ni][e] = km_float_bits(cq_lo[(t + 4 * e) * KM_MMA_CS_ROW + (nn + ni) * 8]);
            }
          KM_UNROLL for (int mi = 0; mi < 2; mi++) /* the small terms first */
            KM_UNROLL for (int ni = 0; ni < 2; ni++) km_mma_tf32(acc[mi][nn + ni], a_lo[mi], b_hi[ni]);
          KM_UNROLL for (int mi = 0; mi < 2; mi++)
            KM_UNROLL for (int ni = 0; ni < 2; ni++) km_mma_tf32(acc[mi][nn + ni], a_hi[mi], b_lo[ni]);
          KM_UNROLL for (int mi = 0; mi < 2; mi++)
            KM_UNROLL for (int ni = 0; ni < 2; ni++) km_mma_tf32(acc[mi][nn + ni], a_hi[mi], b_hi[ni]);
        }
      }
      ompx_sync_block_acq_rel(); /* buffer q % 2 is free for chunk q + 2 */
    }
    KM_UNROLL for (int ni = 0; ni < 8; ni++)
      KM_UNROLL for (int e = 0; e < 2; e++) {
        const int col = c0 + ni * 8 + 2 * t + e;
        const float norm = col < kpad ? cn[col] : INFINITY;
        KM_UNROLL for (int r = 0; r < 4; r++) { /* point r: mi = r / 2, h = r % 2 */
          const float dist = norm - 2.0f * acc[r / 2][ni][2 * (r % 2) + e];
          if (dist < best[r]) {
            best[r] = dist;
            best_c[r] = col;
          }
        }
      }
  }
  int mine = 0;
  KM_UNROLL for (int r = 0; r < 4; r++) /* point r: mi = r / 2, h = r % 2 */
    mine += km_keep_lanes_best(labels, part_d, part_c, n, i0 + (size_t)(warp * 32 + (r / 2) * 16 + (r % 2) * 8 + g),
                               s, l.splits, best[r], best_c[r], 4, t == 0);
  return mine;
}

/* The assign step on the tensor cores (see km_mma_block); returns how many labels changed. The
 * caller has checked that kernels run on the GPU (a bare region does not run on the host). */
static long km_assign_mma(const float *restrict xt, const float *restrict tiles, const float *restrict tiles_lo,
                          const float *restrict cn, int *restrict labels, float *restrict part_d,
                          int *restrict part_c, size_t n, size_t d, int kpad, km_layout l) {
  long changed = 0;
  const int teams = (int)(l.groups * (size_t)l.splits);
#pragma omp target teams ompx_bare num_teams(teams) thread_limit(KM_BLOCK_THREADS) map(tofrom : changed)
  {
    static float xs[2 * KM_MMA_DEPTH * KM_MMA_XS_ROW] __attribute__((aligned(16)));
    TEAM_LOCAL(xs)
    static float cs[2 * KM_MMA_DEPTH * KM_MMA_CS_ROW] __attribute__((aligned(16)));
    TEAM_LOCAL(cs)
    static float cs_lo[2 * KM_MMA_DEPTH * KM_MMA_CS_ROW] __attribute__((aligned(16)));
    TEAM_LOCAL(cs_lo)
    const int b = ompx_block_id_x(), tid = ompx_thread_id_x();
    int mine = km_mma_block(xt, tiles, tiles_lo, cn, labels, part_d, part_c, n, d, kpad, l, b, tid, xs, cs, cs_lo);
    km_add_warp_changes(&changed, mine, tid);
  }
  return l.splits == 1 ? changed : km_merge_splits(labels, part_d, part_c, n, l.splits);
}

#else /* seq and omp */

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

/* The CPU's assign step (the one place the CPU and GPU take different loops, for their
 * different memories; see KM_HOST_ITEMS): every point's nearest centroid among the tiles
 * (tile by tile, km_tile_at), by the direct form sum((x - c)^2) + cn[c] or the dot form
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
#endif

/* Features a partial norm sums (km_prepare): the norms are sums of chunk partials, in order. */
#define KM_NORM_CHUNK 64

/* The tiles of the assign step. Dot form: cs = ct - o (the centroids moved by the offset o,
 * the initial centroids' mean) and cn[c] = |cs_c|^2 + 2 o.cs_c, so that for a point x
 * |x - c|^2 = |x|^2 + cn[c] - 2 x.cs_c, where |x|^2 is the same for every centroid; the shift
 * keeps the float32 products small when the data sit far from the origin. Direct form: cn = 0,
 * and on the CPU cs = ct (unshifted, in the CPU's tile order; the GPU reads ct itself).
 * Padding centroids: cs = 0, cn = +inf. With `split` (the tensor cores' dot form), cs and cs_lo
 * get the TF32 head and tail of each shifted value (km_tf32_split), cn the exact norm. */
static void km_prepare(const float *restrict ct, const float *restrict offset, float *restrict cs,
                       float *restrict cs_lo, float *restrict cn, double *restrict norm_parts, size_t d, int k,
                       int kpad, int direct, int split) {
  const size_t entries = direct && PC_HAS_DEVICE ? 0 : d * (size_t)kpad; /* the GPU's direct form reads ct */
  PAR_FOR(GPU_ONLY(thread_limit(PC_GPU_THREADS)))
  for (size_t e = 0; e < entries; e++) { /* feature j of centroid c: every entry on its own */
    const size_t j = entries <= UINT_MAX ? (unsigned)e / (unsigned)kpad : e / (size_t)kpad; /* see km_finalize */
    const int c = (int)(e - j * (size_t)kpad);
    const float shifted = c < k ? ct[e] - (direct ? 0.0f : offset[j]) : 0.0f;
    const size_t at = km_tile_at(c, j, d, kpad);
    if (split) {
      unsigned hi, lo;
      km_tf32_split(shifted, &hi, &lo);
      cs[at] = km_bits_float(hi);
      cs_lo[at] = km_bits_float(lo);
    } else {
      cs[at] = shifted;
    }
  }
  /* the norms: a partial sum over each chunk of KM_NORM_CHUNK features (in order), then the
   * partials added in order, the same in every variant, so every variant has the same norms. The
   * loops only load: a thread's loads overlap (when each waited for a store of the loop above,
   * a thread per centroid over all d features took 408 us at k = d = 1000 on an H200; over
   * all d features in a loop of loads alone, 125 us on an H100). */
  const size_t chunks = direct ? 0 : (d + KM_NORM_CHUNK - 1) / KM_NORM_CHUNK, parts = chunks * (size_t)kpad;
  PAR_FOR(GPU_ONLY(thread_limit(PC_GPU_THREADS)))
  for (size_t e = 0; e < parts; e++) {
    const size_t q = e / (size_t)kpad, c = e - q * (size_t)kpad;
    const size_t end = (q + 1) * KM_NORM_CHUNK < d ? (q + 1) * KM_NORM_CHUNK : d;
    double part = 0.0;
    for (size_t j = q * KM_NORM_CHUNK; j < end && c < (size_t)k; j++) {
      const float shifted = ct[j * (size_t)kpad + c] - offset[j];
      part += (double)shifted * shifted + 2.0 * (double)offset[j] * shifted;
    }
    norm_parts[e] = part;
  }
  PAR_FOR(GPU_ONLY(thread_limit(PC_GPU_THREADS)))
  for (int c = 0; c < kpad; c++) {
    double norm = 0.0;
    for (size_t q = 0; q < chunks; q++) norm += norm_parts[q * (size_t)kpad + (size_t)c];
    cn[c] = c >= k ? INFINITY : (float)norm;
  }
}

/* The update step sums in fixed point: value x of dimension j becomes the integer
 * x * 2^s_j toward zero (km_to_fixed), and sums are 64-bit integers: exact, so they do not depend on
 * the order in which threads, teams or variants add the points, and every variant computes the
 * same centroids from the same labels, bit for bit. s_j is chosen once per run
 * (km_fixed_scales) so that no sum of n values can overflow; a centroid is then exact to within
 * 2^-s_j, about 2^-(62 - log2 n) of the dimension's largest |x| (2^-42 at n = 1M): finer than
 * its float32 value unless it is 2^(38 - log2 n) times smaller than that largest |x|. (Summing
 * in double instead loses up to n 2^-53 of the cluster's sum of |x|.) Why not doubles: GPU
 * threads add into team-shared memory with atomics, and the GPU has native shared-memory
 * atomics only for 32-bit integers; a double (or 64-bit integer) add there is a
 * compare-and-swap loop, which bounded the update step (H200, n = 100k, d = k = 1000: 578
 * against 353 us a pass with the same loop on two 32-bit words, km_team_add). */
typedef long long km_fixed;

DEV_FUNCS_BEGIN
/* x * scale toward zero: scale is a power of two, so the float product is exact (or below 1,
 * where it becomes 0 either way), and one conversion makes it an integer */
static inline km_fixed km_to_fixed(float x, float scale) { return (km_fixed)(x * scale); }
DEV_FUNCS_END

/* Team-local fixed-point sums (km_team_add, km_team_sum). On the GPU a sum is two 32-bit words
 * (low first), which the team's threads add to at once by two native 32-bit atomics: the low
 * word's returns the word as it was, which tells whether the add carried into the high word (the
 * high word's add takes q's high half and that carry; integer adds commute, so the pair ends
 * exact whatever the order). A CPU team is one thread, which adds a 64-bit integer plainly. */
#if defined(PC_VARIANT_GPU)
typedef unsigned km_team_word;
#define KM_SUM_WORDS 2
#else
typedef km_fixed km_team_word;
#define KM_SUM_WORDS 1
#endif
DEV_FUNCS_BEGIN
static inline __attribute__((always_inline)) void km_team_add(km_team_word *sums, size_t e, km_fixed q) {
#if defined(PC_VARIANT_GPU)
  const unsigned low = (unsigned)q;
  unsigned before;
#pragma omp atomic capture
  {
    before = sums[2 * e];
    sums[2 * e] += low;
  }
  const unsigned high = (unsigned)((unsigned long long)q >> 32) + (before + low < before);
  if (high) {
#pragma omp atomic update
    sums[2 * e + 1] += high;
  }
#else
  sums[e] += q;
#endif
}
static inline km_fixed km_team_sum(const km_team_word *sums, size_t e) {
#if defined(PC_VARIANT_GPU)
  return (km_fixed)((unsigned long long)sums[2 * e + 1] << 32 | sums[2 * e]);
#else
  return sums[e];
#endif
}
DEV_FUNCS_END

/* The update step's sums and counts (km_accumulate) take one of three methods, chosen once per
 * run by km_plan_update. The counts are one more dimension, j = d, of value 1: the global sums
 * are (d + 1) x k, dimension-major (sums[j * k + c]), `copies` times over. Team-local memory
 * holds KM_TEAM_SUMS sums (32 KB: GPU shared memory, or a CPU thread's stack, where a team is one
 * thread).
 *  - Whole clusters (km_accumulate_in_teams): the sums of all k clusters, k * (d + 1), fit.
 *    Each team sums its share of the points there and adds the result to the global sums once:
 *    the GPU's atomics hit team-shared memory, and only teams * k * (d + 1) of them reach global
 *    memory.
 *  - By dimension (km_accumulate_by_dimension): only the k sums of one dimension fit. A team
 *    takes one dimension j and one range of the points: its threads read xt[j*n + i] and
 *    labels[i] for consecutive i (coalesced on the GPU) and add into the team's sum of cluster
 *    labels[i]; then the team adds its k sums to the global ones (a plain store where a
 *    dimension has one range: no global atomics).
 *  - Shared sums (k > KM_TEAM_SUMS, or by dimension turned off): GPU threads add each point into
 *    one of several global copies of the sums with atomics; CPU threads sum into private copies
 *    through an OpenMP array reduction.
 * Every variant sums by dimension where whole clusters do not fit: on the CPU too it beat the
 * array reduction (it reads each dimension's row in order, not d rows at once; 2 threads:
 * 1.4-2.5x, 27 against 37 ms at n = 1M, d = 64, k = 1000). KM_UPDATE_BY_DIMENSION chooses
 * where both fit: 1 (by dimension), 0 (whole clusters; then also shared sums where they do not
 * fit) or auto: whole clusters while k * (d + 1) <= KM_BY_DIMENSION_ABOVE, by default wherever
 * they fit (on the CPU as fast or faster: 11 against 13 ms at n = 4M, d = 8, k = 256; not yet
 * compared on a GPU). */
#ifndef KM_TEAM_SUMS
#define KM_TEAM_SUMS 4096
#endif
#ifndef KM_UPDATE_BY_DIMENSION
#define KM_UPDATE_BY_DIMENSION auto
#endif
#ifndef KM_BY_DIMENSION_ABOVE
#define KM_BY_DIMENSION_ABOVE KM_TEAM_SUMS
#endif
/* KM_SETTING(KM_BY_DIMENSION_, KM_UPDATE_BY_DIMENSION) is 0, 1 or -1 (auto); another value of
 * -DKM_UPDATE_BY_DIMENSION does not compile. */
#define KM_BY_DIMENSION_0 0
#define KM_BY_DIMENSION_1 1
#define KM_BY_DIMENSION_auto (-1)
#define KM_PASTE(a, b) a##b
#define KM_SETTING(prefix, value) KM_PASTE(prefix, value)
#ifndef KM_GPU_UPDATE_TEAMS
#define KM_GPU_UPDATE_TEAMS 528 /* 4 per SM of an H100 */
#endif
#ifndef KM_UPDATE_THREADS
#define KM_UPDATE_THREADS PC_GPU_THREADS /* GPU threads per team of the team-local methods */
#endif
/* A thread of the team-local methods reads KM_UPDATE_BATCH points' labels and values before it
 * adds them, so that their loads are in flight together (H200, n = 100k, d = k = 1000, doubles:
 * 578 us a pass one point at a time, 498 us four at a time). On the GPU a loop item takes points
 * KM_UPDATE_LANES (a warp) apart, so that each load of a warp reads consecutive addresses; a
 * CPU thread takes consecutive points. */
#if defined(PC_VARIANT_GPU)
#ifndef KM_UPDATE_BATCH
#define KM_UPDATE_BATCH 8
#endif
#define KM_UPDATE_LANES 32
#else
#define KM_UPDATE_BATCH 1 /* the CPU's out-of-order core overlaps the loads of successive points itself */
#define KM_UPDATE_LANES 1
#endif
/* Shared sums: the number of global copies (GPU). Thread i adds into copy i % copies, so that
 * fewer atomics collide on one address (km_finalize adds the copies up); as many copies as fit
 * in KM_SUM_COPY_BYTES, at most KM_MAX_SUM_COPIES. CPU threads get private copies from the
 * OpenMP reduction instead. */
#ifndef KM_SUM_COPY_BYTES
#define KM_SUM_COPY_BYTES (8u << 20)
#endif
#ifndef KM_MAX_SUM_COPIES
#define KM_MAX_SUM_COPIES 64
#endif

typedef enum { KM_SUMS_WHOLE, KM_SUMS_BY_DIMENSION, KM_SUMS_SHARED } km_sums_method;
static const char *const km_sums_names[] = {"whole-clusters", "by-dimension", "shared"};

typedef struct {
  km_sums_method method;
  int teams;     /* whole clusters: teams, each summing a share of the points */
  int ranges;    /* by dimension: ranges of the points per dimension (one team each) */
  size_t copies; /* shared sums: copies of the global sums; 1 otherwise */
} km_update_plan;

/* Teams of a team-local method: KM_GPU_UPDATE_TEAMS on the GPU, one per host thread. */
static int km_update_teams(void) {
#if defined(PC_VARIANT_GPU)
  return pc_device_teams(KM_GPU_UPDATE_TEAMS);
#elif defined(PC_VARIANT_OMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/* Ranges of the n points for each of `dims` dimensions, a team each: as many as make about
 * km_update_teams() teams in all, each range at least a point per thread (KM_UPDATE_THREADS). */
static size_t km_ranges_per_dimension(size_t n, size_t dims) {
  const size_t want = ((size_t)km_update_teams() + dims - 1) / dims,
               most = (n + KM_UPDATE_THREADS - 1) / KM_UPDATE_THREADS;
  return want < most ? want : most > 0 ? most : 1;
}

/* The update step's method for n points of d dimensions in k clusters (see above). By dimension,
 * the d + 1 dimensions get km_ranges_per_dimension ranges each. */
static km_update_plan km_plan_update(size_t n, size_t d, int k) {
  const int setting = KM_SETTING(KM_BY_DIMENSION_, KM_UPDATE_BY_DIMENSION);
  const size_t whole = (size_t)k * (d + 1);
  km_update_plan p = {KM_SUMS_SHARED, 1, 1, 1};
  if (whole <= KM_TEAM_SUMS && (setting == 0 || (setting < 0 && whole <= KM_BY_DIMENSION_ABOVE))) {
    p.method = KM_SUMS_WHOLE;
    p.teams = km_update_teams();
  } else if ((size_t)k <= KM_TEAM_SUMS && setting != 0) {
    p.method = KM_SUMS_BY_DIMENSION;
    p.ranges = (int)km_ranges_per_dimension(n, d + 1);
  } else {
#if defined(PC_VARIANT_GPU)
    const size_t fit = KM_SUM_COPY_BYTES / ((size_t)k * (d + 1) * sizeof(km_fixed));
    p.copies = fit < 1 ? 1 : fit > KM_MAX_SUM_COPIES ? KM_MAX_SUM_COPIES : fit;
#endif
  }
  return p;
}

/* scale[j] = 2^s_j and unscale[j] = 2^-s_j for the d dimensions and 1 for the counts (j = d),
 * the host and device copies both: s_j = 62 - n_bits - e_j, where n < 2^n_bits and dimension
 * j's largest |x| < 2^e_j, so that n values |x| 2^s_j sum below 2^62; at most 126, so that 2^s_j
 * is a float (data below 2^-64 then keep their bits down to 2^-126). One pass over the data,
 * each dimension cut into `ranges` ranges of points (a team each, its largest |x| in
 * part[r * d + j]); a maximum does not depend on the order it is taken in, so every variant
 * picks the same exponents. */
static void km_fixed_scales(const float *restrict xt, size_t n, size_t d, size_t ranges, float *restrict part,
                            float *restrict scale, double *restrict unscale) {
  const size_t units = d * ranges;
  PAR_TEAMS_FOR(num_teams(pc_device_teams((int)units)) thread_limit(KM_UPDATE_THREADS))
  for (size_t u = 0; u < units; u++) {
    const size_t j = u % d, lo = n * (u / d) / ranges, hi = n * (u / d + 1) / ranges;
    float top = 0.0f;
    TEAM_PAR_FOR(reduction(max : top))
    for (size_t i = lo; i < hi; i++) top = fmaxf(top, fabsf(xt[j * n + i]));
    part[u] = top;
  }
  DEV_UPDATE(from(part[0 : units]))
  int n_bits = 0;
  while (n_bits < 62 && (size_t)1 << n_bits <= n) n_bits++;
  for (size_t j = 0; j <= d; j++) {
    float top = 0.0f;
    for (size_t r = 0; r < ranges && j < d; r++) top = fmaxf(top, part[r * d + j]);
    int e = 0;
    if (top > 0.0f) frexpf(top, &e);
    const int s = j == d ? 0 : 62 - n_bits - e < 126 ? 62 - n_bits - e : 126;
    scale[j] = ldexpf(1.0f, s);
    unscale[j] = ldexp(1.0, -s);
  }
  DEV_UPDATE(to(scale[0 : d + 1], unscale[0 : d + 1]))
}

/* Whole clusters: team t sums points [t * n / teams, (t+1) * n / teams) into `local` (cluster
 * c's sums at c * (d + 1), its count after them), then adds them to the global sums. On the CPU
 * a team is one thread and `local` is private to it. */
static void km_accumulate_in_teams(const float *restrict xt, const int *restrict labels, km_fixed *restrict sums,
                                   const float *restrict scale, size_t n, size_t d, int k, int teams) {
  const size_t row = d + 1, len = (size_t)k * row;
  PAR_TEAMS_FOR(num_teams(teams) thread_limit(KM_UPDATE_THREADS))
  for (int t = 0; t < teams; t++) {
    km_team_word local[KM_SUM_WORDS * KM_TEAM_SUMS];
    TEAM_LOCAL(local)
    TEAM_PAR_FOR()
    for (size_t e = 0; e < KM_SUM_WORDS * len; e++) local[e] = 0;
    const size_t lo = n * (size_t)t / (size_t)teams, hi = n * (size_t)(t + 1) / (size_t)teams;
    TEAM_PAR_FOR()
    for (size_t i = lo; i < hi; i++) {
      const size_t base = (size_t)labels[i] * row;
      for (size_t j = 0; j < d; j++) km_team_add(local, base + j, km_to_fixed(xt[j * n + i], scale[j]));
      km_team_add(local, base + d, 1);
    }
    TEAM_PAR_FOR()
    for (size_t e = 0; e < len; e++) {
      const km_fixed s = km_team_sum(local, e);
      if (s == 0) continue; /* nothing to add (most entries when k is large) */
      PAR_ATOMIC
      sums[e % row * (size_t)k + e / row] += s;
    }
  }
}

/* By dimension: team u takes dimension j = u % (d + 1) (j = d: the counts) of points range
 * r = u / (d + 1), so that the teams at work together read the same labels. */
static void km_accumulate_by_dimension(const float *restrict xt, const int *restrict labels, km_fixed *restrict sums,
                                       const float *restrict scale, size_t n, size_t d, int k, km_update_plan p) {
  const size_t row = d + 1, ranges = (size_t)p.ranges;
  const int units = (int)(row * ranges);
  PAR_TEAMS_FOR(num_teams(pc_device_teams(units)) thread_limit(KM_UPDATE_THREADS))
  for (int u = 0; u < units; u++) {
    km_team_word local[KM_SUM_WORDS * KM_TEAM_SUMS];
    TEAM_LOCAL(local)
    const size_t j = (size_t)u % row, r = (size_t)u / row;
    const float sj = scale[j];
    TEAM_PAR_FOR()
    for (size_t e = 0; e < KM_SUM_WORDS * (size_t)k; e++) local[e] = 0;
    const size_t lo = n * r / ranges, hi = n * (r + 1) / ranges, per_group = KM_UPDATE_BATCH * KM_UPDATE_LANES;
    const size_t items = (hi - lo + per_group - 1) / per_group * KM_UPDATE_LANES;
    TEAM_PAR_FOR()
    for (size_t g = 0; g < items; g++) { /* points first + b * KM_UPDATE_LANES, b < KM_UPDATE_BATCH */
      const size_t first = lo + g / KM_UPDATE_LANES * per_group + g % KM_UPDATE_LANES;
      float value[KM_UPDATE_BATCH];
      int label[KM_UPDATE_BATCH];
      KM_UNROLL for (int b = 0; b < KM_UPDATE_BATCH; b++) { /* every load before the first add */
        const size_t i = first + (size_t)b * KM_UPDATE_LANES;
        label[b] = i < hi ? labels[i] : 0;
        value[b] = i < hi && j < d ? xt[j * n + i] : 0.0f;
      }
      KM_UNROLL for (int b = 0; b < KM_UPDATE_BATCH; b++)
        if (first + (size_t)b * KM_UPDATE_LANES < hi)
          km_team_add(local, (size_t)label[b], j < d ? km_to_fixed(value[b], sj) : 1);
    }
    TEAM_PAR_FOR()
    for (size_t c = 0; c < (size_t)k; c++) {
      const km_fixed s = km_team_sum(local, c);
      if (ranges == 1) { /* the dimension's only team: the value is its own */
        sums[j * (size_t)k + c] = s;
      } else if (s != 0) {
        PAR_ATOMIC
        sums[j * (size_t)k + c] += s;
      }
    }
  }
}

/* Cluster sums and counts on the device by the plan's method (see km_plan_update): team-local
 * sums of whole clusters or of one dimension; otherwise GPU threads add point i into copy
 * i % copies with atomics and CPU threads (copies = 1) sum into private copies through the
 * array reduction. */
static void km_accumulate(const float *restrict xt, const int *restrict labels, km_fixed *restrict sums,
                          const float *restrict scale, size_t n, size_t d, int k, km_update_plan p) {
  const size_t row = d + 1, copies = p.copies, len = copies * row * (size_t)k;
  if (p.method != KM_SUMS_BY_DIMENSION || p.ranges > 1) { /* by dimension in one range stores every value */
    PAR_FOR(GPU_ONLY(thread_limit(PC_GPU_THREADS)))
    for (size_t e = 0; e < len; e++) sums[e] = 0;
  }
  if (p.method == KM_SUMS_WHOLE) {
    km_accumulate_in_teams(xt, labels, sums, scale, n, d, k, p.teams);
    return;
  }
  if (p.method == KM_SUMS_BY_DIMENSION) {
    km_accumulate_by_dimension(xt, labels, sums, scale, n, d, k, p);
    return;
  }

  /* The one loop where variants differ in method: reduction on the CPU, atomics on the GPU. */
  PAR_FOR(HOST_ONLY(reduction(+ : sums[0 : len])) GPU_ONLY(thread_limit(PC_GPU_THREADS)))
  for (size_t i = 0; i < n; i++) {
    km_fixed *copy = sums + i % copies * row * (size_t)k + (size_t)labels[i];
    for (size_t j = 0; j < d; j++) {
      GPU_ATOMIC
      copy[j * (size_t)k] += km_to_fixed(xt[j * n + i], scale[j]);
    }
    GPU_ATOMIC
    copy[d * (size_t)k] += 1;
  }
}

/* Cao et al.'s GPU-L: the host sums the points by the labels it retrieved (one copy). Only
 * the gpu variant calls it; in the others the device is the host. */
static __attribute__((unused)) void km_accumulate_on_host(const float *restrict xt, const int *restrict labels,
                                                          km_fixed *restrict sums, const float *restrict scale,
                                                          size_t n, size_t d, int k) {
  memset(sums, 0, (d + 1) * (size_t)k * sizeof *sums);
  for (size_t i = 0; i < n; i++) {
    km_fixed *sum = sums + (size_t)labels[i];
    for (size_t j = 0; j < d; j++) sum[j * (size_t)k] += km_to_fixed(xt[j * n + i], scale[j]);
    sum[d * (size_t)k] += 1;
  }
}

/* km_finalize on the GPU: at most KM_FINALIZE_TEAMS teams, whose threads each load
 * KM_FINALIZE_BATCH entries before they store any (H200, k = d = 1000, 1M entries: one OpenMP
 * teams reduction over 1024 teams took 146 us; teams adding their sums with an atomic, 104 us;
 * with the loads batched, 35 us: an entry's loads no longer wait for the store before). */
#ifndef KM_FINALIZE_TEAMS
#define KM_FINALIZE_TEAMS 264
#endif
#if defined(PC_VARIANT_GPU)
#define KM_FINALIZE_BATCH 4
#else
#define KM_FINALIZE_BATCH 1
#endif

/* New centroids from `copies` copies of the sums (counts in dimension d): ct[:, c] = mean of
 * cluster c, unchanged for an empty cluster. Returns the summed squared shift of the centroids.
 * Runs on the device, or on the host (one thread, host copies) when on_device is 0. The sums
 * and ct are both dimension-major, so a GPU warp reads and writes consecutive entries. Each
 * team sums the shifts of its range and adds the result to the total with one atomic. */
static double km_finalize(const km_fixed *restrict sums, const double *restrict unscale, float *restrict ct, size_t d,
                          int k, int kpad, size_t copies, int on_device) {
  const size_t kd = (size_t)k * d, per_copy = kd + (size_t)k;
  const int wanted = !on_device ? 1 : PC_HAS_DEVICE ? pc_reduction_teams(kd) : km_update_teams(); /* omp: threads */
  const int teams = wanted < KM_FINALIZE_TEAMS ? wanted : KM_FINALIZE_TEAMS;
  double shift = 0.0;
  (void)on_device;
  PAR_TEAMS_FOR(GPU_ONLY(if(target : on_device)) num_teams(teams) thread_limit(on_device ? PC_GPU_THREADS : 1)
                    map(tofrom : shift))
  for (int t = 0; t < teams; t++) {
    const size_t lo = kd * (size_t)t / (size_t)teams, hi = kd * (size_t)(t + 1) / (size_t)teams;
    double part = 0.0;
    const size_t per_group = KM_FINALIZE_BATCH * KM_UPDATE_LANES;
    const size_t items = (hi - lo + per_group - 1) / per_group * KM_UPDATE_LANES;
    TEAM_PAR_FOR(reduction(+ : part))
    for (size_t g = 0; g < items; g++) { /* entries first + b * KM_UPDATE_LANES, b < KM_FINALIZE_BATCH */
      const size_t first = lo + g / KM_UPDATE_LANES * per_group + g % KM_UPDATE_LANES;
      km_fixed count[KM_FINALIZE_BATCH], sum[KM_FINALIZE_BATCH];
      float before[KM_FINALIZE_BATCH];
      size_t at[KM_FINALIZE_BATCH], jj[KM_FINALIZE_BATCH];
      KM_UNROLL for (int b = 0; b < KM_FINALIZE_BATCH; b++) { /* every load before the first store */
        const size_t f = first + (size_t)b * KM_UPDATE_LANES;
        count[b] = 0, sum[b] = 0, before[b] = 0.0f, at[b] = 0, jj[b] = 0;
        if (f >= hi) continue;
        /* 32-bit division where it will do: a 64-bit one costs the GPU ~70 instructions */
        const size_t j = kd <= UINT_MAX ? (unsigned)f / (unsigned)k : f / (size_t)k, c = f - j * (size_t)k;
        for (size_t p = 0; p < copies; p++) {
          count[b] += sums[p * per_copy + kd + c];
          sum[b] += sums[p * per_copy + f];
        }
        jj[b] = j, at[b] = j * (size_t)kpad + c;
        before[b] = ct[at[b]];
      }
      KM_UNROLL for (int b = 0; b < KM_FINALIZE_BATCH; b++)
        if (count[b] > 0) {
          const float updated = (float)((double)sum[b] * unscale[jj[b]] / (double)count[b]);
          const double delta = (double)updated - (double)before[b];
          part += delta * delta;
          ct[at[b]] = updated;
        }
    }
    PAR_ATOMIC
    shift += part;
  }
  return shift;
}

static double km_sse(const float *restrict xt, const float *restrict ct, const int *restrict labels, size_t n, size_t d,
                     int kpad) {
  double sse = 0.0;
  PAR_FOR(reduction(+ : sse) GPU_ONLY(num_teams(pc_reduction_teams(n)) thread_limit(PC_GPU_THREADS)))
  for (size_t i = 0; i < n; i++) {
    const int c = labels[i];
    double s = 0.0;
    for (size_t j = 0; j < d; j++) {
      const double diff = (double)xt[j * n + i] - (double)ct[j * (size_t)kpad + c];
      s += diff * diff;
    }
    sse += s;
  }
  return sse;
}

/* One assign step: through cuBLAS when `gemm` is given (gpu variant), on the tensor cores when
 * `tensor` (gpu variant on a GPU), else the GPU's kernel (km_assign_tiled) or the CPU's blocked
 * loop (km_assign_host). Returns the number of labels that changed, or -1 with a pc_fail message
 * (a cuBLAS error). */
static long km_assign_step(const float *restrict xt, const float *restrict ct, const float *restrict cs,
                           const float *restrict cs_lo, const float *restrict cn, int *restrict labels,
                           float *restrict part_d, int *restrict part_c, size_t n, size_t d, int k, int kpad,
                           km_layout l, int direct, int tensor, const km_gemm_scratch *gemm) {
  if (gemm) return km_gemm_assign(gemm, xt, cs, cn, labels, n, d, k, kpad);
#if defined(PC_VARIANT_GPU)
  if (tensor) return km_assign_mma(xt, cs, cs_lo, cn, labels, part_d, part_c, n, d, kpad, l);
  return km_assign_tiled(xt, direct ? ct : cs, cn, labels, part_d, part_c, n, d, kpad, l, direct);
#else
  (void)ct, (void)cs_lo, (void)part_d, (void)part_c, (void)l, (void)tensor;
  return km_assign_host(xt, cs, cn, labels, n, d, kpad, direct);
#endif
}

int km_run(const float *xt, size_t n, size_t d, const km_params *params, float *centroids, int *labels,
           km_result *result) {
  const int k = params->k, direct = params->distance == KM_DISTANCE_DIRECT;
  /* cuBLAS for the dot products (kmeans_gemm.c); km_prepare makes the same cs and cn as for dot */
  const int gemm = params->distance == KM_DISTANCE_GEMM || params->distance == KM_DISTANCE_GEMM_TF32;
  const int tensor = params->distance == KM_DISTANCE_DOT_3XTF32; /* the dot form's cs and cn too */
  const int kpad = (k + KM_TILE - 1) / KM_TILE * KM_TILE;
  const km_update_plan update = km_plan_update(n, d, k);
  const size_t ct_len = (size_t)kpad * d, sums_len = update.copies * (d + 1) * (size_t)k;
  km_layout layout = km_plan(n, kpad);
  if (gemm) layout.splits = 1; /* no candidates to merge */
  const size_t part_len = layout.splits > 1 ? (size_t)layout.splits * n : 1;
  /* Outside the gpu variant the device is the host: both update modes are the same code. */
  const int on_device = params->update == KM_UPDATE_DEVICE || !PC_HAS_DEVICE;
  double *iteration_s = result->iteration_s;
  memset(result, 0, sizeof *result);
  result->iteration_s = iteration_s;
  result->splits = layout.splits;
  result->update_sums = on_device ? km_sums_names[update.method] : "host";

  float *ct = pc_try_alloc(ct_len, sizeof *ct, "centroids");
  float *cs = pc_try_alloc(ct_len, sizeof *cs, "shifted centroids");
  const size_t lo_len = tensor ? ct_len : 1; /* the tails of cs (tensor cores) */
  float *cs_lo = pc_try_alloc(lo_len, sizeof *cs_lo, "shifted centroids' TF32 tails");
  float *cn = pc_try_alloc((size_t)kpad, sizeof *cn, "centroid norms");
  const size_t parts_len = (d + KM_NORM_CHUNK - 1) / KM_NORM_CHUNK * (size_t)kpad;
  double *norm_parts = pc_try_alloc(parts_len, sizeof *norm_parts, "partial centroid norms");
  float *offset = pc_try_alloc(d, sizeof *offset, "centroid offset");
  float *part_d = pc_try_alloc(part_len, sizeof *part_d, "candidate distances");
  int *part_c = pc_try_alloc(part_len, sizeof *part_c, "candidate centroids");
  km_fixed *sums = pc_try_alloc(sums_len, sizeof *sums, "centroid sums");
  float *scale = pc_try_alloc(d + 1, sizeof *scale, "fixed-point scales");
  double *unscale = pc_try_alloc(d + 1, sizeof *unscale, "fixed-point unscales");
  const size_t scale_ranges = km_ranges_per_dimension(n, d);
  float *scale_part = pc_try_alloc(d * scale_ranges, sizeof *scale_part, "largest values per range");
  km_gemm_scratch scratch = {0};
  int rc = -1, failed = 0;
  if (tensor && !pc_offloading()) {
    pc_fail("--distance dot-3xtf32 runs on the GPU's tensor cores, but kernels run on the host");
    goto out;
  }
  if (!ct || !cs || !cs_lo || !cn || !norm_parts || !offset || !part_d || !part_c || !sums || !scale || !unscale ||
      !scale_part)
    goto out;
  /* cuBLAS' handle and device scratch: before the clock, like the program's device start-up */
  if (gemm && km_gemm_begin(n, d, k, params->distance == KM_DISTANCE_GEMM_TF32, &scratch) != 0) goto out;
  memset(ct, 0, ct_len * sizeof *ct);
  for (int c = 0; c < k; c++)
    for (size_t j = 0; j < d; j++) ct[j * (size_t)kpad + (size_t)c] = centroids[(size_t)c * d + j];
  for (size_t j = 0; j < d; j++) {
    double mean = 0.0;
    for (int c = 0; c < k; c++) mean += centroids[(size_t)c * d + j];
    offset[j] = (float)(mean / k);
  }
  for (size_t i = 0; i < n; i++) labels[i] = -1;

  const double t_start = pc_now();
  double t0 = t_start;
  DEV_ENTER(map(to : xt[0 : n * d], ct[0 : ct_len], offset[0 : d], labels[0 : n])
                map(alloc : cs[0 : ct_len], cs_lo[0 : lo_len], cn[0 : kpad], norm_parts[0 : parts_len],
                        part_d[0 : part_len], part_c[0 : part_len], sums[0 : sums_len], scale[0 : d + 1],
                        unscale[0 : d + 1], scale_part[0 : d * scale_ranges]))
  result->phase_s[KM_PHASE_H2D] += pc_now() - t0;
  t0 = pc_now();
  km_fixed_scales(xt, n, d, scale_ranges, scale_part, scale, unscale); /* once: the data do not change */
  result->phase_s[KM_PHASE_UPDATE] += pc_now() - t0;

  const int iterations_wanted = params->fixed_iter > 0 ? params->fixed_iter : params->max_iter;
  for (int it = 0; it < iterations_wanted; it++) {
    const double t_iter = pc_now();
    km_prepare(ct, offset, cs, cs_lo, cn, norm_parts, d, k, kpad, direct, tensor);
    t0 = pc_now();
    result->phase_s[KM_PHASE_UPDATE] += t0 - t_iter;
    const long changed = km_assign_step(xt, ct, cs, cs_lo, cn, labels, part_d, part_c, n, d, k, kpad, layout, direct,
                                        tensor, gemm ? &scratch : NULL);
    if (changed < 0) { /* a cuBLAS error: release the device data, then fail */
      failed = 1;
      break;
    }
    double t1 = pc_now();
    result->phase_s[KM_PHASE_ASSIGN] += t1 - t0;
    result->iterations = it + 1;
    result->last_changed = changed;

    double shift;
    if (on_device) {
      km_accumulate(xt, labels, sums, scale, n, d, k, update);
      shift = km_finalize(sums, unscale, ct, d, k, kpad, update.copies, 1);
      result->phase_s[KM_PHASE_UPDATE] += pc_now() - t1;
    } else { /* Cao's GPU-L: labels to the host, centroids computed there, sent back */
      DEV_UPDATE(from(labels[0 : n]))
      double t2 = pc_now();
      result->phase_s[KM_PHASE_D2H] += t2 - t1;
      km_accumulate_on_host(xt, labels, sums, scale, n, d, k);
      shift = km_finalize(sums, unscale, ct, d, k, kpad, 1, 0);
      double t3 = pc_now();
      result->phase_s[KM_PHASE_UPDATE] += t3 - t2;
      DEV_UPDATE(to(ct[0 : ct_len]))
      result->phase_s[KM_PHASE_H2D] += pc_now() - t3;
    }
    if (iteration_s) iteration_s[it] = pc_now() - t_iter;
    if (params->fixed_iter > 0) continue;
    if (changed == 0 || shift <= params->tol) {
      result->converged = 1;
      break;
    }
  }

  if (!failed) result->sse = km_sse(xt, ct, labels, n, d, kpad);
  t0 = pc_now();
  DEV_UPDATE(from(labels[0 : n], ct[0 : ct_len]))
  DEV_EXIT(map(delete : xt[0 : n * d], ct[0 : ct_len], offset[0 : d], labels[0 : n], cs[0 : ct_len],
                   cs_lo[0 : lo_len], cn[0 : kpad], norm_parts[0 : parts_len], part_d[0 : part_len],
                   part_c[0 : part_len], sums[0 : sums_len], scale[0 : d + 1], unscale[0 : d + 1],
                   scale_part[0 : d * scale_ranges]))
  result->phase_s[KM_PHASE_D2H] += pc_now() - t0;
  result->total_s = pc_now() - t_start;

  for (int c = 0; c < k; c++)
    for (size_t j = 0; j < d; j++) centroids[(size_t)c * d + j] = ct[j * (size_t)kpad + (size_t)c];
  rc = failed ? -1 : 0;
out:
  km_gemm_end(&scratch);
  free(ct), free(cs), free(cs_lo), free(cn), free(norm_parts), free(offset), free(part_d), free(part_c);
  free(sums), free(scale), free(unscale), free(scale_part);
  return rc;
}

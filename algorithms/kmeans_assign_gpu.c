/*
 * kmeans_assign_gpu.c - k-means' tuned assign kernels for the gpu variant built by clang (the
 * seam: kmeans_tuned.h; the portable assign step is kmeans.c's). They use what standard OpenMP
 * lacks: LLVM's kernel language (ompx_bare regions, team barriers, warp shuffles), cp.async copies
 * into team-local memory (NVVM builtins) and the tensor cores' mma.sync and wgmma (inline PTX).
 *  - km_assign_tiled (--distance direct and dot): a GEMM-style kernel. A team of 128 threads
 *    takes 128 points against 64 centroids at a time; chunks of 8 features of both are copied into
 *    team-local memory (double-buffered: the next chunk lands while this one is used), and each
 *    thread accumulates 8 points x 8 centroids in registers, then the threads of a row compare
 *    their candidates by warp shuffles. When n is too small to fill the GPU, the centroid blocks
 *    are split into ranges whose winners a second pass compares (km_merge_splits).
 *  - km_assign_few (--distance direct and dot where k is at most 32): all the centroids in
 *    team-local memory, teams that stay and take block after block of points, each thread a few
 *    points against all the centroids, the points read once.
 *  - km_assign_mma (--distance dot-3xtf32 and dot-tf32): the same blocks and staging as
 *    km_assign_tiled, the dot products on the TF32 tensor cores in three products (about
 *    float32's accuracy) or one. Where d <= 16 and k <= 128 its teams stay instead
 *    (km_mma_resident): the centroids copied once, the next block of points copied in while one
 *    is multiplied; where k (d + 1) <= 1152 they also move the points whose label changed within
 *    the update step's kept sums, so that an iteration needs no update kernel (km_gpu_assign_and_move).
 *  - km_assign_wide (the same distances where k is 512 or more, and --distance dot-fp16 and
 *    dot-bf16 at every k): blocks of 128 points x 128 centroids, each warp 64 x 64, the operands
 *    copied from packed copies on the device (km_pack) point by point for ldmatrix, chunks in a
 *    pipeline of several buffers; the TF32 forms' labels are km_assign_mma's. The 16-bit forms
 *    multiply copies of the points and centroids rounded to fp16 or bf16 (km_half_prepare) on the
 *    16-bit tensor cores. Built for sm_90a (GPU_ARCH=sm_90a, PC_SM90A: H100, H200), a team is one
 *    warpgroup that multiplies 64 x 128 blocks read from the same staged chunks with Hopper's
 *    asynchronous wgmma instead (km_wgmma_block).
 * Sums run over the features in order (km_assign_tiled), so the labels are the portable loop's.
 */
#include "kmeans_tuned.h"
#include "device.h"
#include "kmeans.h"
#include "knobs.h"
#include "par.h"
#include "util.h"

#include <math.h>
#include <omp.h>
#include <ompx.h>
#include <stdint.h>
#include <stdlib.h>

/* Tuning knobs: settings of speed, not of results; -DNAME=value (make KNOBS='-DNAME=value')
 * overrides one, `info` lists them and a report names those changed (knobs.h). */
/* points per team block of km_assign_tiled and km_assign_mma */
#define KM_BLOCK_POINTS_DEFAULT 128
#ifndef KM_BLOCK_POINTS
#define KM_BLOCK_POINTS KM_BLOCK_POINTS_DEFAULT
#endif
PC_KNOB(KM_BLOCK_POINTS)
/* centroids per block */
#define KM_BLOCK_CENTROIDS_DEFAULT 64
#ifndef KM_BLOCK_CENTROIDS
#define KM_BLOCK_CENTROIDS KM_BLOCK_CENTROIDS_DEFAULT
#endif
PC_KNOB(KM_BLOCK_CENTROIDS)
/* features per staged chunk (km_assign_tiled) */
#define KM_BLOCK_DEPTH_DEFAULT 8
#ifndef KM_BLOCK_DEPTH
#define KM_BLOCK_DEPTH KM_BLOCK_DEPTH_DEFAULT
#endif
PC_KNOB(KM_BLOCK_DEPTH)
/* features per staged chunk (km_assign_mma; 16 is slower at small d: docs/performance.md) */
#define KM_MMA_DEPTH_DEFAULT 8
#ifndef KM_MMA_DEPTH
#define KM_MMA_DEPTH KM_MMA_DEPTH_DEFAULT
#endif
PC_KNOB(KM_MMA_DEPTH)
/* teams per multiprocessor below which the centroid blocks are split (km_plan) */
#define KM_GPU_TEAMS_PER_SM_DEFAULT 8
#ifndef KM_GPU_TEAMS_PER_SM
#define KM_GPU_TEAMS_PER_SM KM_GPU_TEAMS_PER_SM_DEFAULT
#endif
PC_KNOB(KM_GPU_TEAMS_PER_SM)

/* Full unrolling keeps the per-thread arrays in registers; KM_NO_UNROLL keeps a loop of unrolled
 * bodies within the registers. */
#define KM_UNROLL _Pragma("unroll")
#define KM_NO_UNROLL _Pragma("clang loop unroll(disable)")

/* Team-tiled assign step (GPU, km_assign_tiled): a team of KM_BLOCK_THREADS threads takes a
 * block of KM_BLOCK_POINTS points against blocks of KM_BLOCK_CENTROIDS centroids, as a GEMM
 * kernel does: per chunk of KM_BLOCK_DEPTH features the team stages the block's points and
 * centroids in team-local memory, and each thread multiplies 8 points by 8 centroids from there
 * into 64 register sums. A point value fetched from global memory serves KM_BLOCK_CENTROIDS
 * centroids, a centroid value KM_BLOCK_POINTS points. Teams of 128 threads (128 x 64) at 160
 * registers each let three teams share an SM, so that one team's barriers overlap the others'
 * multiply-adds; 64 centroids a block waste nothing at k = 64 (the measurements and the
 * shapes tried: docs/performance.md). With fewer point blocks than KM_GPU_TEAMS_PER_SM teams per
 * multiprocessor, the centroid blocks are split among several teams (a second pass keeps the best). */
#define KM_THREAD_POINTS 8
#define KM_THREAD_CENTROIDS 8
#define KM_BLOCK_ROWS (KM_BLOCK_POINTS / KM_THREAD_POINTS)       /* threads down the points */
#define KM_BLOCK_COLS (KM_BLOCK_CENTROIDS / KM_THREAD_CENTROIDS) /* threads across the centroids */
#define KM_BLOCK_THREADS (KM_BLOCK_ROWS * KM_BLOCK_COLS)

/* How an assign step is cut: `groups` blocks of `points` points, `tiles` blocks of `centroids`
 * centroids in `splits` ranges of `tiles_per_split`, with the ranges' winners merged by
 * km_merge_splits where there would be fewer than `teams_per_sm` teams a multiprocessor. */
typedef struct {
  size_t groups;
  int tiles, tiles_per_split, splits;
} km_layout;

static km_layout km_plan(size_t n, int kpad, int points, int centroids, int teams_per_sm) {
  km_layout l = {0, 1, 1, 1};
  l.groups = (n + (size_t)points - 1) / (size_t)points;
  l.tiles = (kpad + centroids - 1) / centroids;
  const size_t gpu_teams = (size_t)teams_per_sm * (size_t)pc_device_multiprocessors();
  if (l.groups < gpu_teams && l.tiles > 1) {
    const size_t want = (gpu_teams + l.groups - 1) / l.groups;
    l.splits = want < (size_t)l.tiles ? (int)want : l.tiles;
  }
  l.tiles_per_split = (l.tiles + l.splits - 1) / l.splits;
  l.splits = (l.tiles + l.tiles_per_split - 1) / l.tiles_per_split;
  return l;
}

/* The second pass of a split assign step: each point's best of the `splits` candidates in
 * part_d / part_c (the lowest split on ties, whose centroid indices are lower) becomes its
 * label; returns how many labels changed. */
static long km_merge_splits(int *restrict labels, const float *restrict part_d, const int *restrict part_c, size_t n,
                            int splits) {
  long changed = 0;
  PAR_FOR(reduction(+ : changed) GPU_REDUCTION(n))
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

/* The best of the candidates (best, best_c) held by `width` neighbouring threads: halving
 * shuffles leave it, ties to the lowest index, in the first of them. */
static inline __attribute__((always_inline)) void km_lanes_best(float *best, int *best_c, const int width) {
  KM_UNROLL for (int step = width / 2; step > 0; step /= 2) {
    const float other = ompx_shfl_down_sync_f(~0ull, *best, (unsigned)step, width);
    const int other_c = ompx_shfl_down_sync_i(~0ull, *best_c, (unsigned)step, width);
    if (other < *best || (other == *best && other_c < *best_c)) {
      *best = other;
      *best_c = other_c;
    }
  }
}

/* Point i's candidate in an assign kernel, held by `width` neighbouring threads (best, centroid
 * best_c; `first`: this thread is the first of them): the best of them (km_lanes_best) is kept by
 * the first thread (km_keep) when i < n. Returns 1 when that changed the label, else 0. */
static inline __attribute__((always_inline)) int km_keep_lanes_best(int *restrict labels, float *restrict part_d,
                                                                    int *restrict part_c, size_t n, size_t i, int s,
                                                                    int splits, float best, int best_c,
                                                                    const int width, int first) {
  km_lanes_best(&best, &best_c, width);
  long changed = 0;
  if (first && i < n) km_keep(labels, part_d, part_c, n, i, s, splits, best, best_c, &changed);
  return (int)changed;
}

/* An assign kernel's count of changed labels, handed to the host without a copy back after the
 * kernel (a copy back, and the copy in of the zero it started from, cost more than a small kernel:
 * docs/performance.md, 2026-11-29): `word` (device memory, zero between kernels)
 * holds the teams done in its top KM_TALLY_TEAM_BITS bits and the labels changed below them; out
 * is host memory the device writes (pc_results). */
#define KM_TALLY_COUNT_BITS 38 /* up to 2.7e11 changed labels; the teams done above them */
#define KM_TALLY_TEAM_BITS (64 - KM_TALLY_COUNT_BITS)
typedef struct {
  unsigned long long *word;
  pc_results out;
} km_tally;

/* The end of an assign kernel's team of `threads` threads, by thread tid: the warps' sums of the
 * threads' changes (mine) meet in team memory (warp_changes, a word a warp); the team's first
 * thread then adds the team's sum and one team done to the word in one atomic, so the team that
 * finds all the others done holds the total, with no fence: it writes the total to out[0] and
 * clears the word for the next kernel. */
static inline __attribute__((always_inline)) void km_tally_changes(unsigned long long *word, double *out,
                                                                   unsigned *warp_changes, int mine, int tid,
                                                                   int threads, int teams) {
  for (unsigned step = 16; step > 0; step /= 2) mine += ompx_shfl_down_sync_i(~0ull, mine, step, 32);
  if (tid % 32 == 0) warp_changes[tid / 32] = (unsigned)mine;
  ompx_sync_block_acq_rel();
  if (tid != 0) return;
  unsigned long long team = 0, before;
  for (int w = 0; w < threads / 32; w++) team += warp_changes[w];
#pragma omp atomic capture
  {
    before = word[0];
    word[0] += (1ull << KM_TALLY_COUNT_BITS) + team;
  }
  if (before >> KM_TALLY_COUNT_BITS != (unsigned long long)teams - 1) return;
  word[0] = 0;
  out[0] = (double)((before & ((1ull << KM_TALLY_COUNT_BITS) - 1)) + team);
}

/* Whether an assign kernel of `teams` teams over n points can tally its changes in one word. */
static int km_tally_fits(size_t n, size_t teams) {
  return n < (1ull << KM_TALLY_COUNT_BITS) && teams < (1ull << KM_TALLY_TEAM_BITS);
}

/* The count a kernel tallied (km_tally_changes), on the host after the kernel. */
static long km_tally_take(const km_tally *tally) { return (long)pc_results_take(&tally->out, 1)[0]; }

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

/* Starts thread tid's copies of `depth` features j0.. of a block of points (from i0) into xs: row r
 * (xs[r * xs_row ..]) gets feature j0 + r; thread tid copies element tid % KM_BLOCK_POINTS of rows
 * tid / KM_BLOCK_POINTS, + KM_BLOCK_THREADS / KM_BLOCK_POINTS, ... (consecutive threads read
 * consecutive addresses; as the threads are a multiple of the points, a thread always copies the
 * same point); 0 past the ends. Rows longer than a block (xs_row > KM_BLOCK_POINTS) move the
 * tensor-core kernel's reads of a column onto different banks. The copies join the thread's next
 * group (see km_stage_rows). */
static inline __attribute__((always_inline)) void km_stage_points(const float *restrict xt, size_t n, size_t d,
                                                                  size_t i0, size_t j0, int depth, int tid, float *xs,
                                                                  int xs_row) {
  const size_t i = i0 + (size_t)(tid % KM_BLOCK_POINTS);
  KM_NO_UNROLL for (int u = 0; u < depth * KM_BLOCK_POINTS / KM_BLOCK_THREADS; u++) {
    const int r = tid / KM_BLOCK_POINTS + u * (KM_BLOCK_THREADS / KM_BLOCK_POINTS);
    const size_t j = j0 + (size_t)r;
    const int valid = j < d && i < n;
    km_copy_async(xs + r * xs_row + tid % KM_BLOCK_POINTS, valid ? xt + j * n + i : xt, valid);
  }
}

/* km_stage_points for a block of centroids (from c0) of `tiles` into cs, likewise; the
 * tensor-core kernels also copy the centroids' TF32 tails (tiles_lo, into cs_lo like cs; NULL for
 * the others). */
static inline __attribute__((always_inline)) void km_stage_centroids(const float *restrict tiles,
                                                                     const float *restrict tiles_lo, size_t d, int kpad,
                                                                     int c0, size_t j0, int depth, int tid, float *cs,
                                                                     float *cs_lo, int cs_row) {
  /* four at a time where the arrays start on 16 bytes (the device's allocations do): rows are
   * then whole 16-byte pieces (kpad and cs_row are multiples of 4), and a piece lies wholly below
   * kpad or wholly above it; else one at a time */
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
}

/* Closes this thread's group of copies started since the last group (km_staged_but_last and
 * km_staged_all wait for groups). */
static inline __attribute__((always_inline)) void km_commit_copies(void) {
#if defined(__NVPTX__)
  __nvvm_cp_async_commit_group();
#endif
}

/* Starts thread tid's copies of the chunk of `depth` features j0.. of a tiled block (points from
 * i0 into xs, centroids from c0 into cs and cs_lo: km_stage_points, km_stage_centroids) as one
 * group. */
static inline __attribute__((always_inline)) void
km_stage_rows(const float *restrict xt, const float *restrict tiles, const float *restrict tiles_lo, size_t n, size_t d,
              int kpad, size_t i0, int c0, size_t j0, int depth, int tid, float *xs, int xs_row, float *cs,
              float *cs_lo, int cs_row) {
  km_stage_points(xt, n, d, i0, j0, depth, tid, xs, xs_row);
  km_stage_centroids(tiles, tiles_lo, d, kpad, c0, j0, depth, tid, cs, cs_lo, cs_row);
  km_commit_copies();
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
 * region does not run on the host: km_gpu_open declines a run whose kernels run there. */
static long km_assign_tiled(const float *restrict xt, const float *restrict tiles, const float *restrict cn,
                            int *restrict labels, float *restrict part_d, int *restrict part_c, size_t n, size_t d,
                            int kpad, km_layout l, int direct, const km_tally *tally) {
  unsigned long long *word = tally->word;
  double *out = tally->out.device;
  const int teams = (int)(l.groups * (size_t)l.splits);
#pragma omp target teams ompx_bare num_teams(teams) thread_limit(KM_BLOCK_THREADS) is_device_ptr(word, out)
  {
    static float xs[2 * KM_BLOCK_DEPTH * KM_BLOCK_POINTS] __attribute__((aligned(16)));
    TEAM_LOCAL(xs)
    static float cs[2 * KM_BLOCK_DEPTH * KM_BLOCK_CENTROIDS] __attribute__((aligned(16)));
    TEAM_LOCAL(cs)
    static unsigned warp_changes[KM_BLOCK_THREADS / 32];
    TEAM_LOCAL(warp_changes)
    const int b = ompx_block_id_x(), tid = ompx_thread_id_x();
    int mine = direct ? km_tiled_block(xt, tiles, cn, labels, part_d, part_c, n, d, kpad, l, b, tid, xs, cs, 1)
                      : km_tiled_block(xt, tiles, cn, labels, part_d, part_c, n, d, kpad, l, b, tid, xs, cs, 0);
    km_tally_changes(word, out, warp_changes, mine, tid, KM_BLOCK_THREADS, teams);
  }
  const long changed = km_tally_take(tally);
  return l.splits == 1 ? changed : km_merge_splits(labels, part_d, part_c, n, l.splits);
}

/* Few centroids (kpad <= KM_FEW_MOST; --distance direct and dot): km_assign_tiled's blocks of 64
 * centroids would do 64 / kpad times the needed multiply-adds (eight times at k = 8, where they, not
 * the points read, bounded the step: docs/performance.md). Here a team of KM_FEW_THREADS threads
 * copies all the centroids into team memory once and stays: it takes block after block of points
 * (KM_FEW_TEAMS_PER_SM teams a multiprocessor; a short-lived team a block was slower than the
 * tiled kernel: docs/performance.md). In a block each thread takes `pts` points, KM_FEW_THREADS
 * apart (a warp's reads of a feature are consecutive), reads their labels and their features
 * KM_FEW_DEPTH at a time, all those loads in flight at once, and multiplies each feature by the
 * first k centroids, four at a time from team memory. Sums run over the features in order, the
 * distances and the comparisons (ties to the lowest index) are km_tiled_block's, so are the labels.
 * A thread's sums, pts x kmost, are KM_FEW_SUMS registers: 32 (two points at kpad 16, one at 32)
 * keep a thread under 128 registers, so that both teams of a multiprocessor run at once (64 did
 * not: docs/performance.md). */
#define KM_FEW_THREADS 256
#define KM_FEW_MOST 32     /* the most centroids (kpad) */
#define KM_FEW_STAGED 4096 /* the most centroid values (d kpad) in team memory */
#define KM_FEW_SUMMED 512  /* the most update sums (k (d + 1)) summed in the assign step */
#define KM_FEW_SUMS_DEFAULT 32 /* register sums a thread: kmost times its points */
#ifndef KM_FEW_SUMS
#define KM_FEW_SUMS KM_FEW_SUMS_DEFAULT
#endif
PC_KNOB(KM_FEW_SUMS)
#define KM_FEW_DEPTH_DEFAULT 8 /* features a thread loads at once for each of its points */
#ifndef KM_FEW_DEPTH
#define KM_FEW_DEPTH KM_FEW_DEPTH_DEFAULT
#endif
PC_KNOB(KM_FEW_DEPTH)
#define KM_FEW_TEAMS_PER_SM_DEFAULT 2 /* teams a multiprocessor, each looping over blocks of points */
#ifndef KM_FEW_TEAMS_PER_SM
#define KM_FEW_TEAMS_PER_SM KM_FEW_TEAMS_PER_SM_DEFAULT
#endif
PC_KNOB(KM_FEW_TEAMS_PER_SM)
_Static_assert(KM_FEW_SUMS % KM_FEW_MOST == 0, "km_few_block: whole points a thread at kmost = KM_FEW_MOST");
typedef float km_float4 __attribute__((ext_vector_type(4)));

/* Whether km_assign_few takes an assign step of d features against kpad (padded) centroids. */
static int km_few_applies(size_t d, int kpad) { return kpad <= KM_FEW_MOST && d * (size_t)kpad <= KM_FEW_STAGED; }

/* Whether km_assign_few (direct) is as fast as the tensor cores' dot-3xtf32 (the seam's
 * direct_as_fast, for --distance auto): at kpad 16 wherever it applies, at kpad 32 up to d = 16
 * (the crossover measured: docs/performance.md, 2026-11-28). */
static int km_few_as_fast(size_t d, int kpad) { return km_few_applies(d, kpad) && (kpad <= 16 || d <= 16); }

/* Chunk j0 (KM_FEW_DEPTH features) of thread tid's pts points of the block whose first is i0
 * into x; points past n read as zeros. */
static inline __attribute__((always_inline)) void km_few_load(const float *restrict xt, size_t n, size_t d, size_t i0,
                                                             size_t j0, const int pts, float x[][KM_FEW_DEPTH]) {
  KM_UNROLL for (int p = 0; p < pts; p++) {
    const size_t i = i0 + (size_t)p * KM_FEW_THREADS;
    KM_UNROLL for (int q = 0; q < KM_FEW_DEPTH; q++)
      x[p][q] = i < n && j0 + (size_t)q < d ? xt[(j0 + (size_t)q) * n + i] : 0.0f;
  }
}

/* The first chunk of thread tid's pts points of the block whose first is i0, and their labels,
 * copied into team memory without registers (cp.async, one group): feature q of point p at
 * ahead[(q * pts + p) * KM_FEW_THREADS + tid], the label at ahead_labels[p * KM_FEW_THREADS + tid],
 * so that the thread reads them back on 32 different banks; zeros past n. km_few_take waits for
 * them and reads them into x and old. */
static inline __attribute__((always_inline)) void km_few_fetch(const float *restrict xt, const int *restrict labels,
                                                              size_t n, size_t d, size_t i0, int tid, const int pts,
                                                              float *ahead, int *ahead_labels) {
  KM_UNROLL for (int p = 0; p < pts; p++) {
    const size_t i = i0 + (size_t)p * KM_FEW_THREADS;
    km_copy_async((float *)ahead_labels + p * KM_FEW_THREADS + tid, i < n ? (const float *)labels + i : xt, i < n);
    KM_UNROLL for (int q = 0; q < KM_FEW_DEPTH; q++) {
      const int valid = i < n && (size_t)q < d;
      km_copy_async(ahead + (q * pts + p) * KM_FEW_THREADS + tid, valid ? xt + (size_t)q * n + i : xt, valid);
    }
  }
  km_commit_copies();
}
static inline __attribute__((always_inline)) void km_few_take(const float *ahead, const int *ahead_labels, int tid,
                                                             const int pts, float x[][KM_FEW_DEPTH], int *old) {
  km_staged_all();
  KM_UNROLL for (int p = 0; p < pts; p++) {
    old[p] = ahead_labels[p * KM_FEW_THREADS + tid];
    KM_UNROLL for (int q = 0; q < KM_FEW_DEPTH; q++) x[p][q] = ahead[(q * pts + p) * KM_FEW_THREADS + tid];
  }
}

/* Team b's points of km_assign_few, by thread tid; kmost (16 or 32, at least kpad), pts (kmost pts
 * = KM_FEW_SUMS) and direct are constants after inlining. A team takes blocks of KM_FEW_THREADS
 * pts points; where d <= KM_FEW_DEPTH each thread starts copying its points of the team's next
 * block (and their old labels) into team memory (km_few_fetch) as soon as it has read the current
 * one's, so that those loads are in flight while it computes, stores and sums, with no registers
 * held for them. Returns how many labels this thread changed. */
static inline __attribute__((always_inline)) int km_few_block(const float *restrict xt, const float *restrict tiles,
                                                              const float *restrict cn, int *restrict labels, size_t n,
                                                              size_t d, int k, int kpad, int team, int teams,
                                                              int tid, float *restrict cs, km_team_word *local,
                                                              float *ahead, int *ahead_labels,
                                                              const float *restrict scale, const int kmost,
                                                              const int pts, const int direct, const int sum) {
  const size_t sums_row = d + 1; /* sum: a cluster's d sums and its count */
  float sc[KM_FEW_DEPTH]; /* sum: the fixed point's scales */
  KM_UNROLL for (int j = 0; j < KM_FEW_DEPTH; j++) sc[j] = sum && (size_t)j < d ? scale[j] : 0.0f;
  for (size_t e = (size_t)tid; e < d * (size_t)kpad; e += KM_FEW_THREADS) cs[e] = tiles[e];
  if (sum)
    for (size_t e = (size_t)tid; e < KM_SUM_WORDS * (size_t)k * sums_row; e += KM_FEW_THREADS) local[e] = 0;
  const size_t per_block = (size_t)KM_FEW_THREADS * (size_t)pts, blocks = (n + per_block - 1) / per_block;
  /* a chunk's features of the current block (sum: d <= KM_FEW_DEPTH, all of them), its labels as
   * they were; the first block's loaded while the centroids are staged */
  float xv[KM_FEW_SUMS / 16][KM_FEW_DEPTH];
  int old[KM_FEW_SUMS / 16];
  /* copies ahead where one chunk holds every feature; with more, the next block's first chunk
   * alone overlapped too little to pay for the barrier (docs/performance.md) */
  const int ahead_on = d <= KM_FEW_DEPTH;
  if (ahead_on) km_few_fetch(xt, labels, n, d, (size_t)team * per_block + (size_t)tid, tid, pts, ahead, ahead_labels);
  ompx_sync_block_acq_rel();
  int mine = 0;
  KM_NO_UNROLL for (size_t blk = (size_t)team; blk < blocks; blk += (size_t)teams) {
    const size_t i0 = blk * per_block + (size_t)tid;
    if (ahead_on) {
      km_few_take(ahead, ahead_labels, tid, pts, xv, old);
      /* the reads done before the next copies land in the same places (one buffer: two would
       * pass the 48 KiB of static team memory) */
      ompx_sync_block_acq_rel();
      km_few_fetch(xt, labels, n, d, (blk + (size_t)teams) * per_block + (size_t)tid, tid, pts, ahead, ahead_labels);
    } else {
      KM_UNROLL for (int p = 0; p < pts; p++) {
        const size_t i = i0 + (size_t)p * KM_FEW_THREADS;
        old[p] = i < n ? labels[i] : 0;
      }
    }
    float acc[KM_FEW_SUMS];
    KM_UNROLL for (int e = 0; e < KM_FEW_SUMS; e++) acc[e] = 0.0f;
    KM_NO_UNROLL for (size_t j0 = 0; j0 < d; j0 += KM_FEW_DEPTH) {
      if (j0 > 0 || !ahead_on) km_few_load(xt, n, d, i0, j0, pts, xv); /* every load of the chunk at once */
      KM_UNROLL for (int q = 0; q < KM_FEW_DEPTH; q++) {
        const float *row = cs + (j0 + (size_t)q) * (size_t)kpad;
        KM_UNROLL for (int c4 = 0; c4 < kmost; c4 += 4) {
          /* features past d add nothing; centroids past k (padding) never win: neither computed */
          if (j0 + (size_t)q < d && c4 < k) {
            const km_float4 cv = *(const km_float4 *)__builtin_assume_aligned(row + c4, 16);
            KM_UNROLL for (int p = 0; p < pts; p++)
              KM_UNROLL for (int e = 0; e < 4; e++) {
                if (direct) acc[p * kmost + c4 + e] += (xv[p][q] - cv[e]) * (xv[p][q] - cv[e]);
                else acc[p * kmost + c4 + e] += xv[p][q] * cv[e];
              }
          }
        }
      }
    }
    KM_UNROLL for (int p = 0; p < pts; p++) {
      const size_t i = i0 + (size_t)p * KM_FEW_THREADS;
      float best = INFINITY;
      int best_c = 0;
      KM_UNROLL for (int c = 0; c < kmost; c++) {
        if (c >= k) continue;
        const float dist = direct ? acc[p * kmost + c] + cn[c] : cn[c] - 2.0f * acc[p * kmost + c];
        if (dist < best) {
          best = dist;
          best_c = c;
        }
      }
      if (i < n) {
        mine += old[p] != best_c;
        labels[i] = best_c;
        if (sum) { /* the point into its cluster's team-local sums, as km_team_add_point */
          const size_t base = (size_t)best_c * sums_row;
          KM_UNROLL for (int j = 0; j < KM_FEW_DEPTH; j++)
            if ((size_t)j < d) km_team_add(local, base + (size_t)j, km_to_fixed(xv[p][j], sc[j]));
          km_team_add(local, base + d, 1);
        }
      }
    }
  }
  km_staged_all(); /* the copies past the last block: none left in flight at the kernel's end */
  return mine;
}

/* A team's sums of whole clusters (km_few_block's `local`) added to the global ones (sums[j * k +
 * c]), once a team, after its threads are done. */
static inline __attribute__((always_inline)) void km_flush_team_sums(const km_team_word *local, km_fixed *sums,
                                                                     size_t d, int k, int tid, const int threads) {
  ompx_sync_block_acq_rel();
  const size_t row = d + 1;
  for (size_t e = (size_t)tid; e < (size_t)k * row; e += (size_t)threads) km_team_sum_to_global(local, sums, e, row, k);
}

/* The assign step for few centroids (see km_few_block); returns how many labels changed. The
 * caller has checked km_few_applies and that kernels run on the GPU. */
static long km_assign_few(const float *restrict xt, const float *restrict tiles, const float *restrict cn,
                          int *restrict labels, size_t n, size_t d, int k, int kpad, int direct,
                          km_fixed *restrict sums, const float *restrict scale, const km_tally *tally) {
  unsigned long long *word = tally->word;
  double *out = tally->out.device;
  const int kmost = kpad <= 16 ? 16 : KM_FEW_MOST, pts = KM_FEW_SUMS / kmost;
  const size_t blocks = (n + (size_t)KM_FEW_THREADS * pts - 1) / ((size_t)KM_FEW_THREADS * pts),
               most = (size_t)KM_FEW_TEAMS_PER_SM * (size_t)pc_device_multiprocessors();
  const int teams = (int)(blocks < most ? blocks : most);
  /* Two kernels: summing takes more registers, which would slow the other form (both teams of a
   * multiprocessor at once need at most 128); the forms are constants within each. */
#define KM_FEW_KERNEL(sum)                                                                                            \
  _Pragma("omp target teams ompx_bare num_teams(teams) thread_limit(KM_FEW_THREADS) is_device_ptr(word, out)") {  \
    static float cs[KM_FEW_STAGED] __attribute__((aligned(16)));                                                     \
    TEAM_LOCAL(cs)                                                                                                   \
    static km_team_word local[(sum) ? KM_SUM_WORDS * KM_FEW_SUMMED : 1];                                             \
    TEAM_LOCAL(local)                                                                                                \
    static float ahead[KM_FEW_SUMS / 16 * KM_FEW_DEPTH * KM_FEW_THREADS];                                            \
    TEAM_LOCAL(ahead)                                                                                                \
    static int ahead_labels[KM_FEW_SUMS / 16 * KM_FEW_THREADS];                                                      \
    TEAM_LOCAL(ahead_labels)                                                                                         \
    static unsigned warp_changes[KM_FEW_THREADS / 32];                                                               \
    TEAM_LOCAL(warp_changes)                                                                                         \
    const int b = ompx_block_id_x(), tid = ompx_thread_id_x();                                                       \
    const int mine = kmost == 16 ? (direct ? KM_FEW_BLOCK(16, 1, sum) : KM_FEW_BLOCK(16, 0, sum))                    \
                                 : (direct ? KM_FEW_BLOCK(32, 1, sum) : KM_FEW_BLOCK(32, 0, sum));                   \
    if (sum) km_flush_team_sums(local, sums, d, k, tid, KM_FEW_THREADS);                                             \
    km_tally_changes(word, out, warp_changes, mine, tid, KM_FEW_THREADS, teams);                                     \
  }
#define KM_FEW_BLOCK(kmost, direct, sum)                                                                              \
  km_few_block(xt, tiles, cn, labels, n, d, k, kpad, b, teams, tid, cs, local, ahead, ahead_labels, scale, kmost,     \
               KM_FEW_SUMS / kmost, direct, sum)
  if (sums)
    KM_FEW_KERNEL(1)
  else
    KM_FEW_KERNEL(0)
#undef KM_FEW_BLOCK
#undef KM_FEW_KERNEL
  return km_tally_take(tally);
}

/* Whether km_assign_few also sums the points into the update's sums (km_gpu_assign_and_sum): a
 * point's features all in its thread's registers (d <= KM_FEW_DEPTH) and the k (d + 1) sums in
 * team memory beside the centroids. */
static int km_few_sums(size_t d, int k, int kpad) {
  return km_few_applies(d, kpad) && d <= KM_FEW_DEPTH && (size_t)k * (d + 1) <= KM_FEW_SUMMED;
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
 * near-ties (as cuBLAS' do). --distance dot-tf32 (products = 1) takes hi.hi alone, neither
 * splitting the points nor staging the centroids' tails: TF32's precision, about 2^-11 of a
 * product, as Flash-KMeans' and PyTorch's allow_tf32 default. */
#define KM_MMA_XS_ROW (KM_BLOCK_POINTS + 8)
#define KM_MMA_CS_ROW (KM_BLOCK_CENTROIDS + 8)
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

#if !defined(PC_SM90A) /* only km_wide_block multiplies 16-bit values with mma.sync */
/* acc += a b for one m16n8k16 tile of 16-bit values (form KM_TENSOR_FP16 or KM_TENSOR_BF16, a
 * constant after inlining): a and b hold pairs, the lower k in the lower half, the fragments'
 * registers in the order of km_mma_tf32's (a register of either holds the same two positions' 32 bits
 * of a row of 16 values that one TF32 register holds of a row of 8). */
static inline __attribute__((always_inline)) void km_mma_16bit(float acc[4], const unsigned a[4], const unsigned b[2],
                                                               const int form) {
#if defined(__NVPTX__)
  if (form == KM_TENSOR_FP16)
    __asm__ volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                     "{%0, %1, %2, %3};"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    __asm__ volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  (void)acc, (void)a, (void)b, (void)form;
#endif
}
#endif

/* Whether a tensor form multiplies 16-bit values (dot-fp16, dot-bf16). */
static inline __attribute__((always_inline)) int km_16bit(int form) {
  return form == KM_TENSOR_FP16 || form == KM_TENSOR_BF16;
}

/* A warp's sums for one block of 64 centroids against its points' best so far: acc[mi][ni][2 h + e]
 * holds point (mi, h)'s product with centroid c0 + 8 ni + 2 t + e, whose distance norm - 2 acc is
 * compared with best[2 mi + h] (centroid best_c); mtiles (a constant after inlining) counts the mi.
 * A thread's columns come in increasing order and the test is strict: ties go to the lowest index.
 * The norms past kpad count as +inf; `padded` (a constant after inlining): cn holds them so (the
 * resident teams' copy in team memory), so no column is tested against kpad. */
static inline __attribute__((always_inline)) void km_mma_keep_best(float acc[][8][4], const int mtiles, int c0, int t,
                                                                   int kpad, const float *restrict cn,
                                                                   const int padded, float *best, int *best_c) {
  KM_UNROLL for (int ni = 0; ni < 8; ni++)
    KM_UNROLL for (int e = 0; e < 2; e++) {
      const int col = c0 + ni * 8 + 2 * t + e;
      const float norm = padded || col < kpad ? cn[col] : INFINITY;
      KM_UNROLL for (int r = 0; r < 2 * mtiles; r++) { /* point r: mi = r / 2, h = r % 2 */
        const float dist = norm - 2.0f * acc[r / 2][ni][2 * (r % 2) + e];
        if (dist < best[r]) {
          best[r] = dist;
          best_c[r] = col;
        }
      }
    }
}

/* One K step (8 features) of a warp's sums acc[mi][ni] (see km_mma_block) from team memory, by
 * thread (g, t) = (lane / 4, lane % 4): xq holds the step's 8 rows of the warp's 32 points (rows
 * KM_MMA_XS_ROW apart), cq and cq_lo those of the 64 centroids' heads and tails (rows KM_MMA_CS_ROW
 * apart; cq_lo unread for one product), each from this thread's column g; the points are split into
 * TF32 here. */
static inline __attribute__((always_inline)) void km_mma_step(const float *xq, const float *cq, const float *cq_lo,
                                                              int t, float acc[2][8][4], const int products) {
  unsigned a_hi[2][4], a_lo[2][4];
  KM_UNROLL for (int mi = 0; mi < 2; mi++)
    KM_UNROLL for (int e = 0; e < 4; e++) { /* rows t, t + 4 (features) x columns g, g + 8 (points) */
      const float x = xq[(t + 4 * (e / 2)) * KM_MMA_XS_ROW + mi * 16 + 8 * (e % 2)];
      if (products == 3) km_tf32_split(x, &a_hi[mi][e], &a_lo[mi][e]);
      else a_hi[mi][e] = km_tf32_round(x);
    }
  KM_UNROLL for (int nn = 0; nn < 8; nn += 2) { /* two centroid tiles: four sums in flight */
    unsigned b_hi[2][2], b_lo[2][2];
    KM_UNROLL for (int ni = 0; ni < 2; ni++)
      KM_UNROLL for (int e = 0; e < 2; e++) {
        b_hi[ni][e] = km_float_bits(cq[(t + 4 * e) * KM_MMA_CS_ROW + (nn + ni) * 8]);
        if (products == 3) b_lo[ni][e] = km_float_bits(cq_lo[(t + 4 * e) * KM_MMA_CS_ROW + (nn + ni) * 8]);
      }
    if (products == 3) {
      KM_UNROLL for (int mi = 0; mi < 2; mi++) /* the small terms first */
        KM_UNROLL for (int ni = 0; ni < 2; ni++) km_mma_tf32(acc[mi][nn + ni], a_lo[mi], b_hi[ni]);
      KM_UNROLL for (int mi = 0; mi < 2; mi++)
        KM_UNROLL for (int ni = 0; ni < 2; ni++) km_mma_tf32(acc[mi][nn + ni], a_hi[mi], b_lo[ni]);
    }
    KM_UNROLL for (int mi = 0; mi < 2; mi++)
      KM_UNROLL for (int ni = 0; ni < 2; ni++) km_mma_tf32(acc[mi][nn + ni], a_hi[mi], b_hi[ni]);
  }
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
             float *restrict cs_lo, const int products) {
  const int s = b % l.splits, warp = tid / 32, g = tid % 32 / 4, t = tid % 4;
  const size_t i0 = (size_t)(b / l.splits) * KM_BLOCK_POINTS;
  const int cb_begin = s * l.tiles_per_split;
  const int cb_end = cb_begin + l.tiles_per_split < l.tiles ? cb_begin + l.tiles_per_split : l.tiles;
  const float *tails = products == 3 ? tiles_lo : NULL; /* the centroids' TF32 tails, staged for 3 products */
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
    km_stage_rows(xt, tiles, tails, n, d, kpad, i0, c0, 0, KM_MMA_DEPTH, tid, xs, KM_MMA_XS_ROW, cs, cs_lo,
                  KM_MMA_CS_ROW);
    KM_NO_UNROLL for (size_t q = 0; q < chunks; q++) {
      if (q + 1 < chunks) {
        const size_t next = ((q + 1) % 2) * KM_MMA_DEPTH;
        km_stage_rows(xt, tiles, tails, n, d, kpad, i0, c0, (q + 1) * KM_MMA_DEPTH, KM_MMA_DEPTH, tid,
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
        km_mma_step(xq, cs + row, cs_lo + row, t, acc, products);
      }
      ompx_sync_block_acq_rel(); /* buffer q % 2 is free for chunk q + 2 */
    }
    km_mma_keep_best(acc, 2, c0, t, kpad, cn, 0, best, best_c);
  }
  int mine = 0;
  KM_UNROLL for (int r = 0; r < 4; r++) /* point r: mi = r / 2, h = r % 2 */
    mine += km_keep_lanes_best(labels, part_d, part_c, n, i0 + (size_t)(warp * 32 + (r / 2) * 16 + (r % 2) * 8 + g),
                               s, l.splits, best[r], best_c[r], 4, t == 0);
  return mine;
}

/* Resident teams for km_assign_mma where a block's features and all the centroids fit in team
 * memory together (d <= KM_MMA_RESIDENT_DEPTH, kpad <= KM_MMA_RESIDENT_TILES blocks of 64, one
 * range): the short-lived teams of km_mma_block would each stage the same centroids again for a
 * block of 128 points and wait on their own first copies. Here KM_MMA_RESIDENT_TEAMS_PER_SM teams a
 * multiprocessor copy the centroids once and take block after block of points, each block's
 * features and old labels copied in while the block before it is multiplied (two buffers). The
 * products, their order and the comparisons are km_mma_block's, so are the labels. */
#define KM_MMA_RESIDENT_DEPTH 16
#define KM_MMA_RESIDENT_TILES 2
#define KM_MMA_RESIDENT_TEAMS_PER_SM_DEFAULT 4 /* 128 registers a thread: four teams of 128 threads */
#ifndef KM_MMA_RESIDENT_TEAMS_PER_SM
#define KM_MMA_RESIDENT_TEAMS_PER_SM KM_MMA_RESIDENT_TEAMS_PER_SM_DEFAULT
#endif
PC_KNOB(KM_MMA_RESIDENT_TEAMS_PER_SM)
#define KM_MMA_RESIDENT_XS (KM_MMA_RESIDENT_DEPTH * KM_MMA_XS_ROW) /* floats of a block's staged features */
#define KM_MMA_RESIDENT_CS (KM_MMA_RESIDENT_DEPTH * KM_MMA_CS_ROW) /* floats of a centroid block's */
_Static_assert(KM_MMA_RESIDENT_DEPTH % 8 == 0 && KM_BLOCK_THREADS == KM_BLOCK_POINTS && KM_MMA_XS_ROW % 4 == 0 &&
                   KM_MMA_RESIDENT_DEPTH % (KM_BLOCK_THREADS / (KM_BLOCK_POINTS / 4)) == 0,
               "km_mma_resident: whole mma K steps; a thread copies one point's old label; rows of whole pieces");

/* Whether km_assign_mma takes resident teams for layout l of d features. */
static int km_mma_resident_applies(size_t d, km_layout l) {
  return d <= KM_MMA_RESIDENT_DEPTH && l.splits == 1 && l.tiles <= KM_MMA_RESIDENT_TILES;
}

/* The resident teams can also move the points whose label changes between the update step's kept
 * sums (km_gpu_assign_and_move), from the features they hold in team memory anyway: so an
 * iteration reads the points once and needs no update kernel of its own. A team gathers its
 * moves in its own sums of whole clusters, KM_MMA_MOVE_SUMS of them (k (d + 1): k = 64 at d = 16,
 * k = 128 at d = 8; more would take the team past the 48 KiB of static team memory a kernel may
 * have), and adds them to the global sums once, at its end. */
#define KM_MMA_MOVE_SUMS 1152
/* Teams a multiprocessor of the moving kernel: it takes more than 128 registers a thread (ptxas
 * gives the other 126, the moving one about 164; a bare region cannot bound them, and the forms of
 * the moves tried all took 157-166: docs/performance.md, 2026-11-29), so three teams of 128 threads
 * fit, not four. */
#define KM_MMA_MOVE_TEAMS_PER_SM_DEFAULT 3
#ifndef KM_MMA_MOVE_TEAMS_PER_SM
#define KM_MMA_MOVE_TEAMS_PER_SM KM_MMA_MOVE_TEAMS_PER_SM_DEFAULT
#endif
PC_KNOB(KM_MMA_MOVE_TEAMS_PER_SM)

/* Waits for the warp's lanes; their team-memory writes before it are seen by all of them after it. */
static inline __attribute__((always_inline)) void km_sync_warp(void) {
#if defined(__NVPTX__)
  __nvvm_bar_warp_sync(0xffffffffu);
#endif
}

/* Moves the changed points among a warp's 32 points of a block in the team's sums `local`
 * (km_team_add_point's layout), by lane `lane`: point p (the first `valid` are below n) has old
 * label olds[p] (-1: in no sums yet) and new label news[p], and its features in rows of xb. A
 * point leaves its old cluster's sums and joins its new one's, a value a lane: with row = d + 1
 * values (the count last), a round takes 32 / row points, lane (slot, j) = (lane / row, lane %
 * row) value j of the round's slot-th point. */
static inline __attribute__((always_inline)) void km_move_warp_changes(const float *xb, const int *olds,
                                                                       const int *news, int valid, size_t d,
                                                                       const float *restrict scale, km_team_word *local,
                                                                       int lane) {
  km_sync_warp(); /* news: written by other lanes */
  const int row = (int)d + 1, per_round = 32 / row, slot = lane / row, j = lane % row;
  unsigned long long left = ompx_ballot_sync(~0ull, lane < valid && olds[lane] != news[lane]); /* the same in all */
  while (left) {
    unsigned long long own = left; /* from the slot-th point of the round on */
    for (int s = 0; s < slot; s++) own &= own - 1;
    for (int s = 0; s < per_round; s++) left &= left - 1;
    if (slot >= per_round || !own) continue;
    const int p = __builtin_ctzll(own), before = olds[p];
    const km_fixed q = j < (int)d ? km_to_fixed(xb[j * KM_MMA_XS_ROW + p], scale[j]) : 1;
    if (before >= 0) km_team_add(local, (size_t)before * (size_t)row + (size_t)j, -q);
    km_team_add(local, (size_t)news[p] * (size_t)row + (size_t)j, q);
  }
}

/* Starts thread tid's copies of block blk's first `depth` features (into xs) and its points' old
 * labels (into olds) as one group. With `pieces` (the rows start on 16 bytes: n % 4 == 0 and xt
 * so aligned) a copy takes four consecutive points of a feature, which lie wholly below n or
 * wholly past it: a quarter of the copies km_stage_points makes a value at a time, and one pointer
 * stepped by whole rows (that loop's index arithmetic was 27% of the kernel's instructions at
 * d = 16, k = 64: docs/performance.md, 2026-11-29). */
static inline __attribute__((always_inline)) void km_stage_resident_block(const float *restrict xt,
                                                                          const int *restrict labels, size_t n,
                                                                          size_t d, size_t blk, int depth, int pieces,
                                                                          int tid, float *xs, int *olds) {
  const size_t i0 = blk * KM_BLOCK_POINTS, i = i0 + (size_t)tid;
  km_copy_async((float *)olds + tid, i < n ? (const float *)labels + i : xt, i < n);
  if (pieces) {
    enum { per_row = KM_BLOCK_POINTS / 4, rows_at_once = KM_BLOCK_THREADS / per_row };
    const int r0 = tid / per_row, piece = tid % per_row;
    const size_t at = i0 + 4 * (size_t)piece;
    const float *src = xt + (size_t)r0 * n + at;
    float *dst = xs + r0 * KM_MMA_XS_ROW + 4 * piece;
    KM_UNROLL for (int u = 0; u < KM_MMA_RESIDENT_DEPTH / rows_at_once; u++) {
      const int r = r0 + u * rows_at_once;
      if (r >= depth) break;
      const int valid = at < n && (size_t)r < d;
      km_copy_async4(dst, valid ? src : xt, valid);
      src += rows_at_once * n;
      dst += rows_at_once * KM_MMA_XS_ROW;
    }
  } else {
    km_stage_points(xt, n, d, i0, 0, depth, tid, xs, KM_MMA_XS_ROW);
  }
  km_commit_copies();
}

/* Team `team` of `teams` of the resident km_assign_mma, by thread tid: blocks team, team + teams,
 * ... of `blocks`, through xs and olds (two buffers each), the centroids in cs and cs_lo (a block
 * of 64 after another) and their norms in `norms` (+inf past kpad). Warp w's points and a thread's
 * sums are km_mma_block's. With `moving` (a constant after inlining) the changed points also move
 * in the team's sums `local` of the k clusters (km_move_warp_changes; the new labels pass through
 * `news`, with the scales `scale`). Returns how many labels this thread changed. */
static inline __attribute__((always_inline)) int
km_mma_resident(const float *restrict xt, const float *restrict tiles, const float *restrict tiles_lo,
                const float *restrict cn, int *restrict labels, size_t n, size_t d, int k, int kpad, size_t blocks,
                int team, int teams, int tid, float *restrict xs, float *restrict cs, float *restrict cs_lo,
                int *restrict olds, float *restrict norms, const int products, km_team_word *local, int *news,
                const float *restrict scale, const int moving) {
  const int warp = tid / 32, g = tid % 32 / 4, t = tid % 4;
  if (moving) /* zeros, seen after the loop's first barrier */
    for (size_t e = (size_t)tid; e < KM_SUM_WORDS * (size_t)k * (d + 1); e += KM_BLOCK_THREADS) local[e] = 0;
  const int steps = (int)((d + 7) / 8), ctiles = (kpad + KM_BLOCK_CENTROIDS - 1) / KM_BLOCK_CENTROIDS;
  const int depth = 8 * steps; /* features staged: d rounded up to whole K steps (zeros past d) */
  const float *tails = products == 3 ? tiles_lo : NULL; /* the centroids' TF32 tails, staged for 3 products */
  const int pieces = n % 4 == 0 && (uintptr_t)xt % 16 == 0;
  for (int cb = 0; cb < ctiles; cb++) /* the centroids join the first block's group */
    km_stage_centroids(tiles, tails, d, kpad, cb * KM_BLOCK_CENTROIDS, 0, depth, tid, cs + cb * KM_MMA_RESIDENT_CS,
                       cs_lo + cb * KM_MMA_RESIDENT_CS, KM_MMA_CS_ROW);
  for (int c = tid; c < ctiles * KM_BLOCK_CENTROIDS; c += KM_BLOCK_THREADS) /* seen after the loop's first barrier */
    norms[c] = c < kpad ? cn[c] : INFINITY;
  km_stage_resident_block(xt, labels, n, d, (size_t)team, depth, pieces, tid, xs, olds);
  int mine = 0, buf = 0;
  KM_NO_UNROLL for (size_t blk = (size_t)team; blk < blocks; blk += (size_t)teams, buf ^= 1) {
    if (blk + (size_t)teams < blocks) { /* the next block lands while this one is multiplied */
      km_stage_resident_block(xt, labels, n, d, blk + (size_t)teams, depth, pieces, tid,
                              xs + (buf ^ 1) * KM_MMA_RESIDENT_XS, olds + (buf ^ 1) * KM_BLOCK_POINTS);
      km_staged_but_last();
    } else {
      km_staged_all();
    }
    ompx_sync_block_acq_rel();
    const float *xb = xs + buf * KM_MMA_RESIDENT_XS + warp * 32 + g;
    float best[4];
    int best_c[4];
    KM_UNROLL for (int r = 0; r < 4; r++) {
      best[r] = INFINITY;
      best_c[r] = 0;
    }
    KM_NO_UNROLL for (int cb = 0; cb < ctiles; cb++) {
      float acc[2][8][4];
      KM_UNROLL for (int mi = 0; mi < 2; mi++)
        KM_UNROLL for (int ni = 0; ni < 8; ni++)
          KM_UNROLL for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.0f;
      const float *cb_hi = cs + cb * KM_MMA_RESIDENT_CS + g, *cb_lo = cs_lo + cb * KM_MMA_RESIDENT_CS + g;
      KM_NO_UNROLL for (int ks = 0; ks < steps; ks++)
        km_mma_step(xb + ks * 8 * KM_MMA_XS_ROW, cb_hi + ks * 8 * KM_MMA_CS_ROW, cb_lo + ks * 8 * KM_MMA_CS_ROW, t, acc,
                    products);
      km_mma_keep_best(acc, 2, cb * KM_BLOCK_CENTROIDS, t, kpad, norms, 1, best, best_c);
    }
    const size_t i0 = blk * KM_BLOCK_POINTS;
    KM_UNROLL for (int r = 0; r < 4; r++) { /* point r: mi = r / 2, h = r % 2 */
      const int p = warp * 32 + (r / 2) * 16 + (r % 2) * 8 + g;
      km_lanes_best(&best[r], &best_c[r], 4);
      if (t == 0 && i0 + (size_t)p < n) {
        mine += olds[buf * KM_BLOCK_POINTS + p] != best_c[r];
        labels[i0 + (size_t)p] = best_c[r];
        if (moving) news[p] = best_c[r];
      }
    }
    if (moving) {
      const size_t first = i0 + (size_t)warp * 32; /* the warp's first point */
      const int valid = first >= n ? 0 : n - first < 32 ? (int)(n - first) : 32;
      km_move_warp_changes(xs + buf * KM_MMA_RESIDENT_XS + warp * 32, olds + buf * KM_BLOCK_POINTS + warp * 32,
                           news + warp * 32, valid, d, scale, local, tid % 32);
    }
    ompx_sync_block_acq_rel(); /* buffer buf is free for block blk + 2 teams */
  }
  return mine;
}

/* The resident km_assign_mma (km_mma_resident_applies); returns how many labels changed. With
 * `sums` (kept sums of whole clusters, sums[j * k + c], which hold the points by their labels as
 * the step finds them) the changed points also move there, in fixed point with the scales `scale`. */
static long km_assign_mma_resident(const float *restrict xt, const float *restrict tiles,
                                   const float *restrict tiles_lo, const float *restrict cn, int *restrict labels,
                                   size_t n, size_t d, int k, int kpad, km_layout l, int products,
                                   km_fixed *restrict sums, const float *restrict scale, const km_tally *tally) {
  unsigned long long *word = tally->word;
  double *out = tally->out.device;
  const int per_sm = sums ? KM_MMA_MOVE_TEAMS_PER_SM : KM_MMA_RESIDENT_TEAMS_PER_SM;
  const size_t most = (size_t)per_sm * (size_t)pc_device_multiprocessors();
  const size_t blocks = l.groups;
  const int teams = (int)(blocks < most ? blocks : most);
  /* Two kernels: the moves' team memory and code stay out of the other (a kernel's registers are
   * its widest path's); the products are constants within each. */
#define KM_RESIDENT_KERNEL(moving)                                                                                    \
  _Pragma("omp target teams ompx_bare num_teams(teams) thread_limit(KM_BLOCK_THREADS) is_device_ptr(word, out)") {  \
    static float xs[2 * KM_MMA_RESIDENT_XS] __attribute__((aligned(16)));                                            \
    TEAM_LOCAL(xs)                                                                                                   \
    static float cs[KM_MMA_RESIDENT_TILES * KM_MMA_RESIDENT_CS] __attribute__((aligned(16)));                        \
    TEAM_LOCAL(cs)                                                                                                   \
    static float cs_lo[KM_MMA_RESIDENT_TILES * KM_MMA_RESIDENT_CS] __attribute__((aligned(16)));                     \
    TEAM_LOCAL(cs_lo)                                                                                                \
    static int olds[2 * KM_BLOCK_POINTS];                                                                            \
    TEAM_LOCAL(olds)                                                                                                 \
    static float norms[KM_MMA_RESIDENT_TILES * KM_BLOCK_CENTROIDS]; /* cn, +inf past kpad */                         \
    TEAM_LOCAL(norms)                                                                                                \
    static km_team_word local[(moving) ? KM_SUM_WORDS * KM_MMA_MOVE_SUMS : 1];                                       \
    TEAM_LOCAL(local)                                                                                                \
    static int news[(moving) ? KM_BLOCK_POINTS : 1];                                                                 \
    TEAM_LOCAL(news)                                                                                                 \
    static unsigned warp_changes[KM_BLOCK_THREADS / 32];                                                             \
    TEAM_LOCAL(warp_changes)                                                                                         \
    const int team = ompx_block_id_x(), tid = ompx_thread_id_x();                                                    \
    const int mine = products == 3 ? KM_RESIDENT_TEAM(3, moving) : KM_RESIDENT_TEAM(1, moving);                      \
    if (moving) km_flush_team_sums(local, sums, d, k, tid, KM_BLOCK_THREADS);                                        \
    km_tally_changes(word, out, warp_changes, mine, tid, KM_BLOCK_THREADS, teams);                                   \
  }
#define KM_RESIDENT_TEAM(products, moving)                                                                            \
  km_mma_resident(xt, tiles, tiles_lo, cn, labels, n, d, k, kpad, blocks, team, teams, tid, xs, cs, cs_lo, olds,     \
                  norms, products, local, news, scale, moving)
  if (sums)
    KM_RESIDENT_KERNEL(1)
  else
    KM_RESIDENT_KERNEL(0)
#undef KM_RESIDENT_TEAM
#undef KM_RESIDENT_KERNEL
  return km_tally_take(tally);
}

/* The assign step on the tensor cores in `products` products (3 or 1, see km_mma_block); returns
 * how many labels changed. The caller has checked that kernels run on the GPU (a bare region
 * does not run on the host). */
static long km_assign_mma(const float *restrict xt, const float *restrict tiles, const float *restrict tiles_lo,
                          const float *restrict cn, int *restrict labels, float *restrict part_d,
                          int *restrict part_c, size_t n, size_t d, int k, int kpad, km_layout l, int products,
                          const km_tally *tally) {
  if (km_mma_resident_applies(d, l))
    return km_assign_mma_resident(xt, tiles, tiles_lo, cn, labels, n, d, k, kpad, l, products, NULL, NULL, tally);
  unsigned long long *word = tally->word;
  double *out = tally->out.device;
  const int teams = (int)(l.groups * (size_t)l.splits);
#pragma omp target teams ompx_bare num_teams(teams) thread_limit(KM_BLOCK_THREADS) is_device_ptr(word, out)
  {
    static float xs[2 * KM_MMA_DEPTH * KM_MMA_XS_ROW] __attribute__((aligned(16)));
    TEAM_LOCAL(xs)
    static float cs[2 * KM_MMA_DEPTH * KM_MMA_CS_ROW] __attribute__((aligned(16)));
    TEAM_LOCAL(cs)
    static float cs_lo[2 * KM_MMA_DEPTH * KM_MMA_CS_ROW] __attribute__((aligned(16)));
    TEAM_LOCAL(cs_lo)
    static unsigned warp_changes[KM_BLOCK_THREADS / 32];
    TEAM_LOCAL(warp_changes)
    const int b = ompx_block_id_x(), tid = ompx_thread_id_x();
    int mine;
    if (products == 3)
      mine = km_mma_block(xt, tiles, tiles_lo, cn, labels, part_d, part_c, n, d, kpad, l, b, tid, xs, cs, cs_lo, 3);
    else
      mine = km_mma_block(xt, tiles, tiles_lo, cn, labels, part_d, part_c, n, d, kpad, l, b, tid, xs, cs, cs_lo, 1);
    km_tally_changes(word, out, warp_changes, mine, tid, KM_BLOCK_THREADS, teams);
  }
  const long changed = km_tally_take(tally);
  return l.splits == 1 ? changed : km_merge_splits(labels, part_d, part_c, n, l.splits);
}

/* Many centroids on the tensor cores (km_assign_wide: --distance dot-3xtf32 and dot-tf32 where
 * kpad >= KM_WIDE_FROM). km_mma_block stages every point kpad / 64 times an iteration, gives a
 * warp 32 x 64 sums and reads each fragment value from team memory on its own (24 reads for 16
 * mma tiles a K step): at large k its instructions, not the tensor cores, bound it
 * (docs/performance.md). Here a team of KM_WIDE_THREADS threads, 4 warps as 2 x 2, takes 128
 * points against blocks of 128 centroids, each warp 64 points x 64 centroids (4 x 8 mma tiles, 128
 * sums a thread). Both operands sit in team memory point by point and centroid by centroid, the 8
 * features of a K step together (32 bytes, the two 16-byte halves swapped in every other group of
 * four rows, so that no two of eight rows share banks), which is the layout ldmatrix reads: one
 * ldmatrix.x4 brings a thread its 4 values of an A fragment or of two B fragments, 8 reads for 32
 * mma tiles a K step. Chunks of 8 features pass through `stages` buffers: chunk z + stages - 1 is
 * copied while chunk z is multiplied, one barrier a chunk, and the pipeline runs on from one
 * centroid block into the next. Every (point, centroid) sum takes km_mma_block's products in the
 * same order (per K step of 8 features, in order: lo.hi, hi.lo, hi.hi), so the labels are
 * km_assign_mma's. Both operands come from packed copies on the device (km_pack: chunk by chunk, a
 * block's chunk one 4 KiB piece, already in the rows the team copies it to), so that a thread
 * copies a chunk 16 bytes at a time with no bounds to test; dot-tf32's points are packed rounded
 * to TF32, so its fragments need no rounding. The 16-bit forms (dot-fp16, dot-bf16) pack 16
 * features a chunk in the same 32 bytes a row, which the same ldmatrix reads give as m16n8k16
 * fragments: one K step of 16 features a chunk. */
#define KM_WIDE_POINTS 128
#define KM_WIDE_CENTROIDS 128
#define KM_WIDE_THREADS 128
#define KM_WIDE_DEPTH 8                     /* features a chunk: one K step (TF32) */
#define KM_HALF_DEPTH 16                    /* features a chunk of the 16-bit forms: one K step */
#define KM_WIDE_CHUNK (KM_WIDE_POINTS * 8) /* floats of a staged chunk of points (and of centroids) */
/* kpad from which the tensor-core kernels take wide blocks */
#define KM_WIDE_FROM_DEFAULT 512
#ifndef KM_WIDE_FROM
#define KM_WIDE_FROM KM_WIDE_FROM_DEFAULT
#endif
PC_KNOB(KM_WIDE_FROM)
/* chunks in flight in km_assign_wide, one product (dot-tf32, and the 16-bit forms) and three
 * (dot-3xtf32, whose centroid tails take a third buffer a stage): team memory holds at most 48 KiB */
#define KM_WIDE_STAGES_1_DEFAULT 5
#ifndef KM_WIDE_STAGES_1
#define KM_WIDE_STAGES_1 KM_WIDE_STAGES_1_DEFAULT
#endif
PC_KNOB(KM_WIDE_STAGES_1)
#define KM_WIDE_STAGES_3_DEFAULT 3
#ifndef KM_WIDE_STAGES_3
#define KM_WIDE_STAGES_3 KM_WIDE_STAGES_3_DEFAULT
#endif
PC_KNOB(KM_WIDE_STAGES_3)
/* teams per multiprocessor below which km_assign_wide splits the centroid blocks */
#define KM_WIDE_TEAMS_PER_SM 2
_Static_assert(KM_WIDE_THREADS == 128 && KM_WIDE_POINTS == 128 && KM_WIDE_CENTROIDS == 128,
               "km_wide_block: 2 x 2 warps of 64 x 64, a staged row copied by one instruction of a warp");
_Static_assert(KM_WIDE_STAGES_1 >= 2 && KM_WIDE_STAGES_1 <= 6 && KM_WIDE_STAGES_3 >= 2 && KM_WIDE_STAGES_3 <= 6,
               "km_wait_copies: 2 to 6 stages");

/* Where feature f (< 8) of row r (a point or a centroid) of a staged chunk lies: rows of 8 floats,
 * the 16-byte halves swapped where r / 4 is odd (see KM_WIDE_POINTS). */
static inline __attribute__((always_inline)) int km_wide_at(int r, int f) {
  return r * 8 + (((f >> 2) ^ ((r >> 2) & 1)) << 2) + (f & 3);
}

/* Waits until all but the latest `pending` groups of this thread's copies have landed (a constant
 * after inlining: the instruction takes an immediate). */
static inline __attribute__((always_inline)) void km_wait_copies(const int pending) {
#if defined(__NVPTX__)
  switch (pending) {
  case 0: __nvvm_cp_async_wait_group(0); break;
  case 1: __nvvm_cp_async_wait_group(1); break;
  case 2: __nvvm_cp_async_wait_group(2); break;
  case 3: __nvvm_cp_async_wait_group(3); break;
  default: __nvvm_cp_async_wait_group(4); break;
  }
#else
  (void)pending;
#endif
}

/* Thread `lane` of a warp's four 8 x 8 matrices of 32-bit values (ldmatrix.x4 on b16 pairs): lane
 * l gives the address of row l % 8 of matrix l / 8 (16 bytes in team memory) and gets element
 * (l / 4, l % 4) of each matrix, in m[0 .. 3]. */
static inline __attribute__((always_inline)) void km_load_matrices(unsigned m[4], const float *row) {
#if defined(__NVPTX__)
  const unsigned at = (unsigned)(uintptr_t)(__attribute__((address_space(3))) const float *)row;
  __asm__ volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                   : "=r"(m[0]), "=r"(m[1]), "=r"(m[2]), "=r"(m[3])
                   : "r"(at));
#else
  (void)row;
  m[0] = m[1] = m[2] = m[3] = 0;
#endif
}

/* What km_wide_block multiplies, packed by km_pack: the points (x), the centroids (c: for the TF32
 * forms their TF32 heads) and, for 3 products, the centroids' tails (c_lo; else NULL), `rows` point
 * rows and `crows` centroid rows a chunk (device memory). */
typedef struct {
  const unsigned *x, *c, *c_lo;
  size_t n, d, rows;
  int kpad, crows;
} km_wide_operands;

/* Features a chunk of tensor form `form`: one K step of its mma. */
static inline __attribute__((always_inline)) int km_wide_depth(int form) {
  return km_16bit(form) ? KM_HALF_DEPTH : KM_WIDE_DEPTH;
}

/* Thread tid's place in the staging of km_wide_block: the sources of its copies of the next chunk
 * to stage (x: points, c: centroids, c_lo: their tails, for 3 products), that chunk's number q
 * within its centroid block, the chunks left to stage and the offset of the buffer the chunk goes
 * to. Packed, a block's chunk of points (or of centroids) is 4 KiB in one piece, copied 16 bytes at
 * a time, two pieces a thread (consecutive threads, consecutive pieces; km_wide_stage_next), so the
 * sources move by whole chunks: the next chunk lies `rows` (centroids: `crows`) rows on, and the
 * next centroid block 128 rows on from the first chunk. Pointers and counters step on instead of
 * being computed from the chunk's number, which kept the loop's integer work above its products. */
typedef struct {
  const unsigned *x, *c, *c_lo;
  int q, left, buf;
} km_wide_cursor;

/* The offset of the buffer after the one at `buf`, of `stages` in a ring: where the producer and the
 * consumer of km_wide_block's pipeline both step. */
static inline __attribute__((always_inline)) int km_wide_next_buffer(int buf, const int stages) {
  return buf + KM_WIDE_CHUNK == stages * KM_WIDE_CHUNK ? 0 : buf + KM_WIDE_CHUNK;
}

/* Thread tid's cursor at the first chunk of centroid block cb of point block i0, `z_end` chunks in all. */
static inline __attribute__((always_inline)) km_wide_cursor km_wide_start(const km_wide_operands *o, size_t i0, int cb,
                                                                           int z_end, int tid) {
  const size_t piece = 4 * (size_t)tid, c_at = (size_t)cb * KM_WIDE_CENTROIDS * 8 + piece;
  return (km_wide_cursor){o->x + i0 * 8 + piece, o->c + c_at, o->c_lo ? o->c_lo + c_at : NULL, 0, z_end, 0};
}

/* Starts thread tid's copies of the cursor's chunk (the block's 128 points and 128 centroids, and
 * in form KM_TENSOR_3XTF32 their tails) into its buffer of xs, cs (and cs_lo), of `stages`, and
 * moves the cursor on, as one group of copies; past the end an empty group, so that every thread has
 * one group a chunk to wait for. Piece p = tid + 128 u, half p % 2 of row p / 2, lands where
 * km_wide_at puts features 4 (p % 2) .. + 3 of that row. The copies need no bounds: the packed rows
 * and features are padded with zeros. */
static inline __attribute__((always_inline)) void km_wide_stage_next(const km_wide_operands *o, int chunks,
                                                                     const int stages, const int form, int tid,
                                                                     float *xs, float *cs, float *cs_lo,
                                                                     km_wide_cursor *next) {
  if (next->left > 0) {
    KM_UNROLL for (int u = 0; u < 2; u++) {
      const int p = tid + KM_WIDE_THREADS * u, at = next->buf + km_wide_at(p / 2, 4 * (p % 2));
      const int on = 4 * KM_WIDE_THREADS * u; /* words from the thread's first piece to piece p */
      km_copy_async4(xs + at, (const float *)(next->x + on), 1);
      km_copy_async4(cs + at, (const float *)(next->c + on), 1);
      if (form == KM_TENSOR_3XTF32) km_copy_async4(cs_lo + at, (const float *)(next->c_lo + on), 1);
    }
    next->left--;
    next->buf = km_wide_next_buffer(next->buf, stages);
    const ptrdiff_t x_step = (ptrdiff_t)o->rows * 8, c_step = (ptrdiff_t)o->crows * 8;
    if (++next->q < chunks) {
      next->x += x_step, next->c += c_step;
      if (form == KM_TENSOR_3XTF32) next->c_lo += c_step;
    } else { /* the next centroid block, from its first chunk */
      const ptrdiff_t back = (chunks - 1) * c_step - KM_WIDE_CENTROIDS * 8;
      next->q = 0;
      next->x -= (chunks - 1) * x_step, next->c -= back;
      if (form == KM_TENSOR_3XTF32) next->c_lo -= back;
    }
  }
  km_commit_copies();
}

#if !defined(PC_SM90A) /* the sm_90a build takes km_wgmma_block instead */
/* One team's share of km_assign_wide in tensor form `form` (km_tensor_form), by thread `tid`:
 * point block b / splits against the centroid blocks of range b % splits, through `stages`
 * buffers of each staged array. Warp (wm,
 * wn) = (warp / 2, warp % 2) takes the block's points 64 wm + 16 mi + 8 h + g (mi < 4, h < 2) and
 * its centroids 64 wn + 8 ni + 2 t + e (ni < 8, e < 2), in the sums acc[mi][ni][2 h + e]. A thread
 * keeps the best of its columns for its 8 points; the 4 threads of a group compare theirs by
 * shuffles, then warp (wm, 1) leaves its candidates in red_d / red_c for warp (wm, 0), which keeps
 * the better (ties to the lowest index). Returns how many labels this thread changed. */
static inline __attribute__((always_inline)) int
km_wide_block(const km_wide_operands *o, const float *restrict cn, int *restrict labels, float *restrict part_d,
              int *restrict part_c, km_layout l, int b, int tid, float *restrict xs, float *restrict cs,
              float *restrict cs_lo, float *restrict red_d, int *restrict red_c, const int form, const int stages) {
  const int s = b % l.splits, warp = tid / 32, lane = tid % 32, wm = warp / 2, wn = warp % 2, g = lane / 4,
            t = lane % 4, kpad = o->kpad;
  const size_t n = o->n, i0 = (size_t)(b / l.splits) * KM_WIDE_POINTS;
  const int cb_begin = s * l.tiles_per_split;
  const int cb_end = cb_begin + l.tiles_per_split < l.tiles ? cb_begin + l.tiles_per_split : l.tiles;
  const int depth = km_wide_depth(form), chunks = (int)((o->d + (size_t)depth - 1) / (size_t)depth),
            z_end = (cb_end - cb_begin) * chunks;
  /* the rows this lane's ldmatrix addresses: row lane % 8 of matrix lane / 8; for A (points) the
   * matrices are (points 0-7, features 0-3), (8-15, 0-3), (0-7, 4-7), (8-15, 4-7) of a 16-point
   * tile, for B (centroids) (0-7, 0-3), (0-7, 4-7), (8-15, 0-3), (8-15, 4-7) of two 8-centroid tiles */
  const int m = lane / 8, a_row = wm * 64 + lane % 8 + 8 * (m % 2), b_row = wn * 64 + lane % 8 + 8 * (m / 2);
  const int a_at = km_wide_at(a_row, 4 * (m / 2)), b_at = km_wide_at(b_row, 4 * (m % 2));
  float best[8];
  int best_c[8];
  KM_UNROLL for (int r = 0; r < 8; r++) {
    best[r] = INFINITY;
    best_c[r] = cb_begin * KM_WIDE_CENTROIDS;
  }
  float acc[4][8][4];
  km_wide_cursor next = km_wide_start(o, i0, cb_begin, z_end, tid);
  KM_UNROLL for (int z = 0; z + 1 < stages; z++)
    km_wide_stage_next(o, chunks, stages, form, tid, xs, cs, cs_lo, &next);
  int cb = cb_begin, q = 0, buf = 0; /* chunk z: chunk q of centroid block cb, in buffer offset buf */
  KM_NO_UNROLL for (int z = 0; z < z_end; z++) {
    if (q == 0)
      KM_UNROLL for (int mi = 0; mi < 4; mi++)
        KM_UNROLL for (int ni = 0; ni < 8; ni++)
          KM_UNROLL for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.0f;
    km_wait_copies(stages - 2); /* this thread's copies of chunk z have landed */
    ompx_sync_block_acq_rel();  /* ... and every thread's; chunk z - 1's buffer is free */
    km_wide_stage_next(o, chunks, stages, form, tid, xs, cs, cs_lo, &next);
    unsigned a_hi[4][4], a_lo[4][4];
    KM_UNROLL for (int mi = 0; mi < 4; mi++) {
      unsigned raw[4];
      km_load_matrices(raw, xs + buf + a_at + mi * 16 * 8);
      KM_UNROLL for (int e = 0; e < 4; e++) { /* packed as multiplied, but for 3 products' split */
        if (form == KM_TENSOR_3XTF32) km_tf32_split(km_bits_float(raw[e]), &a_hi[mi][e], &a_lo[mi][e]);
        else a_hi[mi][e] = raw[e];
      }
    }
    KM_UNROLL for (int nn = 0; nn < 8; nn += 2) { /* two centroid tiles at a time */
      unsigned b_hi[4], b_lo[4];                 /* tile nn: [0], [1]; tile nn + 1: [2], [3] */
      km_load_matrices(b_hi, cs + buf + b_at + nn * 8 * 8);
      if (form == KM_TENSOR_3XTF32) {
        km_load_matrices(b_lo, cs_lo + buf + b_at + nn * 8 * 8);
        KM_UNROLL for (int mi = 0; mi < 4; mi++) /* the small terms first */
          KM_UNROLL for (int ni = 0; ni < 2; ni++) km_mma_tf32(acc[mi][nn + ni], a_lo[mi], b_hi + 2 * ni);
        KM_UNROLL for (int mi = 0; mi < 4; mi++)
          KM_UNROLL for (int ni = 0; ni < 2; ni++) km_mma_tf32(acc[mi][nn + ni], a_hi[mi], b_lo + 2 * ni);
      }
      KM_UNROLL for (int mi = 0; mi < 4; mi++)
        KM_UNROLL for (int ni = 0; ni < 2; ni++) {
          if (km_16bit(form)) km_mma_16bit(acc[mi][nn + ni], a_hi[mi], b_hi + 2 * ni, form);
          else km_mma_tf32(acc[mi][nn + ni], a_hi[mi], b_hi + 2 * ni);
        }
    }
    buf = km_wide_next_buffer(buf, stages);
    if (++q == chunks) { /* the centroid block is done: its distances against the best so far */
      km_mma_keep_best(acc, 4, cb * KM_WIDE_CENTROIDS + wn * 64, t, kpad, cn, 0, best, best_c);
      q = 0;
      cb++;
    }
  }
  KM_UNROLL for (int r = 0; r < 8; r++) {
    km_lanes_best(&best[r], &best_c[r], 4);
    const int p = wm * 64 + (r / 2) * 16 + (r % 2) * 8 + g;
    if (wn == 1 && t == 0) {
      red_d[p] = best[r];
      red_c[p] = best_c[r];
    }
  }
  ompx_sync_block_acq_rel();
  long mine = 0;
  if (wn == 0 && t == 0)
    KM_UNROLL for (int r = 0; r < 8; r++) {
      const int p = wm * 64 + (r / 2) * 16 + (r % 2) * 8 + g;
      if (red_d[p] < best[r] || (red_d[p] == best[r] && red_c[p] < best_c[r])) {
        best[r] = red_d[p];
        best_c[r] = red_c[p];
      }
      if (i0 + (size_t)p < n)
        km_keep(labels, part_d, part_c, n, i0 + (size_t)p, s, l.splits, best[r], best_c[r], &mine);
    }
  return (int)mine;
}
#endif

#if defined(PC_SM90A)
/* ---- Hopper's warpgroup products (built with GPU_ARCH=sm_90a) -------------------------------
 * wgmma (sm_90a only) multiplies a 64 x N block by an N-wide one from team memory, issued by the
 * four warps of a warpgroup together and run asynchronously: a team of km_assign_wide's 128
 * threads is one warpgroup. The staged chunks of km_wide_block are already in the layout wgmma
 * reads with its 32-byte swizzle: rows of 32 bytes (8 TF32 values, or 16 16-bit ones: one K step),
 * the 16-byte halves swapped where row / 4 is odd (km_wide_at), 8-row groups 256 bytes apart. So
 * the operands are described, not loaded into registers: no ldmatrix, and one instruction a
 * 64 x 128 x K step where mma.sync takes 32. */

_Static_assert(KM_WIDE_STAGES_1 >= 3, "km_wgmma_block: a one-product form keeps stages - 2 chunks in flight");

/* The descriptor of a staged matrix at `team` (team memory, 256-byte aligned): its address, the
 * 8-row groups 256 bytes apart (stride, in 16-byte units), the 32-byte swizzle (mode 3); the
 * leading offset is unused by a K step within one row. */
static inline __attribute__((always_inline)) unsigned long long km_wgmma_desc(const float *team) {
  const unsigned at = (unsigned)(uintptr_t)(__attribute__((address_space(3))) const float *)team;
  return (unsigned long long)((at & 0x3FFFF) >> 4) | (1ull << 16) | (16ull << 32) | (3ull << 62);
}

#define KM_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
                 "+f"(d[i + 6]), "+f"(d[i + 7])
#define KM_D64 KM_D8(0), KM_D8(8), KM_D8(16), KM_D8(24), KM_D8(32), KM_D8(40), KM_D8(48), KM_D8(56)
#define KM_D64_NAMES                                                                                                \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "   \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"

/* d (64 sums a thread) = a b + (accumulate ? d : 0) for one 64 x 128 block and one K step in tensor
 * form `form` (a constant after inlining), a and b K-major in team memory (km_wgmma_desc). Thread
 * (warp w, lane 4 g + t) holds in d[4 j + 2 h + e] row 16 w + g + 8 h, column 8 j + 2 t + e: the
 * layout of mma.sync's sums, 16 tiles of 8 columns. Only issued: km_wgmma_wait waits for it. */
static inline __attribute__((always_inline)) void km_wgmma(float d[64], unsigned long long a, unsigned long long b,
                                                           int accumulate, const int form) {
#if defined(__NVPTX__)
  /* one asm statement an instruction: the shape and types, and the 16-bit forms' K-major flags */
#define KM_WGMMA_FROM_TEAM(shape_types, flags)                                                                        \
  __asm__ volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                       \
                   "wgmma.mma_async.sync.aligned." shape_types " " KM_D64_NAMES ", %64, %65, p, 1, 1" flags ";\n}"     \
                   : KM_D64                                                                                            \
                   : "l"(a), "l"(b), "r"(accumulate))
  if (form == KM_TENSOR_FP16) KM_WGMMA_FROM_TEAM("m64n128k16.f32.f16.f16", ", 0, 0");
  else if (form == KM_TENSOR_BF16) KM_WGMMA_FROM_TEAM("m64n128k16.f32.bf16.bf16", ", 0, 0");
  else KM_WGMMA_FROM_TEAM("m64n128k8.f32.tf32.tf32", "");
#undef KM_WGMMA_FROM_TEAM
#else
  (void)d, (void)a, (void)b, (void)accumulate, (void)form;
#endif
}

/* km_wgmma in form dot-tf32 with A from registers: a holds the thread's 4 TF32 values of its warp's
 * 16 rows of the 64 x 8 block, in mma.sync's A fragment (rows g, g + 8 by features t, t + 4), which
 * lets dot-3xtf32 split the points as it reads them. */
static inline __attribute__((always_inline)) void km_wgmma_regs(float d[64], const unsigned a[4], unsigned long long b,
                                                                int accumulate) {
#if defined(__NVPTX__)
  __asm__ volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " KM_D64_NAMES ", {%64, %65, %66, %67}, %68, "
                   "p, 1, 1;\n}"
                   : KM_D64
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
#else
  (void)d, (void)a, (void)b, (void)accumulate;
#endif
}
#undef KM_D64_NAMES
#undef KM_D64
#undef KM_D8

/* The ordering wgmma asks for: km_wgmma_fence before a warpgroup's first wgmma after its sums were
 * touched by other instructions; km_wgmma_commit closes the products issued since the last as one
 * group; km_wgmma_wait(pending) waits until at most `pending` (0 or 1) groups run, then holds the
 * sums (an empty asm that reads and writes each) so that no read of them moves above the wait;
 * km_wgmma_publish makes this thread's finished copies into team memory (the generic proxy)
 * visible to wgmma's reads (the async proxy), before the barrier that publishes them to the team. */
static inline __attribute__((always_inline)) void km_wgmma_fence(void) {
#if defined(__NVPTX__)
  __asm__ volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
static inline __attribute__((always_inline)) void km_wgmma_commit(void) {
#if defined(__NVPTX__)
  __asm__ volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
static inline __attribute__((always_inline)) void km_wgmma_wait(const int pending, float d[2][64]) {
#if defined(__NVPTX__)
  if (pending) __asm__ volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  else __asm__ volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  KM_UNROLL for (int h = 0; h < 2; h++)
    KM_UNROLL for (int i = 0; i < 64; i++) __asm__ volatile("" : "+f"(d[h][i])::"memory");
#else
  (void)pending, (void)d;
#endif
}
static inline __attribute__((always_inline)) void km_wgmma_publish(void) {
#if defined(__NVPTX__)
  __asm__ volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/* km_wide_block with wgmma: the same staged chunks, blocks and candidates. The team's 128 points
 * are two 64-row halves, each against the 128 centroids of the block: thread (warp w, lane 4 g + t)
 * sums, in acc[hm], points 64 hm + 16 w + g + 8 h against centroids 8 j + 2 t + e (km_wgmma). In
 * the one-product forms both operands are read from team memory, and a chunk's products run while
 * the next chunk is waited for and staged: a buffer is refilled only after the products of the
 * chunk before the last one, so `stages` buffers hold stages - 2 chunks in flight. dot-3xtf32 reads
 * its points into registers to split them (km_wgmma_regs), takes three products a half (the small
 * terms first, as km_wide_block) and waits for a chunk's products before the next (stages - 1 in
 * flight). Each warp holds all 128 columns of its rows: the 4 threads of a group compare theirs by
 * shuffles, no team exchange. Returns how many labels this thread changed. */
static inline __attribute__((always_inline)) int km_wgmma_block(const km_wide_operands *o, const float *restrict cn,
                                                                int *restrict labels, float *restrict part_d,
                                                                int *restrict part_c, km_layout l, int b, int tid,
                                                                float *restrict xs, float *restrict cs,
                                                                float *restrict cs_lo, const int form,
                                                                const int stages) {
  const int s = b % l.splits, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4, kpad = o->kpad;
  const size_t n = o->n, i0 = (size_t)(b / l.splits) * KM_WIDE_POINTS;
  const int cb_begin = s * l.tiles_per_split;
  const int cb_end = cb_begin + l.tiles_per_split < l.tiles ? cb_begin + l.tiles_per_split : l.tiles;
  const int depth = km_wide_depth(form), chunks = (int)((o->d + (size_t)depth - 1) / (size_t)depth),
            z_end = (cb_end - cb_begin) * chunks;
  const int three = form == KM_TENSOR_3XTF32, ahead = three ? stages - 1 : stages - 2; /* chunks staged ahead */
  /* dot-3xtf32: where this lane's ldmatrix reads (km_wide_block's A matrices) in half hm: a_at + hm 64 * 8 */
  const int m = lane / 8, a_at = km_wide_at(16 * warp + lane % 8 + 8 * (m % 2), 4 * (m / 2));
  float best[4];
  int best_c[4];
  KM_UNROLL for (int r = 0; r < 4; r++) {
    best[r] = INFINITY;
    best_c[r] = cb_begin * KM_WIDE_CENTROIDS;
  }
  float acc[2][64];
  KM_UNROLL for (int h = 0; h < 2; h++) KM_UNROLL for (int i = 0; i < 64; i++) acc[h][i] = 0.0f;
  km_wide_cursor next = km_wide_start(o, i0, cb_begin, z_end, tid);
  KM_UNROLL for (int z = 0; z < ahead; z++) km_wide_stage_next(o, chunks, stages, form, tid, xs, cs, cs_lo, &next);
  int cb = cb_begin, q = 0, buf = 0; /* chunk z: chunk q of centroid block cb, in buffer offset buf */
  KM_NO_UNROLL for (int z = 0; z < z_end; z++) {
    km_wait_copies(ahead - 1); /* this thread's copies of chunk z have landed */
    km_wgmma_publish();
    ompx_sync_block_acq_rel(); /* ... and every thread's; the products of the buffer refilled next are done */
    km_wide_stage_next(o, chunks, stages, form, tid, xs, cs, cs_lo, &next);
    km_wgmma_fence();
    const unsigned long long bd = km_wgmma_desc(cs + buf);
    if (three) {
      const unsigned long long bd_lo = km_wgmma_desc(cs_lo + buf);
      KM_UNROLL for (int hm = 0; hm < 2; hm++) {
        unsigned raw[4], a_hi[4], a_lo[4];
        km_load_matrices(raw, xs + buf + a_at + hm * 64 * 8);
        KM_UNROLL for (int e = 0; e < 4; e++) km_tf32_split(km_bits_float(raw[e]), &a_hi[e], &a_lo[e]);
        km_wgmma_regs(acc[hm], a_lo, bd, q != 0);
        km_wgmma_regs(acc[hm], a_hi, bd_lo, 1);
        km_wgmma_regs(acc[hm], a_hi, bd, 1);
      }
    } else {
      km_wgmma(acc[0], km_wgmma_desc(xs + buf), bd, q != 0, form);
      km_wgmma(acc[1], km_wgmma_desc(xs + buf + 64 * 8), bd, q != 0, form);
    }
    km_wgmma_commit();
    buf = km_wide_next_buffer(buf, stages);
    if (++q < chunks) {
      if (three) km_wgmma_wait(0, acc); /* this chunk's products are done */
      else km_wgmma_wait(1, acc);       /* chunk z - 1's products are done */
      continue;
    }
    km_wgmma_wait(0, acc); /* the centroid block is done: its distances against the best so far */
    KM_UNROLL for (int j = 0; j < 16; j++)
      KM_UNROLL for (int e = 0; e < 2; e++) {
        const int col = cb * KM_WIDE_CENTROIDS + 8 * j + 2 * t + e;
        const float norm = col < kpad ? cn[col] : INFINITY;
        KM_UNROLL for (int r = 0; r < 4; r++) { /* point r: half r / 2, row h = r % 2 */
          const float dist = norm - 2.0f * acc[r / 2][4 * j + 2 * (r % 2) + e];
          if (dist < best[r]) {
            best[r] = dist;
            best_c[r] = col;
          }
        }
      }
    q = 0;
    cb++;
  }
  long mine = 0;
  KM_UNROLL for (int r = 0; r < 4; r++) {
    km_lanes_best(&best[r], &best_c[r], 4);
    const size_t i = i0 + (size_t)(64 * (r / 2) + 16 * warp + g + 8 * (r % 2));
    if (t == 0 && i < n) km_keep(labels, part_d, part_c, n, i, s, l.splits, best[r], best_c[r], &mine);
  }
  return (int)mine;
}
#endif

/* The assign step on the tensor cores in wide blocks (see km_wide_block), in tensor form `form`;
 * returns how many labels changed. The caller has checked that kernels run on the GPU. xp, cp and
 * cp_lo (NULL but for 3 products) are the packed operands (device memory: km_wide_operands), cn
 * the centroids' terms. One kernel a form: the tails' buffers only where they are staged. */
static long km_assign_wide(const unsigned *xp, const unsigned *cp, const unsigned *cp_lo, const float *restrict cn,
                           int *restrict labels, float *restrict part_d, int *restrict part_c, size_t n, size_t d,
                           size_t rows, int kpad, int crows, km_layout l, int form, const km_tally *tally) {
  unsigned long long *word = tally->word;
  double *out = tally->out.device;
  const int teams = (int)(l.groups * (size_t)l.splits);
/* A team's share in form `form`: with wgmma where the build has it (sm_90a), else with mma.sync;
 * wgmma reads the staged chunks at 256-byte boundaries (km_wgmma_desc). */
#if defined(PC_SM90A)
#define KM_WIDE_ALIGN 256
#define KM_WIDE_EXCHANGE
#define KM_WIDE_TEAM(form, stages)                                                                                    \
  km_wgmma_block(&o, cn, labels, part_d, part_c, l, b, tid, xs, cs, cs_lo, (form), stages)
#else /* and the arrays through which km_wide_block's warps compare their candidates */
#define KM_WIDE_ALIGN 16
#define KM_WIDE_EXCHANGE                                                                                              \
  static float red_d[KM_WIDE_POINTS];                                                                                 \
  TEAM_LOCAL(red_d)                                                                                                   \
  static int red_c[KM_WIDE_POINTS];                                                                                   \
  TEAM_LOCAL(red_c)
#define KM_WIDE_TEAM(form, stages)                                                                                    \
  km_wide_block(&o, cn, labels, part_d, part_c, l, b, tid, xs, cs, cs_lo, red_d, red_c, (form), stages)
#endif
#define KM_WIDE_KERNEL(form, stages)                                                                                  \
  PC_PRAGMA(omp target teams ompx_bare num_teams(teams) thread_limit(KM_WIDE_THREADS)                              \
                is_device_ptr(xp, cp, cp_lo, word, out)) {                                                          \
    static float xs[(stages) * KM_WIDE_CHUNK] __attribute__((aligned(KM_WIDE_ALIGN)));                                \
    TEAM_LOCAL(xs)                                                                                                   \
    static float cs[(stages) * KM_WIDE_CHUNK] __attribute__((aligned(KM_WIDE_ALIGN)));                                \
    TEAM_LOCAL(cs)                                                                                                   \
    static float cs_lo[(form) == KM_TENSOR_3XTF32 ? (stages) * KM_WIDE_CHUNK : 4] __attribute__((aligned(16)));       \
    TEAM_LOCAL(cs_lo)                                                                                                \
    KM_WIDE_EXCHANGE                                                                                                 \
    static unsigned warp_changes[KM_WIDE_THREADS / 32];                                                              \
    TEAM_LOCAL(warp_changes)                                                                                         \
    const int b = ompx_block_id_x(), tid = ompx_thread_id_x();                                                       \
    const km_wide_operands o = {xp, cp, cp_lo, n, d, rows, kpad, crows};                                            \
    const int mine = KM_WIDE_TEAM(form, stages);                                                                     \
    km_tally_changes(word, out, warp_changes, mine, tid, KM_WIDE_THREADS, teams);                                    \
  }
  switch (form) {
  case KM_TENSOR_3XTF32: KM_WIDE_KERNEL(KM_TENSOR_3XTF32, KM_WIDE_STAGES_3) break;
  case KM_TENSOR_FP16: KM_WIDE_KERNEL(KM_TENSOR_FP16, KM_WIDE_STAGES_1) break;
  case KM_TENSOR_BF16: KM_WIDE_KERNEL(KM_TENSOR_BF16, KM_WIDE_STAGES_1) break;
  default: KM_WIDE_KERNEL(KM_TENSOR_TF32, KM_WIDE_STAGES_1) break;
  }
#undef KM_WIDE_KERNEL
#undef KM_WIDE_TEAM
#undef KM_WIDE_EXCHANGE
#undef KM_WIDE_ALIGN
  const long changed = km_tally_take(tally);
  return l.splits == 1 ? changed : km_merge_splits(labels, part_d, part_c, n, l.splits);
}

/* ---- the wide kernel's packed operands -----------------------------------------------------
 * km_assign_wide reads its operands from copies on the device packed as km_wide_stage_next copies
 * them: chunk q (km_wide_depth features) of row r (a point or a centroid) is 8 words at (q rows + r) 8,
 * rows padded with zeros to whole blocks of 128, features to whole chunks. The points are packed
 * when they are new (once a run in memory; out of core, each block each pass), the centroids every
 * pass. The TF32 forms pack 8 features a chunk, a word each: the points as they are (dot-3xtf32,
 * whose kernel splits them) or rounded to TF32 (dot-tf32, km_tf32_round, as its kernel rounded them
 * before), the centroids' heads and tails as km_prepare made them. Memory: 4 bytes a value of the
 * points' copy, kept on the device for the run (device_bytes).
 *
 * The 16-bit forms (dot-fp16, dot-bf16) pack 16 features a chunk, word w holding features 16 q + 2 w
 * and + 1 (the lower in the lower half, as mma pairs them). Their points and centroids are both
 * shifted by the dot form's offset o (cs = c - o, so that |x - c|^2 = |x - o|^2 + |cs|^2 - 2 (x -
 * o).cs, the first term the same for every centroid: the shift keeps 16-bit values of data far from
 * the origin meaningful) and rounded to fp16 or bf16. Both are scaled by 2^s, s chosen when the
 * points are packed so that the largest |value| of the points and centroids then lies in [2^14,
 * 2^15): fp16 ends at 65504, and the centroids stay within that bound (means of the points, or their
 * last value). A power of two moves no rounding (but for fp16's subnormals, 2^-29 of the largest
 * value and below); the products are 2^2s too large, and so are the norms they are compared with
 * (hn = 2^2s |cs|^2): the same arg-min. Memory: 2 bytes a value of the points' copy. */
#define KM_HALF_TOP_EXPONENT 14

/* x rounded to 16 bits in form `form` (fp16 or bf16, to nearest even), as a pair: lo in the low half. */
DEV_FUNCS_BEGIN
static inline unsigned km_pack_pair(float lo, float hi, int form) {
  unsigned pair = 0;
#if defined(__NVPTX__)
  if (form == KM_TENSOR_FP16) __asm__("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(pair) : "f"(hi), "f"(lo));
  else __asm__("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(pair) : "f"(hi), "f"(lo));
#else
  (void)lo, (void)hi, (void)form; /* the host pass of these loops never runs (km_gpu_open declines there) */
#endif
  return pair;
}
DEV_FUNCS_END

static size_t km_round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

/* Whether km_assign_wide takes tensor form `tensor` (km_tensor_form; 0: none) at kpad: the 16-bit
 * forms always, the TF32 forms from KM_WIDE_FROM. */
static int km_wide_takes(int kpad, int tensor) { return tensor && (kpad >= KM_WIDE_FROM || km_16bit(tensor)); }

/* The words of a packed array of d features with `rows` rows a chunk in form `form`: 8 a row of a chunk. */
static size_t km_packed_words(size_t rows, size_t d, int form) {
  const size_t depth = (size_t)km_wide_depth(form);
  return (d + depth - 1) / depth * rows * 8;
}

/* km_assign_wide's device memory for n points of d features against kpad centroids in form `form`,
 * in bytes: the packed points, centroids and tails (km_gpu_open's xp, cp, cp_lo) and the 16-bit
 * forms' centroid norms (hn). */
static size_t km_packed_bytes(size_t n, size_t d, int kpad, int form) {
  const size_t crows = km_round_up((size_t)kpad, KM_WIDE_CENTROIDS), centroid_arrays = form == KM_TENSOR_3XTF32 ? 2 : 1;
  const size_t words = km_packed_words(km_round_up(n, KM_WIDE_POINTS), d, form) +
                       centroid_arrays * km_packed_words(crows, d, form);
  return words * sizeof(unsigned) + (km_16bit(form) ? (size_t)kpad * sizeof(float) : 0);
}

/* Packs values (v(r, j) of `count` rows, 0 past count or d) into `packed` with `rows` rows a chunk in
 * form `form`: the points (v = xt[j n + r], less o_j for the 16-bit forms) or the centroids (v =
 * cs[j kpad + r]), times `scale` (1 for the TF32 forms); in the same pass, for 3 products, the
 * centroids' tails (cs_lo) into packed_tails (else both NULL). A thread packs one row of a chunk:
 * consecutive threads read consecutive values of a feature. */
static void km_pack(const float *restrict values, const float *restrict offset, size_t stride, size_t count, size_t d,
                    size_t rows, float scale, int form, unsigned *packed, const float *restrict tails,
                    unsigned *packed_tails) {
  const size_t len = km_packed_words(rows, d, form) / 8;
  PAR_FOR(GPU_ONLY(is_device_ptr(packed, packed_tails)) GPU_THREADS)
  for (size_t e = 0; e < len; e++) {
    const size_t q = e / rows, r = e - q * rows;
    KM_UNROLL for (int w = 0; w < 8; w++) {
      if (km_16bit(form)) {
        float pair[2];
        KM_UNROLL for (int h = 0; h < 2; h++) {
          const size_t j = q * KM_HALF_DEPTH + (size_t)(2 * w + h);
          pair[h] = r < count && j < d ? (values[j * stride + r] - (offset ? offset[j] : 0.0f)) * scale : 0.0f;
        }
        packed[e * 8 + (size_t)w] = km_pack_pair(pair[0], pair[1], form);
      } else {
        const size_t j = q * KM_WIDE_DEPTH + (size_t)w;
        const int inside = r < count && j < d;
        const float v = inside ? values[j * stride + r] : 0.0f;
        packed[e * 8 + (size_t)w] = form == KM_TENSOR_TF32 ? km_tf32_round(v) : km_float_bits(v);
        if (tails) packed_tails[e * 8 + (size_t)w] = km_float_bits(inside ? tails[j * stride + r] : 0.0f);
      }
    }
  }
}

/* ---- the seam (kmeans_tuned.h) ------------------------------------------------------------- */

struct km_tuned_run {
  km_layout layout;
  int wide; /* the tensor-core form in wide blocks (km_assign_wide) */
  float *part_d; /* candidates of the split passes: splits x n, on the device */
  int *part_c;
  size_t part_len;
  /* km_assign_wide's packed points, centroids and tails (3 products) and the 16-bit forms' scaled
   * centroid norms (device memory, omp_target_alloc; NULL where not used), rows of each a chunk, the
   * 16-bit forms' scale exponent s */
  unsigned *xp, *cp, *cp_lo;
  float *hn;
  size_t rows;
  int crows, scale_exp, device;
  km_tally tally; /* the kernels' counts of changed labels */
};

static size_t km_gpu_device_bytes(size_t n, size_t d, int kpad, int tensor) {
  return km_wide_takes(kpad, tensor) ? km_packed_bytes(n, d, kpad, tensor) : 0;
}

static void km_gpu_close(km_tuned_run *run);

static km_tuned_run *km_gpu_open(size_t n, size_t d, int kpad, int tensor, int *applies, int *splits) {
  *applies = pc_offloading(); /* bare regions do not run on the host */
  if (!*applies) return NULL;
  km_tuned_run *run = pc_try_alloc(1, sizeof *run, "tuned assign state");
  if (!run) return NULL;
  *run = (km_tuned_run){0}; /* no packed copies: km_gpu_close frees what is not NULL */
  run->device = omp_get_default_device();
  static const unsigned long long zero = 0;
  run->tally.word = omp_target_alloc(sizeof zero, run->device);
  if (!run->tally.word || pc_results_open(&run->tally.out, 1) != 0 ||
      omp_target_memcpy(run->tally.word, &zero, sizeof zero, 0, 0, run->device, omp_get_initial_device()) != 0) {
    km_gpu_close(run);
    return pc_fail("cannot allocate the tuned kernels' count of changed labels on the device"), NULL;
  }
  run->wide = km_wide_takes(kpad, tensor);
  run->layout = run->wide ? km_plan(n, kpad, KM_WIDE_POINTS, KM_WIDE_CENTROIDS, KM_WIDE_TEAMS_PER_SM)
                          : km_plan(n, kpad, KM_BLOCK_POINTS, KM_BLOCK_CENTROIDS, KM_GPU_TEAMS_PER_SM);
  if (!km_tally_fits(n, run->layout.groups * (size_t)run->layout.splits)) { /* far beyond a GPU's memory */
    km_gpu_close(run);
    *applies = 0; /* the portable loop counts instead */
    return NULL;
  }
  run->part_len = run->layout.splits > 1 ? (size_t)run->layout.splits * n : 1;
  run->part_d = pc_try_alloc(run->part_len, sizeof *run->part_d, "candidate distances");
  run->part_c = pc_try_alloc(run->part_len, sizeof *run->part_c, "candidate centroids");
  if (!run->part_d || !run->part_c) {
    free(run->part_d), free(run->part_c), run->part_d = NULL, run->part_c = NULL;
    km_gpu_close(run);
    return NULL;
  }
  float *part_d = run->part_d;
  int *part_c = run->part_c;
  const size_t part_len = run->part_len;
  (void)part_d, (void)part_c, (void)part_len;
  /* device data: part_d, part_c (part_len each), until km_gpu_close */
  /* device: part_d / part_c[splits * n or 1] each split's best distance and centroid. */
  DEV_ENTER(map(alloc : part_d[0 : part_len], part_c[0 : part_len]))
  if (run->wide) {
    run->rows = km_round_up(n, KM_WIDE_POINTS);
    run->crows = (int)km_round_up((size_t)kpad, KM_WIDE_CENTROIDS);
    const size_t centroid_bytes = km_packed_words((size_t)run->crows, d, tensor) * sizeof(unsigned);
    run->xp = omp_target_alloc(km_packed_words(run->rows, d, tensor) * sizeof(unsigned), run->device);
    run->cp = omp_target_alloc(centroid_bytes, run->device);
    if (tensor == KM_TENSOR_3XTF32) run->cp_lo = omp_target_alloc(centroid_bytes, run->device);
    if (km_16bit(tensor)) run->hn = omp_target_alloc((size_t)kpad * sizeof(float), run->device);
    if (!run->xp || !run->cp || (tensor == KM_TENSOR_3XTF32 && !run->cp_lo) || (km_16bit(tensor) && !run->hn)) {
      km_gpu_close(run);
      return pc_fail("cannot allocate %zu MiB of device memory for the packed copies of the points and centroids "
                     "that the tensor cores read (--distance dot-*)",
                     km_packed_bytes(n, d, kpad, tensor) >> 20),
             NULL;
    }
  }
  *splits = run->layout.splits;
  return run;
}

/* The 16-bit forms' operands for job j: the points packed where they are new, with the scale's
 * exponent s taken from them and the centroids; the centroids packed, and their norms 2^2s |cs|^2
 * (in double; +inf for padding). */
static void km_half_prepare(km_tuned_run *run, const km_assign_job *j) {
  const float *xt = j->xt, *cs = j->cs, *offset = j->offset;
  const size_t n = j->n, d = j->d, values = n * d, entries = d * (size_t)j->kpad;
  const int k = j->k, kpad = j->kpad;
  if (j->new_points) {
    float top = 0.0f;
    PAR_FOR(reduction(max : top) GPU_REDUCTION(values))
    for (size_t e = 0; e < values; e++) top = fmaxf(top, fabsf(xt[e] - offset[e / n]));
    PAR_FOR(reduction(max : top) GPU_REDUCTION(entries))
    for (size_t e = 0; e < entries; e++) top = fmaxf(top, fabsf(cs[e]));
    const int s = top > 0.0f ? KM_HALF_TOP_EXPONENT - ilogbf(top) : 0;
    run->scale_exp = s < -126 ? -126 : s > 127 ? 127 : s; /* 2^s a float */
    km_pack(xt, offset, n, n, d, run->rows, ldexpf(1.0f, run->scale_exp), j->tensor, run->xp, NULL, NULL);
  }
  km_pack(cs, NULL, (size_t)kpad, (size_t)kpad, d, (size_t)run->crows, ldexpf(1.0f, run->scale_exp), j->tensor,
          run->cp, NULL, NULL);
  float *hn = run->hn;
  const double norm_scale = ldexp(1.0, 2 * run->scale_exp);
  PAR_FOR(GPU_ONLY(is_device_ptr(hn)) GPU_THREADS)
  for (int c = 0; c < kpad; c++) {
    double norm = 0.0;
    for (size_t q = 0; q < d; q++) norm += (double)cs[q * (size_t)kpad + (size_t)c] * cs[q * (size_t)kpad + (size_t)c];
    hn[c] = c < k ? (float)(norm * norm_scale) : INFINITY;
  }
}

/* The TF32 forms' operands for job j in wide blocks: the points packed where they are new, the
 * centroids' heads (and tails, for 3 products) every pass. */
static void km_tf32_prepare(km_tuned_run *run, const km_assign_job *j) {
  const size_t kpad = (size_t)j->kpad;
  if (j->new_points) km_pack(j->xt, NULL, j->n, j->n, j->d, run->rows, 1.0f, j->tensor, run->xp, NULL, NULL);
  km_pack(j->cs, NULL, kpad, kpad, j->d, (size_t)run->crows, 1.0f, j->tensor, run->cp, run->cp_lo ? j->cs_lo : NULL,
          run->cp_lo);
}

static long km_gpu_assign(km_tuned_run *run, const km_assign_job *j) {
  if (run->wide) {
    if (km_16bit(j->tensor)) km_half_prepare(run, j);
    else km_tf32_prepare(run, j);
    return km_assign_wide(run->xp, run->cp, run->cp_lo, km_16bit(j->tensor) ? run->hn : j->cn, j->labels, run->part_d,
                          run->part_c, j->n, j->d, run->rows, j->kpad, run->crows, run->layout, j->tensor, &run->tally);
  }
  if (j->tensor)
    return km_assign_mma(j->xt, j->cs, j->cs_lo, j->cn, j->labels, run->part_d, run->part_c, j->n, j->d, j->k,
                         j->kpad, run->layout, j->tensor, &run->tally);
  if (km_few_applies(j->d, j->kpad))
    return km_assign_few(j->xt, j->direct ? j->ct : j->cs, j->cn, j->labels, j->n, j->d, j->k, j->kpad, j->direct,
                         NULL, NULL, &run->tally);
  return km_assign_tiled(j->xt, j->direct ? j->ct : j->cs, j->cn, j->labels, run->part_d, run->part_c, j->n, j->d,
                         j->kpad, run->layout, j->direct, &run->tally);
}

static int km_gpu_sums_in_pass(size_t d, int k, int kpad, int tensor) { return !tensor && km_few_sums(d, k, kpad); }

static long km_gpu_assign_and_sum(km_tuned_run *run, const km_assign_job *j, km_fixed *sums, const float *scale) {
  return km_assign_few(j->xt, j->direct ? j->ct : j->cs, j->cn, j->labels, j->n, j->d, j->k, j->kpad, j->direct, sums,
                       scale, &run->tally);
}

/* Whether km_gpu_assign_and_move takes a run of n points of d features in k (kpad padded)
 * centroids in tensor form `tensor`: the resident tensor-core teams (a TF32 form; splits as km_gpu_open
 * plans them) with a team's sums within KM_MMA_MOVE_SUMS. */
static int km_gpu_moves_in_pass(size_t n, size_t d, int k, int kpad, int tensor) {
  const int tf32 = tensor == KM_TENSOR_3XTF32 || tensor == KM_TENSOR_TF32;
  return tf32 && !km_wide_takes(kpad, tensor) && (size_t)k * (d + 1) <= KM_MMA_MOVE_SUMS &&
         km_mma_resident_applies(d, km_plan(n, kpad, KM_BLOCK_POINTS, KM_BLOCK_CENTROIDS, KM_GPU_TEAMS_PER_SM));
}

static long km_gpu_assign_and_move(km_tuned_run *run, const km_assign_job *j, km_fixed *sums, const float *scale) {
  return km_assign_mma_resident(j->xt, j->cs, j->cs_lo, j->cn, j->labels, j->n, j->d, j->k, j->kpad, run->layout,
                                j->tensor, sums, scale, &run->tally);
}

static void km_gpu_close(km_tuned_run *run) {
  if (!run) return;
  float *part_d = run->part_d;
  int *part_c = run->part_c;
  const size_t part_len = run->part_len;
  (void)part_len;
  if (part_d) {
    DEV_EXIT(map(delete : part_d[0 : part_len], part_c[0 : part_len]))
  }
  if (run->tally.word) omp_target_free(run->tally.word, run->device);
  pc_results_close(&run->tally.out);
  if (run->xp) omp_target_free(run->xp, run->device);
  if (run->cp) omp_target_free(run->cp, run->device);
  if (run->cp_lo) omp_target_free(run->cp_lo, run->device);
  if (run->hn) omp_target_free(run->hn, run->device);
  free(part_d), free(part_c), free(run);
}

#if defined(PC_SM90A)
#define KM_WIDE_NAME "wide wgmma blocks (sm_90a)"
#else
#define KM_WIDE_NAME "wide blocks"
#endif
static const km_tuned_kernels km_gpu_kernels = {
    "gpu: team-tiled ompx_bare kernels (cp.async staging; mma.sync for dot-3xtf32 and dot-tf32, " KM_WIDE_NAME
    " for k >= 512 and for dot-fp16 and dot-bf16; one pass for k <= 32; resident tensor-core teams for d <= 16, "
    "k <= 128, which move the changed points in the kept sums)",
    1, 1, 1, km_few_as_fast, km_gpu_open, km_gpu_device_bytes, km_gpu_assign, km_gpu_sums_in_pass,
    km_gpu_assign_and_sum, km_gpu_moves_in_pass, km_gpu_assign_and_move, km_gpu_close};

#undef KM_WIDE_NAME

const km_tuned_kernels *km_tuned(void) { return &km_gpu_kernels; }

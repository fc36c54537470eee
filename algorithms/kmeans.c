/*
 * kmeans.c - Lloyd's k-means in one source for three variants (see common/par.h).
 *
 * Map of the file: the initial centroids (km_initial_centroids), the portable assign step
 * (km_assign_portable), the centroids' tiles and norms (km_prepare), the update step
 * (km_plan_update, km_accumulate, km_finalize), the device memory a run needs (km_plan_memory), the
 * out-of-core path (km_stream_*), and km_run, the iterations, at the end.
 *
 * Per iteration:
 *  1. assign: each point finds its nearest centroid (squared Euclidean distance, ties to
 *     the lowest index) and counts whether its label changed. By default the distance is
 *     sum((x - c)^2); with KM_DISTANCE_DOT (--distance dot) it is |c|^2 - 2 x.c (dropping
 *     |x|^2, the same for every centroid), one multiply-add per feature, on centroids shifted
 *     by their initial mean (km_prepare). The step is the portable loop of this file (standard
 *     OpenMP, every variant and compiler), or a tuned kernel of the build behind one seam
 *     (kmeans_tuned.h: kmeans_assign_gpu.c, kmeans_assign_cpu.c), by --kernels; --distance gemm
 *     and gemm-tf32 (gpu variant) take the dot products from cuBLAS instead (kmeans_gemm.c),
 *     --distance dot-3xtf32, dot-tf32, dot-fp16 and dot-bf16 (tuned GPU kernels) from the tensor cores. Every
 *     other kernel sums each distance over the features in order, so every variant and kernel
 *     finds the same labels.
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
 * tiles (ct[j*kpad + c]). The assign step's copy of the centroids (cs, km_tile_at) is laid out
 * as its kernel reads it: tile by tile (a tile's d x 16 values contiguous), or dimension-major
 * for the tuned GPU kernels.
 * Device data (gpu variant): xt, ct, labels and the sums are mapped once per run
 * (DEV_ENTER) and stay on the GPU across iterations; per iteration only the number of
 * changed labels comes back (one count). With KM_UPDATE_HOST (Cao's GPU-L) the
 * labels go to the host, the update runs there, and the centroids go back. Where the points do not
 * fit in the device's memory (or in a limit given: km_plan_memory), they stay on the host and stream
 * through the device in blocks, each pass, through two buffers (out of core: km_stream_*, below).
 */
#include "kmeans.h"
#include "device.h"
#include "dist.h"
#include "kmeans_gemm.h"
#include "kmeans_tuned.h"
#include "kmeanspp.h"
#include "knobs.h"
#include "par.h"
#include "synth.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if !defined(PC_VARIANT_SEQ)
#include <omp.h>
#endif

const char *const km_phase_names[KM_NPHASES] = {"h2d", "assign", "update", "d2h"};
const char *const km_distance_names[KM_NDISTANCES] = {"direct", "dot", "gemm", "gemm-tf32", "dot-3xtf32", "auto",
                                                       "dot-tf32",   "dot-fp16", "dot-bf16"};

km_tensor_form km_tensor_form_of(km_distance distance) {
  switch (distance) {
  case KM_DISTANCE_DOT_3XTF32: return KM_TENSOR_3XTF32;
  case KM_DISTANCE_DOT_TF32: return KM_TENSOR_TF32;
  case KM_DISTANCE_DOT_FP16: return KM_TENSOR_FP16;
  case KM_DISTANCE_DOT_BF16: return KM_TENSOR_BF16;
  default: return KM_TENSOR_NONE;
  }
}

int km_tensor_products(km_distance distance) {
  const km_tensor_form form = km_tensor_form_of(distance);
  return form == KM_TENSOR_3XTF32 || form == KM_TENSOR_TF32 ? (int)form : 0;
}

int km_distance_is_gemm(km_distance distance) {
  return distance == KM_DISTANCE_GEMM || distance == KM_DISTANCE_GEMM_TF32;
}

/* Tuning knobs: settings of speed, not of results; -DNAME=value (make KNOBS='-DNAME=value')
 * overrides one, `info` lists them and a report names those changed (knobs.h). */
/* sums (k * (d + 1)) a team keeps in team-local memory (whole-cluster sums) */
#define KM_TEAM_SUMS_DEFAULT 4096
#ifndef KM_TEAM_SUMS
#define KM_TEAM_SUMS KM_TEAM_SUMS_DEFAULT
#endif
PC_KNOB(KM_TEAM_SUMS)
/* where both fit: 1 sums by dimension, 0 by whole clusters, auto by KM_BY_DIMENSION_ABOVE */
#define KM_UPDATE_BY_DIMENSION_DEFAULT auto
#ifndef KM_UPDATE_BY_DIMENSION
#define KM_UPDATE_BY_DIMENSION KM_UPDATE_BY_DIMENSION_DEFAULT
#endif
PC_KNOB(KM_UPDATE_BY_DIMENSION)
/* auto: whole clusters while k * (d + 1) <= this */
#define KM_BY_DIMENSION_ABOVE_DEFAULT KM_TEAM_SUMS
#ifndef KM_BY_DIMENSION_ABOVE
#define KM_BY_DIMENSION_ABOVE KM_BY_DIMENSION_ABOVE_DEFAULT
#endif
PC_KNOB(KM_BY_DIMENSION_ABOVE)
/* GPU threads per team of the team-local methods */
#define KM_UPDATE_THREADS_DEFAULT PC_GPU_THREADS
#ifndef KM_UPDATE_THREADS
#define KM_UPDATE_THREADS KM_UPDATE_THREADS_DEFAULT
#endif
PC_KNOB(KM_UPDATE_THREADS)
/* room for the copies of the shared sums (GPU) */
#define KM_SUM_COPY_BYTES_DEFAULT (8u << 20)
#ifndef KM_SUM_COPY_BYTES
#define KM_SUM_COPY_BYTES KM_SUM_COPY_BYTES_DEFAULT
#endif
PC_KNOB(KM_SUM_COPY_BYTES)
/* most copies of the shared sums (GPU) */
#define KM_MAX_SUM_COPIES_DEFAULT 64
#ifndef KM_MAX_SUM_COPIES
#define KM_MAX_SUM_COPIES KM_MAX_SUM_COPIES_DEFAULT
#endif
PC_KNOB(KM_MAX_SUM_COPIES)
/* Teams of the team-local update methods per multiprocessor (GPU): as many as fit it at once (three
 * of 256 threads at the by-dimension kernel's 72 registers; four made a second, partial wave:
 * docs/performance.md). */
#define KM_GPU_UPDATE_TEAMS_PER_SM_DEFAULT 3
#ifndef KM_GPU_UPDATE_TEAMS_PER_SM
#define KM_GPU_UPDATE_TEAMS_PER_SM KM_GPU_UPDATE_TEAMS_PER_SM_DEFAULT
#endif
PC_KNOB(KM_GPU_UPDATE_TEAMS_PER_SM)
/* Points whose labels and values a thread of the team-local methods loads before it adds them:
 * several on the GPU; one on the CPU, whose out-of-order core overlaps the loads itself. */
#if defined(PC_VARIANT_GPU)
#define KM_UPDATE_BATCH_DEFAULT 8
#else
#define KM_UPDATE_BATCH_DEFAULT 1
#endif
#ifndef KM_UPDATE_BATCH
#define KM_UPDATE_BATCH KM_UPDATE_BATCH_DEFAULT
#endif
PC_KNOB(KM_UPDATE_BATCH)
/* points of a chunk of kept sums' moves (km_accumulate_in_teams): a team lists a chunk's changed
 * points in team-local memory, an int each, before it moves them */
#define KM_MOVES_DEFAULT 2048
#ifndef KM_MOVES
#define KM_MOVES KM_MOVES_DEFAULT
#endif
PC_KNOB(KM_MOVES)
_Static_assert((long long)KM_TEAM_SUMS * KM_MOVES <= INT_MAX, "a listed move, cluster * KM_MOVES + offset, is an int");
/* Most teams of km_finalize per multiprocessor (GPU): each takes a range of whole centroids. */
#define KM_FINALIZE_TEAMS_PER_SM_DEFAULT 2
#ifndef KM_FINALIZE_TEAMS_PER_SM
#define KM_FINALIZE_TEAMS_PER_SM KM_FINALIZE_TEAMS_PER_SM_DEFAULT
#endif
PC_KNOB(KM_FINALIZE_TEAMS_PER_SM)
/* Entries a thread of km_finalize loads before it stores any (GPU; 1 on the CPU). */
#if defined(PC_VARIANT_GPU)
#define KM_FINALIZE_BATCH_DEFAULT 4
#else
#define KM_FINALIZE_BATCH_DEFAULT 1
#endif
#ifndef KM_FINALIZE_BATCH
#define KM_FINALIZE_BATCH KM_FINALIZE_BATCH_DEFAULT
#endif
PC_KNOB(KM_FINALIZE_BATCH)
/* Centroids per tile of the assign step's copy of the centroids (kmeans_tuned.h). */
PC_KNOB(KM_TILE)
/* Centroid values (k d) from which km_run lays the centroids out on the host's threads. */
#define KM_HOST_LAYOUT_MIN_DEFAULT 65536
#ifndef KM_HOST_LAYOUT_MIN
#define KM_HOST_LAYOUT_MIN KM_HOST_LAYOUT_MIN_DEFAULT
#endif
PC_KNOB(KM_HOST_LAYOUT_MIN)
/* The gpu variant's runs of small k (d + 1) (km_small_run_path): all their iterations in one team
 * (km_iterate_in_one_team) up to KM_ONE_TEAM_WORK multiply-adds an assign step (n kpad d), one
 * fused pass an iteration (km_fused_pass) up to KM_FUSED_WORK; 0 turns a path off. The bounds
 * are measured crossovers (docs/performance.md, 2026-11-25). */
#define KM_ONE_TEAM_WORK_DEFAULT (1 << 19)
#ifndef KM_ONE_TEAM_WORK
#define KM_ONE_TEAM_WORK KM_ONE_TEAM_WORK_DEFAULT
#endif
PC_KNOB(KM_ONE_TEAM_WORK)
#define KM_FUSED_WORK_DEFAULT (1 << 26)
#ifndef KM_FUSED_WORK
#define KM_FUSED_WORK KM_FUSED_WORK_DEFAULT
#endif
PC_KNOB(KM_FUSED_WORK)
/* GPU threads of the one team */
#define KM_ONE_TEAM_THREADS_DEFAULT 1024
#ifndef KM_ONE_TEAM_THREADS
#define KM_ONE_TEAM_THREADS KM_ONE_TEAM_THREADS_DEFAULT
#endif
PC_KNOB(KM_ONE_TEAM_THREADS)
/* Out of core (km_plan_memory, km_stream_*): the bytes of the device's free memory that a run
 * without a given limit leaves to the others (the OpenMP runtime, the tuned kernels' and cuBLAS'
 * scratch); the most bytes of points in a block (both buffers are page-locked host memory too); the
 * bytes of a block packed before their copy is issued (packing overlaps the copies). */
#define KM_DEVICE_RESERVE_DEFAULT ((size_t)512 << 20)
#ifndef KM_DEVICE_RESERVE
#define KM_DEVICE_RESERVE KM_DEVICE_RESERVE_DEFAULT
#endif
PC_KNOB(KM_DEVICE_RESERVE)
#define KM_STREAM_BLOCK_BYTES_DEFAULT ((size_t)256 << 20)
#ifndef KM_STREAM_BLOCK_BYTES
#define KM_STREAM_BLOCK_BYTES KM_STREAM_BLOCK_BYTES_DEFAULT
#endif
PC_KNOB(KM_STREAM_BLOCK_BYTES)
#define KM_STREAM_PIECE_BYTES_DEFAULT ((size_t)8 << 20)
#ifndef KM_STREAM_PIECE_BYTES
#define KM_STREAM_PIECE_BYTES KM_STREAM_PIECE_BYTES_DEFAULT
#endif
PC_KNOB(KM_STREAM_PIECE_BYTES)

/* Full unrolling keeps the GPU's per-thread arrays of the update step in registers (the CPU's
 * loops leave it to the compiler, which vectorises them better). */
#if defined(PC_VARIANT_GPU)
#define KM_UNROLL PC_UNROLL
#else
#define KM_UNROLL
#endif

void km_transpose(const float *x, size_t n, size_t d, float *xt) {
  HOST_PAR_FOR(schedule(static))
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < d; j++) xt[j * n + i] = x[i * d + j];
}

km_points_scan km_layout_on_device(const float *x, size_t n, size_t d, float *xt) {
  const size_t count = n * d;
  float max_abs = 0.0f;
  size_t nonfinite = 0;
  DEV_ENTER(map(to : x[0 : count]) map(alloc : xt[0 : count]))
  /* e walks xt, so that neighbouring threads write neighbouring floats (the reads of x are strided) */
  PAR_FOR(reduction(max : max_abs) reduction(+ : nonfinite))
  for (size_t e = 0; e < count; e++) {
    const size_t j = e / n, i = e - j * n;
    const float v = x[i * d + j];
    xt[e] = v;
    if (isfinite(v)) max_abs = fmaxf(max_abs, fabsf(v));
    else nonfinite++;
  }
  DEV_EXIT(map(delete : x[0 : count]))
  return (km_points_scan){max_abs, nonfinite};
}

void km_layout_release(float *xt, size_t n, size_t d) {
  DEV_EXIT(map(delete : xt[0 : n * d]))
  (void)xt, (void)n, (void)d; /* unused where there is no device */
}

int km_initial_centroids(const float *x, size_t n, size_t d, int k, int kmeanspp, uint64_t seed, pc_kernels kernels,
                         float *centroids) {
  /* Across ranks (dist.h) x is this rank's slice of the rows: the rows are drawn over the global
   * order, and each chosen row comes from the rank that holds it (the others add zero bits). */
  const size_t n_all = (size_t)pc_dist_sum_long((long)n); /* one process: n, rows [0, n) */
  size_t first, count;
  pc_dist_slice(n_all, &first, &count);
  if (k < 1 || (size_t)k > n_all) return pc_fail("k-means: k = %d is outside [1, %zu]", k, n_all);
  size_t *rows = pc_try_alloc((size_t)k, sizeof *rows, "initial centroid rows");
  if (!rows) return -1;
  const int rc =
      kmeanspp ? kmpp_seed_slices(x, n, d, k, seed, kernels, rows) : pc_sample_distinct(seed, n_all, (size_t)k, rows);
  if (rc == 0) {
    for (size_t r = 0; r < (size_t)k; r++) {
      const int mine = rows[r] >= first && rows[r] - first < count;
      if (mine) memcpy(centroids + r * d, x + (rows[r] - first) * d, d * sizeof *centroids);
      else memset(centroids + r * d, 0, d * sizeof *centroids);
    }
    _Static_assert(sizeof(float) == sizeof(uint32_t), "a centroid's bits travel as uint32");
    pc_dist_or_u32((uint32_t *)centroids, (size_t)k * d);
  }
  free(rows);
  return rc;
}

/* The nearest centroid to point i by the tiles of cs (tile by tile, km_tile_at), a tile of
 * KM_TILE centroids at a time: the tile's partial sums stay in registers (acc), each point value
 * read serves KM_TILE multiply-adds, and a tile's values of one feature are KM_TILE consecutive
 * floats of cs: on the CPU one cache line, which the compiler vectorises across; on the GPU the
 * same line for every thread of a warp. Each distance sums the features in order (the direct form
 * or the dot form, as in the tuned kernels), so the labels are theirs; ties go to the lowest
 * index, padding centroids never win (cn = +inf). */
DEV_FUNCS_BEGIN
static inline int km_nearest_in_tiles(const float *restrict xt, const float *restrict cs, const float *restrict cn,
                                      size_t n, size_t d, int kpad, int direct, size_t i) {
  float best = INFINITY;
  int best_c = 0;
  for (int c0 = 0; c0 < kpad; c0 += KM_TILE) {
    const float *tile = cs + (size_t)c0 * d; /* tile c0 / KM_TILE: d rows of KM_TILE */
    float acc[KM_TILE];
    for (int c = 0; c < KM_TILE; c++) acc[c] = 0.0f;
    for (size_t j = 0; j < d; j++) {
      const float xv = xt[j * n + i];
      for (int c = 0; c < KM_TILE; c++) {
        if (direct) {
          const float diff = xv - tile[j * KM_TILE + c];
          acc[c] += diff * diff;
        } else {
          acc[c] += xv * tile[j * KM_TILE + c];
        }
      }
    }
    for (int c = 0; c < KM_TILE; c++) {
      const float dist = direct ? acc[c] + cn[c0 + c] : cn[c0 + c] - 2.0f * acc[c];
      if (dist < best) {
        best = dist;
        best_c = c0 + c;
      }
    }
  }
  return best_c;
}
DEV_FUNCS_END

/* The portable assign step, what every OpenMP compiler and every variant gets: one point per
 * iteration of a parallel loop. Returns how many labels changed. */
static long km_assign_portable(const float *restrict xt, const float *restrict cs, const float *restrict cn,
                               int *restrict labels, size_t n, size_t d, int kpad, int direct) {
  long changed = 0;
  PAR_FOR(reduction(+ : changed) GPU_REDUCTION(n))
  for (size_t i = 0; i < n; i++) {
    const int best_c = km_nearest_in_tiles(xt, cs, cn, n, d, kpad, direct, i);
    changed += labels[i] != best_c;
    labels[i] = best_c;
  }
  return changed;
}

/* Features a partial norm sums (km_prepare): the norms are sums of chunk partials, in order. */
#define KM_NORM_CHUNK 64

/* Chunk q of centroid c's dot-form norm: the sum over its features j, in order, of
 * |cs_j|^2 + 2 o_j cs_j with cs_j = ct_j - o_j (see km_prepare). */
DEV_FUNCS_BEGIN
static inline double km_norm_part(const float *restrict ct, const float *restrict offset, size_t d, int kpad, size_t c,
                                  size_t q) {
  const size_t end = (q + 1) * KM_NORM_CHUNK < d ? (q + 1) * KM_NORM_CHUNK : d;
  double part = 0.0;
  for (size_t j = q * KM_NORM_CHUNK; j < end; j++) {
    const float shifted = ct[j * (size_t)kpad + c] - offset[j];
    part += (double)shifted * shifted + 2.0 * (double)offset[j] * shifted;
  }
  return part;
}
/* Centroid c's norm from its chunks' partials (norm_parts[q * kpad + c]), added in order. */
static inline float km_norm_of_parts(const double *restrict norm_parts, size_t chunks, int kpad, size_t c) {
  double norm = 0.0;
  for (size_t q = 0; q < chunks; q++) norm += norm_parts[q * (size_t)kpad + c];
  return (float)norm;
}
DEV_FUNCS_END

/* The tiles of the assign step. Dot form: cs = ct - o (the centroids moved by the offset o,
 * the initial centroids' mean) and cn[c] = |cs_c|^2 + 2 o.cs_c, so that for a point x
 * |x - c|^2 = |x|^2 + cn[c] - 2 x.cs_c, where |x|^2 is the same for every centroid; the shift
 * keeps the float32 products small when the data sit far from the origin. Direct form: cn = 0
 * and cs = ct, unshifted, unless the kernels read ct themselves (`skip_copy`). cs is laid out as
 * the assign kernels read it (`dimension_major`, else tile by tile: km_tile_at). Padding
 * centroids: cs = 0, cn = +inf. For the tensor cores' dot form in `products` products (3 or 1;
 * 0: not the tensor cores), cs gets the TF32 head of each shifted value and, for 3, cs_lo its
 * tail (km_tf32_split); cn the exact norm. km_prepare makes the first pass's tiles, km_finalize
 * every later pass's, with the same formulas (km_put_entry, km_norm_part), so the same bits. */
typedef struct {
  int direct, products, dimension_major, skip_copy;
} km_tiles;

DEV_FUNCS_BEGIN
/* Feature j of centroid c (c < kpad) of ct into cs (and cs_lo) in the form km_tiles describes
 * (its fields as scalars: a struct captured by a target region is copied to the device at every
 * launch). */
static inline void km_put_entry(float *restrict cs, float *restrict cs_lo, const float *restrict ct,
                                const float *restrict offset, size_t d, int k, int kpad, int direct, int products,
                                int dimension_major, size_t j, int c) {
  const float shifted = c < k ? ct[j * (size_t)kpad + (size_t)c] - (direct ? 0.0f : offset[j]) : 0.0f;
  const size_t at = km_tile_at(c, j, d, kpad, dimension_major);
  if (products) {
    unsigned hi, lo;
    km_tf32_split(shifted, &hi, &lo);
    cs[at] = km_bits_float(hi);
    if (products == 3) cs_lo[at] = km_bits_float(lo);
  } else {
    cs[at] = shifted;
  }
}
DEV_FUNCS_END

static void km_prepare(const float *restrict ct, const float *restrict offset, float *restrict cs,
                       float *restrict cs_lo, float *restrict cn, double *restrict norm_parts, size_t d, int k,
                       int kpad, km_tiles form) {
  const size_t entries = form.skip_copy ? 0 : d * (size_t)kpad;
  const int direct = form.direct, products = form.products, dimension_major = form.dimension_major;
  PAR_FOR(GPU_THREADS)
  for (size_t e = 0; e < entries; e++) { /* feature j of centroid c: every entry on its own */
    /* 32-bit division where it will do: a 64-bit one costs the GPU ~70 instructions */
    const size_t j = entries <= UINT_MAX ? (unsigned)e / (unsigned)kpad : e / (size_t)kpad;
    km_put_entry(cs, cs_lo, ct, offset, d, k, kpad, direct, products, dimension_major, j,
                 (int)(e - j * (size_t)kpad));
  }
  /* the norms: a partial sum over each chunk of KM_NORM_CHUNK features (in order), then the
   * partials added in order, the same in every variant, so every variant has the same norms. The
   * loops only load, so that a thread's loads overlap instead of each waiting for a store
   * (figures: docs/performance.md). */
  const size_t chunks = direct ? 0 : (d + KM_NORM_CHUNK - 1) / KM_NORM_CHUNK, parts = chunks * (size_t)kpad;
  PAR_FOR(GPU_THREADS)
  for (size_t e = 0; e < parts; e++) {
    const size_t q = e / (size_t)kpad, c = e - q * (size_t)kpad;
    norm_parts[e] = c < (size_t)k ? km_norm_part(ct, offset, d, kpad, c, q) : 0.0;
  }
  PAR_FOR(GPU_THREADS)
  for (int c = 0; c < kpad; c++) cn[c] = c >= k ? INFINITY : km_norm_of_parts(norm_parts, chunks, kpad, (size_t)c);
}

/* The update step's fixed point (km_fixed, km_to_fixed) and team-local sums (km_team_add,
 * km_team_sum) are in kmeans_tuned.h: the tuned kernel that sums in its assign step shares them. */
DEV_FUNCS_BEGIN
/* a centroid coordinate from its cluster's fixed-point sum (unscale = 2^-s_j) and count */
static inline float km_mean(km_fixed sum, double unscale, km_fixed count) {
  return (float)((double)sum * unscale / (double)count);
}
/* Point i into the team-local sums of whole clusters (cluster c's d sums at c * (d + 1), its
 * count after them). */
static inline __attribute__((always_inline)) void km_team_add_point(km_team_word *sums, const float *restrict xt,
                                                                    const float *restrict scale, size_t n, size_t d,
                                                                    size_t i, int c) {
  const size_t base = (size_t)c * (d + 1);
  for (size_t j = 0; j < d; j++) km_team_add(sums, base + j, km_to_fixed(xt[j * n + i], scale[j]));
  km_team_add(sums, base + d, 1);
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
 * array reduction (it reads each dimension's row in order, not d rows at once; figures:
 * docs/performance.md). KM_UPDATE_BY_DIMENSION chooses
 * where both fit: 1 (by dimension), 0 (whole clusters; then also shared sums where they do not
 * fit) or auto: whole clusters while k * (d + 1) <= KM_BY_DIMENSION_ABOVE, by default wherever
 * they fit (on the CPU as fast or faster; not yet compared on a GPU).
 * Whole clusters keep the sums between iterations (km_keeps_sums) and move only the points whose
 * label changed: out of the cluster the sums hold them in (summed[i], -1: none), into the new
 * one. Integer sums do not depend on the order of their adds, so the kept sums are those of adding
 * every point again, bit for bit; an iteration where every label changes adds twice as much, one
 * where few change reads the labels and little else (figures: docs/performance.md, 2026-11-29). */
/* KM_SETTING(KM_BY_DIMENSION_, KM_UPDATE_BY_DIMENSION) is 0, 1 or -1 (auto); another value of
 * -DKM_UPDATE_BY_DIMENSION does not compile. */
#define KM_BY_DIMENSION_0 0
#define KM_BY_DIMENSION_1 1
#define KM_BY_DIMENSION_auto (-1)
#define KM_PASTE(a, b) a##b
#define KM_SETTING(prefix, value) KM_PASTE(prefix, value)
/* A thread of the team-local methods reads KM_UPDATE_BATCH points' labels and values before it
 * adds them, so that their loads are in flight together. On the GPU a loop item takes points
 * KM_UPDATE_LANES (a warp) apart, so that each load of a warp reads consecutive addresses; a
 * CPU thread takes consecutive points. */
#if defined(PC_VARIANT_GPU)
#define KM_UPDATE_LANES 32
#else
#define KM_UPDATE_LANES 1
#endif
DEV_FUNCS_BEGIN
/* A batched loop over `count` entries: its items (km_batch_items), item g taking entries
 * km_batch_first(g) + b * KM_UPDATE_LANES for b < batch that are below count. */
static inline size_t km_batch_items(size_t count, size_t batch) {
  const size_t per_group = batch * KM_UPDATE_LANES;
  return (count + per_group - 1) / per_group * KM_UPDATE_LANES;
}
static inline size_t km_batch_first(size_t g, size_t batch) {
  return g / KM_UPDATE_LANES * batch * KM_UPDATE_LANES + g % KM_UPDATE_LANES;
}
DEV_FUNCS_END
/* Shared sums: the number of global copies (GPU). Thread i adds into copy i % copies, so that
 * fewer atomics collide on one address (km_finalize adds the copies up); as many copies as fit
 * in KM_SUM_COPY_BYTES, at most KM_MAX_SUM_COPIES. CPU threads get private copies from the
 * OpenMP reduction instead. */

typedef enum { KM_SUMS_WHOLE, KM_SUMS_BY_DIMENSION, KM_SUMS_SHARED } km_sums_method;
static const char *const km_sums_names[] = {"whole-clusters", "by-dimension", "shared"};

typedef struct {
  km_sums_method method;
  int teams;     /* whole clusters: teams, each summing a share of the points */
  int ranges;    /* by dimension: ranges of the points per dimension (one team each) */
  size_t copies; /* shared sums: copies of the global sums; 1 otherwise */
} km_update_plan;

/* Teams of a team-local method: KM_GPU_UPDATE_TEAMS_PER_SM per multiprocessor on the GPU, one
 * per host thread. */
static int km_update_teams(void) {
#if defined(PC_VARIANT_GPU)
  return pc_device_teams(KM_GPU_UPDATE_TEAMS_PER_SM * pc_device_multiprocessors());
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

/* Whether a run keeps the update's sums between iterations and moves only the points whose label
 * changed (see above): not asked to add every point (--sums all), the sums made where the points are
 * (the device, or the host of seq and omp), of whole clusters, and in one process (the ranks' sums
 * are added into one array), and not where a tuned kernel adds the points in its assign step
 * (in_pass), which reads them anyway. By dimension, where every team reads every point's labels,
 * reading the labels the sums hold as well cost more than the adds it saved (on the CPU, 2026-11-29). */
static int km_keeps_sums(const km_params *p, km_update_plan update, int on_device, int in_pass) {
  return !p->resum_all && on_device && update.method == KM_SUMS_WHOLE && pc_dist_size() == 1 && !in_pass;
}

/* The tuned kernels a run of the general path takes where they could also do the update's work in
 * their assign pass: not under --kernels portable, cuBLAS (which assigns without them) or out of core
 * (whose blocks are summed as they come); else NULL. */
static const km_tuned_kernels *km_tuned_for_pass(const km_params *p, int streaming) {
  if (p->kernels == PC_KERNELS_PORTABLE || km_distance_is_gemm(p->distance) || streaming) return NULL;
  return km_tuned();
}

/* Whether the tuned kernels that a run of the general path takes add the points to the sums in
 * their assign step (kmeans_tuned.h: sums_in_pass), given that they run where the run does. */
static int km_tuned_sums_in_pass(size_t d, const km_params *p, int kpad, int streaming, km_update_plan update) {
  const km_tuned_kernels *tuned = km_tuned_for_pass(p, streaming);
  return tuned && tuned->sums_in_pass && update.method == KM_SUMS_WHOLE &&
         tuned->sums_in_pass(d, p->k, kpad, km_tensor_form_of(p->distance));
}

/* Whether the tuned kernels that a run of n points takes on the general path move the changed points
 * within the kept sums in their assign step (kmeans_tuned.h: moves_in_pass), given that they run where
 * the run does and that it keeps its sums (km_keeps_sums). */
static int km_tuned_moves_in_pass(size_t n, size_t d, const km_params *p, int kpad, int streaming) {
  const km_tuned_kernels *tuned = km_tuned_for_pass(p, streaming);
  return tuned && tuned->moves_in_pass && tuned->moves_in_pass(n, d, p->k, kpad, km_tensor_form_of(p->distance));
}

/* The lengths of km_run's device arrays beside the points and labels (see its DEV_ENTER) for n
 * points of d features, in memory (block 0) or out of core in blocks of `block` points, and the bytes
 * the run puts on the device: these arrays, the points there (all n, or two blocks: km_stream_open),
 * the labels of all n (and summed[n] where the run keeps it: km_needs_summed), cuBLAS' scratch and
 * the tuned kernels' copies of the points (device_bytes, for each of their runs: out of core, the
 * blocks' and a shorter last block's). */
typedef struct {
  size_t ct, cs_lo, norm_parts, sums, scale_ranges; /* ct: cs's too; cn: kpad; offset: d; scale, unscale: d + 1 */
  size_t label_bytes; /* labels[n], and summed[n] where the run needs it */
  size_t bytes;
} km_device_arrays;

static int km_needs_summed(size_t n, size_t d, const km_params *p, size_t block, km_update_plan update);

/* k rounded up to whole tiles of KM_TILE centroids: the length of the centroid arrays' rows. */
static int km_padded_k(int k) { return (k + KM_TILE - 1) / KM_TILE * KM_TILE; }

static km_device_arrays km_device_arrays_of(size_t n, size_t d, const km_params *p, size_t block) {
  const int k = p->k, kpad = km_padded_k(k);
  const km_distance distance = km_distance_for(n, d, p);
  const int gemm = km_distance_is_gemm(distance);
  const size_t held = block ? 2 * block : n, span = block ? block : n; /* points there; an assign step's */
  km_device_arrays a;
  a.ct = (size_t)kpad * d;
  a.cs_lo = km_tensor_products(distance) == 3 ? a.ct : 1; /* the tails of cs (tensor cores, 3 products) */
  a.norm_parts = (d + KM_NORM_CHUNK - 1) / KM_NORM_CHUNK * (size_t)kpad;
  const km_update_plan update = km_plan_update(span, d, k);
  a.sums = update.copies * (d + 1) * (size_t)k;
  a.label_bytes = (km_needs_summed(n, d, p, block, update) ? 2 : 1) * n * sizeof(int);
  a.scale_ranges = block ? 1 : km_ranges_per_dimension(n, d); /* out of core: d maxima, from the host */
  const size_t floats = held * d + 2 * a.ct + a.cs_lo + (size_t)kpad + d + (d + 1) + d * a.scale_ranges;
  const km_tensor_form form = km_tensor_form_of(distance);
  const km_tuned_kernels *tuned = form ? km_tuned() : NULL;
  size_t tuned_bytes = 0;
  if (tuned && tuned->device_bytes) {
    const size_t tail = block ? n - (n - 1) / block * block : n;
    tuned_bytes = tuned->device_bytes(span, d, kpad, form);
    if (tail < span) tuned_bytes += tuned->device_bytes(tail, d, kpad, form);
  }
  a.bytes = floats * sizeof(float) + a.label_bytes + (a.norm_parts + d + 1) * sizeof(double) +
            a.sums * sizeof(km_fixed) + (gemm ? km_gemm_scratch_bytes(span, k) : 0) + tuned_bytes;
  return a;
}

int km_plan_memory(size_t n, size_t d, const km_params *p, km_memory_plan *plan) {
  memset(plan, 0, sizeof *plan);
  plan->in_memory = km_device_arrays_of(n, d, p, 0).bytes;
  plan->limit = SIZE_MAX;
  if (!PC_HAS_DEVICE) return 0; /* seq, omp: the device is the host, which holds the points already */
  const size_t share = pc_device_memory_share(); /* 0: no limit known (the host fallback) */
  if (share) plan->limit = share > KM_DEVICE_RESERVE ? share - KM_DEVICE_RESERVE : 0;
  if (p->device_memory && p->device_memory < plan->limit) plan->limit = p->device_memory;
  if (plan->in_memory <= plan->limit) return 0;
  /* Out of core: blocks as large as the limit lets two of them be (the bytes grow with the block:
   * its points, and cuBLAS' scratch), at most KM_STREAM_BLOCK_BYTES of points each. */
  size_t lo = 0, hi = n;
  while (lo < hi) { /* the largest block that fits: lo fits (or is 0), hi + 1 does not */
    const size_t mid = hi - (hi - lo) / 2;
    if (km_device_arrays_of(n, d, p, mid).bytes <= plan->limit) lo = mid;
    else hi = mid - 1;
  }
  if (lo == 0) {
    const km_device_arrays one = km_device_arrays_of(n, d, p, 1);
    const size_t least = one.bytes, labels = one.label_bytes, rows = 2 * d * sizeof(float);
    return pc_fail("%zu bytes of device memory are too few for k-means: out of core it needs %zu for n = %zu, d = %zu, "
                   "k = %d (the labels %zu, the centroids and sums %zu, two blocks of one point %zu)",
                   plan->limit, least, n, d, p->k, labels, least - labels - rows, rows);
  }
  const size_t most = KM_STREAM_BLOCK_BYTES / (d * sizeof(float));
  plan->block = lo < most ? lo : most > 0 ? most : 1;
  plan->blocks = (n + plan->block - 1) / plan->block;
  return 0;
}

/* scale[j] = 2^s_j and unscale[j] = 2^-s_j for the d dimensions and 1 for the counts (j = d),
 * the host and device copies both: s_j = 62 - n_bits - e_j, where n < 2^n_bits and dimension
 * j's largest |x| (top[j], over this process's n points) < 2^e_j, so that n values |x| 2^s_j sum
 * below 2^62; at most 126, so that 2^s_j is a float (data below 2^-64 then keep their bits down
 * to 2^-126). A maximum does not depend on the order it is taken in, so every variant and path
 * picks the same exponents. */
static void km_set_scales(float *restrict top, size_t n, size_t d, float *restrict scale,
                          double *restrict unscale) {
  /* across ranks (dist.h): every rank takes the exponents of all the points, n and the maxima */
  const size_t n_all = (size_t)pc_dist_sum_long((long)n);
  pc_dist_max_float(top, d);
  int n_bits = 0;
  while (n_bits < 62 && (size_t)1 << n_bits <= n_all) n_bits++;
  for (size_t j = 0; j <= d; j++) {
    const float largest = j < d ? top[j] : 0.0f;
    int e = 0;
    if (largest > 0.0f) frexpf(largest, &e);
    const int s = j == d ? 0 : 62 - n_bits - e < 126 ? 62 - n_bits - e : 126;
    scale[j] = ldexpf(1.0f, s);
    unscale[j] = ldexp(1.0, -s);
  }
  DEV_UPDATE(to(scale[0 : d + 1], unscale[0 : d + 1]))
}

/* The scales (km_set_scales) from one pass over the points on the device, each dimension cut into
 * `ranges` ranges of points (a team each, its largest |x| in part[r * d + j]). */
static void km_fixed_scales(const float *restrict xt, size_t n, size_t d, size_t ranges, float *restrict part,
                            float *restrict scale, double *restrict unscale) {
  const size_t units = d * ranges;
  PAR_TEAMS_FOR(GPU_TEAMS((int)units, KM_UPDATE_THREADS))
  for (size_t u = 0; u < units; u++) {
    const size_t j = u % d, lo = n * (u / d) / ranges, hi = n * (u / d + 1) / ranges;
    float top = 0.0f;
    TEAM_PAR_FOR(reduction(max : top))
    for (size_t i = lo; i < hi; i++) top = fmaxf(top, fabsf(xt[j * n + i]));
    part[u] = top;
  }
  DEV_UPDATE(from(part[0 : units]))
  for (size_t j = 0; j < d; j++)
    for (size_t r = 1; r < ranges; r++) part[j] = fmaxf(part[j], part[r * d + j]);
  km_set_scales(part, n, d, scale, unscale);
}

/* The largest |x| of each dimension over the n points in top[0..d), on the host's threads: the
 * out-of-core path's maxima for km_set_scales (its points are on the host). */
static void km_host_maxima(const float *restrict xt, size_t n, size_t d, float *restrict top) {
  for (size_t j = 0; j < d; j++) {
    float largest = 0.0f;
    HOST_PAR_FOR(reduction(max : largest))
    for (size_t i = 0; i < n; i++) largest = fmaxf(largest, fabsf(xt[j * n + i]));
    top[j] = largest;
  }
}

/* Whole clusters: team t sums points [t * n / teams, (t+1) * n / teams) into `local` (cluster
 * c's sums at c * (d + 1), its count after them), then adds them to the global sums. On the CPU
 * a team is one thread and `local` is private to it. Without `summed` every point is added, a
 * thread a point. With `summed` (kept sums) only the points whose label changed move, out of
 * cluster summed[i] into labels[i], and summed[i] follows them; a point not in the sums yet
 * (summed[i] -1: the first pass) is added by its thread, as without `summed`. Few points change
 * after the first passes, and a thread that moved the changed points among its own would load each
 * one's d values one after another while most of its warp waited (docs/performance.md,
 * 2026-11-29); so a team takes its points in chunks of KM_MOVES: its threads first list the
 * chunk's changed points (reading the labels at full width), then take one (point, dimension)
 * pair of the list each. */
static void km_accumulate_in_teams(const float *restrict xt, const int *restrict labels, int *restrict summed,
                                   km_fixed *restrict sums, const float *restrict scale, size_t n, size_t d, int k,
                                   int teams) {
  const size_t row = d + 1, len = (size_t)k * row;
  PAR_TEAMS_FOR(num_teams(teams) thread_limit(KM_UPDATE_THREADS))
  for (int t = 0; t < teams; t++) {
    km_team_word local[KM_SUM_WORDS * KM_TEAM_SUMS];
    int moved[KM_MOVES]; /* a chunk's changed points: cluster left * KM_MOVES + offset in the chunk */
    TEAM_LOCAL(local)
    TEAM_LOCAL(moved)
    TEAM_PAR_FOR()
    for (size_t e = 0; e < KM_SUM_WORDS * len; e++) local[e] = 0;
    const size_t lo = n * (size_t)t / (size_t)teams, hi = n * (size_t)(t + 1) / (size_t)teams;
    if (!summed) {
      TEAM_PAR_FOR()
      for (size_t i = lo; i < hi; i++) km_team_add_point(local, xt, scale, n, d, i, labels[i]);
    }
    for (size_t start = lo; summed && start < hi; start += KM_MOVES) {
      const size_t end = hi - start < KM_MOVES ? hi : start + KM_MOVES;
      int moves = 0;
      TEAM_PAR_FOR()
      for (size_t i = start; i < end; i++) {
        const int before = summed[i], c = labels[i];
        if (before == c) continue;
        summed[i] = c;
        if (before < 0) { /* not in the sums yet */
          km_team_add_point(local, xt, scale, n, d, i, c);
          continue;
        }
        int slot;
        PAR_ATOMIC_CAPTURE
        slot = moves++;
        moved[slot] = before * KM_MOVES + (int)(i - start);
      }
      const size_t pairs = (size_t)moves * row;
      TEAM_PAR_FOR()
      for (size_t e = 0; e < pairs; e++) { /* value j of listed point m */
        const unsigned m = (unsigned)e / (unsigned)row, j = (unsigned)e - m * (unsigned)row;
        const size_t i = start + (size_t)(moved[m] % KM_MOVES), before = (size_t)(moved[m] / KM_MOVES);
        const km_fixed q = j < d ? km_to_fixed(xt[j * n + i], scale[j]) : 1;
        km_team_add(local, before * row + j, -q);
        km_team_add(local, (size_t)labels[i] * row + j, q);
      }
    }
    TEAM_PAR_FOR()
    for (size_t e = 0; e < len; e++) km_team_sum_to_global(local, sums, e, row, k);
  }
}

/* By dimension: team u takes dimension j = u % (d + 1) (j = d: the counts) of points range
 * r = u / (d + 1), so that the teams at work together read the same labels. With `store` (one
 * range, and no earlier sums to add to) each team stores its sums instead of adding them. */
static void km_accumulate_by_dimension(const float *restrict xt, const int *restrict labels, km_fixed *restrict sums,
                                       const float *restrict scale, size_t n, size_t d, int k, km_update_plan p,
                                       int store) {
  const size_t row = d + 1, ranges = (size_t)p.ranges;
  const int units = (int)(row * ranges);
  PAR_TEAMS_FOR(GPU_TEAMS(units, KM_UPDATE_THREADS))
  for (int u = 0; u < units; u++) {
    km_team_word local[KM_SUM_WORDS * KM_TEAM_SUMS];
    TEAM_LOCAL(local)
    const size_t j = (size_t)u % row, r = (size_t)u / row;
    const float sj = scale[j];
    TEAM_PAR_FOR()
    for (size_t e = 0; e < KM_SUM_WORDS * (size_t)k; e++) local[e] = 0;
    const size_t lo = n * r / ranges, hi = n * (r + 1) / ranges, items = km_batch_items(hi - lo, KM_UPDATE_BATCH);
    TEAM_PAR_FOR()
    for (size_t g = 0; g < items; g++) { /* points first + b * KM_UPDATE_LANES, b < KM_UPDATE_BATCH */
      const size_t first = lo + km_batch_first(g, KM_UPDATE_BATCH);
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
      if (store) { /* the dimension's only team: the value is its own */
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
 * array reduction. Without `summed` the points' sums are added to those there, which hold zeros
 * before a pass's first adds (km_run clears them once, km_finalize after every pass); `first`: the
 * pass's first adds (out of core, its first block's), where the teams of a dimension's only range
 * store their sums instead. With `summed` (whole clusters' kept sums: the labels they hold the points
 * in) the points whose label changed move, and summed[i] becomes labels[i]. */
static void km_accumulate(const float *restrict xt, const int *restrict labels, int *restrict summed,
                          km_fixed *restrict sums, const float *restrict scale, size_t n, size_t d, int k,
                          km_update_plan p, int first) {
  const size_t row = d + 1, copies = p.copies, len = copies * row * (size_t)k;
  const int store = first && p.method == KM_SUMS_BY_DIMENSION && p.ranges == 1; /* stores every value */
  (void)len; /* a clause of the threaded variants only */
  if (p.method == KM_SUMS_WHOLE) {
    km_accumulate_in_teams(xt, labels, summed, sums, scale, n, d, k, p.teams);
    return;
  }
  if (p.method == KM_SUMS_BY_DIMENSION) {
    km_accumulate_by_dimension(xt, labels, sums, scale, n, d, k, p, store);
    return;
  }

  /* The one loop where variants differ in method: reduction on the CPU, atomics on the GPU. */
  PAR_FOR(HOST_ONLY(reduction(+ : sums[0 : len])) GPU_THREADS)
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

/* What km_finalize and both small-run loops (km_iterate_in_one_team, km_fused_pass) do per entry
 * and per centroid, so that all three give the same bits (km_put_entry, above, makes a tile entry). */
DEV_FUNCS_BEGIN
/* cn[c] as km_prepare makes it: the chunks' partial norms added in order (0 in the direct form,
 * where chunks = 0), +inf for a padding centroid. */
static inline float km_centroid_term(const float *restrict ct, const float *restrict offset, size_t d, int k, int kpad,
                                     size_t chunks, size_t c) {
  if (c >= (size_t)k) return INFINITY;
  double norm = 0.0;
  for (size_t q = 0; q < chunks; q++) norm += km_norm_part(ct, offset, d, kpad, c, q);
  return (float)norm;
}
/* Coordinate *at of a centroid, of value `before`, becomes its cluster's mean (km_mean) where the
 * cluster has points; returns the squared move. */
static inline double km_move_coordinate_from(float before, float *at, km_fixed sum, double unscale, km_fixed count) {
  if (count <= 0) return 0.0;
  const float updated = km_mean(sum, unscale, count);
  const double delta = (double)updated - (double)before;
  *at = updated;
  return delta * delta;
}
static inline double km_move_coordinate(float *at, km_fixed sum, double unscale, km_fixed count) {
  return km_move_coordinate_from(*at, at, sum, unscale, count);
}
/* Counts the calling team in (arrivals[0], zero between regions) and returns whether it is the
 * last of `teams` to arrive: that team then sees what every team wrote before its arrival (the
 * flush before orders this team's writes before its count, the flush after orders the others'
 * counts before this team's reads), and sets the count back to zero for the next region
 * (km_finalize, km_fused_pass). */
static inline int km_last_to_arrive(km_fixed *arrivals, int teams) {
  km_fixed arrived;
  PAR_FLUSH
  PAR_ATOMIC_CAPTURE
  {
    arrived = arrivals[0];
    arrivals[0] += 1;
  }
  PAR_FLUSH
  if (arrived != teams - 1) return 0;
  arrivals[0] = 0;
  return 1;
}
DEV_FUNCS_END

/* km_finalize's teams for k centroids: KM_FINALIZE_TEAMS_PER_SM a multiprocessor on a GPU, a
 * host thread each in the omp variant, one on the host of the gpu variant (on_device 0). */
static int km_finalize_teams(int k, int on_device) {
  const int wanted = !on_device ? 1 : PC_HAS_DEVICE ? KM_FINALIZE_TEAMS_PER_SM * pc_device_multiprocessors()
                                                    : km_update_teams(); /* omp: threads */
  return wanted < k ? wanted : k;
}

/* New centroids from `copies` copies of the sums (counts in dimension d): ct[:, c] = mean of
 * cluster c, unchanged for an empty cluster. Returns the summed squared shift of the centroids,
 * and with `clear` leaves the sums at zero for the next pass's adds (else they are kept:
 * km_keeps_sums). On the device it also makes the next
 * assign step's tiles of the moved centroids (cs, cs_lo, cn as km_prepare makes them, in the form
 * `form`): one target region where the means, the clearing and the tiles and norms were five. On
 * the host (on_device 0: one thread, host copies, Cao's GPU-L) it makes the means alone; the
 * caller sends them and calls km_prepare. A team takes a range of whole centroids, so that the
 * team that moved a centroid's d features also makes its norm (one barrier between); its threads
 * take consecutive centroids of a feature, so a GPU warp reads and writes consecutive entries of
 * the dimension-major sums, ct and cs, and each loads KM_FINALIZE_BATCH entries before it stores
 * any, so that an entry's loads do not wait for the stores before (figures: docs/performance.md).
 * Each team leaves its part of the shift in parts[t]; the last to arrive (km_last_to_arrive)
 * adds the parts in order and writes the total through `shift_out`, as km_fused_pass does: on the
 * device that is host memory the device writes directly (results, pc_results), so the region has
 * nothing to copy back. parts and arrivals are on the device (teams at most km_finalize_teams). */
static double km_finalize(km_fixed *restrict sums, const double *restrict unscale, float *restrict ct,
                          const float *restrict offset, float *restrict cs, float *restrict cs_lo, float *restrict cn,
                          double *restrict norm_parts, double *restrict parts, km_fixed *restrict arrivals, size_t d,
                          int k, int kpad, size_t copies, int clear, km_tiles form, int on_device,
                          const pc_results *results) {
  const size_t kd = (size_t)k * d, per_copy = kd + (size_t)k;
  const int teams = km_finalize_teams(k, on_device);
  const int tiles = on_device, copy = tiles && !form.skip_copy;
  const int direct = form.direct, products = form.products, dimension_major = form.dimension_major;
  const size_t chunks = tiles && !direct ? (d + KM_NORM_CHUNK - 1) / KM_NORM_CHUNK : 0;
  double on_host = 0.0; /* the total where the region runs on the host (GPU-L) */
  double *shift_out = PC_HAS_DEVICE && on_device ? results->device : &on_host;
  PAR_TEAMS_FOR(GPU_ONLY(if(target : on_device) is_device_ptr(shift_out)) num_teams(teams)
                    thread_limit(on_device ? PC_GPU_THREADS : 1))
  for (int t = 0; t < teams; t++) {
    const int c0 = (int)((size_t)k * (size_t)t / (size_t)teams);
    const int c1 = (int)((size_t)k * (size_t)(t + 1) / (size_t)teams);
    const size_t cols = (size_t)(c1 - c0), entries = d * cols;
    double part = 0.0;
    const size_t items = km_batch_items(entries, KM_FINALIZE_BATCH);
    TEAM_PAR_FOR(reduction(+ : part))
    for (size_t g = 0; g < items; g++) { /* entries first + b * KM_UPDATE_LANES, b < KM_FINALIZE_BATCH */
      const size_t first = km_batch_first(g, KM_FINALIZE_BATCH);
      km_fixed count[KM_FINALIZE_BATCH], sum[KM_FINALIZE_BATCH];
      float before[KM_FINALIZE_BATCH];
      size_t jj[KM_FINALIZE_BATCH];
      int cc[KM_FINALIZE_BATCH];
      KM_UNROLL for (int b = 0; b < KM_FINALIZE_BATCH; b++) { /* every load before the first store */
        const size_t e = first + (size_t)b * KM_UPDATE_LANES; /* feature j of centroid c */
        count[b] = 0, sum[b] = 0, before[b] = 0.0f, jj[b] = 0, cc[b] = c0;
        if (e >= entries) continue;
        const size_t j = entries <= UINT_MAX ? (unsigned)e / (unsigned)cols : e / cols;
        const int c = c0 + (int)(e - j * cols);
        for (size_t p = 0; p < copies; p++) {
          count[b] += sums[p * per_copy + kd + (size_t)c];
          sum[b] += sums[p * per_copy + j * (size_t)k + (size_t)c];
        }
        jj[b] = j, cc[b] = c, before[b] = ct[j * (size_t)kpad + (size_t)c];
      }
      KM_UNROLL for (int b = 0; b < KM_FINALIZE_BATCH; b++) {
        if (first + (size_t)b * KM_UPDATE_LANES >= entries) continue;
        const size_t j = jj[b], c = (size_t)cc[b];
        for (size_t p = 0; clear && p < copies; p++) sums[p * per_copy + j * (size_t)k + c] = 0;
        part += km_move_coordinate_from(before[b], ct + j * (size_t)kpad + c, sum[b], unscale[j], count[b]);
        if (copy) km_put_entry(cs, cs_lo, ct, offset, d, k, kpad, direct, products, dimension_major, j, (int)c);
      }
    }
    TEAM_PAR_FOR()
    for (size_t e = 0; e < chunks * cols; e++) { /* the moved centroids' partial norms */
      const size_t q = e / cols, c = (size_t)c0 + (e - q * cols);
      norm_parts[q * (size_t)kpad + c] = km_norm_part(ct, offset, d, kpad, c, q);
    }
    TEAM_PAR_FOR()
    for (int c = c0; c < c1; c++) { /* their norms, the partials added in order; the counts cleared */
      if (chunks) cn[c] = km_norm_of_parts(norm_parts, chunks, kpad, (size_t)c);
      for (size_t p = 0; clear && p < copies; p++) sums[p * per_copy + kd + (size_t)c] = 0;
    }
    parts[t] = part;
    if (km_last_to_arrive(arrivals, teams)) { /* every part is in */
      double total = 0.0;
      for (int u = 0; u < teams; u++) total += parts[u];
      shift_out[0] = total;
    }
  }
  return shift_out == &on_host ? on_host : pc_results_take(results, 1)[0];
}

/* The gpu variant's paths for runs of small k (d + 1), whose iterations are too short for the
 * several launches an iteration of the general path (each costs more than their work;
 * docs/performance.md, 2026-11-25): where the update is on the device, the distances portable (not cuBLAS,
 * not the tensor cores) and the team-local sums hold whole clusters (k (d + 1) <= KM_TEAM_SUMS),
 * KM_PATH_ONE_TEAM up to KM_ONE_TEAM_WORK multiply-adds an assign step, KM_PATH_FUSED up to
 * KM_FUSED_WORK; else KM_PATH_GENERAL (larger steps, where the tuned kernels win). */
typedef enum { KM_PATH_GENERAL, KM_PATH_ONE_TEAM, KM_PATH_FUSED } km_path;
/* The path the shape alone asks for (the sums and the work), whatever runs it. */
static km_path km_small_run_shape(size_t n, size_t d, int k, int kpad) {
  if ((size_t)k * (d + 1) > KM_TEAM_SUMS) return KM_PATH_GENERAL;
  const size_t work = n * (size_t)kpad * d;
  return work <= (size_t)KM_ONE_TEAM_WORK ? KM_PATH_ONE_TEAM : work <= (size_t)KM_FUSED_WORK ? KM_PATH_FUSED
                                                                                             : KM_PATH_GENERAL;
}
static km_path km_small_run_path(size_t n, size_t d, int k, int kpad, int on_device, int portable_distance) {
  if (!PC_HAS_DEVICE || !on_device || !portable_distance) return KM_PATH_GENERAL;
  if (pc_dist_size() > 1) return KM_PATH_GENERAL; /* the ranks' sums meet between the steps of an iteration */
  return km_small_run_shape(n, d, k, kpad);
}

/* Whether a run of n points (out of core: blocks of `block`; 0: in memory) keeps summed[n] on the
 * device (km_run): where it keeps its sums, on the general path, and no tuned kernel adds the points
 * or moves them in its pass. It takes the tuned kernels to run where they apply; under --allow-host on a machine
 * without a GPU they do not, and the run may keep summed where this says it does not (in host memory,
 * where the device is the host then). */
static int km_needs_summed(size_t n, size_t d, const km_params *p, size_t block, km_update_plan update) {
  km_params resolved = *p;
  resolved.distance = km_distance_for(n, d, p);
  const int k = p->k, kpad = km_padded_k(k), streaming = block > 0;
  const int on_device = p->update == KM_UPDATE_DEVICE || !PC_HAS_DEVICE;
  const int gemm = km_distance_is_gemm(resolved.distance);
  const int portable_distance = !gemm && !km_tensor_form_of(resolved.distance);
  if (!streaming && km_small_run_path(n, d, k, kpad, on_device, portable_distance) != KM_PATH_GENERAL) return 0;
  return km_keeps_sums(p, update, on_device, km_tuned_sums_in_pass(d, &resolved, kpad, streaming, update)) &&
         !km_tuned_moves_in_pass(n, d, &resolved, kpad, streaming);
}

/* --distance auto on the host: the dot form from this k d on (one multiply-add a feature instead of
 * two operations; below it the dot form's centroid preparation each iteration costs more than it
 * saves). Measured on 16 threads of an H200 machine's Xeon, docs/performance.md (2026-11-27). */
#define KM_AUTO_HOST_DOT_KD 256

/* Whether the dot form's rounding stays near direct's for k clusters in d dimensions. Its terms are
 * of the size of the points' spread squared, direct's of the distance to the nearest centroid
 * squared: for k clusters spread evenly their ratio is about k^(2/d). auto takes a dot form only
 * where that is at most 16 (4 of float32's 24 bits): k <= 4^d. (1-D data with 2,100 clusters in the
 * tests: a fifth of the labels moved under the dot form.) */
static int km_dot_near_direct(size_t d, int k) { return d >= 16 || (size_t)k <= (size_t)1 << (2 * d); }

km_distance km_distance_for(size_t n, size_t d, const km_params *p) {
  if (p->distance != KM_DISTANCE_AUTO) return p->distance;
  const int k = p->k, kpad = km_padded_k(k);
  if (!km_dot_near_direct(d, k)) return KM_DISTANCE_DIRECT;
  if (PC_HAS_DEVICE && pc_offloading()) {
    /* on the GPU the small-run paths (portable distances only) win where they apply, then the
     * direct form where its kernel is as fast (few centroids), and the tensor cores beat direct on
     * every other shape of the general path measured; the shape as one
     * process sees it (not its ranks), so that MPI ranks choose as one process does */
    const int small = p->update == KM_UPDATE_DEVICE && km_small_run_shape(n, d, k, kpad) != KM_PATH_GENERAL;
    const km_tuned_kernels *tuned = p->kernels == PC_KERNELS_PORTABLE ? NULL : km_tuned();
    const int direct_fast = tuned && tuned->direct_as_fast && tuned->direct_as_fast(d, kpad);
    return !small && !direct_fast && tuned && tuned->has_tensor ? KM_DISTANCE_DOT_3XTF32 : KM_DISTANCE_DIRECT;
  }
  return (size_t)k * d >= KM_AUTO_HOST_DOT_KD ? KM_DISTANCE_DOT : KM_DISTANCE_DIRECT;
}

/* The smallest runs (KM_PATH_ONE_TEAM): every iteration in one target region on one team, which
 * the host launches and waits for once. The team's threads take the steps in turn, a parallel
 * loop each: the centroids' tiles (for km_nearest_in_tiles) with their norms; the assignment,
 * each point added at once to the team-local sums of its cluster; the new centroids. The
 * formulas are the other paths' (km_nearest_in_tiles, km_norm_part, km_to_fixed, km_mean), so
 * are the labels and centroids, bit for bit. Sets iterations, last_changed and converged. */
static __attribute__((unused)) void km_iterate_in_one_team(const float *restrict xt, float *restrict ct,
                                                           const float *restrict offset, float *restrict cs,
                                                           float *restrict cn, int *restrict labels,
                                                           const float *restrict scale,
                                                           const double *restrict unscale, size_t n, size_t d, int k,
                                                           int kpad, int direct, int wanted, int fixed, double tol,
                                                           km_result *result) {
  const size_t row = d + 1, sum_words = KM_SUM_WORDS * (size_t)k * row, entries = d * (size_t)kpad;
  const size_t kd = (size_t)k * d, chunks = direct ? 0 : (d + KM_NORM_CHUNK - 1) / KM_NORM_CHUNK;
  const size_t firsts = sum_words > entries ? sum_words : entries; /* entries >= kpad */
  int iterations = 0, converged = 0;
  long last_changed = 0;
  PAR_TEAMS_FOR(GPU_ONLY(num_teams(1) thread_limit(KM_ONE_TEAM_THREADS))
                    map(tofrom : iterations, converged, last_changed))
  for (int team = 0; team < 1; team++) {
    km_team_word local[KM_SUM_WORDS * KM_TEAM_SUMS];
    TEAM_LOCAL(local)
    for (int it = 0; it < wanted; it++) {
      TEAM_PAR_FOR()
      for (size_t e = 0; e < firsts; e++) { /* the tiles and norms, and the sums cleared */
        if (e < entries)
          km_put_entry(cs, NULL, ct, offset, d, k, kpad, direct, 0, 0, e / (size_t)kpad, (int)(e % (size_t)kpad));
        if (e < (size_t)kpad) cn[e] = km_centroid_term(ct, offset, d, k, kpad, chunks, e);
        if (e < sum_words) local[e] = 0;
      }
      long changed = 0;
      TEAM_PAR_FOR(schedule(static, 1) reduction(+ : changed)) /* neighbouring threads, neighbouring points */
      for (size_t i = 0; i < n; i++) {
        const int best = km_nearest_in_tiles(xt, cs, cn, n, d, kpad, direct, i);
        changed += labels[i] != best;
        labels[i] = best;
        km_team_add_point(local, xt, scale, n, d, i, best);
      }
      double shift = 0.0;
      TEAM_PAR_FOR(reduction(+ : shift))
      for (size_t e = 0; e < kd; e++) { /* feature j of centroid c */
        const size_t j = e / (size_t)k, c = e - j * (size_t)k;
        shift += km_move_coordinate(ct + j * (size_t)kpad + c, km_team_sum(local, c * row + j), unscale[j],
                                    km_team_sum(local, c * row + d));
      }
      iterations = it + 1;
      last_changed = changed;
      if (!fixed && (changed == 0 || shift <= tol)) {
        converged = 1;
        break;
      }
    }
  }
  result->iterations = iterations;
  result->last_changed = last_changed;
  result->converged = converged;
}

/* The fused passes' teams (each a point per thread at least) and threads per team: on a GPU as
 * many teams of KM_UPDATE_THREADS as fill it; on the gpu variant's host fallback a team of one
 * thread per host thread, like the omp variant's teams (host teams of several threads each would
 * ask for more threads than the host has). */
static void km_fused_shape(size_t n, int *teams, int *threads) {
#if defined(PC_VARIANT_GPU)
  const int on_gpu = pc_offloading();
  *threads = on_gpu ? KM_UPDATE_THREADS : 1;
  const size_t ranges = (n + (size_t)*threads - 1) / (size_t)*threads;
  const size_t most = (size_t)(on_gpu ? km_update_teams() : omp_get_max_threads());
  *teams = (int)(ranges < most ? ranges : most);
#else
  (void)n;
  *teams = *threads = 1;
#endif
}

/* One iteration in one target region (KM_PATH_FUSED), where the general path launches five to
 * eight regions an iteration and reads the points twice. Each team assigns its range of the
 * points (km_nearest_in_tiles) and adds each point at once to the team-local sums of its cluster,
 * so the points are read once; it adds its sums and its count of changed labels to the global
 * ones, then counts itself in (state[0], km_last_to_arrive). The team that arrives last, which
 * then sees every team's sums, makes the new centroids (km_mean), the next pass's tiles and norms
 * (as km_prepare: km_tile_at, km_norm_part), clears the sums and the state, and returns the number
 * of changed labels and the summed squared shift. The same formulas as the other path, so the
 * same labels and centroids bit for bit. The fences (PAR_FLUSH, there and in km_last_to_arrive)
 * order each team's global adds before its arrival, and the arrivals before the last team's
 * reads. sums and state start at zero (the run clears them once; every pass leaves them so). The
 * last team writes its two results (the changed labels, exact in a double, and the shift) through
 * results->device, which on a GPU is host memory the device writes directly (pc_results): no copy
 * back after the region. */
static __attribute__((unused)) long km_fused_pass(const float *restrict xt, float *restrict ct,
                                                  const float *restrict offset, float *restrict cs, float *restrict cn,
                                                  int *restrict labels, km_fixed *restrict sums,
                                                  km_fixed *restrict state, const float *restrict scale,
                                                  const double *restrict unscale, size_t n, size_t d, int k, int kpad,
                                                  int direct, int teams, int threads, const pc_results *results,
                                                  double *shift_out) {
  const size_t row = d + 1, len = (size_t)k * row, entries = d * (size_t)kpad, kd = (size_t)k * d;
  const size_t chunks = direct ? 0 : (d + KM_NORM_CHUNK - 1) / KM_NORM_CHUNK;
  const size_t nexts = len > entries ? len : entries; /* the last team's second loop */
  double *out = results->device;
  (void)threads; /* a clause of the gpu variant's only */
  PAR_TEAMS_FOR(num_teams(teams) thread_limit(threads) GPU_ONLY(is_device_ptr(out)))
  for (int t = 0; t < teams; t++) {
    km_team_word local[KM_SUM_WORDS * KM_TEAM_SUMS];
    TEAM_LOCAL(local)
    TEAM_PAR_FOR()
    for (size_t e = 0; e < KM_SUM_WORDS * len; e++) local[e] = 0;
    const size_t lo = n * (size_t)t / (size_t)teams, hi = n * (size_t)(t + 1) / (size_t)teams;
    long team_changed = 0;
    TEAM_PAR_FOR(schedule(static, 1) reduction(+ : team_changed)) /* neighbouring threads, neighbouring points */
    for (size_t i = lo; i < hi; i++) {
      const int best = km_nearest_in_tiles(xt, cs, cn, n, d, kpad, direct, i);
      team_changed += labels[i] != best;
      labels[i] = best;
      km_team_add_point(local, xt, scale, n, d, i, best);
    }
    TEAM_PAR_FOR()
    for (size_t e = 0; e < len; e++) {
      if (km_team_sum_to_global(local, sums, e, row, k)) {
        PAR_FLUSH
      }
    }
    PAR_ATOMIC
    state[1] += team_changed;
    if (km_last_to_arrive(state, teams)) { /* every team's sums are in */
      double moved = 0.0;
      TEAM_PAR_FOR(reduction(+ : moved))
      for (size_t e = 0; e < kd; e++) { /* feature j of centroid c, as km_finalize */
        const size_t j = e / (size_t)k, c = e - j * (size_t)k;
        km_fixed count, sum;
        PAR_ATOMIC_READ
        count = sums[d * (size_t)k + c];
        PAR_ATOMIC_READ
        sum = sums[e];
        moved += km_move_coordinate(ct + j * (size_t)kpad + c, sum, unscale[j], count);
      }
      TEAM_PAR_FOR()
      for (size_t e = 0; e < nexts; e++) { /* the sums cleared; the next pass's tiles and norms */
        if (e < len) sums[e] = 0;
        if (e < entries)
          km_put_entry(cs, NULL, ct, offset, d, k, kpad, direct, 0, 0, e / (size_t)kpad, (int)(e % (size_t)kpad));
        if (e < (size_t)kpad) cn[e] = km_centroid_term(ct, offset, d, k, kpad, chunks, e);
      }
      km_fixed total;
      PAR_ATOMIC_CAPTURE
      {
        total = state[1];
        state[1] = 0;
      }
      out[0] = (double)total;
      out[1] = moved;
    }
  }
  const double *got = pc_results_take(results, 2);
  *shift_out = got[1];
  return (long)got[0];
}

static double km_sse(const float *restrict xt, const float *restrict ct, const int *restrict labels, size_t n, size_t d,
                     int kpad) {
  double sse = 0.0;
  PAR_FOR(reduction(+ : sse) GPU_REDUCTION(n))
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

/* One assign step: through cuBLAS when `gemm` is given (gpu variant), by the tuned kernels when
 * a run of them is open (kmeans_tuned.h), else by the portable loop. Returns the number of labels
 * that changed, or -1 with a pc_fail message (a cuBLAS error). */
static long km_assign_step(const km_assign_job *job, const km_tuned_kernels *tuned, km_tuned_run *run,
                           const km_gemm_scratch *gemm) {
  if (gemm) return km_gemm_assign(gemm, job->xt, job->cs, job->cn, job->labels, job->n, job->d, job->k, job->kpad);
  if (run) return tuned->assign(run, job);
  return km_assign_portable(job->xt, job->cs, job->cn, job->labels, job->n, job->d, job->kpad, job->direct);
}

/* ---- Out of core (gpu variant) ---------------------------------------------------------------
 * Where the points do not fit in the device memory the run may take (km_plan_memory), they stay on
 * the host and every pass over them (each iteration's assign step and sums, then the SSE) takes them
 * a block at a time, in order, through two device buffers: while the device assigns and sums the
 * block in one buffer, the next block is copied into the other. Labels, centroids and sums stay on
 * the device as in memory. A block of m points is laid out as xt is (dimension-major, stride m), a
 * small data set that the assign kernels (portable, tuned, cuBLAS) and the sums take as they are;
 * the sums are exact integers, whatever order the blocks add them in, so the labels and centroids
 * are those of the run in memory, bit for bit.
 * A block travels in pieces of a few of its rows: each piece is packed into the buffer's host array
 * (page-locked where the driver gives it, so that its copy is a DMA needing no help from the host),
 * then its copy is issued as a deferred target task (`target update ... nowait`), which the OpenMP
 * runtime's helper threads carry out while this thread packs the next piece and then computes on
 * the other buffer: packing, copying and computing overlap. The pieces' depend(out) on the buffer
 * chains their copies one after another (the link takes them one at a time anyway; OpenMP 5.1's
 * inoutset, which would leave them unordered, is not in GCC 12) and before the `taskwait
 * depend(in)` that waits for the block. A buffer is reused only once the device is done with it:
 * the kernels on it ran to their end (they are not `nowait`) before the next block is sent into it. */
typedef struct {
  const float *xt;        /* the n points, dimension-major, on the host */
  size_t n, d, block, blocks;
  float *buf[2];          /* block * d floats each: the host array and its device copy */
  int send, take;         /* the buffer the next block sent goes into; the one the next taken comes from */
  double sent_at[2];      /* when the block on its way through each buffer was sent */
  double bytes, copy_s;   /* copied so far; the copies' time, each from its sending to its taking */
} km_stream;

/* Block b's number of points, and in *first its first point. */
static size_t km_stream_block(const km_stream *s, size_t b, size_t *first) {
  *first = b * s->block;
  return s->n - *first < s->block ? s->n - *first : s->block;
}

/* Sends block b on its way into the next buffer, a piece of rows at a time (see above). */
static void km_stream_send(km_stream *s, size_t b) {
  const float *xt = s->xt;
  float *buf = s->buf[s->send];
  size_t first;
  const size_t m = km_stream_block(s, b, &first), n = s->n, d = s->d;
  const size_t fit = KM_STREAM_PIECE_BYTES / (m * sizeof *buf), rows = fit > 0 ? fit : 1;
  s->sent_at[s->send] = pc_now();
  s->send = 1 - s->send;
  for (size_t j0 = 0; j0 < d; j0 += rows) {
    const size_t j1 = j0 + rows < d ? j0 + rows : d;
    HOST_PAR_FOR(collapse(2))
    for (size_t j = j0; j < j1; j++)
      for (size_t i = 0; i < m; i++) buf[j * m + i] = xt[j * n + first + i];
    DEV_UPDATE(to(buf[j0 * m : (j1 - j0) * m]) nowait depend(out : buf[0]))
  }
  s->bytes += (double)(m * d * sizeof *buf);
}

/* The points of n, host xt, streamed in blocks of `block` points: buffers allocated (host and
 * device) and block 0 sent. 0, or -1 with a pc_fail message. */
static int km_stream_open(km_stream *s, const float *xt, size_t n, size_t d, size_t block) {
  *s = (km_stream){.xt = xt, .n = n, .d = d, .block = block, .blocks = (n + block - 1) / block};
  const size_t len = block * d;
  float *buf0 = s->buf[0] = pc_try_alloc_staging(len, sizeof *buf0, "block of points");
  float *buf1 = s->buf[1] = pc_try_alloc_staging(len, sizeof *buf1, "block of points");
  if (!buf0 || !buf1) {
    pc_free_staging(buf0), pc_free_staging(buf1);
    s->buf[0] = s->buf[1] = NULL;
    return -1;
  }
  /* device: buf0, buf1[block * d] the blocks' points, until km_stream_close */
  DEV_ENTER(map(alloc : buf0[0 : len], buf1[0 : len]))
  km_stream_send(s, 0);
  return 0;
}

/* The block sent first of those on their way, once on the device: waits for its copies, sends
 * block `next` into the other buffer (none where next >= blocks), and returns the block's buffer. */
static const float *km_stream_take(km_stream *s, size_t next) {
  float *buf = s->buf[s->take];
  DEV_WAIT(depend(in : buf[0]))
  s->copy_s += pc_now() - s->sent_at[s->take];
  s->take = 1 - s->take;
  if (next < s->blocks) km_stream_send(s, next);
  return buf;
}

/* Waits for copies still on their way (a run that stopped early), releases the buffers (nothing
 * where the stream was not opened: zeroed). */
static void km_stream_close(km_stream *s) {
  float *buf0 = s->buf[0], *buf1 = s->buf[1];
  const size_t len = s->block * s->d;
  (void)len; /* a clause of the gpu variant's only */
  if (!buf0) return;
  DEV_WAIT()
  DEV_EXIT(map(delete : buf0[0 : len], buf1[0 : len]))
  pc_free_staging(buf0), pc_free_staging(buf1);
  s->buf[0] = s->buf[1] = NULL;
}

/* One pass of the assign step over the blocks (`job` is the step over all n points; a block's
 * labels are job->labels + first) and, `sums` given, of the update's sums (which hold zeros
 * before the first block, or with `summed` the kept sums: km_accumulate), while the next block
 * travels. Another pass always follows this one (the next iteration's, or km_sse_blocks'), so
 * after the last block the first is sent again.
 * runs[0] is the tuned kernels' run for whole blocks, runs[1] for a shorter last one. Adds to
 * phase_s the waits for copies with the packing (h2d: what the computing did not hide), the assign
 * steps and the sums. Returns the labels changed, or -1 with a pc_fail message (a cuBLAS error). */
static long km_assign_blocks(km_stream *s, const km_assign_job *job, const km_tuned_kernels *tuned,
                             km_tuned_run *const runs[2], const km_gemm_scratch *gemm, int *summed, km_fixed *sums,
                             const float *scale, km_update_plan update, double *phase_s) {
  long changed = 0;
  for (size_t b = 0; b < s->blocks; b++) {
    const double t0 = pc_now();
    size_t first;
    km_assign_job block = *job;
    block.n = km_stream_block(s, b, &first);
    block.labels = job->labels + first;
    block.xt = km_stream_take(s, b + 1 < s->blocks ? b + 1 : 0);
    const double t1 = pc_now();
    const long step = km_assign_step(&block, tuned, runs[block.n < s->block], gemm);
    if (step < 0) return -1;
    changed += step;
    const double t2 = pc_now();
    if (sums)
      km_accumulate(block.xt, block.labels, summed ? summed + first : NULL, sums, scale, block.n, s->d, job->k, update,
                    b == 0);
    phase_s[KM_PHASE_H2D] += t1 - t0, phase_s[KM_PHASE_ASSIGN] += t2 - t1, phase_s[KM_PHASE_UPDATE] += pc_now() - t2;
  }
  return changed;
}

/* The SSE of the out-of-core path: a last pass over the blocks (the first one already sent). */
static double km_sse_blocks(km_stream *s, const float *ct, const int *labels, int kpad) {
  double sse = 0.0;
  for (size_t b = 0; b < s->blocks; b++) {
    size_t first;
    const size_t m = km_stream_block(s, b, &first);
    const float *points = km_stream_take(s, b + 1);
    sse += km_sse(points, ct, labels + first, m, s->d, kpad);
  }
  return sse;
}

int km_run(const float *xt, size_t n, size_t d, const km_params *asked, float *centroids, int *labels,
           km_result *result) {
  km_params chosen = *asked; /* auto resolved */
  chosen.distance = km_distance_for(n, d, asked);
  const km_params *params = &chosen;
  const int k = params->k, direct = params->distance == KM_DISTANCE_DIRECT;
  /* cuBLAS for the dot products (kmeans_gemm.c); km_prepare makes the same cs and cn as for dot */
  const int gemm = km_distance_is_gemm(params->distance);
  /* the tensor cores' form (km_tensor_form: 0 not the tensor cores) and TF32 products (3, 1; 0 for the
   * other forms, whose kernels round the plain dot form's cs themselves), the dot form's cs and cn too */
  const km_tensor_form form = km_tensor_form_of(params->distance);
  const int products = km_tensor_products(params->distance), tensor = form != KM_TENSOR_NONE;
  const int kpad = km_padded_k(k);
  /* out of core (gpu variant, km_plan_memory): the points stay on the host and pass through the
   * device in blocks (km_stream_*); `block` is what an assign step takes at once, `tail` the last's */
  const int streaming = PC_HAS_DEVICE && params->stream_block > 0 && params->stream_block < n;
  const size_t block = streaming ? params->stream_block : n, tail = streaming ? n - (n - 1) / block * block : n;
  const km_update_plan update = km_plan_update(block, d, k);
  const km_device_arrays len = km_device_arrays_of(n, d, params, streaming ? block : 0);
  const size_t ct_len = len.ct, sums_len = len.sums;
  /* Outside the gpu variant the device is the host: both update modes are the same code. */
  const int on_device = params->update == KM_UPDATE_DEVICE || !PC_HAS_DEVICE;
  double *iteration_s = result->iteration_s;
  memset(result, 0, sizeof *result);
  result->iteration_s = iteration_s;
  result->distance = params->distance;
  result->splits = 1;
  result->update_sums = on_device ? km_sums_names[update.method] : "host";
  result->update_points = "all";
  result->kernels = gemm ? "cublas" : "portable";
  /* The tuned kernels (kmeans_tuned.h), where this build has them, they apply here and the run
   * asked for them; else the portable loop. cuBLAS needs neither. */
  const km_path path = streaming ? KM_PATH_GENERAL : km_small_run_path(n, d, k, kpad, on_device, !gemm && !tensor);
  const int one_team = path == KM_PATH_ONE_TEAM, fused = path == KM_PATH_FUSED;
  if (path != KM_PATH_GENERAL) { /* both sum whole clusters in team-local memory */
    result->kernels = one_team ? "one-team" : "fused";
    result->update_sums = km_sums_names[KM_SUMS_WHOLE];
  }
  const km_tuned_kernels *tuned =
      gemm || path != KM_PATH_GENERAL || params->kernels == PC_KERNELS_PORTABLE ? NULL : km_tuned();
  km_tuned_run *tuned_run = NULL, *tuned_tail = NULL; /* the tail: out of core, a shorter last block's */
  if (tensor && (!tuned || !tuned->has_tensor))
    return pc_fail("--distance %s needs the tuned GPU kernels (the gpu variant built by clang, --kernels tuned)",
                   km_distance_names[params->distance]);
  if (tuned) {
    int applies = 0, splits = 1, tail_splits;
    tuned_run = tuned->open(block, d, kpad, form, &applies, &splits);
    if (tuned_run && tail < block && !(tuned_tail = tuned->open(tail, d, kpad, form, &applies, &tail_splits))) {
      tuned->close(tuned_run);
      return -1;
    }
    if (!tuned_run && applies) return -1;
    if (!tuned_run) tuned = NULL; /* not here (the gpu build's kernels on the host): the portable loop */
    else result->splits = splits, result->kernels = tuned->name;
  }
  if (tensor && !tuned)
    return pc_fail("--distance %s runs on the GPU's tensor cores, but kernels run on the host",
                   km_distance_names[params->distance]);
  /* in_pass: the tuned kernel adds every point to the update's sums in its assign step; keep: the
   * sums kept between iterations, only the points whose label changed moved by km_accumulate, which
   * keeps in summed[n] the labels the sums hold the points in (km_keeps_sums); moves: the tuned
   * kernel moves them in its assign step instead, from the second pass on, so that the labels a pass
   * finds are those the sums hold (no summed[n]) */
  const int in_pass = tuned && on_device && km_tuned_sums_in_pass(d, params, kpad, streaming, update);
  const int keep = path == KM_PATH_GENERAL && km_keeps_sums(params, update, on_device, in_pass);
  const int moves = keep && tuned && km_tuned_moves_in_pass(n, d, params, kpad, streaming);
  const size_t summed_len = keep && !moves ? n : 1;
  result->update_points = keep ? "changed" : "all";
  result->update_in_assign = in_pass || moves;
  /* cs as its reader wants it: cuBLAS and the tuned GPU kernels dimension-major, the others tile by tile */
  const int dimension_major = gemm || (tuned && tuned->dimension_major);
  const int skip_copy = direct && tuned && tuned->direct_reads_ct;
  const km_tiles tiles = {direct, products, dimension_major, skip_copy};

  float *ct = pc_try_alloc(ct_len, sizeof *ct, "centroids");
  float *cs = pc_try_alloc(ct_len, sizeof *cs, "shifted centroids");
  const size_t lo_len = len.cs_lo;
  float *cs_lo = pc_try_alloc(lo_len, sizeof *cs_lo, "shifted centroids' TF32 tails");
  float *cn = pc_try_alloc((size_t)kpad, sizeof *cn, "centroid norms");
  const size_t parts_len = len.norm_parts;
  double *norm_parts = pc_try_alloc(parts_len, sizeof *norm_parts, "partial centroid norms");
  float *offset = pc_try_alloc(d, sizeof *offset, "centroid offset");
  km_fixed *sums = pc_try_alloc(sums_len, sizeof *sums, "centroid sums");
  int *summed = pc_try_alloc(summed_len, sizeof *summed, "labels the sums hold");
  float *scale = pc_try_alloc(d + 1, sizeof *scale, "fixed-point scales");
  double *unscale = pc_try_alloc(d + 1, sizeof *unscale, "fixed-point unscales");
  const size_t scale_ranges = len.scale_ranges;
  float *scale_part = pc_try_alloc(d * scale_ranges, sizeof *scale_part, "largest values per range");
  km_gemm_scratch scratch = {0};
  km_stream stream = {0};
  pc_results iteration_results = {NULL, NULL, 0}; /* an iteration's results, written by the device (pc_results) */
  /* km_finalize's parts of the shift, a team each, and its count of the teams arrived */
  const int finalize_teams = km_finalize_teams(k, on_device);
  double *finalize_parts = NULL;
  km_fixed finalize_arrivals[1] = {0};
  km_tuned_run *const runs[2] = {tuned_run, tuned_tail};
  int rc = -1, failed = 0;
  if (!ct || !cs || !cs_lo || !cn || !norm_parts || !offset || !sums || !summed || !scale || !unscale || !scale_part)
    goto out;
  if (!one_team && pc_results_open(&iteration_results, 2) != 0) goto out;
  finalize_parts = pc_try_alloc((size_t)finalize_teams, sizeof *finalize_parts, "the shift's parts");
  if (!finalize_parts) goto out;
  /* cuBLAS' handle and device scratch: before the clock, like the program's device start-up */
  if (gemm && km_gemm_begin(block, d, k, params->distance == KM_DISTANCE_GEMM_TF32, &scratch) != 0) goto out;
  /* the centroids dimension-major, and their mean: by feature on the host's threads where there
   * are many (one thread was most of a Python fit's own time at k d = 10^6: docs/performance.md) */
  const int many = (size_t)k * d >= KM_HOST_LAYOUT_MIN;
  (void)many; /* a clause of the threaded variants only */
  HOST_PAR_FOR(if(many))
  for (size_t j = 0; j < d; j++) {
    double mean = 0.0;
    for (int c = 0; c < kpad; c++) {
      const float v = c < k ? centroids[(size_t)c * d + j] : 0.0f;
      ct[j * (size_t)kpad + (size_t)c] = v;
      mean += v;
    }
    offset[j] = (float)(mean / k);
  }

  const double t_start = pc_now();
  double t0 = t_start;
  /* out of core: the two blocks' buffers, the first block sent (km_stream_open) */
  if (streaming && km_stream_open(&stream, xt, n, d, block) != 0) goto out;
  /* device: in, xt[d * n] points (dimension-major; in memory only), ct[kpad * d] centroids
   * (dimension-major), offset[d]; made there, labels[n], cs[kpad * d] / cs_lo[kpad * d or 1] the
   * assign step's centroids and their TF32 tails, cn[kpad] centroid terms, norm_parts[chunks * kpad]
   * partial norms, sums[copies * (d + 1) * k] fixed-point sums and counts, summed[n or 1] the labels
   * that kept sums hold the points in, scale / unscale[d + 1] their scales, scale_part[d * ranges],
   * finalize_parts[finalize_teams] and finalize_arrivals[1] km_finalize's. */
  DEV_ENTER(if(!streaming) map(to : xt[0 : n * d]))
  DEV_ENTER(map(to : ct[0 : ct_len], offset[0 : d], finalize_arrivals[0 : 1])
                map(alloc : labels[0 : n], summed[0 : summed_len], cs[0 : ct_len], cs_lo[0 : lo_len], cn[0 : kpad],
                        norm_parts[0 : parts_len], sums[0 : sums_len], scale[0 : d + 1],
                        unscale[0 : d + 1], scale_part[0 : d * scale_ranges], finalize_parts[0 : finalize_teams]))
  PAR_FOR()
  for (size_t i = 0; i < n; i++) labels[i] = -1; /* no label yet: every one changes in the first pass */
  PAR_FOR()
  for (size_t i = 0; i < summed_len; i++) summed[i] = -1; /* the sums hold no point yet */
  result->phase_s[KM_PHASE_H2D] += pc_now() - t0;
  t0 = pc_now();
  if (streaming) km_host_maxima(xt, n, d, scale_part), km_set_scales(scale_part, n, d, scale, unscale);
  else km_fixed_scales(xt, n, d, scale_ranges, scale_part, scale, unscale); /* once: the data do not change */
  result->phase_s[KM_PHASE_UPDATE] += pc_now() - t0;

  const int iterations_wanted = params->fixed_iter > 0 ? params->fixed_iter : params->max_iter;
  /* the fused passes: as many teams as fill the device, each of a point per thread at least; their
   * arrivals and changed labels in fused_state */
  int fused_teams, fused_threads;
  km_fused_shape(n, &fused_teams, &fused_threads);
  km_fixed fused_state[2] = {0, 0};
  if (fused) {
    DEV_ENTER(map(to : fused_state[0 : 2]))
  }
  if (!one_team) { /* the first pass's tiles, and the sums cleared: every pass leaves them so (km_finalize) */
    t0 = pc_now();
    km_prepare(ct, offset, cs, cs_lo, cn, norm_parts, d, k, kpad, tiles);
    PAR_FOR(GPU_THREADS)
    for (size_t e = 0; e < sums_len; e++) sums[e] = 0;
    result->phase_s[KM_PHASE_UPDATE] += pc_now() - t0;
  }
  if (one_team) {
    t0 = pc_now();
    km_iterate_in_one_team(xt, ct, offset, cs, cn, labels, scale, unscale, n, d, k, kpad, direct, iterations_wanted,
                           params->fixed_iter > 0, params->tol, result);
    const double loop_s = pc_now() - t0; /* as assign: the steps are not timed apart */
    result->phase_s[KM_PHASE_ASSIGN] += loop_s;
    for (int it = 0; iteration_s && it < result->iterations; it++) iteration_s[it] = loop_s / result->iterations;
  }
  for (int it = 0; fused && it < iterations_wanted; it++) {
    if (pc_stop_requested()) {
      pc_fail_stopped("k-means: interrupted after %d iterations", it);
      failed = 1;
      break;
    }
    const double t_iter = pc_now();
    double shift;
    const long changed = km_fused_pass(xt, ct, offset, cs, cn, labels, sums, fused_state, scale, unscale, n, d, k,
                                       kpad, direct, fused_teams, fused_threads, &iteration_results, &shift);
    const double pass_s = pc_now() - t_iter; /* as assign: the steps are not timed apart */
    result->phase_s[KM_PHASE_ASSIGN] += pass_s;
    if (iteration_s) iteration_s[it] = pass_s;
    result->iterations = it + 1;
    result->last_changed = changed;
    if (params->fixed_iter == 0 && (changed == 0 || shift <= params->tol)) {
      result->converged = 1;
      break;
    }
  }
  for (int it = 0; path == KM_PATH_GENERAL && it < iterations_wanted; it++) {
    if (pc_stop_requested()) { /* pragmaclust_interrupt: stop between iterations, the device data released */
      pc_fail_stopped("k-means: interrupted after %d iterations", it);
      failed = 1;
      break;
    }
    const double t_iter = pc_now();
    t0 = t_iter;
    /* new_points: the tuned kernels' copies of the points (the 16-bit forms') are made in the first
     * pass, and out of core for every block */
    const km_assign_job job = {xt, ct, cs, cs_lo, cn, offset, labels, n, d, k, kpad, direct, form,
                               it == 0 || streaming};
    /* in_pass, moving: the tuned kernel adds the points to the update's sums, or moves the changed
     * ones there, in its assign step (kmeans_tuned.h, sums_in_pass and moves_in_pass): the points
     * read once an iteration; the first pass of `moves` adds every point in km_accumulate */
    const int moving = moves && it > 0;
    long changed;
    if (in_pass)
      changed = tuned->assign_and_sum(tuned_run, &job, sums, scale);
    else if (moving)
      changed = tuned->assign_and_move(tuned_run, &job, sums, scale);
    else /* out of core, the blocks' assign steps and (on the device) sums, each phase timed there */
      changed = streaming ? km_assign_blocks(&stream, &job, tuned, runs, gemm ? &scratch : NULL, keep ? summed : NULL,
                                             on_device ? sums : NULL, scale, update, result->phase_s)
                          : km_assign_step(&job, tuned, tuned_run, gemm ? &scratch : NULL);
    if (changed < 0) { /* a cuBLAS error: release the device data, then fail */
      failed = 1;
      break;
    }
    changed = pc_dist_sum_long(changed); /* across ranks (dist.h): the labels that changed anywhere */
    double t1 = pc_now();
    if (!streaming) result->phase_s[KM_PHASE_ASSIGN] += t1 - t0;
    result->iterations = it + 1;
    result->last_changed = changed;

    double shift;
    if (on_device) {
      if (!streaming && !in_pass && !moving)
        km_accumulate(xt, labels, keep && !moves ? summed : NULL, sums, scale, n, d, k, update, 1);
      if (pc_dist_size() > 1) { /* every rank's sums, exact in any order: one process's centroids */
        DEV_UPDATE(from(sums[0 : sums_len]))
        pc_dist_sum_ll(sums, sums_len);
        DEV_UPDATE(to(sums[0 : sums_len]))
      }
      shift = km_finalize(sums, unscale, ct, offset, cs, cs_lo, cn, norm_parts, finalize_parts, finalize_arrivals, d,
                          k, kpad, update.copies, !keep, tiles, 1, &iteration_results);
      result->phase_s[KM_PHASE_UPDATE] += pc_now() - t1;
    } else { /* Cao's GPU-L: labels to the host, centroids computed there, sent back */
      DEV_UPDATE(from(labels[0 : n]))
      double t2 = pc_now();
      result->phase_s[KM_PHASE_D2H] += t2 - t1;
      km_accumulate_on_host(xt, labels, sums, scale, n, d, k);
      pc_dist_sum_ll(sums, (size_t)k * (d + 1));
      shift = km_finalize(sums, unscale, ct, offset, cs, cs_lo, cn, norm_parts, finalize_parts, finalize_arrivals, d,
                          k, kpad, 1, 1, tiles, 0, &iteration_results);
      double t3 = pc_now();
      result->phase_s[KM_PHASE_UPDATE] += t3 - t2;
      DEV_UPDATE(to(ct[0 : ct_len]))
      double t4 = pc_now();
      result->phase_s[KM_PHASE_H2D] += t4 - t3;
      km_prepare(ct, offset, cs, cs_lo, cn, norm_parts, d, k, kpad, tiles); /* the next pass's tiles */
      result->phase_s[KM_PHASE_UPDATE] += pc_now() - t4;
    }
    if (iteration_s) iteration_s[it] = pc_now() - t_iter;
    if (params->fixed_iter > 0) continue;
    if (changed == 0 || shift <= params->tol) {
      result->converged = 1;
      break;
    }
  }

  if (fused) {
    DEV_EXIT(map(delete : fused_state[0 : 2]))
  }
  if (!failed) /* out of core: one more pass over the blocks */
    result->sse = pc_dist_sum_double(streaming ? km_sse_blocks(&stream, ct, labels, kpad)
                                               : km_sse(xt, ct, labels, n, d, kpad));
  result->blocks = stream.blocks, result->block_points = stream.block;
  result->h2d_bytes = stream.bytes, result->h2d_copy_s = stream.copy_s;
  t0 = pc_now();
  DEV_UPDATE(from(labels[0 : n], ct[0 : ct_len]))
  DEV_EXIT(if(!streaming) map(delete : xt[0 : n * d]))
  DEV_EXIT(map(delete : ct[0 : ct_len], offset[0 : d], labels[0 : n], summed[0 : summed_len], cs[0 : ct_len],
                   cs_lo[0 : lo_len], cn[0 : kpad], norm_parts[0 : parts_len], sums[0 : sums_len], scale[0 : d + 1],
                   unscale[0 : d + 1], scale_part[0 : d * scale_ranges], finalize_parts[0 : finalize_teams],
                   finalize_arrivals[0 : 1]))
  result->phase_s[KM_PHASE_D2H] += pc_now() - t0;
  result->total_s = pc_now() - t_start;

  HOST_PAR_FOR(if(many))
  for (int c = 0; c < k; c++)
    for (size_t j = 0; j < d; j++) centroids[(size_t)c * d + j] = ct[j * (size_t)kpad + (size_t)c];
  rc = failed ? -1 : 0;
out:
  km_stream_close(&stream);
  pc_results_close(&iteration_results);
  free(finalize_parts);
  km_gemm_end(&scratch);
  if (tuned_run) tuned->close(tuned_run);
  if (tuned_tail) tuned->close(tuned_tail);
  free(ct), free(cs), free(cs_lo), free(cn), free(norm_parts), free(offset);
  free(sums), free(summed), free(scale), free(unscale), free(scale_part);
  return rc;
}

/*
 * kmeans_tuned.h - the one seam between k-means' portable assign step (kmeans.c: standard OpenMP
 * through par.h, what every OpenMP compiler gets) and a variant's tuned assign kernels, which
 * use what one compiler or one machine offers beyond it:
 *  - kmeans_assign_gpu.c (the gpu variant built by clang): LLVM's ompx_bare kernels, team-local
 *    staging by cp.async, warp shuffles, and the tensor cores' mma.sync for --distance dot-3xtf32,
 *    dot-tf32, dot-fp16 and dot-bf16;
 *  - kmeans_assign_cpu.c (seq and omp): a cache-blocked loop around a 6 x 16 register tile shaped
 *    for AVX2;
 *  - kmeans_no_tuned.c (builds without tuned kernels, such as GCC's gpu variant).
 * The Makefile links exactly one of them into each program (TUNED_<variant> in variants/clang.mk and gcc.mk).
 * Tuned and portable kernels sum each distance over the features in order, so they find the same
 * labels (the tensor-core kernel excepted, which only the tuned GPU file has).
 */
#ifndef KM_TUNED_H
#define KM_TUNED_H

#include <stddef.h>
#include <string.h>

#include "par.h"

/* Centroids per tile of the assign step's copy of the centroids (cs): the portable loop and the
 * CPU's kernel keep a tile's partial sums in registers, and k is padded to whole tiles (kpad). */
#define KM_TILE_DEFAULT 16
#ifndef KM_TILE
#define KM_TILE KM_TILE_DEFAULT /* a tuning knob (knobs.h), recorded by kmeans.c */
#endif

/* One assign step's data, all on the device (gpu variant): points dimension-major
 * (xt[j * n + i]); ct the centroids dimension-major (ct[j * kpad + c]); cs, cs_lo and cn what
 * km_prepare made of them in the layout the kernels asked for (cs_lo: the TF32 tails, 3 products
 * only); offset the dot form's shift (cs = ct - offset); labels are read (to count changes) and
 * written. */
typedef struct {
  const float *xt, *ct, *cs, *cs_lo, *cn, *offset;
  int *labels;
  size_t n, d;
  int k, kpad;
  int direct; /* sum((x - c)^2) + cn[c]; else the dot form cn[c] - 2 x.cs_c */
  int tensor; /* the dot form on the tensor cores (km_tensor_form): in 3 TF32 products (cs, cs_lo: head
               * and tail), 1 (the heads'), or in fp16 or bf16 (cs in float32, the kernels round it);
               * 0: not on the tensor cores */
  int new_points; /* xt holds points the run's tuned state has not seen: the first pass, out of core every block */
} km_assign_job;

typedef struct km_tuned_run km_tuned_run; /* a tuned kernel's state for one k-means run */
typedef long long km_fixed;               /* a fixed-point sum of the update step (see km_to_fixed) */

typedef struct {
  const char *name;     /* for reports: what the kernels are */
  int dimension_major;  /* cs dimension-major (cs[j * kpad + c]); else tile by tile, as km_tile_at says */
  int direct_reads_ct;  /* the direct form reads ct itself: km_prepare need not copy it */
  int has_tensor;       /* the tensor-core kernels (--distance dot-3xtf32, dot-tf32, dot-fp16, dot-bf16) are here */
  /* Whether the direct form's kernel is as fast as the tensor-core one for d features against kpad
   * (padded) centroids (--distance auto takes direct there); NULL: nowhere. */
  int (*direct_as_fast)(size_t d, int kpad);
  /* Prepares a run of n points of d features against kpad (padded) centroids, on the tensor cores
   * in form `tensor` (km_tensor_form; 0: not). Returns the state, or NULL: with *applies = 0 when
   * these kernels cannot run here (the gpu build's kernels on the host, under --allow-host), else
   * with a pc_fail message (an allocation). *splits gets the passes' split of the centroids (1: none). */
  km_tuned_run *(*open)(size_t n, size_t d, int kpad, int tensor, int *applies, int *splits);
  /* The device memory open() takes for such a run beyond the candidates of split passes (a few
   * bytes a point, left to km_plan_memory's reserve): the 16-bit forms' copies of the points and
   * centroids. */
  size_t (*device_bytes)(size_t n, size_t d, int kpad, int tensor);
  /* One assign step; returns the number of labels that changed. */
  long (*assign)(km_tuned_run *run, const km_assign_job *job);
  /* Whether assign_and_sum takes a run of d features in k (kpad padded) centroids on the tensor cores
   * in form `tensor` (0: not); NULL: nowhere. */
  int (*sums_in_pass)(size_t d, int k, int kpad, int tensor);
  /* One assign step that also adds each point, by its new label, to the update step's sums of
   * whole clusters (kmeans.c's km_accumulate_in_teams: sums[j * k + c], d + 1 rows of k, the
   * counts last; they hold zeros, which km_run keeps so) in km_to_fixed's fixed point with the
   * scales `scale`, so that an iteration reads the points once. Returns the number of labels that
   * changed. */
  long (*assign_and_sum)(km_tuned_run *run, const km_assign_job *job, km_fixed *sums, const float *scale);
  /* Whether assign_and_move takes a run of n points of d features in k (kpad padded) centroids in
   * tensor form `tensor` (0: not); NULL: nowhere. */
  int (*moves_in_pass)(size_t n, size_t d, int k, int kpad, int tensor);
  /* One assign step that also moves each point whose label changes within the update step's kept
   * sums of whole clusters (km_accumulate_in_teams' layout and fixed point, as assign_and_sum's):
   * out of its old cluster (the label the step finds; -1: in no sums yet) and into its new one.
   * The sums hold the points by the labels before the step, and after it by the new ones, so an
   * iteration reads the points once and needs no update kernel. Returns the number of labels
   * that changed. */
  long (*assign_and_move)(km_tuned_run *run, const km_assign_job *job, km_fixed *sums, const float *scale);
  void (*close)(km_tuned_run *run);
} km_tuned_kernels;

/* The tuned kernels linked into this program, or NULL where there are none. */
const km_tuned_kernels *km_tuned(void);

DEV_FUNCS_BEGIN
/* Where feature j of centroid c sits in cs: dimension-major (j * kpad + c), or tile by tile, a
 * tile's d x KM_TILE values contiguous (feature j of a tile: KM_TILE consecutive floats). */
static inline size_t km_tile_at(int c, size_t j, size_t d, int kpad, int dimension_major) {
  if (dimension_major) return j * (size_t)kpad + (size_t)c;
  return ((size_t)(c / KM_TILE) * d + j) * KM_TILE + (size_t)(c % KM_TILE);
}

/* x as a TF32 head and tail for the tensor-core form (km_prepare splits the centroids, the
 * tensor-core kernel the points): hi = x rounded to 10 mantissa bits (to nearest, ties away from
 * zero: add half of the dropped part, then clear it), lo = x - hi (exact in float32) rounded
 * likewise, so that hi + lo keeps about 23 of x's 24 bits. Bit operations and a subtraction, in
 * plain C (the device's own conversion instruction ran slower, and clearing bits without
 * rounding lost two bits: enough to change labels of data far from the origin). */
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
/* x rounded to TF32 (10 mantissa bits, to nearest, ties away from zero), as bits */
static inline unsigned km_tf32_round(float x) { return (km_float_bits(x) + 0x1000u) & 0xffffe000u; }
static inline void km_tf32_split(float x, unsigned *hi, unsigned *lo) {
  const unsigned head = km_tf32_round(x);
  *hi = head;
  *lo = km_tf32_round(x - km_bits_float(head));
}
DEV_FUNCS_END

/* The update step sums in fixed point: value x of dimension j becomes the integer
 * x * 2^s_j toward zero (km_to_fixed), and sums are 64-bit integers: exact, so they do not depend on
 * the order in which threads, teams or variants add the points, and every variant computes the
 * same centroids from the same labels, bit for bit. s_j is chosen once per run
 * (km_fixed_scales, kmeans.c) so that no sum of n values can overflow; a centroid is then exact to
 * within 2^-s_j, about 2^-(62 - log2 n) of the dimension's largest |x| (2^-42 at n = 1M): finer than
 * its float32 value unless it is 2^(38 - log2 n) times smaller than that largest |x|. (Summing
 * in double instead loses up to n 2^-53 of the cluster's sum of |x|.) Why not doubles: GPU
 * threads add into team-shared memory with atomics, and the GPU has native shared-memory
 * atomics only for 32-bit integers; a double (or 64-bit integer) add there is a
 * compare-and-swap loop, which bounded the update step (two 32-bit words are faster, km_team_add:
 * docs/performance.md). */

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
/* Entry e of a team's sums of whole clusters (cluster e / row's dimension e % row, row = d + 1)
 * added to the global sums (sums[j * k + c]) by an atomic; a zero adds nothing (most entries when k
 * is large). Returns whether it added. */
static inline int km_team_sum_to_global(const km_team_word *local, km_fixed *sums, size_t e, size_t row, int k) {
  const km_fixed s = km_team_sum(local, e);
  if (s == 0) return 0;
  PAR_ATOMIC
  sums[e % row * (size_t)k + e / row] += s;
  return 1;
}
DEV_FUNCS_END

#endif

/*
 * kmeans_tuned.h - the one seam between k-means' portable assign step (kmeans.c: standard OpenMP
 * through par.h, what every OpenMP compiler gets) and a variant's tuned assign kernels, which
 * use what one compiler or one machine offers beyond it:
 *  - kmeans_assign_gpu.c (the gpu variant built by clang): LLVM's ompx_bare kernels, team-local
 *    staging by cp.async, warp shuffles, and the tensor cores' mma.sync for --distance dot-3xtf32
 *    and dot-tf32;
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
 * km_prepare made of them in the layout the kernels asked for (cs_lo: the TF32 tails, tensor
 * form only); labels are read (to count changes) and written. */
typedef struct {
  const float *xt, *ct, *cs, *cs_lo, *cn;
  int *labels;
  size_t n, d;
  int k, kpad;
  int direct; /* sum((x - c)^2) + cn[c]; else the dot form cn[c] - 2 x.cs_c */
  int tensor; /* the dot form on the tensor cores, in 3 products (cs, cs_lo: TF32 head and tail) or 1
               * (the heads'); 0: not on the tensor cores */
} km_assign_job;

typedef struct km_tuned_run km_tuned_run; /* a tuned kernel's state for one k-means run */

typedef struct {
  const char *name;     /* for reports: what the kernels are */
  int dimension_major;  /* cs dimension-major (cs[j * kpad + c]); else tile by tile, as km_tile_at says */
  int direct_reads_ct;  /* the direct form reads ct itself: km_prepare need not copy it */
  int has_tensor;       /* the tensor-core kernel (--distance dot-3xtf32 and dot-tf32) is here */
  /* Whether the direct form's kernel is as fast as the tensor-core one for d features against kpad
   * (padded) centroids (--distance auto takes direct there); NULL: nowhere. */
  int (*direct_as_fast)(size_t d, int kpad);
  /* Prepares a run of n points of d features against kpad (padded) centroids, the tensor form
   * when `tensor`. Returns the state, or NULL: with *applies = 0 when these kernels cannot run
   * here (the gpu build's kernels on the host, under --allow-host), else with a pc_fail message
   * (an allocation). *splits gets the passes' split of the centroids (1: none). */
  km_tuned_run *(*open)(size_t n, size_t d, int kpad, int tensor, int *applies, int *splits);
  /* One assign step; returns the number of labels that changed. */
  long (*assign)(km_tuned_run *run, const km_assign_job *job);
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

#endif

/*
 * dpc_tree.h - what dpc.c and dpc_leaf.c share (not a public interface): the constants, the
 * device functions of the VP-tree searches, the state of a run and the search view. dpc.c says
 * what the tree and the searches are; dpc_leaf.c holds the per-leaf searches, in a translation
 * unit of their own because their kernels (a team per leaf, generic-mode source) raise the
 * registers of every other kernel beside them (OFFLOAD-PERF B1; measured with ptxas -v).
 */
#ifndef DPC_DPC_TREE_H
#define DPC_DPC_TREE_H

#include "dpc.h"
#include "device.h"
#include "knobs.h"
#include "par.h"
#include "synth.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Stream of pc_hash_uniform for the random start of the vantage heuristic and d_c sampling. */
#define DPC_STREAM PC_STREAM_DPC
/* Relative slack of the pruning tests (see the header comment). */
#define VPT_SLACK 1e-9
#define VPT_STACK (VPT_MAX_HEIGHT + 4)
/* Points sampled for the first guess of the peak selection's gamma threshold. */
#define DPC_PEAK_SAMPLE 8192
/* Leaves the incremental delta's leaf filter lists per leaf before its points walk the tree
 * instead: a tuning knob (knobs.h), recorded by dpc.c. */
#define VPT_CAND_DEFAULT 8
#ifndef VPT_CAND
#define VPT_CAND VPT_CAND_DEFAULT
#endif
/* Locals that only the device-data directives name (unused where those are empty). */
#define DPC_DEVICE_ONLY __attribute__((unused))

DEV_FUNCS_BEGIN

/* Squared distance: each square rounded to double, then added in dimension order, so that every
 * variant, the GPU included, and the NumPy reference round the same way. The square is
 * fma(diff, diff, 0), which is diff * diff rounded once, written so that no compiler or PTX
 * assembler can fuse it into the addition: a plain product can be (GCC 12's nvptx code leaves
 * mul and add without a rounding mode, which lets the driver's JIT contract them). */
static inline double dpc_d2(const float *a, const float *b, size_t d) {
  double s = 0.0;
  for (size_t j = 0; j < d; j++) {
    const double diff = (double)a[j] - (double)b[j];
    s += fma(diff, diff, 0.0);
  }
  return s;
}

/* The density key: larger is denser (rho, then the lower index). Never 0 for a point. */
static inline unsigned long long dpc_key(int rho, size_t i) {
  return ((unsigned long long)(unsigned)rho << 32) | (unsigned long long)(0xffffffffu - (unsigned)i);
}

static inline double dpc_from_bits(unsigned long long b) {
  union {
    unsigned long long u;
    double f;
  } v;
  v.u = b;
  return v.f;
}

static inline unsigned long long dpc_to_bits(double f) {
  union {
    unsigned long long u;
    double f;
  } v;
  v.f = f;
  return v.u;
}

/* Atomic max / min of non-negative doubles stored as bits (their order is the bits' order). */
static inline void dpc_atomic_max_bits(unsigned long long *a, unsigned long long v) {
  unsigned long long cur = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (v > cur && !__atomic_compare_exchange_n(a, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
static inline void dpc_atomic_min_bits(unsigned long long *a, unsigned long long v) {
  unsigned long long cur = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (v < cur && !__atomic_compare_exchange_n(a, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* What a tree search reads; built inside each parallel loop from its device pointers. */
typedef struct {
  const float *x, *xs;            /* points by id; leaf copies by slot */
  const int *ids, *lcount, *vp;   /* slot -> id (-1 empty); points per leaf; vantage ids */
  const unsigned long long *lmax2, *rmin2; /* bounds (bits of squared distances) */
  const unsigned long long *maxkey, *skey; /* densest key per node; key per slot */
  const unsigned long long *minokey, *okey; /* incremental: least key before the batch among a node's
                                             * changed points; per point, its key before the batch */
  const unsigned char *flag;      /* per node: the subtree holds a new point */
  const unsigned char *changed;   /* per point: rho changed in this batch (or new) */
  const unsigned char *alive;     /* per point: 0 once deleted */
  const int *rho;
  size_t d, ninternal;
} vpt_view;

/* May a subtree whose points are at least `lb` from the query hold one closer than `bound`? */
static inline int vpt_may_hold(double lb, double bound) { return !(lb > bound + VPT_SLACK * (lb + bound)); }

/* rho search: the number of points j with d2(q, j) < dc2 (q itself included when it is in the
 * tree). only_from >= 0 counts only ids >= only_from, only_dead only deleted points still in the
 * leaves; both walk only flagged subtrees (the separate update). With inc_rho != NULL (the
 * incidental update), every found id below inc_limit gets inc atomically and its changed flag set.
 * *ndist receives the distance computations. */
static inline int vpt_count(const vpt_view *v, const float *q, double dc, double dc2, long only_from, int only_dead,
                            int *inc_rho, int inc, unsigned char *changed, long inc_limit, long *ndist) {
  int stack[VPT_STACK];
  int top = 0, count = 0;
  long nd = 0;
  stack[top++] = 0;
  while (top > 0) {
    const int g = stack[--top];
    if ((only_from >= 0 || only_dead) && !v->flag[g]) continue;
    if ((size_t)g >= v->ninternal) {
      const size_t leaf = (size_t)g - v->ninternal, c = (size_t)v->lcount[leaf];
      for (size_t t = 0; t < c; t++) {
        const size_t sl = leaf * VPT_LEAF + t;
        const int j = v->ids[sl];
        if ((only_from >= 0 && j < only_from) || (only_dead && v->alive[j])) continue;
        nd++;
        if (dpc_d2(q, v->xs + sl * v->d, v->d) < dc2) {
          count++;
          if (inc_rho && j < inc_limit) {
            PAR_ATOMIC
            inc_rho[j] += inc;
            changed[j] = 1; /* every writer stores the same value */
          }
        }
      }
      continue;
    }
    const int vid = v->vp[g];
    if (vid < 0) { /* a split empty leaf: no vantage point, both children */
      stack[top++] = 2 * g + 2;
      stack[top++] = 2 * g + 1;
      continue;
    }
    nd++;
    const double dv = sqrt(dpc_d2(q, v->x + (size_t)vid * v->d, v->d));
    const double lmax = sqrt(dpc_from_bits(v->lmax2[g])), rmin = sqrt(dpc_from_bits(v->rmin2[g]));
    if (vpt_may_hold(rmin - dv, dc)) stack[top++] = 2 * g + 2;
    if (vpt_may_hold(dv - lmax, dc)) stack[top++] = 2 * g + 1;
  }
  *ndist += nd;
  return count;
}

/* The per-leaf searches' candidate leaves: the non-empty leaves that may hold a point within
 * `radius` of c (pruned as vpt_count prunes, with the same slack). Resumable: pops nodes from
 * stack[0..*top) (the root pushed first) until `cap` leaves are written to out or the walk is over
 * (*top == 0); returns their number. *ndist receives the vantage distances. */
static inline int vpt_leaves_near(const vpt_view *v, const float *c, double radius, int *stack, int *top, int *out,
                                  int cap, long *ndist) {
  int found = 0, tp = *top;
  long nd = 0;
  while (tp > 0 && found < cap) {
    const int g = stack[--tp];
    if ((size_t)g >= v->ninternal) {
      const int leaf = g - (int)v->ninternal;
      if (v->lcount[leaf] > 0) out[found++] = leaf;
      continue;
    }
    const int vid = v->vp[g];
    if (vid < 0) {
      stack[tp++] = 2 * g + 2;
      stack[tp++] = 2 * g + 1;
      continue;
    }
    nd++;
    const double dv = sqrt(dpc_d2(c, v->x + (size_t)vid * v->d, v->d));
    const double lmax = sqrt(dpc_from_bits(v->lmax2[g])), rmin = sqrt(dpc_from_bits(v->rmin2[g]));
    if (vpt_may_hold(rmin - dv, radius)) stack[tp++] = 2 * g + 2;
    if (vpt_may_hold(dv - lmax, radius)) stack[tp++] = 2 * g + 1;
  }
  *top = tp;
  *ndist += nd;
  return found;
}

/* delta search: the nearest point denser than key kp, improving on (*best_d2, *best_j) (smaller
 * d2, or equal d2 and lower id). Subtrees whose maxkey is not above kp are skipped. With
 * only_changed, the candidates are the changed points that crossed kp in this batch (key before it
 * below kp; maxkey and minokey then cover the changed points only). */
static inline void vpt_nearest_denser(const vpt_view *v, const float *q, unsigned long long kp, double *best_d2,
                                      int *best_j, int only_changed, long *ndist) {
  int stack[VPT_STACK];
  double lbs[VPT_STACK];
  int top = 0;
  long nd = 0;
  double bd2 = *best_d2;
  int bj = *best_j;
  stack[top] = 0;
  lbs[top++] = 0.0;
  while (top > 0) {
    --top;
    const int g = stack[top];
    if (v->maxkey[g] <= kp || (only_changed && v->minokey[g] >= kp)) continue;
    if (!vpt_may_hold(lbs[top], sqrt(bd2))) continue;
    if ((size_t)g >= v->ninternal) {
      const size_t leaf = (size_t)g - v->ninternal, c = (size_t)v->lcount[leaf];
      for (size_t t = 0; t < c; t++) {
        const size_t sl = leaf * VPT_LEAF + t;
        if (v->skey[sl] <= kp || (only_changed && (!v->changed[v->ids[sl]] || v->okey[v->ids[sl]] >= kp))) continue;
        nd++;
        const double e = dpc_d2(q, v->xs + sl * v->d, v->d);
        const int j = v->ids[sl];
        if (e < bd2 || (e == bd2 && j < bj)) {
          bd2 = e;
          bj = j;
        }
      }
      continue;
    }
    const int vid = v->vp[g];
    if (vid < 0) {
      stack[top] = 2 * g + 2;
      lbs[top++] = 0.0;
      stack[top] = 2 * g + 1;
      lbs[top++] = 0.0;
      continue;
    }
    nd++;
    const double e = dpc_d2(q, v->x + (size_t)vid * v->d, v->d);
    if (dpc_key(v->rho[vid], (size_t)vid) > kp && (!only_changed || (v->changed[vid] && v->okey[vid] < kp)) &&
        (e < bd2 || (e == bd2 && vid < bj))) { /* the vantage point itself */
      bd2 = e;
      bj = vid;
    }
    const double dv = sqrt(e);
    const double lmax = sqrt(dpc_from_bits(v->lmax2[g])), rmin = sqrt(dpc_from_bits(v->rmin2[g]));
    const double lb_left = fmax(0.0, dv - lmax), lb_right = fmax(0.0, rmin - dv);
    if (lb_left <= lb_right) { /* nearer child on top of the stack */
      stack[top] = 2 * g + 2;
      lbs[top++] = lb_right;
      stack[top] = 2 * g + 1;
      lbs[top++] = lb_left;
    } else {
      stack[top] = 2 * g + 1;
      lbs[top++] = lb_left;
      stack[top] = 2 * g + 2;
      lbs[top++] = lb_right;
    }
  }
  *best_d2 = bd2;
  *best_j = bj;
  *ndist += nd;
}

/* The incremental delta's leaf filter: the leaves holding a changed point that crossed a key in
 * [kmin, kmax] (key now above kmin, before the batch below kmax) within `radius` of c (maxkey and
 * minokey cover the changed points only). Writes up to VPT_CAND of them to out; returns their
 * number, or VPT_CAND + 1 when there are more. */
static inline int vpt_changed_near(const vpt_view *v, const float *c, double radius, unsigned long long kmin,
                                   unsigned long long kmax, int *out, long *ndist) {
  int found = 0;
  int stack[VPT_STACK];
  int top = 0;
  long nd = 0;
  const double r2 = radius * radius * (1.0 + 4 * VPT_SLACK);
  stack[top++] = 0;
  while (top > 0) {
    const int g = stack[--top];
    if (v->maxkey[g] <= kmin || v->minokey[g] >= kmax) continue;
    if ((size_t)g >= v->ninternal) {
      const size_t leaf = (size_t)g - v->ninternal, cnt = (size_t)v->lcount[leaf];
      for (size_t t = 0; t < cnt; t++) {
        const size_t sl = leaf * VPT_LEAF + t;
        if (v->skey[sl] <= kmin || !v->changed[v->ids[sl]] || v->okey[v->ids[sl]] >= kmax) continue;
        nd++;
        if (dpc_d2(c, v->xs + sl * v->d, v->d) <= r2) {
          if (found == VPT_CAND) {
            *ndist += nd;
            return VPT_CAND + 1;
          }
          out[found++] = (int)leaf;
          break;
        }
      }
      continue;
    }
    const int vid = v->vp[g];
    if (vid < 0) {
      stack[top++] = 2 * g + 2;
      stack[top++] = 2 * g + 1;
      continue;
    }
    nd++;
    const double dv = sqrt(dpc_d2(c, v->x + (size_t)vid * v->d, v->d));
    const double lmax = sqrt(dpc_from_bits(v->lmax2[g])), rmin = sqrt(dpc_from_bits(v->rmin2[g]));
    if (vpt_may_hold(rmin - dv, radius)) stack[top++] = 2 * g + 2;
    if (vpt_may_hold(dv - lmax, radius)) stack[top++] = 2 * g + 1;
  }
  *ndist += nd;
  return found;
}

DEV_FUNCS_END

struct dpc_state {
  float *x;
  size_t n, cap, d, nx;
  dpc_params p;
  double dc2, dc;
  /* per point (cap entries) */
  int *rho, *dep, *label, *ptr_a, *ptr_b, *rank;
  double *delta2;
  unsigned long long *key, *okey;
  unsigned char *changed, *global, *alive; /* alive: 0 once deleted (ids are never reused) */
  long *work;
  int *leaf_of, *lnew;
  /* the tree: h levels of vantage points, 2^h leaves */
  size_t top;  /* the absolute peak */
  size_t dead;               /* deleted points */
  unsigned char *dead_host;  /* host copy of the deletions */
  int has_tree, h, h_limit;
  size_t ninternal, nnodes, nleaves, nslots;
  int *vp, *ids, *lcount;
  unsigned char *lneed; /* incremental delta: leaves whose points need the case (ii) search */
  unsigned long long *minokey;
  int *lcand; /* per leaf, the leaves its points must look at (case ii) */
  unsigned long long *split2, *lmax2, *rmin2, *maxkey, *skey;
  unsigned char *flag;
  float *xs;
  long long build_distances;
  /* the per-leaf searches (from scratch): each leaf's ball, centre slot and radius (nballs
   * leaves), and its candidate leaves lnear[lnoff[l] .. lnoff[l + 1]) (nnear in all) */
  int *lctr;
  double *lrad;
  size_t nballs;
  int *lnear;
  long *lnoff;
  size_t nnear;
};

#define VPT_VIEW                                                                                          \
  {                                                                                                       \
    x, xs, ids, lcount, vp, lmax2, rmin2, maxkey, skey, minokey, okey, flag, changed, alive, rho, d,      \
        ninternal                                                                                         \
  }

/* The per-leaf searches (dpc_leaf.c). dpc_rho_by_leaf: rho of every point from scratch;
 * dpc_delta_by_leaf: dep, delta2 and the global flags of every point from scratch (keys and the
 * tree's density maxima set). Both compute the leaf balls and candidate lists when they are not
 * there yet; dpc_delta_by_leaf releases them at its end, dpc_leaf_free otherwise (nothing when
 * there are none). Both return 0, or -1 with a pc_fail message (memory for the lists). */
int dpc_rho_by_leaf(dpc_state *s);
int dpc_delta_by_leaf(dpc_state *s);
void dpc_leaf_free(dpc_state *s);

#endif

/*
 * dpc.c - exact density peaks clustering (see dpc.h for the definitions) with GDPC's vectorized
 * VP-tree (Liu et al., sections 3 to 5) or all pairs (CUDA-DP), and GDPC's incremental updates;
 * one source for the three variants (common/par.h).
 *
 * The VP-tree (section 3.2): a complete binary tree in arrays, node g's children at 2g+1 and
 * 2g+2; internal node g holds a vantage point id vp[g] and, instead of one radius, two bounds:
 * every point of the left subtree is within lmax2[g] (squared) of the vantage point and every
 * point of the right subtree at least rmin2[g] away; new points go left when closer than
 * split2[g]. Two bounds keep the pruning exact when several points lie at the median distance,
 * and let insertions widen them. Leaves hold up to VPT_LEAF ids in a leaf array (free room for
 * insertions) with a copy of their coordinates (xs, in slot order); point data stays apart (x).
 *
 * Build (section 3.3), level by level, all nodes of a level at once: the points of every node
 * (a contiguous range of a permutation) are sorted by (squared distance to the node's vantage
 * point, id); the lower half goes left. The root's vantage point is the point farthest from a
 * random one; a left child's is the median point, a right child's the farthest (Algorithm 1).
 * The per-node sort is the one place the variants differ: the gpu build runs a bitonic network
 * over all nodes of a level at once (each node padded to a power of two); the host builds sort
 * each node with qsort, one node per thread. Both give the same order (keys are unique).
 *
 * rho (section 4.1): each point walks the tree with its d_c ball, pruning a subtree only when the
 * triangle inequality proves every point of it at least d_c away (with a relative slack of 1e-9,
 * so rounding can only keep more candidates, never drop one); its candidates are the points of
 * the covered leaves. The loop runs over leaf slots, so neighbouring threads (a GPU warp) hold
 * points of the same leaf and walk largely the same path (each point's d_c ball differs).
 * delta (section 4.2): the nearest denser point is searched first within d_c (the covered leaves;
 * exact whenever one is found there, since every point closer than d_c was a candidate), and only
 * when there is none by a branch-and-bound search of the whole tree (nearer child first, subtrees
 * whose densest point is not denser skipped by a per-node maximum of the density key).
 * --rho-search / --delta-search leaf (section 4.1: "points of one leaf processed together"): the
 * leaves a ball around each leaf reaches are listed once (a walk by one thread per leaf, into one
 * compact list that both searches use); then one team per leaf (PAR_TEAMS_FOR) stages them in
 * team memory (TEAM_LOCAL) round by round and its threads, one per point (TEAM_PAR_FOR), search
 * them with the same tests, so both give the same values. They live in dpc_leaf.c (dpc_tree.h
 * says why). From-scratch runs only: incremental batches always search per point.
 * Labels (section 4.3): peaks selected on the device (a gamma threshold found by counting passes
 * from a sampled guess; only the candidates are copied back and sorted), then pointer jumping
 * along the dependent points.
 *
 * Incremental (section 5): a batch is routed down the tree (one thread per new point, bounds
 * widened with atomic max/min); when a leaf would overflow every leaf is split (Inc_Capacity:
 * the tree grows a level; the new vantage point is the member farthest from the parent's), and
 * beyond VPT_EXTRA_LEVELS such growths the tree is rebuilt. rho of new points by the tree; old
 * points by the incidental method (atomic increments from the new points' searches) or the
 * separate one (each old point counts the new points in the subtrees holding them). delta, the
 * paper's two cases: (i) a point whose rho changed (or a new point, or the old peak) is searched
 * again; (ii) any other point p keeps its dependent unless a changed point q closer than delta_p
 * crossed p's density in this batch (key before it below p's, now above). Case (ii) is found per
 * leaf first (a ball holding the leaf, widened by the leaf's largest delta, must reach such a
 * point; the leaves holding them are listed, up to VPT_CAND), then per point over the listed
 * leaves (or a bounded tree walk when the list overflowed). Deletions (section 5.5): ids leave
 * their leaves, rho drops (incidental or separate), and delta is searched again only where rho
 * changed or the dependent died or is no longer denser: no other dependent can change. Peaks and
 * labels are recomputed after every batch.
 *
 * Device data: x (all rows, filled per batch), per-point arrays and the tree are mapped once and
 * stay on the device (the tree's arrays are remapped when it grows); during a run only small
 * results come back (peak candidates, the sampled gamma values, scan totals), labels at its end.
 * Distances are squared distances in double (see dpc.h); square roots (of a delta, of the bounds,
 * in gamma) are IEEE correctly rounded in every variant.
 */
#include "dpc.h"
#include "device.h"
#include "par.h"
#include "synth.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const dpc_index_names[2] = {"none", "vptree"};
const char *const dpc_phase_names[DPC_NPHASES] = {"transfers", "tree_build", "rho", "delta", "assignment"};
const char *const dpc_search_names[2] = {"point", "leaf"};

#include "dpc_tree.h"

/* Tuning knobs: settings of speed, not of results; -DNAME=value (make KNOBS='-DNAME=value')
 * overrides one, `info` lists them and a report names those changed (knobs.h). */
/* Leaf-splitting rounds allowed after a build before the tree is rebuilt instead. */
#define VPT_EXTRA_LEVELS_DEFAULT 4
#ifndef VPT_EXTRA_LEVELS
#define VPT_EXTRA_LEVELS VPT_EXTRA_LEVELS_DEFAULT
#endif
PC_KNOB(VPT_EXTRA_LEVELS)
/* Leaves the incremental delta's leaf filter lists per leaf (dpc_tree.h). */
PC_KNOB(VPT_CAND)

/* An index in [0, m) from draw number `counter` (u * m can round up to m when u is just below 1). */
static size_t dpc_draw(uint64_t seed, uint64_t counter, size_t m) {
  const size_t i = (size_t)(pc_hash_uniform(seed, DPC_STREAM, counter) * (double)m);
  return i < m ? i : m - 1;
}

static size_t next_pow2(size_t v) {
  size_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

#if !PC_HAS_DEVICE
typedef struct {
  double key;
  int id;
} keyed;

static int cmp_keyed(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}
#endif

/* Sums the per-point distance counts of rows [0, n) and clears them. */
static long long take_work(long *work, size_t n) {
  long long total = 0;
  PAR_FOR(reduction(+ : total) GPU_REDUCTION(n))
  for (size_t i = 0; i < n; i++) {
    total += work[i];
    work[i] = 0;
  }
  return total;
}

static void tree_free(dpc_state *s) {
  if (!s->has_tree) return;
  int *vp = s->vp, *ids = s->ids, *lcount = s->lcount;
  unsigned long long *split2 = s->split2, *lmax2 = s->lmax2, *rmin2 = s->rmin2, *maxkey = s->maxkey, *skey = s->skey;
  unsigned char *flag = s->flag;
  float *xs = s->xs;
  DPC_DEVICE_ONLY const size_t nn = s->nnodes, ns = s->nslots, nl = s->nleaves, nxs = s->nslots * s->d;
  unsigned char *lneed = s->lneed;
  unsigned long long *minokey = s->minokey;
  int *lcand = s->lcand;
  DPC_DEVICE_ONLY const size_t nc = nl * VPT_CAND;
  DEV_EXIT(map(delete : vp[0 : nn], split2[0 : nn], lmax2[0 : nn], rmin2[0 : nn], maxkey[0 : nn], flag[0 : nn],
               ids[0 : ns], skey[0 : ns], xs[0 : nxs], lcount[0 : nl], lneed[0 : nl], minokey[0 : nn], lcand[0 : nc]))
  free(vp), free(split2), free(lmax2), free(rmin2), free(maxkey), free(flag), free(ids), free(skey), free(xs), free(lcount);
  free(lneed), free(minokey), free(lcand);
  s->has_tree = 0;
}

/* Allocates and maps the tree arrays for height h (not filled). */
static int tree_alloc(dpc_state *s, int h) {
  s->h = h;
  s->nleaves = (size_t)1 << h;
  s->ninternal = s->nleaves - 1;
  s->nnodes = 2 * s->nleaves - 1;
  s->nslots = s->nleaves * VPT_LEAF;
  const size_t nn = s->nnodes, ns = s->nslots, nl = s->nleaves, nxs = s->nslots * s->d;
  int *vp = pc_try_alloc(nn, sizeof *vp, "vantage array");
  unsigned long long *split2 = pc_try_alloc(nn, sizeof *split2, "vantage split");
  unsigned long long *lmax2 = pc_try_alloc(nn, sizeof *lmax2, "vantage bounds");
  unsigned long long *rmin2 = pc_try_alloc(nn, sizeof *rmin2, "vantage bounds");
  unsigned long long *maxkey = pc_try_alloc(nn, sizeof *maxkey, "subtree density");
  unsigned char *flag = pc_try_alloc(nn, sizeof *flag, "subtree flags");
  int *ids = pc_try_alloc(ns, sizeof *ids, "leaf array");
  unsigned long long *skey = pc_try_alloc(ns, sizeof *skey, "leaf keys");
  float *xs = pc_try_alloc(nxs, sizeof *xs, "leaf points");
  int *lcount = pc_try_alloc(nl, sizeof *lcount, "leaf counts");
  unsigned char *lneed = pc_try_alloc(nl, sizeof *lneed, "leaf flags");
  unsigned long long *minokey = pc_try_alloc(nn, sizeof *minokey, "subtree keys before a batch");
  const size_t nc = nl * VPT_CAND;
  int *lcand = pc_try_alloc(nc, sizeof *lcand, "leaf candidates");
  if (!vp || !split2 || !lmax2 || !rmin2 || !maxkey || !flag || !ids || !skey || !xs || !lcount || !lneed || !minokey ||
      !lcand) {
    free(vp), free(split2), free(lmax2), free(rmin2), free(maxkey), free(flag), free(ids), free(skey), free(xs), free(lcount);
    free(lneed), free(minokey), free(lcand);
    return -1;
  }
  /* device: per node (nn = 2^(h+1) - 1) vp vantage point, split2 its split, lmax2 / rmin2 the
   * children's bounds, maxkey / minokey subtree density keys, flag; per slot (ns = 32 per leaf)
   * ids, skey, xs[ns * d] the leaves' points; per leaf (nl) lcount, lneed, lcand[nl * VPT_CAND] */
  DEV_ENTER(map(alloc : vp[0 : nn], split2[0 : nn], lmax2[0 : nn], rmin2[0 : nn], maxkey[0 : nn], flag[0 : nn],
                ids[0 : ns], skey[0 : ns], xs[0 : nxs], lcount[0 : nl], lneed[0 : nl], minokey[0 : nn], lcand[0 : nc]))
  s->lneed = lneed, s->minokey = minokey, s->lcand = lcand;
  s->vp = vp, s->split2 = split2, s->lmax2 = lmax2, s->rmin2 = rmin2, s->maxkey = maxkey, s->flag = flag;
  s->ids = ids, s->skey = skey, s->xs = xs, s->lcount = lcount;
  s->has_tree = 1;
  return 0;
}

/* Algorithm 1, level by level: builds the tree over rows [0, n). */
static int tree_build(dpc_state *s, size_t n) {
  tree_free(s);
  const size_t d = s->d;
  int h = 0;
  while ((n + ((size_t)1 << h) - 1) >> h > VPT_LEAF) h++;
  if (h > VPT_MAX_HEIGHT - VPT_EXTRA_LEVELS) return pc_fail("dpc: %zu points need a VP-tree deeper than %d levels", n, VPT_MAX_HEIGHT);
  if (tree_alloc(s, h) != 0) return -1;
  s->h_limit = h + VPT_EXTRA_LEVELS;
  size_t padded = 1;
  for (int l = 0; l < h; l++) {
    const size_t m = (size_t)1 << l, size = (n + m - 1) / m, total = m * next_pow2(size);
    if (total > padded) padded = total;
  }
  const size_t nn = s->nnodes;
  long *node_lo = pc_try_alloc(nn, sizeof *node_lo, "tree build ranges");
  long *node_n = pc_try_alloc(nn, sizeof *node_n, "tree build ranges");
  int *perm = pc_try_alloc(n, sizeof *perm, "tree build order");
  double *pkey = pc_try_alloc(padded, sizeof *pkey, "tree build keys");
  int *pid = pc_try_alloc(padded, sizeof *pid, "tree build keys");
  if (!node_lo || !node_n || !perm || !pkey || !pid) {
    free(node_lo), free(node_n), free(perm), free(pkey), free(pid);
    return -1;
  }
  const float *x = s->x;
  int *vp = s->vp, *ids = s->ids, *lcount = s->lcount, *leaf_of = s->leaf_of;
  unsigned long long *split2 = s->split2, *lmax2 = s->lmax2, *rmin2 = s->rmin2;
  float *xs = s->xs;
  const size_t ninternal = s->ninternal, nslots = s->nslots, nleaves = s->nleaves;
  /* device (the build only): per node node_lo, node_n its range of perm[n], the points in tree
   * order; pkey, pid[padded] the sort keys of one level (each range padded to a power of two) */
  DEV_ENTER(map(alloc : node_lo[0 : nn], node_n[0 : nn], perm[0 : n], pkey[0 : padded], pid[0 : padded]))

  /* the root's vantage point: the farthest point from a random one (ties to the lowest id) */
  const size_t start = dpc_draw(s->p.seed, 0, n);
  double far = 0.0;
  PAR_FOR(reduction(max : far) GPU_REDUCTION(n))
  for (size_t i = 0; i < n; i++) far = fmax(far, dpc_d2(x + i * d, x + start * d, d));
  int far_id = INT_MAX;
  PAR_FOR(reduction(min : far_id) GPU_REDUCTION(n))
  for (size_t i = 0; i < n; i++)
    if (dpc_d2(x + i * d, x + start * d, d) == far && (int)i < far_id) far_id = (int)i;
  PAR_FOR()
  for (size_t i = 0; i < n; i++) perm[i] = (int)i;
  PAR_FOR()
  for (size_t k = 0; k < 1; k++) {
    node_lo[0] = 0;
    node_n[0] = (long)n;
    vp[0] = far_id;
  }
  s->build_distances = 2 * (long long)n + (long long)n * h;

  for (int l = 0; l < h; l++) {
    const size_t m = (size_t)1 << l, first = m - 1, P = next_pow2((n + m - 1) / m), total = m * P;
    /* every point's squared distance to its node's vantage point (padding: +infinity) */
    PAR_FOR()
    for (size_t i = 0; i < total; i++) {
      const size_t b = i / P, t = i % P, g = first + b;
      if ((long)t < node_n[g]) {
        const int j = perm[node_lo[g] + (long)t];
        pkey[i] = dpc_d2(x + (size_t)j * d, x + (size_t)vp[g] * d, d);
        pid[i] = j;
      } else {
        pkey[i] = INFINITY;
        pid[i] = INT_MAX;
      }
    }
#if PC_HAS_DEVICE
    /* gpu: a bitonic network sorts every node's padded block at once, one launch per step */
    for (size_t k = 2; k <= P; k <<= 1)
      for (size_t j = k >> 1; j > 0; j >>= 1) {
        PAR_FOR()
        for (size_t i = 0; i < total; i++) {
          const size_t t = i % P, partner = t ^ j;
          if (partner <= t) continue;
          const size_t o = i - t + partner;
          const int up = (t & k) == 0;
          const int greater = pkey[i] > pkey[o] || (pkey[i] == pkey[o] && pid[i] > pid[o]);
          if (greater == up) {
            const double tk = pkey[i];
            pkey[i] = pkey[o];
            pkey[o] = tk;
            const int ti = pid[i];
            pid[i] = pid[o];
            pid[o] = ti;
          }
        }
      }
#else
    /* host: each node's block sorted by one thread (same order: the keys are unique) */
    int sort_failed = 0;
    PAR_FOR(HOST_ONLY(schedule(dynamic, 1)) reduction(| : sort_failed))
    for (size_t b = 0; b < m; b++) {
      const size_t cnt = (size_t)node_n[first + b];
      keyed *buf = pc_try_alloc(cnt, sizeof *buf, "tree build sort");
      if (!buf) {
        sort_failed = 1;
        continue;
      }
      for (size_t t = 0; t < cnt; t++) buf[t] = (keyed){pkey[b * P + t], pid[b * P + t]};
      qsort(buf, cnt, sizeof *buf, cmp_keyed);
      for (size_t t = 0; t < cnt; t++) {
        pkey[b * P + t] = buf[t].key;
        pid[b * P + t] = buf[t].id;
      }
      free(buf);
    }
    if (sort_failed) { /* this build's data is host memory only: nothing mapped to release */
      free(node_lo), free(node_n), free(perm), free(pkey), free(pid);
      return pc_fail_out_of_memory("dpc: tree build sort");
    }
#endif
    /* median split: bounds, children's ranges and vantage points */
    const int last_level = l + 1 == h;
    PAR_FOR()
    for (size_t b = 0; b < m; b++) {
      const size_t g = first + b, base = b * P;
      const long cnt = node_n[g], mid = cnt / 2;
      lmax2[g] = dpc_to_bits(pkey[base + (size_t)mid - 1]);
      rmin2[g] = dpc_to_bits(pkey[base + (size_t)mid]);
      split2[g] = rmin2[g];
      node_lo[2 * g + 1] = node_lo[g];
      node_n[2 * g + 1] = mid;
      node_lo[2 * g + 2] = node_lo[g] + mid;
      node_n[2 * g + 2] = cnt - mid;
      if (!last_level) {
        vp[2 * g + 1] = pid[base + (size_t)mid];
        vp[2 * g + 2] = pid[base + (size_t)cnt - 1];
      }
    }
    PAR_FOR()
    for (size_t i = 0; i < total; i++) {
      const size_t b = i / P, t = i % P, g = first + b;
      if ((long)t < node_n[g]) perm[node_lo[g] + (long)t] = pid[i];
    }
  }
  /* leaves: ids and coordinates in slot order */
  PAR_FOR()
  for (size_t sl = 0; sl < nslots; sl++) {
    const size_t leaf = sl / VPT_LEAF, t = sl % VPT_LEAF, g = ninternal + leaf;
    if ((long)t < node_n[g]) {
      const int j = perm[node_lo[g] + (long)t];
      ids[sl] = j;
      leaf_of[j] = (int)leaf;
      for (size_t k = 0; k < d; k++) xs[sl * d + k] = x[(size_t)j * d + k];
    } else {
      ids[sl] = -1;
    }
  }
  PAR_FOR()
  for (size_t leaf = 0; leaf < nleaves; leaf++) lcount[leaf] = (int)node_n[ninternal + leaf];
  DEV_EXIT(map(delete : node_lo[0 : nn], node_n[0 : nn], perm[0 : n], pkey[0 : padded], pid[0 : padded]))
  free(node_lo), free(node_n), free(perm), free(pkey), free(pid);
  return 0;
}

/* Inc_Capacity (Algorithm 3): every leaf becomes an internal node with two leaves; the tree
 * grows one level. The new vantage point is the member farthest from the parent's vantage point
 * (ties to the lowest id); the members are sorted by (squared distance to it, id) and halved. */
static int tree_split_leaves(dpc_state *s, long long *ndist) {
  const size_t d = s->d, old_ninternal = s->ninternal, old_nleaves = s->nleaves, old_nn = s->nnodes;
  DPC_DEVICE_ONLY const size_t old_ns = s->nslots, old_nxs = s->nslots * d;
  int *ovp = s->vp, *oids = s->ids, *olcount = s->lcount;
  unsigned long long *osplit2 = s->split2, *olmax2 = s->lmax2, *ormin2 = s->rmin2, *omaxkey = s->maxkey, *oskey = s->skey;
  unsigned char *oflag = s->flag, *olneed = s->lneed;
  unsigned long long *ominokey = s->minokey;
  int *olcand = s->lcand;
  DPC_DEVICE_ONLY const size_t old_nc = old_nleaves * VPT_CAND;
  float *oxs = s->xs;
  s->has_tree = 0;
  if (tree_alloc(s, s->h + 1) != 0) {
    s->vp = ovp, s->ids = oids, s->lcount = olcount, s->split2 = osplit2, s->lmax2 = olmax2, s->rmin2 = ormin2;
    s->maxkey = omaxkey, s->skey = oskey, s->flag = oflag, s->xs = oxs, s->lneed = olneed, s->minokey = ominokey, s->lcand = olcand;
    s->h--, s->nleaves = old_nleaves, s->ninternal = old_ninternal, s->nnodes = old_nn, s->nslots = old_ns;
    s->has_tree = 1;
    return -1;
  }
  const float *x = s->x;
  int *vp = s->vp, *ids = s->ids, *lcount = s->lcount;
  unsigned long long *split2 = s->split2, *lmax2 = s->lmax2, *rmin2 = s->rmin2;
  float *xs = s->xs;
  const size_t nslots = s->nslots;
  PAR_FOR()
  for (size_t g = 0; g < old_ninternal; g++) {
    vp[g] = ovp[g];
    split2[g] = osplit2[g];
    lmax2[g] = olmax2[g];
    rmin2[g] = ormin2[g];
  }
  PAR_FOR()
  for (size_t sl = 0; sl < nslots; sl++) ids[sl] = -1;
  long long counted = 0;
  PAR_FOR(reduction(+ : counted) GPU_REDUCTION(old_nleaves))
  for (size_t leaf = 0; leaf < old_nleaves; leaf++) {
    const size_t g = old_ninternal + leaf;
    const int c = olcount[leaf];
    double k[VPT_LEAF] = {0.0}; /* (zeroed for the compilers' flow analysis) */
    int id[VPT_LEAF] = {0};
    int mid = 0;
    if (c == 0) {
      vp[g] = -1;
      split2[g] = dpc_to_bits(INFINITY);
      lmax2[g] = 0;
      rmin2[g] = dpc_to_bits(INFINITY);
    } else {
      const int parent = g > 0 ? ovp[(g - 1) / 2] : -1;
      int v = oids[leaf * VPT_LEAF];
      double vd = -1.0;
      for (int t = 0; t < c; t++) {
        const int j = oids[leaf * VPT_LEAF + (size_t)t];
        const double e = parent >= 0 ? dpc_d2(x + (size_t)j * d, x + (size_t)parent * d, d) : 0.0;
        if (e > vd || (e == vd && j < v)) {
          vd = e;
          v = j;
        }
      }
      for (int t = 0; t < c; t++) { /* insertion sort by (distance to v, id) */
        const int j = oids[leaf * VPT_LEAF + (size_t)t];
        const double e = dpc_d2(x + (size_t)j * d, x + (size_t)v * d, d);
        int u = t;
        while (u > 0 && (k[u - 1] > e || (k[u - 1] == e && id[u - 1] > j))) {
          k[u] = k[u - 1];
          id[u] = id[u - 1];
          u--;
        }
        k[u] = e;
        id[u] = j;
      }
      counted += 2 * c;
      vp[g] = v;
      if (c >= 2) {
        mid = c / 2;
        lmax2[g] = dpc_to_bits(k[mid - 1]);
        rmin2[g] = split2[g] = dpc_to_bits(k[mid]);
      } else {
        mid = 1;
        lmax2[g] = dpc_to_bits(k[0]);
        rmin2[g] = split2[g] = dpc_to_bits(INFINITY);
      }
    }
    lcount[2 * leaf] = mid;
    lcount[2 * leaf + 1] = c - mid;
    for (int t = 0; t < c; t++) {
      const size_t sl = (t < mid ? 2 * leaf * VPT_LEAF + (size_t)t : (2 * leaf + 1) * VPT_LEAF + (size_t)(t - mid));
      ids[sl] = id[t];
      for (size_t q = 0; q < d; q++) xs[sl * d + q] = x[(size_t)id[t] * d + q];
    }
  }
  *ndist += counted;
  DEV_EXIT(map(delete : ovp[0 : old_nn], osplit2[0 : old_nn], olmax2[0 : old_nn], ormin2[0 : old_nn], omaxkey[0 : old_nn],
               oflag[0 : old_nn], oids[0 : old_ns], oskey[0 : old_ns], oxs[0 : old_nxs], olcount[0 : old_nleaves],
               olneed[0 : old_nleaves], ominokey[0 : old_nn], olcand[0 : old_nc]))
  free(ovp), free(osplit2), free(olmax2), free(ormin2), free(omaxkey), free(oflag), free(oids), free(oskey), free(oxs);
  free(olcount), free(olneed), free(ominokey), free(olcand);
  return 0;
}

/* Refreshes the slot keys and the per-node maximum key, bottom-up (one launch per level); with
 * only_changed, the maximum is over the changed points only. With mark >= 0, also the flags: a
 * leaf is flagged when it holds a point with changed[] set (mark 1), an id >= mark_from (mark 0)
 * or a deleted point (mark 2). */
static void tree_refresh(dpc_state *s, int mark, long mark_from, int only_changed) {
  const size_t ninternal = s->ninternal, nslots = s->nslots, nleaves = s->nleaves;
  const int *ids = s->ids, *lcount = s->lcount;
  const unsigned long long *key = s->key;
  const unsigned char *changed = s->changed;
  const unsigned char *alive = s->alive;
  const unsigned long long *okey = s->okey;
  unsigned long long *minokey = s->minokey;
  unsigned long long *skey = s->skey, *maxkey = s->maxkey;
  unsigned char *flag = s->flag;
  PAR_FOR()
  for (size_t sl = 0; sl < nslots; sl++) {
    const int j = ids[sl];
    skey[sl] = j >= 0 && (int)(sl % VPT_LEAF) < lcount[sl / VPT_LEAF] ? key[j] : 0;
  }
  PAR_FOR()
  for (size_t leaf = 0; leaf < nleaves; leaf++) {
    unsigned long long m = 0, mo = ~0ULL;
    int f = 0;
    for (int t = 0; t < lcount[leaf]; t++) {
      const size_t sl = leaf * VPT_LEAF + (size_t)t;
      if (!only_changed || changed[ids[sl]]) m = skey[sl] > m ? skey[sl] : m;
      if (only_changed && changed[ids[sl]]) mo = okey[ids[sl]] < mo ? okey[ids[sl]] : mo;
      if (mark == 1) f |= changed[ids[sl]];
      if (mark == 0) f |= ids[sl] >= mark_from;
      if (mark == 2) f |= !alive[ids[sl]];
    }
    maxkey[ninternal + leaf] = m;
    if (only_changed) minokey[ninternal + leaf] = mo;
    if (mark >= 0) flag[ninternal + leaf] = (unsigned char)f;
  }
  for (int l = s->h - 1; l >= 0; l--) {
    const size_t first = ((size_t)1 << l) - 1, m = (size_t)1 << l;
    PAR_FOR()
    for (size_t g = first; g < first + m; g++) {
      const unsigned long long a = maxkey[2 * g + 1], b = maxkey[2 * g + 2];
      maxkey[g] = a > b ? a : b;
      if (only_changed) minokey[g] = minokey[2 * g + 1] < minokey[2 * g + 2] ? minokey[2 * g + 1] : minokey[2 * g + 2];
      if (mark >= 0) flag[g] = flag[2 * g + 1] | flag[2 * g + 2];
    }
  }
}

/* Keys of rows [0, n). */
static void set_keys(dpc_state *s, size_t n) {
  const int *rho = s->rho;
  const unsigned char *alive = s->alive;
  unsigned long long *key = s->key;
  PAR_FOR()
  for (size_t i = 0; i < n; i++) key[i] = alive[i] ? dpc_key(rho[i], i) : 0; /* 0: never denser */
}

/* rho of every point from scratch: 0, or -1 with a pc_fail message (the per-leaf search's lists). */
static int compute_rho(dpc_state *s) {
  const size_t n = s->n, d = s->d;
  const double dc = s->dc, dc2 = s->dc2;
  const float *x = s->x;
  int *rho = s->rho;
  const unsigned char *alive = s->alive;
  long *work = s->work;
  if (s->p.index == DPC_INDEX_NONE) {
    PAR_FOR(HOST_ONLY(schedule(dynamic, 64)) GPU_THREADS)
    for (size_t i = 0; i < n; i++) {
      int c = 0;
      for (size_t j = 0; j < n; j++) c += alive[j] && dpc_d2(x + i * d, x + j * d, d) < dc2;
      rho[i] = alive[i] ? c : 0;
      work[i] += (long)n;
    }
    return 0;
  }
  const float *xs = s->xs;
  const int *ids = s->ids, *lcount = s->lcount, *vp = s->vp;
  const unsigned long long *lmax2 = s->lmax2, *rmin2 = s->rmin2, *maxkey = s->maxkey, *skey = s->skey;
  DPC_DEVICE_ONLY const unsigned long long *minokey = s->minokey, *okey = s->okey;
  const unsigned char *flag = s->flag, *changed = s->changed;
  const size_t ninternal = s->ninternal, nslots = s->nslots;
  if (s->p.rho_search == DPC_SEARCH_POINT) {
    PAR_FOR(HOST_ONLY(schedule(dynamic, VPT_LEAF)) GPU_THREADS)
    for (size_t sl = 0; sl < nslots; sl++) {
      if ((int)(sl % VPT_LEAF) >= lcount[sl / VPT_LEAF]) continue;
      const vpt_view v = VPT_VIEW;
      long nd = 0;
      const int i = ids[sl];
      rho[i] = vpt_count(&v, xs + sl * d, dc, dc2, -1, 0, NULL, 0, NULL, 0, &nd);
      work[i] += nd;
    }
    return 0;
  }
  return dpc_rho_by_leaf(s); /* --rho-search leaf (dpc_leaf.c) */
}

/* The absolute peak: the densest point gets dep -1 and the largest distance to any point. */
static void set_peak_delta(dpc_state *s) {
  const size_t n = s->n, d = s->d;
  const float *x = s->x;
  const unsigned char *alive = s->alive;
  const unsigned long long *key = s->key;
  int *dep = s->dep;
  double *delta2 = s->delta2;
  unsigned long long top = 0;
  PAR_FOR(reduction(max : top) GPU_REDUCTION(n))
  for (size_t i = 0; i < n; i++) top = key[i] > top ? key[i] : top;
  const size_t t = 0xffffffffu - (unsigned)(top & 0xffffffffu);
  s->top = t;
  double far = 0.0;
  PAR_FOR(reduction(max : far) GPU_REDUCTION(n))
  for (size_t j = 0; j < n; j++)
    if (alive[j]) far = fmax(far, dpc_d2(x + t * d, x + j * d, d));
  long *work = s->work;
  PAR_FOR()
  for (size_t k = 0; k < 1; k++) {
    dep[t] = -1;
    delta2[t] = far;
    work[t] += (long)n;
  }
}

/* delta and dep of every point (incremental 0), or of the points the paper's two cases name after
 * an insertion (1) or a deletion (2). Returns the points that searched the whole tree, or -1 with
 * a pc_fail message (memory for the per-leaf search's lists). */
static long compute_delta(dpc_state *s, int incremental) {
  const size_t n = s->n, d = s->d;
  const double dc2 = s->dc2;
  const float *x = s->x;
  const int *rho = s->rho;
  const unsigned long long *key = s->key;
  int *dep = s->dep;
  double *delta2 = s->delta2;
  unsigned char *global = s->global;
  const unsigned char *alive = s->alive;
  const unsigned char *changed = s->changed;
  long *work = s->work;
  if (s->p.index == DPC_INDEX_NONE) {
    PAR_FOR(HOST_ONLY(schedule(dynamic, 64)) GPU_THREADS)
    for (size_t i = 0; i < n; i++) {
      if (!alive[i]) {
        dep[i] = -1;
        delta2[i] = 0.0;
        global[i] = 0;
        continue;
      }
      const unsigned long long ki = key[i];
      double best = INFINITY;
      int bj = -1;
      long nd = 0;
      for (size_t j = 0; j < n; j++) {
        if (key[j] <= ki) continue;
        nd++;
        const double e = dpc_d2(x + i * d, x + j * d, d);
        if (e < best) { /* j ascending: ties keep the lowest index */
          best = e;
          bj = (int)j;
        }
      }
      dep[i] = bj;
      delta2[i] = best;
      global[i] = 0;
      work[i] += nd;
    }
    set_peak_delta(s);
    return 0;
  }
  const float *xs = s->xs;
  const int *ids = s->ids, *lcount = s->lcount, *vp = s->vp;
  const unsigned long long *lmax2 = s->lmax2, *rmin2 = s->rmin2, *maxkey = s->maxkey, *skey = s->skey;
  DPC_DEVICE_ONLY const unsigned long long *minokey = s->minokey, *okey = s->okey;
  const unsigned char *flag = s->flag;
  const size_t ninternal = s->ninternal, nslots = s->nslots;
  if (!incremental && s->p.delta_search == DPC_SEARCH_LEAF) {
    if (dpc_delta_by_leaf(s) != 0) return -1;
  } else {
  /* every point (from scratch), or the points of case (i): new, rho changed, or the old peak */
  PAR_FOR(HOST_ONLY(schedule(dynamic, VPT_LEAF)) GPU_THREADS)
  for (size_t sl = 0; sl < nslots; sl++) {
    if ((int)(sl % VPT_LEAF) >= lcount[sl / VPT_LEAF]) continue;
    const int i = ids[sl];
    global[i] = 0;
    /* after an insertion, case (ii) below handles the unchanged points; after a deletion an
     * unchanged point keeps its dependent while that one lives and is still denser */
    if (incremental && !changed[i] && dep[i] >= 0 && (incremental == 1 || (alive[dep[i]] && key[dep[i]] > key[i])))
      continue;
    const vpt_view v = VPT_VIEW;
    const float *q = xs + sl * d;
    long nd = 0;
    double best = dc2;
    int bj = -1;
    vpt_nearest_denser(&v, q, key[i], &best, &bj, 0, &nd); /* within d_c: the covered leaves */
    if (bj < 0) {                                          /* none closer than d_c: the whole tree */
      best = INFINITY;
      global[i] = 1;
      vpt_nearest_denser(&v, q, key[i], &best, &bj, 0, &nd);
    }
    dep[i] = bj;
    delta2[i] = best;
    work[i] += nd;
  }
  }
  if (incremental == 1) {
    /* case (ii): an unchanged point keeps its dependent unless a changed point closer than its
     * delta became denser. Per leaf first (the leaf's points processed together): a ball around
     * its first point holding the leaf, widened by the leaf's largest delta, must reach a changed
     * point denser than the leaf's least dense point; then per point in those leaves. */
    tree_refresh(s, -1, 0, 1); /* maxkey: the changed points' keys */
    unsigned char *lneed = s->lneed;
    int *lcand = s->lcand;
    const size_t nleaves = s->nleaves;
    PAR_FOR(HOST_ONLY(schedule(dynamic, 16)) GPU_THREADS)
    for (size_t leaf = 0; leaf < nleaves; leaf++) {
      const int c = lcount[leaf];
      const float *centre = xs + leaf * VPT_LEAF * d;
      double r2 = 0.0, b2 = -1.0;
      unsigned long long kmin = ~0ULL, kmax = 0;
      for (int t = 0; t < c; t++) {
        const size_t sl = leaf * VPT_LEAF + (size_t)t;
        const int i = ids[sl];
        r2 = fmax(r2, dpc_d2(centre, xs + sl * d, d));
        if (changed[i] || dep[i] < 0) continue;
        b2 = fmax(b2, delta2[i]);
        kmin = key[i] < kmin ? key[i] : kmin;
        kmax = key[i] > kmax ? key[i] : kmax;
      }
      long nd = c;
      int need = 0;
      if (b2 >= 0.0) {
        const vpt_view v = VPT_VIEW;
        need = vpt_changed_near(&v, centre, sqrt(r2) + sqrt(b2), kmin, kmax, lcand + leaf * VPT_CAND, &nd);
      }
      lneed[leaf] = (unsigned char)need;
      if (c > 0) work[ids[leaf * VPT_LEAF]] += nd;
    }
    PAR_FOR(HOST_ONLY(schedule(dynamic, VPT_LEAF)) GPU_THREADS)
    for (size_t sl = 0; sl < nslots; sl++) {
      const size_t leaf = sl / VPT_LEAF;
      if ((int)(sl % VPT_LEAF) >= lcount[leaf] || !lneed[leaf]) continue;
      const int i = ids[sl];
      if (changed[i] || dep[i] < 0) continue;
      const unsigned long long kp = key[i];
      long nd = 0;
      double best = delta2[i];
      int bj = dep[i];
      if (lneed[leaf] <= VPT_CAND) { /* the listed leaves hold every candidate */
        for (int c = 0; c < lneed[leaf]; c++) {
          const size_t other = (size_t)lcand[leaf * VPT_CAND + (size_t)c];
          for (int t = 0; t < lcount[other]; t++) {
            const size_t so = other * VPT_LEAF + (size_t)t;
            const int j = ids[so];
            if (skey[so] <= kp || !changed[j] || okey[j] >= kp) continue;
            nd++;
            const double e = dpc_d2(xs + sl * d, xs + so * d, d);
            if (e < best || (e == best && j < bj)) {
              best = e;
              bj = j;
            }
          }
        }
      } else {
        const vpt_view v = VPT_VIEW;
        vpt_nearest_denser(&v, xs + sl * d, kp, &best, &bj, 1, &nd);
      }
      dep[i] = bj;
      delta2[i] = best;
      work[i] += nd;
    }
  }
  set_peak_delta(s);
  long globals = 0;
  PAR_FOR(reduction(+ : globals) GPU_REDUCTION(n))
  for (size_t i = 0; i < n; i++) globals += global[i];
  return globals;
}

/* Peak order: larger gamma first, ties to the lower index. */
typedef struct {
  double gamma;
  int id;
} peak_t;

static int peak_better(peak_t a, peak_t b) { return a.gamma > b.gamma || (a.gamma == b.gamma && a.id < b.id); }
static int cmp_peak(const void *a, const void *b) {
  const peak_t *x = a, *y = b;
  return peak_better(*x, *y) ? -1 : peak_better(*y, *x) ? 1 : 0;
}

DEV_FUNCS_BEGIN
static inline double dpc_gamma(int rho, double delta2) { return (double)rho * sqrt(delta2); }
DEV_FUNCS_END

/* The points other than `top` whose gamma's bits are >= lo (mode 0), or that pass the thresholds
 * (mode 1), gathered on the device and copied back: `count` of them (known beforehand). NULL
 * with a pc_fail message when memory cannot be had. */
static peak_t *gather_candidates(dpc_state *s, size_t top, int mode, unsigned long long lo, size_t count) {
  const size_t n = s->n;
  const int *rho = s->rho;
  const unsigned char *alive = s->alive;
  const double *delta2 = s->delta2;
  const double rho_min = s->p.rho_min, delta_min = s->p.delta_min;
  const size_t cap = count ? count : 1;
  int *cid = pc_try_alloc(cap, sizeof *cid, "peak candidates");
  double *cg = pc_try_alloc(cap, sizeof *cg, "peak candidates");
  long *fill = pc_try_alloc(1, sizeof *fill, "peak candidates");
  peak_t *pk = pc_try_alloc(cap + 1, sizeof *pk, "peaks");
  if (!cid || !cg || !fill || !pk) {
    free(cid), free(cg), free(fill), free(pk);
    return NULL;
  }
  *fill = 0;
  /* device: cid, cg[cap] the peak candidates' ids and gammas, fill[1] their count */
  DEV_ENTER(map(alloc : cid[0 : cap], cg[0 : cap]) map(to : fill[0 : 1]))
  PAR_FOR()
  for (size_t i = 0; i < n; i++) {
    const double g = dpc_gamma(rho[i], delta2[i]);
    const int take = alive[i] && (mode == 0 ? i != top && dpc_to_bits(g) >= lo : rho[i] >= rho_min && sqrt(delta2[i]) >= delta_min);
    if (!take) continue;
    long slot;
    PAR_ATOMIC_CAPTURE
    slot = (*fill)++;
    if ((size_t)slot < cap) {
      cid[slot] = (int)i;
      cg[slot] = g;
    }
  }
  DEV_UPDATE(from(cid[0 : count], cg[0 : count]))
  DEV_EXIT(map(delete : cid[0 : cap], cg[0 : cap], fill[0 : 1]))
  for (size_t c = 0; c < count; c++) pk[c] = (peak_t){cg[c], cid[c]};
  free(cid), free(cg), free(fill);
  qsort(pk, count, sizeof *pk, cmp_peak); /* the device's order of arrival is not deterministic */
  return pk;
}

static int cmp_u64_desc(const void *a, const void *b) {
  const unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
  return (x < y) - (x > y);
}

/* Points other than `top` whose gamma's bits are >= lo. */
static size_t count_at_least(dpc_state *s, size_t top, unsigned long long lo) {
  const size_t n = s->n;
  const int *rho = s->rho;
  const unsigned char *alive = s->alive;
  const double *delta2 = s->delta2;
  long c = 0;
  PAR_FOR(reduction(+ : c) GPU_REDUCTION(n))
  for (size_t i = 0; i < n; i++) c += alive[i] && i != top && dpc_to_bits(dpc_gamma(rho[i], delta2[i])) >= lo;
  return (size_t)c;
}

/* Peak selection on the device: the top K by gamma through a search for the gamma threshold (bits of
 * non-negative doubles order as the doubles; each step one counting pass), then only the
 * candidates come back to be sorted; thresholds: the selected points come back. Returns the peak
 * ids in rank order (the absolute peak first) and their number in *k, or NULL with a message. */
static int *select_peaks(dpc_state *s, size_t *k) {
  const size_t n = s->n, top = s->top;
  const int *rho = s->rho;
  const unsigned char *alive = s->alive;
  const double *delta2 = s->delta2;
  peak_t *pk;
  size_t count = 0;
  if (s->p.peaks > 0) {
    const size_t live = s->n - s->dead;
    const size_t others = ((size_t)s->p.peaks < live ? (size_t)s->p.peaks : live) - 1;
    if (others > 0) {
      /* the largest lo with count(>= lo) >= others; stop early once at most `enough` qualify */
      const size_t enough = others + (others > 4096 ? others : 4096);
      unsigned long long lo = 0, hi = 0;
      PAR_FOR(reduction(max : hi) GPU_REDUCTION(n))
      for (size_t i = 0; i < n; i++) {
        const unsigned long long b = i != top ? dpc_to_bits(dpc_gamma(rho[i], delta2[i])) : 0;
        hi = b > hi ? b : hi;
      }
      hi++;
      count = live - 1;
      /* a first guess from a sample of DPC_PEAK_SAMPLE points (every n/S-th): the gamma that about
       * others + (enough - others) / 2 points reach; usually one counting pass settles it */
      const size_t ns = n - 1 > DPC_PEAK_SAMPLE ? DPC_PEAK_SAMPLE : n - 1, stride = (n - 1) / ns;
      unsigned long long *sample = pc_try_alloc(ns, sizeof *sample, "peak sample");
      if (!sample) return NULL;
      /* device: sample[ns] the sampled points' gammas as ordered bits */
      DEV_ENTER(map(alloc : sample[0 : ns]))
      PAR_FOR()
      for (size_t q = 0; q < ns; q++) {
        const size_t i = q * stride < top ? q * stride : q * stride + 1; /* skips top */
        sample[q] = dpc_to_bits(dpc_gamma(rho[i], delta2[i]));
      }
      DEV_UPDATE(from(sample[0 : ns]))
      DEV_EXIT(map(delete : sample[0 : ns]))
      qsort(sample, ns, sizeof *sample, cmp_u64_desc);
      const size_t want = others + (enough - others) / 2, r = (size_t)((double)ns * (double)want / (double)(n - 1));
      if (r < ns && live == n) { /* (sampled ids may be deleted ones: no guess then) */
        const unsigned long long guess = sample[r];
        const size_t c = count_at_least(s, top, guess);
        if (c >= others) lo = guess, count = c;
        else hi = guess;
      }
      free(sample);
      while (hi - lo > 1 && count > enough) {
        const unsigned long long mid = lo + (hi - lo) / 2;
        const size_t c = count_at_least(s, top, mid);
        if (c >= others) lo = mid, count = c;
        else hi = mid;
      }
      pk = gather_candidates(s, top, 0, lo, count);
      count = others;
    } else {
      pk = pc_try_alloc(1, sizeof *pk, "peaks");
    }
    if (!pk) return NULL;
    memmove(pk + 1, pk, count * sizeof *pk);
    pk[0] = (peak_t){0.0, (int)top};
    count++;
  } else {
    const double rho_min = s->p.rho_min, delta_min = s->p.delta_min;
    long c = 0;
    PAR_FOR(reduction(+ : c) GPU_REDUCTION(n))
    for (size_t i = 0; i < n; i++) c += alive[i] && rho[i] >= rho_min && sqrt(delta2[i]) >= delta_min;
    if (c == 0) {
      int rmax = 0;
      double dmax = 0.0;
      PAR_FOR(reduction(max : rmax, dmax) GPU_REDUCTION(n))
      for (size_t i = 0; i < n; i++) {
        rmax = rho[i] > rmax ? rho[i] : rmax;
        dmax = fmax(dmax, sqrt(delta2[i]));
      }
      pc_fail("dpc: --rho-min %g and --delta-min %g select no peak (largest rho %d, largest delta %g)", rho_min,
              delta_min, rmax, dmax);
      return NULL;
    }
    count = (size_t)c;
    pk = gather_candidates(s, top, 1, 0, count);
    if (!pk) return NULL;
    for (size_t i = 1; i < count; i++) /* the absolute peak first (it is selected, see dpc.h) */
      if ((size_t)pk[i].id == top) {
        const peak_t t = pk[i];
        memmove(pk + 1, pk, i * sizeof *pk);
        pk[0] = t;
      }
  }
  int *ids = pc_try_alloc(count, sizeof *ids, "peaks");
  for (size_t c = 0; ids && c < count; c++) ids[c] = pk[c].id;
  free(pk);
  *k = count;
  return ids;
}

/* Peaks (select_peaks), then labels by pointer jumping on the device. Returns the number of
 * clusters, or -1 with a message when no peak is selected or memory cannot be had. */
static long assign_labels(dpc_state *s, double *transfer_s) {
  const size_t n = s->n;
  int *dep = s->dep, *label = s->label, *rank = s->rank;
  (void)transfer_s;
  size_t k = 0;
  int *peak_ids = select_peaks(s, &k);
  if (!peak_ids) return -1;
  int *a = s->ptr_a, *b = s->ptr_b;
  /* device: peak_ids[k], the peaks by rank */
  DEV_ENTER(map(to : peak_ids[0 : k]))
  PAR_FOR()
  for (size_t i = 0; i < n; i++) {
    rank[i] = -1;
    a[i] = dep[i] < 0 ? (int)i : dep[i];
  }
  PAR_FOR()
  for (size_t c = 0; c < k; c++) {
    rank[peak_ids[c]] = (int)c;
    a[peak_ids[c]] = peak_ids[c];
  }
  for (;;) {
    long moved = 0;
    PAR_FOR(reduction(+ : moved) GPU_REDUCTION(n))
    for (size_t i = 0; i < n; i++) {
      const int p = a[i], q = a[p];
      b[i] = q;
      moved += q != p;
    }
    int *t = a;
    a = b;
    b = t;
    if (!moved) break;
  }
  PAR_FOR()
  for (size_t i = 0; i < n; i++) label[i] = rank[a[i]];
  DEV_EXIT(map(delete : peak_ids[0 : k]))
  free(peak_ids);
  return (long)k;
}

static void state_free(dpc_state *s) {
  dpc_leaf_free(s);
  tree_free(s);
  free(s->rho), free(s->dep), free(s->label), free(s->ptr_a), free(s->ptr_b), free(s->rank), free(s->delta2);
  free(s->key), free(s->okey), free(s->changed), free(s->global), free(s->alive), free(s->dead_host), free(s->work), free(s->leaf_of), free(s->lnew);
  free(s);
}

dpc_state *dpc_open(const float *x, size_t n, size_t capacity, size_t d, const dpc_params *params, dpc_result *res) {
  memset(res, 0, sizeof *res);
  if (!(params->dc > 0.0)) {
    pc_fail("dpc: d_c must be > 0, got %g", params->dc);
    return NULL;
  }
  if (n == 0 || capacity < n || capacity > (size_t)INT_MAX) {
    pc_fail("dpc: need 1 to %d points, got %zu", INT_MAX, capacity);
    return NULL;
  }
  dpc_state *s = pc_try_alloc(1, sizeof *s, "dpc state");
  if (!s) return NULL;
  memset(s, 0, sizeof *s);
  s->x = (float *)x;
  s->n = n, s->cap = capacity, s->d = d, s->nx = capacity * d;
  s->p = *params;
  s->dc = params->dc;
  s->dc2 = params->dc * params->dc;
  const size_t cap = capacity;
  s->rho = pc_try_alloc(cap, sizeof *s->rho, "rho");
  s->dep = pc_try_alloc(cap, sizeof *s->dep, "dependent points");
  s->label = pc_try_alloc(cap, sizeof *s->label, "labels");
  s->ptr_a = pc_try_alloc(cap, sizeof *s->ptr_a, "label pointers");
  s->ptr_b = pc_try_alloc(cap, sizeof *s->ptr_b, "label pointers");
  s->rank = pc_try_alloc(cap, sizeof *s->rank, "peak ranks");
  s->delta2 = pc_try_alloc(cap, sizeof *s->delta2, "delta");
  s->key = pc_try_alloc(cap, sizeof *s->key, "density keys");
  s->okey = pc_try_alloc(cap, sizeof *s->okey, "density keys before a batch");
  s->changed = pc_try_alloc(cap, sizeof *s->changed, "changed flags");
  s->global = pc_try_alloc(cap, sizeof *s->global, "search flags");
  s->alive = pc_try_alloc(cap, sizeof *s->alive, "deletion flags");
  s->dead_host = calloc(cap, 1);
  s->work = pc_try_alloc(cap, sizeof *s->work, "distance counts");
  s->leaf_of = pc_try_alloc(cap, sizeof *s->leaf_of, "leaf of each point");
  s->lnew = NULL;
  if (!s->rho || !s->dep || !s->label || !s->ptr_a || !s->ptr_b || !s->rank || !s->delta2 || !s->key || !s->okey || !s->changed ||
      !s->global || !s->alive || !s->dead_host || !s->work || !s->leaf_of) {
    state_free(s);
    return NULL;
  }
  DPC_DEVICE_ONLY int *rho = s->rho, *dep = s->dep, *label = s->label, *ptr_a = s->ptr_a, *ptr_b = s->ptr_b, *rank = s->rank;
  DPC_DEVICE_ONLY int *leaf_of = s->leaf_of;
  DPC_DEVICE_ONLY double *delta2 = s->delta2;
  unsigned long long *key = s->key;
  DPC_DEVICE_ONLY unsigned long long *okey = s->okey;
  DPC_DEVICE_ONLY unsigned char *changed = s->changed, *global = s->global, *alive = s->alive;
  long *work = s->work;
  DPC_DEVICE_ONLY const size_t nx = s->nx, n_in = n * d;

  const double t_start = pc_now();
  double t0 = t_start;
  /* device, for the state's life: x[nx = cap * d] the points (row-major); per point (cap, the
   * capacity with the points to insert) rho, dep, label, ptr_a / ptr_b (pointer jumping), rank,
   * delta2, key / okey (density keys now and before a batch), changed, global, alive, work
   * (distance counts), leaf_of */
  DEV_ENTER(map(alloc : x[0 : nx], rho[0 : cap], dep[0 : cap], label[0 : cap], ptr_a[0 : cap], ptr_b[0 : cap],
                rank[0 : cap], delta2[0 : cap], key[0 : cap], okey[0 : cap], changed[0 : cap], global[0 : cap], alive[0 : cap], work[0 : cap],
                leaf_of[0 : cap]))
  DEV_UPDATE(to(x[0 : n_in]))
  PAR_FOR()
  for (size_t i = 0; i < cap; i++) {
    work[i] = 0;
    changed[i] = 0;
    key[i] = 0;
    alive[i] = 1;
  }
  double t1 = pc_now();
  res->phase_s[DPC_PHASE_TRANSFERS] += t1 - t0;
  if (params->index == DPC_INDEX_VPTREE && tree_build(s, n) != 0) {
    dpc_close(s);
    return NULL;
  }
  t0 = pc_now();
  res->phase_s[DPC_PHASE_TREE] += t0 - t1;
  if (compute_rho(s) != 0 || (pc_stop_requested() && pc_fail_stopped("density peaks: interrupted after rho"))) {
    dpc_close(s);
    return NULL;
  }
  set_keys(s, n);
  if (s->has_tree) tree_refresh(s, -1, 0, 0);
  t1 = pc_now();
  res->phase_s[DPC_PHASE_RHO] += t1 - t0;
  if ((res->global_searches = compute_delta(s, 0)) < 0 ||
      (pc_stop_requested() && pc_fail_stopped("density peaks: interrupted after delta"))) {
    dpc_close(s);
    return NULL;
  }
  dpc_leaf_free(s);
  t0 = pc_now();
  res->phase_s[DPC_PHASE_DELTA] += t0 - t1;
  res->clusters = assign_labels(s, &res->phase_s[DPC_PHASE_TRANSFERS]);
  t1 = pc_now();
  res->phase_s[DPC_PHASE_ASSIGN] += t1 - t0;
  res->distances = take_work(work, n) + s->build_distances;
  s->build_distances = 0;
  if (res->clusters < 0) {
    dpc_close(s);
    return NULL;
  }
  DEV_UPDATE(from(label[0 : n]))
  res->phase_s[DPC_PHASE_TRANSFERS] += pc_now() - t1;
  res->total_s = pc_now() - t_start;
  res->height = s->has_tree ? s->h : 0;
  res->leaves = s->has_tree ? (long)s->nleaves : 0;
  return s;
}

/* Routes new rows [n0, n1) to leaves (widening the bounds on the way) and counts them per leaf;
 * returns the fullest leaf's count after the insertion. */
static int route_batch(dpc_state *s, size_t n0, size_t n1, long long *ndist) {
  const size_t d = s->d, ninternal = s->ninternal, nleaves = s->nleaves;
  const int h = s->h;
  const float *x = s->x;
  const int *vp = s->vp, *lcount = s->lcount;
  const unsigned long long *split2 = s->split2;
  unsigned long long *lmax2 = s->lmax2, *rmin2 = s->rmin2;
  int *leaf_of = s->leaf_of, *lnew = s->lnew;
  PAR_FOR()
  for (size_t leaf = 0; leaf < nleaves; leaf++) lnew[leaf] = 0;
  PAR_FOR()
  for (size_t q = n0; q < n1; q++) {
    size_t g = 0;
    for (int l = 0; l < h; l++) {
      if (vp[g] < 0) {
        g = 2 * g + 1;
        continue;
      }
      const double e = dpc_d2(x + q * d, x + (size_t)vp[g] * d, d);
      const unsigned long long eb = dpc_to_bits(e);
      if (eb < split2[g]) {
        dpc_atomic_max_bits(&lmax2[g], eb);
        g = 2 * g + 1;
      } else {
        dpc_atomic_min_bits(&rmin2[g], eb);
        g = 2 * g + 2;
      }
    }
    const int leaf = (int)(g - ninternal);
    leaf_of[q] = leaf;
    PAR_ATOMIC
    lnew[leaf] += 1;
  }
  *ndist += (long long)(n1 - n0) * h;
  int fullest = 0;
  PAR_FOR(reduction(max : fullest) GPU_REDUCTION(nleaves))
  for (size_t leaf = 0; leaf < nleaves; leaf++) fullest = lcount[leaf] + lnew[leaf] > fullest ? lcount[leaf] + lnew[leaf] : fullest;
  return fullest;
}

int dpc_insert(dpc_state *s, size_t count, dpc_result *res) {
  memset(res, 0, sizeof *res);
  const size_t n0 = s->n, n1 = n0 + count, d = s->d;
  if (count == 0) return 0;
  if (n1 > s->cap) return pc_fail("dpc: inserting %zu points beyond the capacity of %zu", count, s->cap);
  float *x = s->x;
  int *rho = s->rho;
  unsigned char *changed = s->changed;
  long *work = s->work;
  long long ndist = 0;
  const double t_start = pc_now();
  double t0 = t_start;
  DPC_DEVICE_ONLY const size_t off = n0 * d, len = count * d;
  DEV_UPDATE(to(x[off : len]))
  double t1 = pc_now();
  res->phase_s[DPC_PHASE_TRANSFERS] += t1 - t0;
  s->n = n1;
  if (s->p.index == DPC_INDEX_NONE) { /* no index to update: everything again */
    if (compute_rho(s) != 0) return -1;
    set_keys(s, n1);
    t0 = pc_now();
    res->phase_s[DPC_PHASE_RHO] += t0 - t1;
    if ((res->global_searches = compute_delta(s, 0)) < 0) return -1;
    t1 = pc_now();
    res->phase_s[DPC_PHASE_DELTA] += t1 - t0;
  } else {
    /* the tree: route, grow until the batch fits (or rebuild), insert */
    int rebuilt = 0;
    for (;;) {
      int *lnew = pc_try_alloc(s->nleaves, sizeof *lnew, "new points per leaf");
      if (!lnew) return -1;
      DPC_DEVICE_ONLY const size_t nl = s->nleaves;
      /* device: lnew[nl], the batch's points per leaf */
      DEV_ENTER(map(alloc : lnew[0 : nl]))
      s->lnew = lnew;
      const int fullest = route_batch(s, n0, n1, &ndist);
      if (fullest <= VPT_LEAF) break; /* lnew stays mapped for the insertion below */
      DEV_EXIT(map(delete : lnew[0 : nl]))
      free(lnew);
      s->lnew = NULL;
      if (s->h + 1 > s->h_limit || s->h + 1 > VPT_MAX_HEIGHT) {
        if (tree_build(s, n1) != 0) return -1;
        ndist += s->build_distances;
        s->build_distances = 0;
        res->rebuilds++;
        rebuilt = 1;
        break;
      }
      if (tree_split_leaves(s, &ndist) != 0) return -1;
      res->splits++;
    }
    if (!rebuilt) {
      int *lnew = s->lnew, *lcount = s->lcount, *ids = s->ids;
      const int *leaf_of = s->leaf_of;
      float *xs = s->xs;
      DPC_DEVICE_ONLY const size_t nl = s->nleaves;
      PAR_FOR()
      for (size_t q = n0; q < n1; q++) {
        const int leaf = leaf_of[q];
        int slot;
        PAR_ATOMIC_CAPTURE
        slot = lcount[leaf]++;
        const size_t sl = (size_t)leaf * VPT_LEAF + (size_t)slot;
        ids[sl] = (int)q;
        for (size_t k = 0; k < d; k++) xs[sl * d + k] = x[q * d + k];
      }
      DEV_EXIT(map(delete : lnew[0 : nl]))
      free(lnew);
      s->lnew = NULL;
    }
    tree_refresh(s, 0, (long)n0, 0); /* flags: subtrees holding new points */
    t0 = pc_now();
    res->phase_s[DPC_PHASE_TREE] += t0 - t1;

    /* the keys before the batch (new points: 0), for case (ii) of delta */
    {
      const unsigned long long *key = s->key;
      unsigned long long *okey_w = s->okey;
      PAR_FOR()
      for (size_t i = 0; i < n1; i++) okey_w[i] = i < n0 ? key[i] : 0;
    }
    /* rho: new points by the tree; old ones incidentally or separately */
    const float *xs = s->xs;
    const int *ids = s->ids, *lcount = s->lcount, *vp = s->vp;
    const unsigned long long *lmax2 = s->lmax2, *rmin2 = s->rmin2, *maxkey = s->maxkey, *skey = s->skey;
    DPC_DEVICE_ONLY const unsigned long long *minokey = s->minokey, *okey = s->okey;
    const unsigned char *flag = s->flag;
    const size_t ninternal = s->ninternal, nslots = s->nslots;
    const double dc = s->dc, dc2 = s->dc2;
    const int incidental = s->p.rho_update == DPC_RHO_INCIDENTAL;
    const unsigned char *alive = s->alive;
    PAR_FOR(GPU_THREADS)
    for (size_t q = n0; q < n1; q++) {
      const vpt_view v = VPT_VIEW;
      long nd = 0;
      rho[q] = vpt_count(&v, x + q * d, dc, dc2, -1, 0, incidental ? rho : NULL, 1, changed, (long)n0, &nd);
      work[q] += nd;
    }
    if (!incidental) {
      PAR_FOR(HOST_ONLY(schedule(dynamic, VPT_LEAF)) GPU_THREADS)
      for (size_t sl = 0; sl < nslots; sl++) {
        if ((int)(sl % VPT_LEAF) >= lcount[sl / VPT_LEAF]) continue;
        const int i = ids[sl];
        if ((size_t)i >= n0) continue;
        const vpt_view v = VPT_VIEW;
        long nd = 0;
        const int c = vpt_count(&v, xs + sl * d, dc, dc2, (long)n0, 0, NULL, 0, NULL, 0, &nd);
        if (c) {
          rho[i] += c;
          changed[i] = 1;
        }
        work[i] += nd;
      }
    }
    PAR_FOR()
    for (size_t q = n0; q < n1; q++) changed[q] = 1;
    set_keys(s, n1);
    tree_refresh(s, -1, 0, 0);
    t1 = pc_now();
    res->phase_s[DPC_PHASE_RHO] += t1 - t0;
    if ((res->global_searches = compute_delta(s, 1)) < 0) return -1;
    PAR_FOR()
    for (size_t i = 0; i < n1; i++) changed[i] = 0;
    t0 = pc_now();
    res->phase_s[DPC_PHASE_DELTA] += t0 - t1;
    t1 = t0;
  }
  res->clusters = assign_labels(s, &res->phase_s[DPC_PHASE_TRANSFERS]);
  t0 = pc_now();
  res->phase_s[DPC_PHASE_ASSIGN] += t0 - t1;
  res->distances = take_work(work, n1) + ndist + s->build_distances;
  s->build_distances = 0;
  res->total_s = pc_now() - t_start;
  res->height = s->has_tree ? s->h : 0;
  res->leaves = s->has_tree ? (long)s->nleaves : 0;
  return res->clusters < 0 ? -1 : 0;
}

int dpc_delete(dpc_state *s, const int *del, size_t count, dpc_result *res) {
  memset(res, 0, sizeof *res);
  if (count == 0) return 0;
  const size_t n = s->n, d = s->d;
  if (s->dead + count >= n) return pc_fail("dpc: deleting %zu of the %zu points left would leave none", count, n - s->dead);
  for (size_t k = 0; k < count; k++) {
    int rc = 0;
    if (del[k] < 0 || (size_t)del[k] >= n) rc = pc_fail("dpc: cannot delete point %d: there are %zu", del[k], n);
    else if (s->dead_host[del[k]]) rc = pc_fail("dpc: point %d is deleted twice", del[k]);
    if (rc) { /* a refused batch leaves the state as it was (the library's model lives on) */
      while (k-- > 0) s->dead_host[del[k]] = 0;
      return rc;
    }
    s->dead_host[del[k]] = 1;
  }
  s->dead += count;
  int *rho = s->rho, *dep = s->dep;
  double *delta2 = s->delta2;
  unsigned char *changed = s->changed, *alive = s->alive;
  long *work = s->work;
  const float *x = s->x;
  const double t_start = pc_now();
  /* device: del[count], the ids to delete */
  DEV_ENTER(map(to : del[0 : count]))
  double t0 = pc_now();
  res->phase_s[DPC_PHASE_TRANSFERS] += t0 - t_start;
  PAR_FOR()
  for (size_t k = 0; k < count; k++) alive[del[k]] = 0;
  if (s->p.index == DPC_INDEX_NONE) { /* no index to update: everything again */
    if (compute_rho(s) != 0) return -1;
    set_keys(s, n);
    double t1 = pc_now();
    res->phase_s[DPC_PHASE_RHO] += t1 - t0;
    if ((res->global_searches = compute_delta(s, 0)) < 0) return -1;
    res->phase_s[DPC_PHASE_DELTA] += pc_now() - t1;
  } else {
    const size_t ninternal = s->ninternal, nslots = s->nslots, nleaves = s->nleaves;
    const double dc = s->dc, dc2 = s->dc2;
    const int incidental = s->p.rho_update == DPC_RHO_INCIDENTAL;
    if (!incidental) tree_refresh(s, 2, 0, 0); /* flags: subtrees holding deleted points */
    double t1 = pc_now();
    double tree_s = t1 - t0;
    const float *cxs = s->xs;
    const int *cids = s->ids, *clcount = s->lcount, *vp = s->vp;
    const unsigned long long *lmax2 = s->lmax2, *rmin2 = s->rmin2, *maxkey = s->maxkey, *skey = s->skey;
    DPC_DEVICE_ONLY const unsigned long long *minokey = s->minokey, *okey = s->okey;
    const unsigned char *flag = s->flag;
    if (!incidental) { /* separate: each live point counts the deleted points near it, still in the leaves */
      PAR_FOR(HOST_ONLY(schedule(dynamic, VPT_LEAF)) GPU_THREADS)
      for (size_t sl = 0; sl < nslots; sl++) {
        if ((int)(sl % VPT_LEAF) >= clcount[sl / VPT_LEAF]) continue;
        const int i = cids[sl];
        if (!alive[i]) continue;
        const float *xs = cxs;
        const int *ids = cids, *lcount = clcount;
        const vpt_view v = VPT_VIEW;
        long nd = 0;
        const int c = vpt_count(&v, xs + sl * d, dc, dc2, -1, 1, NULL, 0, NULL, 0, &nd);
        if (c) {
          rho[i] -= c;
          changed[i] = 1;
        }
        work[i] += nd;
      }
    }
    const double t2 = pc_now();
    /* the tree: deleted ids leave their leaves (order kept); the bounds stay valid */
    int *ids = s->ids, *lcount = s->lcount;
    float *xs = s->xs;
    PAR_FOR()
    for (size_t leaf = 0; leaf < nleaves; leaf++) {
      int w = 0;
      for (int t = 0; t < lcount[leaf]; t++) {
        const size_t from = leaf * VPT_LEAF + (size_t)t, to = leaf * VPT_LEAF + (size_t)w;
        const int j = ids[from];
        if (!alive[j]) continue;
        ids[to] = j;
        for (size_t k = 0; k < d; k++) xs[to * d + k] = xs[from * d + k];
        w++;
      }
      for (int t = w; t < lcount[leaf]; t++) ids[leaf * VPT_LEAF + (size_t)t] = -1;
      lcount[leaf] = w;
    }
    const double t3 = pc_now();
    tree_s += t3 - t2;
    if (incidental) { /* each deleted point takes 1 from the live points near it */
      PAR_FOR(GPU_THREADS)
      for (size_t k = 0; k < count; k++) {
        const vpt_view v = VPT_VIEW;
        long nd = 0;
        const size_t q = (size_t)del[k];
        (void)vpt_count(&v, x + q * d, dc, dc2, -1, 0, rho, -1, changed, (long)n, &nd);
        work[q] += nd;
      }
    }
    PAR_FOR()
    for (size_t k = 0; k < count; k++) {
      rho[del[k]] = 0;
      dep[del[k]] = -1;
      delta2[del[k]] = 0.0;
      changed[del[k]] = 0;
    }
    set_keys(s, n);
    tree_refresh(s, -1, 0, 0);
    const double t4 = pc_now();
    res->phase_s[DPC_PHASE_TREE] += tree_s;
    res->phase_s[DPC_PHASE_RHO] += (t2 - t1) + (t4 - t3);
    if ((res->global_searches = compute_delta(s, 2)) < 0) return -1;
    PAR_FOR()
    for (size_t i = 0; i < n; i++) changed[i] = 0;
    res->phase_s[DPC_PHASE_DELTA] += pc_now() - t4;
  }
  DEV_EXIT(map(delete : del[0 : count]))
  const double t5 = pc_now();
  res->clusters = assign_labels(s, &res->phase_s[DPC_PHASE_TRANSFERS]);
  res->phase_s[DPC_PHASE_ASSIGN] += pc_now() - t5;
  res->distances = take_work(work, n);
  res->total_s = pc_now() - t_start;
  res->height = s->has_tree ? s->h : 0;
  res->leaves = s->has_tree ? (long)s->nleaves : 0;
  return res->clusters < 0 ? -1 : 0;
}

size_t dpc_alive(const dpc_state *s, unsigned char *alive_out) {
  for (size_t i = 0; i < s->n; i++) alive_out[i] = (unsigned char)!s->dead_host[i];
  return s->n - s->dead;
}

size_t dpc_results(dpc_state *s, int *rho_out, double *delta_out, int *dep_out, int *labels_out) {
  const size_t n = s->n;
  int *rho = s->rho, *dep = s->dep, *label = s->label;
  double *delta2 = s->delta2;
  DEV_UPDATE(from(rho[0 : n], delta2[0 : n], dep[0 : n], label[0 : n]))
  for (size_t i = 0; i < n; i++) {
    if (rho_out) rho_out[i] = rho[i];
    if (delta_out) delta_out[i] = sqrt(delta2[i]);
    if (dep_out) dep_out[i] = dep[i];
    if (labels_out) labels_out[i] = label[i];
  }
  return n;
}

void dpc_close(dpc_state *s) {
  if (!s) return;
  DPC_DEVICE_ONLY float *x = s->x;
  DPC_DEVICE_ONLY int *rho = s->rho, *dep = s->dep, *label = s->label, *ptr_a = s->ptr_a, *ptr_b = s->ptr_b, *rank = s->rank;
  DPC_DEVICE_ONLY int *leaf_of = s->leaf_of;
  DPC_DEVICE_ONLY double *delta2 = s->delta2;
  DPC_DEVICE_ONLY unsigned long long *key = s->key, *okey = s->okey;
  DPC_DEVICE_ONLY unsigned char *changed = s->changed, *global = s->global, *alive = s->alive;
  DPC_DEVICE_ONLY long *work = s->work;
  DPC_DEVICE_ONLY const size_t nx = s->nx, cap = s->cap;
  DEV_EXIT(map(delete : x[0 : nx], rho[0 : cap], dep[0 : cap], label[0 : cap], ptr_a[0 : cap], ptr_b[0 : cap],
               rank[0 : cap], delta2[0 : cap], key[0 : cap], okey[0 : cap], changed[0 : cap], global[0 : cap], alive[0 : cap], work[0 : cap],
               leaf_of[0 : cap]))
  state_free(s);
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double dpc_dc_percentile(const float *x, size_t n, size_t d, double percent, size_t samples, uint64_t seed) {
  if (n < 2) return pc_fail("dpc: --dc-percent needs at least 2 points");
  const double pairs = (double)n * (double)(n - 1) / 2.0;
  const int all = pairs <= (double)samples;
  const size_t m = all ? (size_t)pairs : samples;
  double *v = pc_try_alloc(m, sizeof *v, "sampled distances");
  if (!v) return -1;
  size_t k = 0;
  if (all) {
    for (size_t i = 0; i < n; i++)
      for (size_t j = i + 1; j < n; j++) v[k++] = dpc_d2(x + i * d, x + j * d, d);
  } else {
    for (; k < m; k++) {
      const size_t i = dpc_draw(seed, 2 * k + 1, n);
      size_t j = dpc_draw(seed, 2 * k + 2, n - 1);
      if (j >= i) j++; /* j != i */
      v[k] = dpc_d2(x + i * d, x + j * d, d);
    }
  }
  qsort(v, m, sizeof *v, cmp_double);
  double pos = ceil(percent / 100.0 * (double)m) - 1.0;
  if (pos < 0) pos = 0;
  const double dc = sqrt(v[(size_t)pos]);
  free(v);
  if (!(dc > 0.0))
    return pc_fail("dpc: the %g%% quantile of the pairwise distances is 0 (many duplicate points); give --dc", percent);
  return dc;
}

/*
 * dpc_leaf.c - GDPC's per-leaf searches (Liu et al., sections 4.1 and 4.2: "points of one leaf
 * processed together"), --rho-search leaf and --delta-search leaf; one source for the three
 * variants (common/par.h). See dpc.c for the tree and the point searches, and dpc_tree.h for why
 * these kernels live apart.
 *
 * Parallel strategy: passes of one thread per leaf (PAR_FOR) find what a leaf's points share,
 * then one team per leaf searches with it.
 *  1. Every leaf's ball (leaf_balls).
 *  2. Every leaf's candidate leaves (leaf_lists), the paper's cover_leaves of its points: the
 *     leaves that its ball widened by d_c reaches (the walk of vpt_leaves_near) and whose own balls
 *     come that near. One compact list for all leaves: a counting walk, a prefix sum of the counts
 *     (pc_exclusive_scan), a filling walk. rho and delta share it; delta then keeps in each leaf's
 *     list the leaves denser than the leaf's least dense point, the densest first (dense_lists).
 *  3. One team per leaf (PAR_TEAMS_FOR, 32 threads on the GPU) takes its list in rounds of up to
 *     DPC_LEAF_LIST leaves: their points are staged in team memory (TEAM_LOCAL) by all its threads
 *     (TEAM_PAR_FOR), then its threads, one per point of the leaf (TEAM_PAR_FOR), search them with
 *     the point method's tests, so every variant and method gives the same rho, delta and
 *     dependent points. delta keeps each point's best so far in team memory between rounds.
 * The team kernels compute nothing between their parallel loops but the rounds' bounds, which
 * every thread reads from the list's offsets in global memory, and their parallel loops take
 * every scalar by value (default(firstprivate)): the SPMD form that clang gives these kernels on
 * the GPU then hands no value from one thread to the others. (A walk inside the team kernel
 * whose results decided the rounds failed on the GPU: docs/performance.md.)
 *
 * Distance computations (the report's count): the walks' vantage distances and ball tests, of the
 * counting walk and of the filling walk, each leaf's ball (a distance per pair of its points), and
 * in the team kernels one per ball test and one per point compared.
 */
#include "dpc_tree.h"
#include "scan.h"

/* Tuning knobs: settings of speed, not of results; -DNAME=value (make KNOBS='-DNAME=value')
 * overrides one, `info` lists them and a report names those changed (knobs.h). */
/* The per-leaf searches (--rho-search / --delta-search leaf): candidate leaves a team takes per
 * round, and the team-local room for their points' coordinates (8 KB: 32 leaves of 2-d points).
 * Leaves of more than DPC_STAGE_FLOATS coordinates are read from the leaf copies in place. */
#define DPC_LEAF_LIST_DEFAULT 32
#ifndef DPC_LEAF_LIST
#define DPC_LEAF_LIST DPC_LEAF_LIST_DEFAULT
#endif
PC_KNOB(DPC_LEAF_LIST)
#define DPC_STAGE_FLOATS_DEFAULT 2048
#ifndef DPC_STAGE_FLOATS
#define DPC_STAGE_FLOATS DPC_STAGE_FLOATS_DEFAULT
#endif
PC_KNOB(DPC_STAGE_FLOATS)

/* Every leaf's ball (leaf_lists' first pass): its centre, the member whose farthest member is
 * nearest (lctr: its slot in the leaf), and the radius reaching its farthest member (lrad). */
static int leaf_balls(dpc_state *s) {
  const size_t nleaves = s->nleaves, d = s->d;
  const float *xs = s->xs;
  const int *ids = s->ids, *lcount = s->lcount;
  long *work = s->work;
  int *lctr = pc_try_alloc(nleaves, sizeof *lctr, "leaf centres");
  double *lrad = pc_try_alloc(nleaves, sizeof *lrad, "leaf radii");
  if (!lctr || !lrad) {
    free(lctr), free(lrad);
    return -1;
  }
  /* device: per leaf lctr its ball's centre slot, lrad its radius */
  DEV_ENTER(map(alloc : lctr[0 : nleaves], lrad[0 : nleaves]))
  PAR_FOR(HOST_ONLY(schedule(dynamic, 16)) GPU_THREADS)
  for (size_t leaf = 0; leaf < nleaves; leaf++) {
    const size_t base = leaf * VPT_LEAF;
    const int cnt = lcount[leaf];
    double best = INFINITY;
    int ct = 0;
    for (int t = 0; t < cnt; t++) {
      double m = 0.0;
      for (int u = 0; u < cnt; u++) m = fmax(m, dpc_d2(xs + (base + (size_t)t) * d, xs + (base + (size_t)u) * d, d));
      if (m < best) {
        best = m;
        ct = t;
      }
      work[ids[base + (size_t)t]] += cnt;
    }
    lctr[leaf] = ct;
    lrad[leaf] = cnt > 0 ? sqrt(best) : 0.0;
  }
  s->lctr = lctr, s->lrad = lrad, s->nballs = nleaves;
  return 0;
}

void dpc_leaf_free(dpc_state *s) {
  int *lctr = s->lctr, *lnear = s->lnear;
  double *lrad = s->lrad;
  long *lnoff = s->lnoff;
  DPC_DEVICE_ONLY const size_t nb = s->nballs, nn = s->nnear;
  if (lnear) {
    DEV_EXIT(map(delete : lnear[0 : nn], lnoff[0 : nb + 1]))
    free(lnear), free(lnoff);
  }
  if (lctr) { /* the balls alone, when the lists found no memory */
    DEV_EXIT(map(delete : lctr[0 : nb], lrad[0 : nb]))
    free(lctr), free(lrad);
  }
  s->lctr = NULL, s->lrad = NULL, s->lnear = NULL, s->lnoff = NULL;
}

DEV_FUNCS_BEGIN

/* A lower bound of the distance from q to any point of leaf o: from q to o's centre, less o's
 * radius. */
static inline double leaf_gap(const float *q, const float *xs, const int *lctr, const double *lrad, int o, size_t d) {
  return sqrt(dpc_d2(q, xs + ((size_t)o * VPT_LEAF + (size_t)lctr[o]) * d, d)) - lrad[o];
}

/* The candidate leaves of a non-empty leaf: the leaves its ball widened by d_c reaches whose own
 * balls come that near, so every point within d_c of one of its points lies in one of them.
 * Writes them to out in the walk's order (unless out is NULL: counting only); returns their
 * number. *ndist receives the vantage distances and the ball tests. */
static inline long leaf_candidates(const vpt_view *v, const int *lctr, const double *lrad, size_t leaf, double dc,
                                   int *out, long *ndist) {
  const size_t d = v->d;
  const float *centre = v->xs + (leaf * VPT_LEAF + (size_t)lctr[leaf]) * d;
  const double reach = lrad[leaf] + dc;
  int stack[VPT_STACK], found[DPC_LEAF_LIST]; /* the walk hands its leaves over DPC_LEAF_LIST at a time */
  int top = 0;
  long nc = 0, nd = 0;
  stack[top++] = 0;
  while (top > 0) {
    const int nf = vpt_leaves_near(v, centre, reach, stack, &top, found, DPC_LEAF_LIST, &nd);
    for (int f = 0; f < nf; f++) {
      nd++;
      if (!vpt_may_hold(leaf_gap(centre, v->xs, lctr, lrad, found[f], d), reach)) continue;
      if (out) out[nc] = found[f];
      nc++;
    }
  }
  *ndist += nd;
  return nc;
}

/* Sorts a[0..m) by key[a[i]], largest first, in place (heapsort: a heap with the smallest key at
 * its root, which goes to the end). */
static inline void sift_down(int *a, int root, int m, const unsigned long long *key) {
  for (;;) {
    int child = 2 * root + 1;
    if (child >= m) return;
    if (child + 1 < m && key[a[child + 1]] < key[a[child]]) child++;
    if (!(key[a[child]] < key[a[root]])) return;
    const int t = a[root];
    a[root] = a[child];
    a[child] = t;
    root = child;
  }
}
static inline void sort_largest_first(int *a, int m, const unsigned long long *key) {
  for (int r = m / 2 - 1; r >= 0; r--) sift_down(a, r, m, key);
  for (int end = m - 1; end > 0; end--) {
    const int t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift_down(a, 0, end, key);
  }
}

/* Element e of a round's staging: the round's leaves cand[] one after the other, each at the
 * stride of a full leaf (per_leaf floats), consecutive threads on consecutive floats; a leaf's
 * free slots are left alone. */
static inline void stage_float(float *stage, const float *xs, const int *lcount, const int *cand, size_t per_leaf,
                               size_t d, size_t e) {
  const size_t c = e / per_leaf, w = e % per_leaf;
  if (w < (size_t)lcount[cand[c]] * d) stage[e] = xs[(size_t)cand[c] * per_leaf + w];
}

DEV_FUNCS_END

/* Every leaf's ball and candidate leaves (leaf_candidates), once per from-scratch run (both
 * searches use them; dpc_leaf_free releases them): leaf l's are lnear[lnoff[l] .. lnoff[l + 1]),
 * in the walk's order. One thread per leaf counts them, a prefix sum places them, and the same
 * walk again writes them: the list is compact and the same in every variant. It holds an int per
 * leaf and candidate: nleaves^2 at most, when d_c spans the data. */
static int leaf_lists(dpc_state *s) {
  if (s->lnear) return 0;
  if (!s->lctr && leaf_balls(s) != 0) return -1;
  const size_t d = s->d, ninternal = s->ninternal, nleaves = s->nleaves;
  const double dc = s->dc;
  const float *x = s->x, *xs = s->xs;
  const int *rho = s->rho, *ids = s->ids, *lcount = s->lcount, *vp = s->vp;
  const unsigned long long *lmax2 = s->lmax2, *rmin2 = s->rmin2, *maxkey = s->maxkey, *skey = s->skey;
  DPC_DEVICE_ONLY const unsigned long long *minokey = s->minokey, *okey = s->okey;
  const unsigned char *flag = s->flag, *changed = s->changed, *alive = s->alive;
  const int *lctr = s->lctr;
  const double *lrad = s->lrad;
  long *work = s->work;
  long *lnoff = pc_try_alloc(nleaves + 1, sizeof *lnoff, "candidate leaf offsets");
  if (!lnoff) return -1; /* the balls stay for dpc_leaf_free */
  /* device: lnoff[nleaves + 1], each leaf's first candidate in lnear (then the total) */
  DEV_ENTER(map(alloc : lnoff[0 : nleaves + 1]))
  PAR_FOR(HOST_ONLY(schedule(dynamic, 16)) GPU_THREADS)
  for (size_t leaf = 0; leaf <= nleaves; leaf++) { /* the entry after the last leaf (0) takes the total */
    long nc = 0;
    if (leaf < nleaves && lcount[leaf] > 0) {
      const vpt_view v = VPT_VIEW;
      long nd = 0;
      nc = leaf_candidates(&v, lctr, lrad, leaf, dc, NULL, &nd);
      work[ids[leaf * VPT_LEAF]] += nd;
    }
    lnoff[leaf] = nc;
  }
  const long total = pc_exclusive_scan(lnoff, nleaves + 1);
  int *lnear = total < 0 ? NULL : pc_try_alloc((size_t)total, sizeof *lnear, "candidate leaves");
  if (!lnear) {
    DEV_EXIT(map(delete : lnoff[0 : nleaves + 1]))
    free(lnoff);
    return -1;
  }
  /* device: lnear[total], every leaf's candidate leaves, leaf after leaf */
  DEV_ENTER(map(alloc : lnear[0 : total]))
  PAR_FOR(HOST_ONLY(schedule(dynamic, 16)) GPU_THREADS)
  for (size_t leaf = 0; leaf < nleaves; leaf++) {
    if (lcount[leaf] == 0) continue;
    const vpt_view v = VPT_VIEW;
    long nd = 0;
    leaf_candidates(&v, lctr, lrad, leaf, dc, lnear + lnoff[leaf], &nd);
    work[ids[leaf * VPT_LEAF]] += nd;
  }
  s->lnear = lnear, s->lnoff = lnoff, s->nnear = (size_t)total;
  return 0;
}

/* Candidate leaves a team takes per round: as many as its team memory stages (at most
 * DPC_LEAF_LIST), or DPC_LEAF_LIST when a leaf is too wide to stage (read in place). */
static int round_leaves(size_t per_leaf) {
  if (per_leaf > DPC_STAGE_FLOATS) return DPC_LEAF_LIST;
  return DPC_STAGE_FLOATS / per_leaf < DPC_LEAF_LIST ? (int)(DPC_STAGE_FLOATS / per_leaf) : DPC_LEAF_LIST;
}

/* rho of every point from scratch, per leaf (--rho-search leaf; GDPC section 4.1). Every
 * neighbour of a leaf's points lies in its candidate leaves (leaf_lists). One team per leaf takes
 * them round by round, staged in team memory; each thread counts its point's neighbours there
 * (leaves whose ball is farther than d_c from the point skipped) by the point method's test,
 * d2 < dc2 on the same leaf copies: rho is the same. */
int dpc_rho_by_leaf(dpc_state *s) {
  const size_t d = s->d, nleaves = s->nleaves, nslots = s->nslots, per_leaf = VPT_LEAF * d;
  const double dc = s->dc, dc2 = s->dc2;
  const float *xs = s->xs;
  const int *ids = s->ids, *lcount = s->lcount;
  int *rho = s->rho;
  long *work = s->work;
  if (leaf_lists(s) != 0) return -1;
  const int *lctr = s->lctr, *lnear = s->lnear;
  const double *lrad = s->lrad;
  const long *lnoff = s->lnoff;
  PAR_FOR()
  for (size_t sl = 0; sl < nslots; sl++)
    if ((int)(sl % VPT_LEAF) < lcount[sl / VPT_LEAF]) rho[ids[sl]] = 0;
  const int staged = per_leaf <= DPC_STAGE_FLOATS, chunk = round_leaves(per_leaf);
  DPC_DEVICE_ONLY const int teams = pc_device_teams(nleaves < INT_MAX ? (int)nleaves : INT_MAX);
  PAR_TEAMS_FOR(GPU_ONLY(num_teams(teams) thread_limit(VPT_LEAF)))
  for (size_t leaf = 0; leaf < nleaves; leaf++) {
    float stage[DPC_STAGE_FLOATS];
    TEAM_LOCAL(stage)
    const size_t base = leaf * VPT_LEAF;
    const int cnt = lcount[leaf], ncand = (int)(lnoff[leaf + 1] - lnoff[leaf]);
    for (int r = 0; r < ncand; r += chunk) { /* bounds from global memory: every thread the same rounds */
      const int nc = ncand - r < chunk ? ncand - r : chunk;
      const int *cand = lnear + lnoff[leaf] + r;
      const size_t nstage = staged ? (size_t)nc * per_leaf : 0;
      /* scalars by value: on the GPU no thread hands them to the others through team memory */
      TEAM_PAR_FOR(default(firstprivate) shared(stage))
      for (size_t e = 0; e < nstage; e++) stage_float(stage, xs, lcount, cand, per_leaf, d, e);
      TEAM_PAR_FOR(default(firstprivate) shared(stage))
      for (int t = 0; t < cnt; t++) {
        const size_t sl = base + (size_t)t;
        const float *q = xs + sl * d;
        int c = 0;
        long m = 0;
        for (int k = 0; k < nc; k++) {
          const int o = cand[k], len = lcount[o];
          m++;
          if (!vpt_may_hold(leaf_gap(q, xs, lctr, lrad, o, d), dc)) continue; /* no point of leaf o within d_c */
          m += len;
          if (staged)
            for (int u = 0; u < len; u++) c += dpc_d2(q, stage + ((size_t)k * VPT_LEAF + (size_t)u) * d, d) < dc2;
          else
            for (int u = 0; u < len; u++) c += dpc_d2(q, xs + ((size_t)o * VPT_LEAF + (size_t)u) * d, d) < dc2;
        }
        rho[ids[sl]] += c;
        work[ids[sl]] += m;
      }
    }
  }
  return 0;
}

/* delta's candidate leaves, in place (after rho: the lists are not needed unfiltered again): each
 * leaf's list keeps the leaves holding a point denser than the leaf's least dense one (maxkey
 * above its least key), the densest first (GDPC section 4.2 sorts the candidates by density; the
 * keys are distinct). Returns their number per leaf (nleaves entries, on the device). */
static int *dense_lists(dpc_state *s) {
  const size_t ninternal = s->ninternal, nleaves = s->nleaves;
  const int *ids = s->ids, *lcount = s->lcount;
  const unsigned long long *key = s->key, *maxkey = s->maxkey;
  int *lnear = s->lnear;
  const long *lnoff = s->lnoff;
  int *lndense = pc_try_alloc(nleaves, sizeof *lndense, "denser candidate leaves");
  if (!lndense) return NULL;
  /* device: lndense[nleaves], per leaf the number of its candidates kept (those with a denser point) */
  DEV_ENTER(map(alloc : lndense[0 : nleaves]))
  PAR_FOR(HOST_ONLY(schedule(dynamic, 16)) GPU_THREADS)
  for (size_t leaf = 0; leaf < nleaves; leaf++) {
    const unsigned long long *leafkey = maxkey + ninternal;
    unsigned long long kmin = ~0ULL;
    for (int t = 0; t < lcount[leaf]; t++) {
      const unsigned long long k = key[ids[leaf * VPT_LEAF + (size_t)t]];
      kmin = k < kmin ? k : kmin;
    }
    int *list = lnear + lnoff[leaf];
    const int len = (int)(lnoff[leaf + 1] - lnoff[leaf]);
    int m = 0;
    for (int k = 0; k < len; k++)
      if (leafkey[list[k]] > kmin) list[m++] = list[k];
    sort_largest_first(list, m, leafkey);
    lndense[leaf] = m;
  }
  return lndense;
}

/* delta and dep of every point from scratch, per leaf (GDPC section 4.2 with a leaf's points
 * together; --delta-search leaf). One team per leaf takes its candidate leaves (every point within
 * d_c of one of its points; dense_lists: only those with a point denser than the leaf's least
 * dense one, the densest first) round by round, staged in team memory. Each thread keeps its
 * point's nearest denser candidate (ties to the lower id) in team memory, skipping the leaves
 * whose ball cannot hold a point nearer than both d_c and the best so far, and the rest of the
 * list once a leaf holds no denser point. Closer than d_c, it is the point method's answer (every
 * point that close was a candidate); otherwise the whole tree is searched from it, the point
 * method's global search, which ends at the same point (a better start prunes more). Releases
 * the balls and lists at its end (their filtering is delta's). */
int dpc_delta_by_leaf(dpc_state *s) {
  const size_t d = s->d, ninternal = s->ninternal, nleaves = s->nleaves, per_leaf = VPT_LEAF * d;
  const double dc = s->dc, dc2 = s->dc2;
  const float *x = s->x, *xs = s->xs;
  const int *rho = s->rho, *ids = s->ids, *lcount = s->lcount, *vp = s->vp;
  const unsigned long long *key = s->key, *lmax2 = s->lmax2, *rmin2 = s->rmin2, *maxkey = s->maxkey, *skey = s->skey;
  DPC_DEVICE_ONLY const unsigned long long *minokey = s->minokey, *okey = s->okey;
  const unsigned char *flag = s->flag, *changed = s->changed, *alive = s->alive;
  int *dep = s->dep;
  double *delta2 = s->delta2;
  unsigned char *global = s->global;
  long *work = s->work;
  int *lndense = leaf_lists(s) == 0 ? dense_lists(s) : NULL;
  if (!lndense) return -1;
  const int *lctr = s->lctr, *lnear = s->lnear;
  const double *lrad = s->lrad;
  const long *lnoff = s->lnoff;
  const int staged = per_leaf <= DPC_STAGE_FLOATS, chunk = round_leaves(per_leaf);
  DPC_DEVICE_ONLY const int teams = pc_device_teams(nleaves < INT_MAX ? (int)nleaves : INT_MAX);
  PAR_TEAMS_FOR(GPU_ONLY(num_teams(teams) thread_limit(VPT_LEAF)))
  for (size_t leaf = 0; leaf < nleaves; leaf++) {
    double best2[VPT_LEAF];
    TEAM_LOCAL(best2)
    int bestj[VPT_LEAF];
    TEAM_LOCAL(bestj)
    float stage[DPC_STAGE_FLOATS];
    TEAM_LOCAL(stage)
    const size_t base = leaf * VPT_LEAF;
    const int cnt = lcount[leaf], ncand = lndense[leaf];
    TEAM_PAR_FOR(default(firstprivate) shared(best2, bestj)) /* scalars by value, as in dpc_rho_by_leaf */
    for (int t = 0; t < cnt; t++) {
      best2[t] = INFINITY;
      bestj[t] = -1;
    }
    for (int r = 0; r < ncand; r += chunk) { /* bounds from global memory: every thread the same rounds */
      const int nc = ncand - r < chunk ? ncand - r : chunk;
      const int *cand = lnear + lnoff[leaf] + r;
      const size_t nstage = staged ? (size_t)nc * per_leaf : 0;
      TEAM_PAR_FOR(default(firstprivate) shared(stage))
      for (size_t e = 0; e < nstage; e++) stage_float(stage, xs, lcount, cand, per_leaf, d, e);
      TEAM_PAR_FOR(default(firstprivate) shared(stage, best2, bestj))
      for (int t = 0; t < cnt; t++) {
        const size_t sl = base + (size_t)t;
        const float *q = xs + sl * d;
        const unsigned long long kp = key[ids[sl]];
        double best = best2[t];
        int bj = bestj[t];
        long m = 0;
        for (int k = 0; k < nc; k++) {
          const int o = cand[k], len = lcount[o];
          if (maxkey[ninternal + (size_t)o] <= kp) break; /* this leaf and the rest of the list: none denser */
          m++;
          if (!vpt_may_hold(leaf_gap(q, xs, lctr, lrad, o, d), best < dc2 ? sqrt(best) : dc)) continue;
          for (int u = 0; u < len; u++) {
            const size_t so = (size_t)o * VPT_LEAF + (size_t)u;
            if (skey[so] <= kp) continue;
            m++;
            const double e2 = staged ? dpc_d2(q, stage + ((size_t)k * VPT_LEAF + (size_t)u) * d, d) : dpc_d2(q, xs + so * d, d);
            const int j = ids[so];
            if (e2 < best || (e2 == best && j < bj)) {
              best = e2;
              bj = j;
            }
          }
        }
        best2[t] = best;
        bestj[t] = bj;
        work[ids[sl]] += m;
      }
    }
    TEAM_PAR_FOR(default(firstprivate) shared(best2, bestj))
    for (int t = 0; t < cnt; t++) {
      const size_t sl = base + (size_t)t;
      const int i = ids[sl];
      double best = best2[t];
      int bj = bestj[t];
      long m = 0;
      global[i] = 0;
      if (!(best < dc2)) { /* none closer than d_c: the whole tree, from the best candidate */
        const vpt_view v = VPT_VIEW;
        global[i] = 1;
        vpt_nearest_denser(&v, xs + sl * d, key[i], &best, &bj, 0, &m);
      }
      dep[i] = bj;
      delta2[i] = best;
      work[i] += m;
    }
  }
  DEV_EXIT(map(delete : lndense[0 : nleaves]))
  free(lndense);
  dpc_leaf_free(s);
  return 0;
}

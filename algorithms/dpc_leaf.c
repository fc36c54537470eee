/*
 * dpc_leaf.c - GDPC's per-leaf searches (Liu et al., sections 4.1 and 4.2: "points of one leaf
 * processed together"), --rho-search leaf and --delta-search leaf; one source for the three
 * variants (common/par.h). See dpc.c for the tree and the point searches, and dpc_tree.h for why
 * these kernels live apart.
 *
 * Parallel strategy: first every leaf's ball (one thread per leaf); then one team per leaf
 * (PAR_TEAMS_FOR, 32 threads on the GPU): its first thread walks the tree once with the leaf's
 * ball widened by d_c and lists the leaves that may hold a neighbour of any of its points; round
 * by round up to DPC_LEAF_LIST of them are staged in team memory (TEAM_LOCAL) and the team's
 * threads, one per point of the leaf (TEAM_PAR_FOR), search them with the point method's tests,
 * so every variant and method gives the same rho, delta and dependent points.
 */
#include "dpc_tree.h"

/* Every leaf's ball for the per-leaf searches (once per from-scratch run; dpc_leaf_balls_free releases
 * them): its centre, the member whose farthest member is nearest (lctr: its slot in the leaf),
 * and the radius reaching its farthest member (lrad). */
static void leaf_balls(dpc_state *s) {
  if (s->lctr) return;
  const size_t nleaves = s->nleaves, d = s->d;
  const float *xs = s->xs;
  const int *ids = s->ids, *lcount = s->lcount;
  long *work = s->work;
  int *lctr = pc_xalloc(nleaves, sizeof *lctr, "leaf centres");
  double *lrad = pc_xalloc(nleaves, sizeof *lrad, "leaf radii");
  DEV_ENTER(map(alloc : lctr[0 : nleaves], lrad[0 : nleaves]))
  PAR_FOR(HOST_ONLY(schedule(dynamic, 16)) GPU_ONLY(thread_limit(PC_GPU_THREADS)))
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
}

void dpc_leaf_balls_free(dpc_state *s) {
  if (!s->lctr) return;
  int *lctr = s->lctr;
  double *lrad = s->lrad;
  DPC_DEVICE_ONLY const size_t nb = s->nballs;
  DEV_EXIT(map(delete : lctr[0 : nb], lrad[0 : nb]))
  free(lctr), free(lrad);
  s->lctr = NULL, s->lrad = NULL;
}

/* rho of every point from scratch, per leaf (--rho-search leaf; GDPC section 4.1). With every
 * leaf's ball, one team per leaf: every neighbour of its points lies within r + d_c of its centre,
 * so the leaves that ball reaches (one walk, by the team's first thread) and whose own balls come
 * that near hold them all. Round by round, up to DPC_LEAF_LIST of those leaves are staged in team
 * memory and each thread counts its point's neighbours there (leaves whose ball is farther than
 * d_c from the point skipped) by the point method's test, d2 < dc2 on the same leaf copies: rho is
 * the same. */
void dpc_rho_by_leaf(dpc_state *s) {
  const size_t d = s->d;
  const double dc = s->dc, dc2 = s->dc2;
  const float *x = s->x, *xs = s->xs;
  int *rho = s->rho;
  const unsigned char *alive = s->alive, *flag = s->flag, *changed = s->changed;
  long *work = s->work;
  const int *ids = s->ids, *lcount = s->lcount, *vp = s->vp;
  const unsigned long long *lmax2 = s->lmax2, *rmin2 = s->rmin2, *maxkey = s->maxkey, *skey = s->skey;
  DPC_DEVICE_ONLY const unsigned long long *minokey = s->minokey, *okey = s->okey;
  const size_t ninternal = s->ninternal, nslots = s->nslots;
  const size_t nleaves = s->nleaves, per_leaf = VPT_LEAF * d;
  leaf_balls(s);
  const int *lctr = s->lctr;
  const double *lrad = s->lrad;
  PAR_FOR()
  for (size_t sl = 0; sl < nslots; sl++)
    if ((int)(sl % VPT_LEAF) < lcount[sl / VPT_LEAF]) rho[ids[sl]] = 0;
  const int staged = per_leaf <= DPC_STAGE_FLOATS;
  const int chunk = staged ? (DPC_STAGE_FLOATS / per_leaf < DPC_LEAF_LIST ? (int)(DPC_STAGE_FLOATS / per_leaf) : DPC_LEAF_LIST) : 1;
  DPC_DEVICE_ONLY const int teams = pc_device_teams(nleaves < INT_MAX ? (int)nleaves : INT_MAX);
  PAR_TEAMS_FOR(GPU_ONLY(num_teams(teams) thread_limit(VPT_LEAF)))
  for (size_t leaf = 0; leaf < nleaves; leaf++) {
    const int cnt = lcount[leaf];
    if (cnt == 0) continue;
    const size_t base = leaf * VPT_LEAF;
    int cand[DPC_LEAF_LIST], coff[DPC_LEAF_LIST + 1];
    TEAM_LOCAL(cand)
    TEAM_LOCAL(coff)
    float stage[DPC_STAGE_FLOATS];
    TEAM_LOCAL(stage)
    const vpt_view v = VPT_VIEW;
    const float *centre = xs + (base + (size_t)lctr[leaf]) * d;
    const double reach = lrad[leaf] + dc;
    long nd = 0;
    int stack[VPT_STACK];
    int top = 0;
    stack[top++] = 0;
    while (top > 0) {
      int found[DPC_LEAF_LIST]; /* the first thread's */
      const int nf = vpt_leaves_near(&v, centre, reach, stack, &top, found, chunk, &nd);
      int nc = 0;
      coff[0] = 0;
      for (int f = 0; f < nf; f++) { /* the balls of the leaves found: near enough? */
        const int o = found[f];
        nd++;
        const double e = sqrt(dpc_d2(centre, xs + ((size_t)o * VPT_LEAF + (size_t)lctr[o]) * d, d));
        if (!vpt_may_hold(e - lrad[o], reach)) continue;
        cand[nc] = o;
        coff[nc + 1] = coff[nc] + lcount[o];
        nc++;
      }
      if (nc == 0) continue;
      if (staged) {
        TEAM_PAR_FOR()
        for (size_t e = 0; e < (size_t)nc * per_leaf; e++) { /* leaf by leaf, consecutive threads consecutive floats */
          const size_t c = e / per_leaf, w = e % per_leaf;
          if (w < (size_t)(coff[c + 1] - coff[c]) * d) stage[(size_t)coff[c] * d + w] = xs[(size_t)cand[c] * per_leaf + w];
        }
      }
      TEAM_PAR_FOR()
      for (int t = 0; t < cnt; t++) {
        const size_t sl = base + (size_t)t;
        const float *q = xs + sl * d;
        int c = 0;
        long m = 0;
        for (int k = 0; k < nc; k++) {
          const int o = cand[k], len = coff[k + 1] - coff[k];
          m++;
          const double e = sqrt(dpc_d2(q, xs + ((size_t)o * VPT_LEAF + (size_t)lctr[o]) * d, d));
          if (!vpt_may_hold(e - lrad[o], dc)) continue; /* no point of leaf o within d_c */
          m += len;
          if (staged)
            for (int u = 0; u < len; u++) c += dpc_d2(q, stage + (size_t)(coff[k] + u) * d, d) < dc2;
          else
            for (int u = 0; u < len; u++) c += dpc_d2(q, xs + (size_t)o * per_leaf + (size_t)u * d, d) < dc2;
        }
        rho[ids[sl]] += c;
        work[ids[sl]] += m;
      }
    }
    work[ids[base]] += nd;
  }
}

/* delta and dep of every point from scratch, per leaf (GDPC section 4.2 with a leaf's points
 * together; --delta-search leaf). One team per leaf takes the candidate leaves of rho's per-leaf
 * search (every point within d_c of one of its points), less those without a point denser than
 * the leaf's least dense one, the densest first in each round. Each thread keeps its point's
 * nearest denser candidate (ties to the lower id), skipping the leaves whose ball cannot hold a
 * point nearer than both d_c and the best so far, and the rest of a round's leaves once they hold
 * no denser point. Closer than d_c, it is the point method's answer (every point that close was a
 * candidate); otherwise the whole tree is searched from it, the point method's global search,
 * which ends at the same point (a better start prunes more). */
void dpc_delta_by_leaf(dpc_state *s) {
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
  leaf_balls(s);
  const int *lctr = s->lctr;
  const double *lrad = s->lrad;
  const int staged = per_leaf <= DPC_STAGE_FLOATS;
  const int chunk = staged ? (DPC_STAGE_FLOATS / per_leaf < DPC_LEAF_LIST ? (int)(DPC_STAGE_FLOATS / per_leaf) : DPC_LEAF_LIST) : 1;
  DPC_DEVICE_ONLY const int teams = pc_device_teams(nleaves < INT_MAX ? (int)nleaves : INT_MAX);
  PAR_TEAMS_FOR(GPU_ONLY(num_teams(teams) thread_limit(VPT_LEAF)))
  for (size_t leaf = 0; leaf < nleaves; leaf++) {
    const int cnt = lcount[leaf];
    if (cnt == 0) continue;
    const size_t base = leaf * VPT_LEAF;
    int cand[DPC_LEAF_LIST], coff[DPC_LEAF_LIST + 1], bestj[VPT_LEAF];
    TEAM_LOCAL(cand)
    TEAM_LOCAL(coff)
    TEAM_LOCAL(bestj)
    double best2[VPT_LEAF];
    TEAM_LOCAL(best2)
    float stage[DPC_STAGE_FLOATS];
    TEAM_LOCAL(stage)
    unsigned long long kmin = ~0ULL;
    for (int t = 0; t < cnt; t++) {
      const unsigned long long k = key[ids[base + (size_t)t]];
      kmin = k < kmin ? k : kmin;
      best2[t] = INFINITY;
      bestj[t] = -1;
    }
    const vpt_view v = VPT_VIEW;
    const float *centre = xs + (base + (size_t)lctr[leaf]) * d;
    const double reach = lrad[leaf] + dc;
    long nd = 0;
    int stack[VPT_STACK];
    int top = 0;
    stack[top++] = 0;
    while (top > 0) {
      int found[DPC_LEAF_LIST]; /* the first thread's */
      const int nf = vpt_leaves_near(&v, centre, reach, stack, &top, found, chunk, &nd);
      int nc = 0;
      for (int f = 0; f < nf; f++) { /* near enough, and denser than the leaf's least dense point? */
        const int o = found[f];
        const unsigned long long mk = maxkey[ninternal + (size_t)o];
        if (mk <= kmin) continue;
        nd++;
        const double e = sqrt(dpc_d2(centre, xs + ((size_t)o * VPT_LEAF + (size_t)lctr[o]) * d, d));
        if (!vpt_may_hold(e - lrad[o], reach)) continue;
        int u = nc++; /* insertion by density: the densest leaf first */
        while (u > 0 && maxkey[ninternal + (size_t)cand[u - 1]] < mk) {
          cand[u] = cand[u - 1];
          u--;
        }
        cand[u] = o;
      }
      if (nc == 0) continue;
      coff[0] = 0;
      for (int c = 0; c < nc; c++) coff[c + 1] = coff[c] + lcount[cand[c]];
      if (staged) {
        TEAM_PAR_FOR()
        for (size_t e = 0; e < (size_t)nc * per_leaf; e++) { /* leaf by leaf, consecutive threads consecutive floats */
          const size_t c = e / per_leaf, w = e % per_leaf;
          if (w < (size_t)(coff[c + 1] - coff[c]) * d) stage[(size_t)coff[c] * d + w] = xs[(size_t)cand[c] * per_leaf + w];
        }
      }
      TEAM_PAR_FOR()
      for (int t = 0; t < cnt; t++) {
        const size_t sl = base + (size_t)t;
        const float *q = xs + sl * d;
        const unsigned long long kp = key[ids[sl]];
        double best = best2[t];
        int bj = bestj[t];
        long m = 0;
        for (int k = 0; k < nc; k++) {
          const int o = cand[k], len = coff[k + 1] - coff[k];
          if (maxkey[ninternal + (size_t)o] <= kp) break; /* this leaf and the rest: none denser */
          m++;
          const double e = sqrt(dpc_d2(q, xs + ((size_t)o * VPT_LEAF + (size_t)lctr[o]) * d, d));
          if (!vpt_may_hold(e - lrad[o], best < dc2 ? sqrt(best) : dc)) continue;
          for (int u = 0; u < len; u++) {
            const size_t so = (size_t)o * VPT_LEAF + (size_t)u;
            if (skey[so] <= kp) continue;
            m++;
            const double e2 = staged ? dpc_d2(q, stage + (size_t)(coff[k] + u) * d, d) : dpc_d2(q, xs + so * d, d);
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
    work[ids[base]] += nd;
    TEAM_PAR_FOR()
    for (int t = 0; t < cnt; t++) {
      const size_t sl = base + (size_t)t;
      const int i = ids[sl];
      double best = best2[t];
      int bj = bestj[t];
      long m = 0;
      global[i] = 0;
      if (!(best < dc2)) { /* none closer than d_c: the whole tree, from the best candidate */
        global[i] = 1;
        vpt_nearest_denser(&v, xs + sl * d, key[i], &best, &bj, 0, &m);
      }
      dep[i] = bj;
      delta2[i] = best;
      work[i] += m;
    }
  }
}

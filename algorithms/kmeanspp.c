/*
 * kmeanspp.c - D^2 sampling (k-means++ and k-means# rounds); see kmeanspp.h for the rule.
 *
 * Per round, on the device in the gpu variant (points, weights and work arrays are present):
 * the masses w_i D(i)^2 and their prefix sums (common/scan.c), the round's `draws` targets
 * from the host, one A-ary search per target (Okuda section 3.3: one team per target, its
 * threads compare the target with A evenly spaced wheel entries per level), and the update of
 * D(i)^2 and the nearest chosen point against the round's new points (one point per iteration,
 * Okuda section 3.2). Only the total and the picked indices come back each round.
 */
#include "kmeanspp.h"
#include "device.h"
#include "par.h"
#include "scan.h"
#include "synth.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void kmpp_wheel_search(const double *wheel, size_t n, const double *targets, long *picks, int count, int arity) {
  const size_t parts = (size_t)arity;
  PAR_TEAMS_FOR(GPU_ONLY(num_teams(pc_device_teams(count)) thread_limit(arity)))
  for (int q = 0; q < count; q++) {
    const double target = targets[q];
    size_t lo = 0, hi = n - 1; /* the answer lies in [lo, hi]; hi always qualifies */
    while (lo < hi) {
      /* parts of `step` candidates; those whose last candidate fails the test form a prefix */
      const size_t step = (hi - lo + parts) / parts;
      size_t failing = 0;
      TEAM_PAR_FOR(reduction(+ : failing))
      for (size_t part = 0; part < parts; part++) {
        const size_t last = lo + (part + 1) * step - 1;
        failing += last < hi && !(wheel[last + 1] > target);
      }
      lo += failing * step;
      hi = lo + step - 1 < hi ? lo + step - 1 : hi;
    }
    picks[q] = (long)lo;
  }
}

/* dist and nearest against the points picks[0..count) (positions base.. in chosen[]). */
static void kmpp_update_nearest(const float *x, size_t n, size_t d, size_t point_stride, size_t dim_stride,
                                const long *picks, int count, int base, double *dist, int *nearest) {
  PAR_FOR()
  for (size_t i = 0; i < n; i++) {
    double best = dist[i];
    int at = nearest[i];
    for (int q = 0; q < count; q++) {
      const size_t c = (size_t)picks[q];
      double s = 0.0;
      for (size_t j = 0; j < d; j++) {
        const double diff = (double)x[i * point_stride + j * dim_stride] - (double)x[c * point_stride + j * dim_stride];
        s += diff * diff;
      }
      if (s < best) { /* strict: ties stay with the earlier chosen point */
        best = s;
        at = base + q;
      }
    }
    dist[i] = best;
    nearest[i] = at;
  }
}

/* wheel = masses (the weights alone before any point is chosen), then its exclusive prefix
 * sums; returns the total. */
static double kmpp_fill_wheel(const float *w, const double *dist, double *wheel, size_t n, int none_chosen) {
  PAR_FOR()
  for (size_t i = 0; i < n; i++) wheel[i] = none_chosen ? (double)w[i] : (double)w[i] * dist[i];
  return pc_exclusive_scan_f64(wheel, n);
}

size_t kmpp_sample(const kmpp_points *p, const kmpp_work *work, int rounds, int draws, kmpp_draws rng, size_t *chosen,
                   double *cost, kmpp_times *times) {
  const float *x = p->x, *w = p->w;
  const size_t n = p->n, d = p->d, ps = p->point_stride, ds = p->dim_stride;
  double *dist = work->dist, *wheel = work->wheel, *targets = work->targets;
  int *nearest = work->nearest;
  long *picks = work->picks;
  kmpp_times spent = {0.0, 0.0};
  PAR_FOR()
  for (size_t i = 0; i < n; i++) {
    dist[i] = INFINITY;
    nearest[i] = 0;
  }
  size_t got = 0;
  for (int r = 0; r < rounds; r++) {
    double t0 = pc_now();
    const double total = kmpp_fill_wheel(w, dist, wheel, n, r == 0);
    if (!(total > 0.0)) break; /* every point sits on a chosen one (or carries no weight) */
    const double below_total = nextafter(total, 0.0);
    for (int q = 0; q < draws; q++) {
      const double t = pc_hash_uniform(rng.seed, rng.stream, rng.first_draw + (uint64_t)r * (uint64_t)draws + (uint64_t)q) * total;
      targets[q] = t < total ? t : below_total;
    }
    DEV_UPDATE(to(targets[0 : draws]))
    kmpp_wheel_search(wheel, n, targets, picks, draws, KMPP_SEARCH_ARITY);
    DEV_UPDATE(from(picks[0 : draws]))
    for (int q = 0; q < draws; q++) chosen[got + (size_t)q] = (size_t)picks[q];
    double t1 = pc_now();
    spent.selection += t1 - t0;
    kmpp_update_nearest(x, n, d, ps, ds, picks, draws, (int)got, dist, nearest);
    spent.distance += pc_now() - t1;
    got += (size_t)draws;
  }
  if (cost) {
    const double t0 = pc_now();
    *cost = got ? kmpp_fill_wheel(w, dist, wheel, n, 0) : 0.0;
    spent.selection += pc_now() - t0;
  }
  if (times) {
    times->distance += spent.distance;
    times->selection += spent.selection;
  }
  return got;
}

int kmpp_seed(const float *x, const float *weights, size_t n, size_t d, int k, uint64_t seed, size_t *chosen) {
  if (k < 1 || (size_t)k > n) return pc_fail("k-means++: k = %d is outside [1, %zu]", k, n);
  float *w = pc_try_alloc(n, sizeof *w, "k-means++ point weights");
  double *dist = pc_try_alloc(n, sizeof *dist, "k-means++ distances");
  double *wheel = pc_try_alloc(n, sizeof *wheel, "k-means++ prefix sums");
  int *nearest = pc_try_alloc(n, sizeof *nearest, "k-means++ nearest points");
  if (!w || !dist || !wheel || !nearest) {
    free(w), free(dist), free(wheel), free(nearest);
    return -1;
  }
  for (size_t i = 0; i < n; i++) w[i] = weights ? weights[i] : 1.0f;
  double target[1];
  long pick[1];
  const kmpp_points points = {x, w, n, d, d, 1};
  const kmpp_work work = {dist, wheel, target, nearest, pick};
  DEV_ENTER(map(to : x[0 : n * d], w[0 : n]) map(alloc : dist[0 : n], wheel[0 : n], nearest[0 : n], target[0 : 1], pick[0 : 1]))
  const size_t got = kmpp_sample(&points, &work, k, 1, (kmpp_draws){seed, PC_STREAM_KMEANSPP, 0}, chosen, NULL, NULL);
  DEV_EXIT(map(delete : x[0 : n * d], w[0 : n], dist[0 : n], wheel[0 : n], nearest[0 : n], target[0 : 1], pick[0 : 1]))
  free(w), free(dist), free(wheel), free(nearest);
  if (got < (size_t)k)
    return pc_fail("k-means++: only %zu points carry weight or distance, fewer than k = %d (duplicates or zero weights)", got,
                   k);
  return 0;
}

/* check.c - see check.h. Every recomputation here is a plain loop in double on the host: the
 * oracle must not share code with the kernels it checks. */
#include "check.h"
#include "par.h"
#include "util.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Squared distances summed as dpc.h and dbscan.h define them: each difference in double, squared
 * and rounded on its own (GCC builds: -ffp-contract=off, variants/gcc.mk). */
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

/* A test build (make build/seq-fault/...) plants one wrong value in each result a check reads,
 * to show that the check catches it. */
#if defined(PC_CHECK_PLANTED_FAULT)
#define PLANT(s, value, wrong) ((s) == 0 ? (wrong) : (value))
#else
#define PLANT(s, value, wrong) (value)
#endif

/* The work a sampled point may cost against all n points: about 4e9 values in all. */
#define PC_CHECK_BUDGET 4e9
#define PC_CHECK_MIN_SAMPLE 64

size_t pc_check_sample(size_t n, size_t d, int all_pairs, size_t *rows) {
  size_t s = n < PC_CHECK_SAMPLE ? n : PC_CHECK_SAMPLE;
  if (all_pairs) {
    const double affordable = PC_CHECK_BUDGET / ((double)n * (double)(d ? d : 1));
    if (affordable < (double)s) s = affordable > PC_CHECK_MIN_SAMPLE ? (size_t)affordable : PC_CHECK_MIN_SAMPLE;
    if (s > n) s = n;
  }
  for (size_t i = 0; i < s; i++) rows[i] = (size_t)((double)i * (double)n / (double)s); /* evenly spread */
  return s;
}

void pc_check_mismatch(pc_check *ck, const char *fmt, ...) {
  if (ck->shown < PC_CHECK_SHOWN) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ck->first[ck->shown++], sizeof ck->first[0], fmt, ap);
    va_end(ap);
  }
  ck->mismatches++;
}

void pc_check_end(const pc_check *ck, const char *subcommand) {
  if (!ck->mismatches) return;
  for (int i = 0; i < ck->shown; i++) fprintf(stderr, "%s --check: %s\n", subcommand, ck->first[i]);
  pc_die(PC_EXIT_FAILURE, "%s --check: the results are wrong: %zu mismatch%s (%zu %s sampled; the first %d above)",
         subcommand, ck->mismatches, ck->mismatches == 1 ? "" : "es", ck->sampled, ck->items, ck->shown);
}

/* ---- nearest centroids, with float32 ties explained ------------------------------------- */

/* Squared distance of x (stride apart: dimension-major data have stride n) to c, in double. */
static double distance2(const float *x, size_t stride, const float *c, size_t d) {
  double s = 0.0;
  for (size_t j = 0; j < d; j++) {
    const double diff = (double)x[j * stride] - (double)c[j];
    s += diff * diff;
  }
  return s;
}

/* How far a kernel's float32 score of centroid c for point x can be from the exact one, as a
 * multiple `unit` of the magnitudes the score is made of: the distance itself for the direct
 * form (positive terms), |cn_c| + 2 sum |x_j (c_j - o_j)| for the dot forms (cn_c: the shifted
 * norm, o: the offset), whose terms cancel; the 16-bit forms round x - o, not x, so they take
 * sum (|x_j| + |o_j|) |c_j - o_j|, which bounds both. */
static double score_error(const float *x, size_t stride, const float *c, const float *offset, size_t d,
                          km_distance distance, double unit) {
  if (distance == KM_DISTANCE_DIRECT) return unit * distance2(x, stride, c, d);
  const int rounds_shifted = distance == KM_DISTANCE_DOT_FP16 || distance == KM_DISTANCE_DOT_BF16;
  double norm = 0.0, cross = 0.0;
  for (size_t j = 0; j < d; j++) {
    const double shifted = (double)c[j] - (double)offset[j];
    norm += shifted * shifted + 2.0 * (double)offset[j] * shifted;
    cross += (fabs((double)x[j * stride]) + (rounds_shifted ? fabs((double)offset[j]) : 0.0)) * fabs(shifted);
  }
  return unit * (fabs(norm) + 2.0 * cross);
}

/* The rounding unit of a distance's float32 arithmetic over d features: the inputs' own rounding
 * (a product of two values each rounded to a p-bit significand errs by 2^(1 - p): TF32 and fp16
 * keep 11 bits, bf16 8; 3xTF32 drops the product of the two tails) plus d + 2 roundings of a
 * float32 sum, doubled for margin. */
static double score_unit(km_distance distance, size_t d) {
  const double input = distance == KM_DISTANCE_GEMM_TF32 || distance == KM_DISTANCE_DOT_TF32 ||
                               distance == KM_DISTANCE_DOT_FP16
                           ? 0x1p-10
                       : distance == KM_DISTANCE_DOT_BF16   ? 0x1p-7
                       : distance == KM_DISTANCE_DOT_3XTF32 ? 0x1p-20
                                                            : 0.0;
  return 2.0 * (input + (double)(d + 2) * 0x1p-24 + (distance == KM_DISTANCE_DIRECT ? 0x1p-23 : 0.0));
}

/* Checks point x's label against the nearest of the k centroids (row-major). */
static void check_nearest(pc_check *ck, size_t i, const float *x, size_t stride, size_t d, const float *c, int k,
                          const float *offset, km_distance distance, int label) {
  double best = INFINITY;
  int nearest = 0;
  for (int q = 0; q < k; q++) {
    const double dq = distance2(x, stride, c + (size_t)q * d, d);
    if (dq < best) best = dq, nearest = q;
  }
  if (label < 0 || label >= k) {
    pc_check_mismatch(ck, "point %zu: label %d is not a centroid (0..%d)", i, label, k - 1);
    return;
  }
  if (label == nearest) return;
  const double mine = distance2(x, stride, c + (size_t)label * d, d);
  const double unit = score_unit(distance, d);
  const double slack = score_error(x, stride, c + (size_t)label * d, offset, d, distance, unit) +
                       score_error(x, stride, c + (size_t)nearest * d, offset, d, distance, unit);
  if (mine - best <= slack) {
    ck->ties++;
    return;
  }
  pc_check_mismatch(ck, "point %zu: label %d at squared distance %.9g, but centroid %d is nearer at %.9g (float32 "
                        "rounding explains %.3g)", i, label, mine, nearest, best, slack);
}

void pc_check_kmeans(pc_check *ck, const float *xt, size_t n, size_t d, int k, km_distance distance,
                     const float *centroids, const int *labels, const float *centroids_after, const int *run_labels) {
  ck->items = "points";
  /* the dot forms' offset, as km_run makes it from the centroids it starts from */
  float *offset = pc_xalloc(d, sizeof *offset, "check offset");
  for (size_t j = 0; j < d; j++) {
    double mean = 0.0;
    for (int q = 0; q < k; q++) mean += centroids[(size_t)q * d + j];
    offset[j] = (float)(mean / k);
  }
  size_t rows[PC_CHECK_SAMPLE];
  ck->sampled = pc_check_sample(n, d, 0, rows);
  for (size_t s = 0; s < ck->sampled; s++) {
    const size_t i = rows[s];
    check_nearest(ck, i, xt + i, n, d, centroids, k, offset, distance, PLANT(s, labels[i], (labels[i] + 1) % k));
  }
  free(offset);

  /* the update: each centroid the mean of its points (a cluster with none keeps its centroid) */
  double *sum = pc_xcalloc((size_t)k * d, sizeof *sum, "check sums");
  size_t *count = pc_xcalloc((size_t)k, sizeof *count, "check counts");
  double *scale = pc_xcalloc(d, sizeof *scale, "check scales");
  for (size_t j = 0; j < d; j++)
    for (size_t i = 0; i < n; i++) {
      const int q = labels[i];
      if (q < 0 || q >= k) continue; /* reported above when sampled */
      sum[(size_t)q * d + j] += xt[j * n + i];
      scale[j] = fmax(scale[j], fabs(xt[j * n + i]));
    }
  for (size_t i = 0; i < n; i++)
    if (labels[i] >= 0 && labels[i] < k) count[labels[i]]++;
  for (int q = 0; q < k; q++)
    for (size_t j = 0; j < d; j++) {
      const size_t e = (size_t)q * d + j;
      const double after = PLANT(q + (int)j, centroids_after[e], centroids_after[e] + 1.0);
      if (!count[q]) {
        if (after != centroids[e])
          pc_check_mismatch(ck, "centroid %d lost its points but moved in dimension %zu: %.9g -> %.9g", q, j,
                            (double)centroids[e], after);
        continue;
      }
      const double mean = sum[e] / (double)count[q];
      /* exact sums (km_to_fixed), then one rounding to float32 */
      if (fabs(after - mean) > 2.0 * FLT_EPSILON * fabs(mean) + 1e-9 * scale[j])
        pc_check_mismatch(ck, "centroid %d, dimension %zu: %.9g, but the mean of its %zu points is %.9g", q, j, after,
                          count[q], mean);
    }
  free(sum), free(count), free(scale);

  if (run_labels) { /* the run ended with no label changing, so another pass changes none either */
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < n; i++)
      if (run_labels[i] != labels[i] && !differ++) first = i;
    if (differ)
      pc_check_mismatch(ck, "the run converged, yet another assign pass changes %zu labels (the first: point %zu, %d "
                            "-> %d)", differ, first, run_labels[first], labels[first]);
  }
}

void pc_check_nearest_centres(pc_check *ck, const pc_stream *src, size_t first, size_t rows, const float *centres,
                              int k, const int *labels) {
  ck->items = "rows";
  size_t sample[PC_CHECK_SAMPLE];
  ck->sampled = pc_check_sample(rows, src->d, 0, sample);
  float *x = pc_xalloc(src->d, sizeof *x, "check row");
  for (size_t s = 0; s < ck->sampled; s++) {
    const size_t r = sample[s];
    if (src->read(src->ctx, first + r, 1, x) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    check_nearest(ck, first + r, x, 1, src->d, centres, k, NULL, KM_DISTANCE_DIRECT,
                  PLANT(s, labels[r], (labels[r] + 1) % k));
  }
  free(x);
}

void pc_check_kept_points(pc_check *ck, const pc_stream *src, const size_t *kept_row, const long *kept_weight,
                          size_t kept, const float *centres, int k) {
  const size_t d = src->d;
  long long weight = 0;
  for (size_t e = 0; e < kept; e++) weight += PLANT(e, kept_weight[e], kept_weight[e] + 1);
  if (weight != (long long)src->n)
    pc_check_mismatch(ck, "the kept points serve %lld points in all, but the stream has %zu", weight, src->n);
  unsigned char *found = pc_xcalloc((size_t)k, 1, "check centres");
  float *x = pc_xalloc(d, sizeof *x, "check row");
  for (size_t e = 0; e < kept; e++) {
    if (src->read(src->ctx, kept_row[e], 1, x) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    for (int q = 0; q < k; q++)
      if (!found[q] && !memcmp(x, centres + (size_t)q * d, d * sizeof *x)) found[q] = 1;
  }
  for (int q = 0; q < k; q++)
    if (!found[q]) pc_check_mismatch(ck, "centre %d is not one of the %zu kept points", q, kept);
  free(x), free(found);
}

/* ---- DBSCAN -------------------------------------------------------------------------------- */

/* What one sampled point sees within eps: neighbours for sure and at the edge (distances that
 * differ from eps by rounding only: a fused multiply-add may take them either way), the smallest
 * cluster id among its sure and edge core neighbours, and a sure core neighbour in another
 * cluster than the point's (-1: none). */
typedef struct {
  long sure, edge;
  int lowest_sure, lowest_edge;
  long other;
} db_seen;

void pc_check_dbscan(pc_check *ck, const float *x, size_t n, size_t d, double eps, int min_pts, const int *labels,
                     const unsigned char *is_core) {
  ck->items = "points";
  size_t rows[PC_CHECK_SAMPLE];
  const size_t s_count = pc_check_sample(n, d, 1, rows);
  ck->sampled = s_count;
  db_seen *seen = pc_xalloc(s_count, sizeof *seen, "check neighbours");
  const double eps2 = eps * eps, edge = 4.0 * (double)(d + 1) * DBL_EPSILON * eps2;
  HOST_PAR_FOR(schedule(dynamic, 1))
  for (size_t s = 0; s < s_count; s++) {
    const size_t p = rows[s];
    db_seen v = {0, 0, INT_MAX, INT_MAX, -1};
    for (size_t q = 0; q < n; q++) {
      const double d2 = distance2(x + p * d, 1, x + q * d, d);
      if (d2 > eps2 + edge) continue;
      const int at_edge = d2 >= eps2 - edge;
      if (at_edge) v.edge++;
      else v.sure++;
      if (!is_core[q]) continue;
      if (at_edge) v.lowest_edge = labels[q] < v.lowest_edge ? labels[q] : v.lowest_edge;
      else v.lowest_sure = labels[q] < v.lowest_sure ? labels[q] : v.lowest_sure;
      if (!at_edge && is_core[p] && labels[q] != labels[p] && v.other < 0) v.other = (long)q;
    }
    seen[s] = v;
  }
  for (size_t s = 0; s < s_count; s++) {
    const size_t p = rows[s];
    const db_seen v = seen[s];
    const int core = PLANT(s, is_core[p], !is_core[p]), label = labels[p];
    if (core ? v.sure + v.edge < min_pts : v.sure >= min_pts) {
      pc_check_mismatch(ck, "point %zu: %s, but it has %ld neighbours within eps (%ld more at its edge; min_pts %d)", p,
                        core ? "core" : "not core", v.sure, v.edge, min_pts);
      continue;
    }
    if (core && v.other >= 0) {
      pc_check_mismatch(ck, "core points %zu (cluster %d) and %ld (cluster %d) are within eps in different clusters", p,
                        label, v.other, labels[v.other]);
    } else if (core && label < 0) {
      pc_check_mismatch(ck, "point %zu: a core point labelled noise", p);
    } else if (!core) {
      /* border: the smallest cluster id among its core neighbours; noise: none */
      const int lowest = v.lowest_sure < v.lowest_edge ? v.lowest_sure : v.lowest_edge;
      const int ok = v.lowest_sure != INT_MAX ? label >= lowest && label <= v.lowest_sure
                                                : label == -1 || (lowest != INT_MAX && label >= lowest);
      if (!ok)
        pc_check_mismatch(ck, "point %zu: not core, labelled %d, but its core neighbours' smallest cluster is %d", p, label,
                          v.lowest_sure != INT_MAX ? v.lowest_sure : -1);
    }
  }
  free(seen);
}

/* ---- density peaks ------------------------------------------------------------------------ */

typedef struct {
  int rho, dep;
  double delta2;
} dpc_seen;

void pc_check_dpc(pc_check *ck, const float *x, const int *row, size_t n, size_t d, double dc, const int *rho,
                  const double *delta, const int *dep) {
  ck->items = "points";
  size_t rows[PC_CHECK_SAMPLE];
  const size_t s_count = pc_check_sample(n, d, 1, rows);
  ck->sampled = s_count;
  dpc_seen *seen = pc_xalloc(s_count, sizeof *seen, "check density peaks");
  const double dc2 = dc * dc;
#define DPC_POINT(i) (x + (row ? (size_t)row[i] : (i)) * d)
  HOST_PAR_FOR(schedule(dynamic, 1))
  for (size_t s = 0; s < s_count; s++) {
    const size_t i = rows[s];
    dpc_seen v = {0, -1, INFINITY};
    double farthest = 0.0;
    for (size_t j = 0; j < n; j++) {
      const double d2 = distance2(DPC_POINT(i), 1, DPC_POINT(j), d);
      v.rho += d2 < dc2;
      farthest = fmax(farthest, d2);
      /* denser: larger rho, ties to the lower index (the run's rho of the other points) */
      const int denser = rho[j] > rho[i] || (rho[j] == rho[i] && j < i);
      if (denser && d2 < v.delta2) v.delta2 = d2, v.dep = (int)j;
    }
    if (v.dep < 0) v.delta2 = farthest; /* the absolute peak */
    seen[s] = v;
  }
#undef DPC_POINT
  for (size_t s = 0; s < s_count; s++) {
    const size_t i = rows[s];
    const dpc_seen v = seen[s];
    const int got_rho = PLANT(s, rho[i], rho[i] + 1);
    if (got_rho != v.rho || dep[i] != v.dep || delta[i] != sqrt(v.delta2))
      pc_check_mismatch(ck, "point %zu: rho %d, dependent %d, delta %.17g; recomputed: rho %d, dependent %d, delta %.17g", i,
                        got_rho, dep[i], delta[i], v.rho, v.dep, sqrt(v.delta2));
  }
  free(seen);
}

/* ---- generated data ----------------------------------------------------------------------- */

void pc_check_generated(pc_check *ck, const pc_gen_spec *spec, const float *x) {
  ck->items = "rows";
  size_t rows[PC_CHECK_SAMPLE];
  ck->sampled = pc_check_sample(spec->n, spec->d, 0, rows);
  float *again = pc_xalloc(spec->d, sizeof *again, "check row");
  for (size_t s = 0; s < ck->sampled; s++) {
    const size_t i = rows[s];
    pc_gen_rows(spec, i, 1, again);
    const float *got = x + i * spec->d;
    for (size_t j = 0; j < spec->d; j++) {
      const float value = PLANT(s + j, got[j], got[j] + 1.0f);
      if (memcmp(&value, &again[j], sizeof value) != 0) {
        pc_check_mismatch(ck, "row %zu, column %zu: %.9g, but the generator gives %.9g for that row alone", i, j,
                          (double)value, (double)again[j]);
        break;
      }
    }
  }
  free(again);
}

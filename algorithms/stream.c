/*
 * stream.c - Cao et al.'s stream clustering (entire stream, sliding window); see stream.h for
 * the algorithms.
 *
 * Parallel strategy: all the heavy work is k-means, and k-means is km_run (kmeans.c), so the
 * variants differ only there: a block of raw points is clustered by one km_run (its data goes to
 * the device once; Lloyd runs to convergence, its update on the device or, with --update host,
 * on the host); weighted points (the summaries of blocks and buckets, a few k each) are
 * clustered by one km_run call (an assignment pass) per Lloyd iteration
 * (Cao's GPU-L: labels come back, the weighted centroids are computed on the host in a fixed
 * order). k-means++ seeding is kmpp_seed (kmeanspp.c). The final assignment pass (labels and
 * cost) is the one loop of this file: one point per iteration of PAR_FOR, its chunk and the
 * centres mapped once per chunk.
 */
#include "stream.h"
#include "kmeans.h"
#include "kmeanspp.h"
#include "par.h"
#include "synth.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const strm_phase_names[STRM_NPHASES] = {"generation", "seeding", "h2d", "assign", "update", "d2h", "other"};

/* Weighted points, row-major: x[i*d .. i*d + d), weight w[i] (points of the stream served). */
typedef struct {
  float *x;
  long *w;
  size_t n, cap;
} strm_set;

static void set_free(strm_set *s) {
  free(s->x);
  free(s->w);
  *s = (strm_set){0};
}

static int set_reserve(strm_set *s, size_t cap, size_t d) {
  if (cap <= s->cap) return 0;
  size_t values;
  if (pc_mul_size(cap, d, &values, "weighted points")) return -1;
  float *x = pc_try_alloc(values, sizeof *x, "weighted points");
  long *w = pc_try_alloc(cap, sizeof *w, "point weights");
  if (!x || !w) {
    free(x), free(w);
    return -1;
  }
  if (s->n) {
    memcpy(x, s->x, s->n * d * sizeof *x);
    memcpy(w, s->w, s->n * sizeof *w);
  }
  free(s->x), free(s->w);
  s->x = x, s->w = w, s->cap = cap;
  return 0;
}

static int set_append(strm_set *s, const float *x, long w, size_t d) {
  if (s->n == s->cap && set_reserve(s, s->cap ? 2 * s->cap : 16, d)) return -1;
  memcpy(s->x + s->n * d, x, d * sizeof *x);
  s->w[s->n++] = w;
  return 0;
}

static int set_append_all(strm_set *s, const strm_set *from, size_t d) {
  if (from->n == 0) return 0;
  if (set_reserve(s, s->n + from->n, d)) return -1;
  memcpy(s->x + s->n * d, from->x, from->n * d * sizeof *s->x);
  memcpy(s->w + s->n, from->w, from->n * sizeof *s->w);
  s->n += from->n;
  return 0;
}

/* What every clustering of one run shares. */
typedef struct {
  const strm_params *p;
  size_t d;
  uint64_t calls; /* clusterings so far: call c seeds itself from counter c */
  strm_result *r;
} strm_ctx;

static void add_km_phases(strm_result *r, const km_result *kr) {
  r->phase_s[STRM_PHASE_H2D] += kr->phase_s[KM_PHASE_H2D];
  r->phase_s[STRM_PHASE_ASSIGN] += kr->phase_s[KM_PHASE_ASSIGN];
  r->phase_s[STRM_PHASE_UPDATE] += kr->phase_s[KM_PHASE_UPDATE];
  r->phase_s[STRM_PHASE_D2H] += kr->phase_s[KM_PHASE_D2H];
}

/*
 * Clusters n points x (weights w, or NULL: each point weighs 1, a raw block) into k centres and
 * appends them, weighted by the points they serve, to out. Centres serving nothing are left out
 * unless `final` (then exactly k are appended). With at most k points carrying weight the points
 * themselves are the summary (final: exactly k are needed). Returns 0 or -1 with a message.
 */
static int cluster_into(strm_ctx *c, const float *x, const long *w, size_t n, int final, strm_set *out) {
  const size_t d = c->d, k = (size_t)c->p->k;
  strm_result *r = c->r;
  size_t carrying = 0;
  for (size_t i = 0; i < n; i++) carrying += !w || w[i] > 0;
  if (carrying <= k) {
    if (final && carrying < k)
      return pc_fail("stream: only %zu weighted points remain for the final clustering, fewer than k = %zu "
                     "(the stream has too few distinct points)", carrying, k);
    for (size_t i = 0; i < n; i++)
      if ((!w || w[i] > 0) && set_append(out, x + i * d, w ? w[i] : 1, d)) return -1;
    return 0;
  }
  const uint64_t seed = (uint64_t)(pc_hash_uniform(c->p->seed, PC_STREAM_STREAM, c->calls++) * 0x1.0p53);
  r->kmeans_runs++;
  size_t *rows = pc_try_alloc(k, sizeof *rows, "seed rows");
  float *wf = w ? pc_try_alloc(n, sizeof *wf, "seeding weights") : NULL;
  float *xt = pc_try_alloc(n, d * sizeof *xt, "dimension-major points");
  float *cent = pc_try_alloc(k, d * sizeof *cent, "centres");
  float *trial = pc_try_alloc(k, d * sizeof *trial, "centres");
  int *labels = pc_try_alloc(n, sizeof *labels, "labels");
  int *prev = pc_try_alloc(n, sizeof *prev, "labels");
  double *sums = pc_try_alloc(k, d * sizeof *sums, "weighted sums");
  long *served = pc_try_alloc(k, sizeof *served, "served points");
  int rc = -1;
  if (!rows || (w && !wf) || !xt || !cent || !trial || !labels || !prev || !sums || !served) goto out;

  double t0 = pc_now();
  if (w)
    for (size_t i = 0; i < n; i++) wf[i] = (float)w[i];
  if (kmpp_seed(x, wf, n, d, (int)k, seed, c->p->kernels, rows) != 0) {
    if (final) {
      pc_fail("stream: fewer than k = %zu distinct weighted points remain for the final clustering "
              "(the stream has too few distinct points)", k);
      goto out;
    }
    if (pc_sample_distinct(seed, n, k, rows) != 0) goto out; /* duplicates: any k rows; the empty clusters are dropped */
  }
  r->phase_s[STRM_PHASE_SEEDING] += pc_now() - t0;
  for (size_t q = 0; q < k; q++) memcpy(cent + q * d, x + rows[q] * d, d * sizeof *cent);
  km_transpose(x, n, d, xt);

  km_params kp = {.k = (int)k, .max_iter = c->p->max_iter, .fixed_iter = 0, .tol = -1.0, .update = c->p->update,
                  .distance = KM_DISTANCE_DIRECT, .kernels = c->p->kernels};
  km_result kr = {0};
  if (!w) { /* a raw block: plain Lloyd, all of it in km_run */
    if (km_run(xt, n, d, &kp, cent, labels, &kr) != 0) goto out;
    add_km_phases(r, &kr);
    r->iterations += kr.iterations;
  } else { /* weighted Lloyd: km_run assigns, the host averages with the weights */
    kp.fixed_iter = 1;
    for (size_t i = 0; i < n; i++) prev[i] = -1;
    for (int it = 0; it < c->p->max_iter; it++) {
      memcpy(trial, cent, k * d * sizeof *cent); /* km_run's own (unweighted) update is not used */
      kr.iteration_s = NULL;
      if (km_run(xt, n, d, &kp, trial, labels, &kr) != 0) goto out;
      add_km_phases(r, &kr);
      r->iterations++;
      const double tu = pc_now();
      size_t changed = 0;
      for (size_t i = 0; i < n; i++) {
        changed += labels[i] != prev[i];
        prev[i] = labels[i];
      }
      if (changed) {
        memset(sums, 0, k * d * sizeof *sums);
        memset(served, 0, k * sizeof *served);
        for (size_t i = 0; i < n; i++) {
          const size_t q = (size_t)labels[i];
          served[q] += w[i];
          for (size_t j = 0; j < d; j++) sums[q * d + j] += (double)w[i] * x[i * d + j];
        }
        for (size_t q = 0; q < k; q++)
          if (served[q] > 0) /* an empty cluster keeps its centre */
            for (size_t j = 0; j < d; j++) cent[q * d + j] = (float)(sums[q * d + j] / (double)served[q]);
      }
      r->phase_s[STRM_PHASE_UPDATE] += pc_now() - tu;
      if (!changed) break;
    }
  }
  memset(served, 0, k * sizeof *served);
  for (size_t i = 0; i < n; i++) served[labels[i]] += w ? w[i] : 1;
  for (size_t q = 0; q < k; q++)
    if ((final || served[q] > 0) && set_append(out, cent + q * d, served[q], d)) goto out;
  rc = 0;
out:
  free(rows), free(wf), free(xt), free(cent), free(trial), free(labels), free(prev), free(sums), free(served);
  return rc;
}

size_t strm_block_size(const strm_params *p, size_t n) {
  const size_t k = (size_t)p->k, base = p->window ? p->window : n;
  size_t m = p->block;
  if (!m) {
    m = (size_t)ceil(pow((double)base, p->epsilon));
    if (m < 2 * k) m = 2 * k;
    if (m > base) m = base;
  }
  return m < n ? m : n;
}

/* Reads rows [first, first + rows) into buf, timed as generation. */
static int read_block(const pc_stream *src, size_t first, size_t rows, float *buf, strm_result *r) {
  const double t0 = pc_now();
  const int rc = src->read(src->ctx, first, rows, buf);
  r->phase_s[STRM_PHASE_GENERATION] += pc_now() - t0;
  r->blocks++;
  return rc;
}

/* STREAM: blocks to level 0, a level of m or more points (and more than k) reclustered into the
 * next, the union of all levels clustered at the end. */
static int run_entire(strm_ctx *c, const pc_stream *src, float *buf, float *centres) {
  const size_t n = src->n, d = src->d, m = c->r->block;
  strm_set *levels = NULL, all = {0}, final = {0};
  int nlevels = 0, rc = -1;
  for (size_t first = 0; first < n; first += m) {
    const size_t rows = n - first < m ? n - first : m;
    if (read_block(src, first, rows, buf, c->r)) goto out;
    for (int i = 0;; i++) {
      if (i == nlevels) {
        strm_set *grown = realloc(levels, (size_t)(nlevels + 1) * sizeof *levels);
        if (!grown) {
          pc_fail("stream: out of memory for a level");
          goto out;
        }
        levels = grown;
        levels[nlevels++] = (strm_set){0};
      }
      if (i == 0) {
        if (cluster_into(c, buf, NULL, rows, 0, &levels[0])) goto out;
      } else {
        if (cluster_into(c, levels[i - 1].x, levels[i - 1].w, levels[i - 1].n, 0, &levels[i])) goto out;
        levels[i - 1].n = 0;
        c->r->combined++;
      }
      /* A level of k points or fewer is already its own summary: clustering it again would give it
       * back unchanged (n < 2k makes m <= k, and k = n would climb levels forever). */
      if (levels[i].n < m || levels[i].n <= (size_t)c->p->k) break;
    }
  }
  for (int i = 0; i < nlevels; i++)
    if (set_append_all(&all, &levels[i], d)) goto out;
  c->r->levels = nlevels;
  c->r->summary = all.n;
  if (cluster_into(c, all.x, all.w, all.n, 1, &final)) goto out;
  memcpy(centres, final.x, (size_t)c->p->k * d * sizeof *centres);
  rc = 0;
out:
  for (int i = 0; i < nlevels; i++) set_free(&levels[i]);
  free(levels);
  set_free(&all);
  set_free(&final);
  return rc;
}

/* One bucket of the window: a summary of rows [first, end), of size class cls (m * 2^cls rows). */
typedef struct {
  strm_set s;
  size_t first, end;
  int cls;
} strm_bucket;

/* The window's centres now: weighted k-means on the union of the live buckets' summaries. */
static int query_window(strm_ctx *c, const strm_bucket *b, size_t nb, float *centres) {
  const double t0 = pc_now();
  strm_set all = {0}, final = {0};
  int rc = -1;
  for (size_t i = 0; i < nb; i++)
    if (set_append_all(&all, &b[i].s, c->d)) goto out;
  c->r->summary = all.n;
  if (cluster_into(c, all.x, all.w, all.n, 1, &final)) goto out;
  memcpy(centres, final.x, (size_t)c->p->k * c->d * sizeof *centres);
  c->r->queries++;
  rc = 0;
out:
  set_free(&all);
  set_free(&final);
  c->r->query_s += pc_now() - t0;
  return rc;
}

static int run_window(strm_ctx *c, const pc_stream *src, float *buf, float *centres) {
  const size_t n = src->n, d = src->d, m = c->r->block, window = c->p->window, every = c->p->query_every;
  strm_bucket *b = NULL;
  size_t nb = 0, cap = 0, next_query = every ? every : (size_t)-1;
  strm_set both = {0};
  int rc = -1;
  for (size_t first = 0; first < n; first += m) {
    const size_t rows = n - first < m ? n - first : m, now = first + rows;
    if (read_block(src, first, rows, buf, c->r)) goto out;
    if (nb == cap) {
      strm_bucket *grown = realloc(b, (cap = cap ? 2 * cap : 16) * sizeof *b);
      if (!grown) {
        pc_fail("stream: out of memory for the buckets");
        goto out;
      }
      b = grown;
    }
    b[nb] = (strm_bucket){{0}, first, now, 0};
    nb++;
    if (cluster_into(c, buf, NULL, rows, 0, &b[nb - 1].s)) goto out;
    /* Exponential histogram: a third bucket of a class combines the two oldest of it (adjacent:
     * classes only fall from the oldest bucket to the newest). */
    for (int cls = 0;; cls++) {
      size_t count = 0, oldest = 0;
      for (size_t i = nb; i-- > 0;)
        if (b[i].cls == cls) count++, oldest = i;
      if (count <= 2) break;
      both.n = 0;
      if (set_append_all(&both, &b[oldest].s, d) || set_append_all(&both, &b[oldest + 1].s, d)) goto out;
      b[oldest].s.n = 0;
      if (cluster_into(c, both.x, both.w, both.n, 0, &b[oldest].s)) goto out;
      b[oldest].end = b[oldest + 1].end;
      b[oldest].cls = cls + 1;
      set_free(&b[oldest + 1].s);
      memmove(b + oldest + 1, b + oldest + 2, (nb - oldest - 2) * sizeof *b);
      nb--;
      c->r->combined++;
    }
    /* Buckets whose newest point has left the window go. */
    const size_t start = now > window ? now - window : 0;
    size_t gone = 0;
    while (gone < nb && b[gone].end <= start) set_free(&b[gone++].s);
    memmove(b, b + gone, (nb - gone) * sizeof *b);
    nb -= gone;
    if (now >= next_query && now < n) {
      if (query_window(c, b, nb, centres)) goto out;
      next_query = (now / every + 1) * every;
    }
  }
  c->r->buckets = nb;
  if (query_window(c, b, nb, centres)) goto out;
  rc = 0;
out:
  for (size_t i = 0; i < nb; i++) set_free(&b[i].s);
  free(b);
  set_free(&both);
  return rc;
}

int strm_run(const pc_stream *src, const strm_params *p, float *centres, strm_result *r) {
  memset(r, 0, sizeof *r);
  const size_t n = src->n, d = src->d, k = (size_t)p->k;
  if (p->k < 1) return pc_fail("stream: k must be at least 1");
  if (n < k) return pc_fail("stream: -k %zu is larger than the number of points (%zu)", k, n);
  if (!(p->epsilon > 0 && p->epsilon < 1)) return pc_fail("stream: epsilon must lie in (0, 1), got %g", p->epsilon);
  if (p->max_iter < 1) return pc_fail("stream: max_iter must be at least 1");
  if (p->block && p->block < 2 * k)
    return pc_fail("stream: a block of %zu points is smaller than 2k = %zu (each block is cut to k centres)", p->block, 2 * k);
  if (p->window) {
    if (p->window < 2 * k)
      return pc_fail("stream: a window of %zu points is smaller than 2k = %zu", p->window, 2 * k);
    if (p->block > p->window)
      return pc_fail("stream: a bucket of %zu points is larger than the window of %zu", p->block, p->window);
  } else if (p->query_every) {
    return pc_fail("stream: --query-every needs --window");
  }
  r->block = strm_block_size(p, n);
  r->first_row = p->window && n > p->window ? n - p->window : 0;
  r->rows = n - r->first_row;
  float *buf = pc_try_alloc(r->block, d * sizeof *buf, "a block of the stream");
  if (!buf) return -1;
  strm_ctx c = {p, d, 0, r};
  const double t0 = pc_now();
  const int rc = p->window ? run_window(&c, src, buf, centres) : run_entire(&c, src, buf, centres);
  r->total_s = pc_now() - t0;
  double known = 0.0;
  for (int q = 0; q < STRM_PHASE_OTHER; q++) known += r->phase_s[q];
  r->phase_s[STRM_PHASE_OTHER] = r->total_s > known ? r->total_s - known : 0.0;
  free(buf);
  return rc;
}

/* lab[i], dist[i]: the nearest of the k centres c to point i of x (rows x d, row-major). */
static void strm_nearest(const float *x, size_t rows, size_t d, const float *c, int k, int *lab, float *dist) {
  /* device: x[rows * d] points, c[k * d] centres; made there, lab / dist[rows] nearest centre and
   * its distance. */
  DEV_ENTER(map(to : x[0 : rows * d], c[0 : (size_t)k * d]) map(alloc : lab[0 : rows], dist[0 : rows]))
  PAR_FOR(GPU_THREADS)
  for (size_t i = 0; i < rows; i++) {
    float best = INFINITY;
    int arg = 0;
    for (int q = 0; q < k; q++) {
      float s = 0.0f;
      for (size_t j = 0; j < d; j++) {
        const float t = x[i * d + j] - c[(size_t)q * d + j];
        s += t * t;
      }
      if (s < best) best = s, arg = q;
    }
    lab[i] = arg;
    dist[i] = best;
  }
  DEV_EXIT(map(from : lab[0 : rows], dist[0 : rows]) map(delete : x[0 : rows * d], c[0 : (size_t)k * d]))
}

int strm_assign(const pc_stream *src, size_t first, size_t rows, const float *centres, int k, size_t chunk, int *labels,
                double *cost) {
  const size_t d = src->d;
  if (chunk > rows) chunk = rows;
  if (chunk == 0) chunk = 1;
  float *buf = pc_try_alloc(chunk, d * sizeof *buf, "a block of the stream");
  int *lab = pc_try_alloc(chunk, sizeof *lab, "labels");
  float *dist = pc_try_alloc(chunk, sizeof *dist, "distances");
  int rc = -1;
  double total = 0.0;
  if (!buf || !lab || !dist) goto out;
  for (size_t s = 0; s < rows; s += chunk) {
    const size_t cnt = rows - s < chunk ? rows - s : chunk;
    if (src->read(src->ctx, first + s, cnt, buf)) goto out;
    strm_nearest(buf, cnt, d, centres, k, lab, dist);
    for (size_t i = 0; i < cnt; i++) total += dist[i];
    if (labels) memcpy(labels + s, lab, cnt * sizeof *lab);
  }
  *cost = total;
  rc = 0;
out:
  free(buf), free(lab), free(dist);
  return rc;
}

int strm_label_rows(const pc_stream *src, const strm_result *result, const float *centres, int k, int *labels,
                    double *cost) {
  double before; /* the rows that left the window count for no cost */
  if (labels && result->first_row > 0 &&
      strm_assign(src, 0, result->first_row, centres, k, result->block, labels, &before) != 0)
    return -1;
  return strm_assign(src, result->first_row, result->rows, centres, k, result->block,
                     labels ? labels + result->first_row : NULL, cost);
}

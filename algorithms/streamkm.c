/*
 * streamkm.c - streaming k-means with k-means# per chunk; see streamkm.h for the algorithm.
 *
 * Per chunk: the rows are read (or generated) into a host buffer and copied dimension-major
 * (Okuda section 3.2: a warp's threads read consecutive addresses); the copy goes to the device
 * once, into a buffer mapped for the whole call, and stays there for the chunk's R runs of
 * k-means#, which a kmeanspp.c sampler (opened once per call) runs together. The points of the cheapest run are then
 * weighted on the device by a two-level histogram (section 3.4): each team counts its block of
 * points into team-local memory, then adds those counts to the global ones. Only the chosen
 * indices and their counts come back; the host keeps the weighted union.
 */
#include "streamkm.h"
#include "device.h"
#include "dist.h"
#include "kmeanspp.h"
#include "knobs.h"
#include "par.h"
#include "scan.h"
#include "synth.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const skm_phase_names[SKM_NPHASES] = {"generation", "transfers", "distance", "selection", "weighting", "other"};

/* Tuning knobs: settings of speed, not of results; -DNAME=value (make KNOBS='-DNAME=value')
 * overrides one, `info` lists them and a report names those changed (knobs.h). */
/* points one team counts */
#define SKM_POINTS_PER_TEAM_DEFAULT 2048
#ifndef SKM_POINTS_PER_TEAM
#define SKM_POINTS_PER_TEAM SKM_POINTS_PER_TEAM_DEFAULT
#endif
PC_KNOB(SKM_POINTS_PER_TEAM)
/* counters a team keeps in team-local memory (16 KiB); runs with more chosen points are counted in
 * windows of this many, one pass over the points each */
#define SKM_TEAM_BINS_DEFAULT 4096
#ifndef SKM_TEAM_BINS
#define SKM_TEAM_BINS SKM_TEAM_BINS_DEFAULT
#endif
PC_KNOB(SKM_TEAM_BINS)


int skm_draws_per_round(int k) {
  int log2k = 0;
  while ((1L << log2k) < (long)k) log2k++; /* ceil(log2 k) */
  return 3 * (log2k > 0 ? log2k : 1);
}

void skm_result_free(skm_result *result) {
  free(result->kept_row);
  free(result->kept_weight);
  result->kept_row = NULL;
  result->kept_weight = NULL;
}

/* served[c] = number of the n points whose nearest chosen point is c, for c < centres. Two
 * levels: a team's counts in its own memory, then one global add per counter. On the CPU a
 * "team" is one thread's block of points, its counts private to it, as in an array reduction. */
static void skm_count_served(const int *nearest, size_t n, size_t centres, long *served) {
  const size_t teams = (n + SKM_POINTS_PER_TEAM - 1) / SKM_POINTS_PER_TEAM;
  PAR_FOR()
  for (size_t c = 0; c < centres; c++) served[c] = 0;
  for (size_t first = 0; first < centres; first += SKM_TEAM_BINS) {
    const size_t bins = centres - first < SKM_TEAM_BINS ? centres - first : SKM_TEAM_BINS;
    PAR_TEAMS_FOR(GPU_TEAMS((int)teams, PC_GPU_THREADS))
    for (size_t t = 0; t < teams; t++) {
      unsigned counts[SKM_TEAM_BINS];
      TEAM_LOCAL(counts)
      TEAM_PAR_FOR()
      for (size_t b = 0; b < bins; b++) counts[b] = 0;
      const size_t begin = t * SKM_POINTS_PER_TEAM, end = begin + SKM_POINTS_PER_TEAM < n ? begin + SKM_POINTS_PER_TEAM : n;
      TEAM_PAR_FOR()
      for (size_t i = begin; i < end; i++) {
        const size_t b = (size_t)nearest[i] - first; /* wraps around for points of earlier windows */
        if (b < bins) {
          GPU_ATOMIC
          counts[b] += 1u;
        }
      }
      TEAM_PAR_FOR()
      for (size_t b = 0; b < bins; b++)
        if (counts[b]) {
          PAR_ATOMIC
          served[first + b] += (long)counts[b];
        }
    }
  }
}

/* The dimension-major copy of rows x d points, in double: the distances are summed in double,
 * and the device then converts nothing per distance. */
static void skm_transpose(const float *x, size_t rows, size_t d, double *xt) {
  HOST_PAR_FOR()
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < d; j++) xt[j * rows + i] = (double)x[i * d + j];
}

/* Reads rows [first, first + rows) into buffer and their dimension-major copy into xt. */
static int skm_read_chunk(const pc_stream *src, size_t first, size_t rows, float *buffer, double *xt) {
  if (src->read(src->ctx, first, rows, buffer) != 0) return -1;
  skm_transpose(buffer, rows, src->d, xt);
  return 0;
}

/* The chunk's best of its runs of k-means#, all sampled at once: the first run of the lowest
 * cost. Its chosen rows (in the chunk) go to best_row and the chunk points each serves to
 * best_served; returns how many points it chose. */
static size_t skm_best_run(const kmpp_points *chunk, kmpp_sampler *sampler, uint64_t seed, size_t chunk_index, double *costs,
                           int *nearest, long *served, size_t *best_row, long *best_served, double *phase_s) {
  const int runs = sampler->runs;
  const size_t per_run = (size_t)sampler->rounds * (size_t)sampler->draws;
  kmpp_times times = {0.0, 0.0};
  const kmpp_draws rng = {seed, PC_STREAM_KMEANS_SHARP, (uint64_t)chunk_index * (uint64_t)runs * per_run, per_run};
  kmpp_sample(chunk, sampler, rng, costs, &times);
  phase_s[SKM_PHASE_DISTANCE] += times.distance;
  phase_s[SKM_PHASE_SELECTION] += times.selection;
  int best = 0;
  for (int e = 1; e < runs; e++)
    if (costs[e] < costs[best]) best = e; /* ties keep the earlier run */
  const double t0 = pc_now();
  const size_t count = kmpp_chosen_row(sampler, best, best_row);
  kmpp_nearest(chunk, sampler, best, count, nearest);
  skm_count_served(nearest, chunk->n, count, served);
  DEV_UPDATE(from(served[0 : count]))
  memcpy(best_served, served, count * sizeof *best_served);
  phase_s[SKM_PHASE_WEIGHTING] += pc_now() - t0;
  return count;
}

size_t skm_chunk_size(size_t n, int k, size_t wanted) {
  if (wanted) return wanted < n ? wanted : n;
  const double nk = (double)n * (double)k;
  size_t m = (size_t)sqrt(nk);
  while ((double)m * (double)m < nk) m++;
  return m < n ? m : n;
}

/* Resizes *array to `count` items of `size` bytes. 0 or -1 (the array then as it was). */
static int skm_resize(void **array, size_t count, size_t size, const char *what) {
  size_t bytes;
  if (pc_mul_size(count, size, &bytes, what) != 0) return -1;
  void *p = realloc(*array, bytes);
  if (!p) return pc_fail_out_of_memory(what);
  *array = p;
  return 0;
}

/* Room for a chunk's kept points (at most per_run) in the kept rows and weights and in the
 * weighted union (which holds at most as many as were kept), doubling. 0 or -1. */
static int skm_room_for_a_chunk(skm_session *s) {
  const size_t need = s->kept + s->per_run;
  if (need <= s->kept_cap) return 0;
  size_t grown = s->kept_cap ? s->kept_cap : 64;
  while (grown < need) grown *= 2;
  if (skm_resize((void **)&s->union_x, grown, s->d * sizeof(float), "weighted union") != 0 ||
      skm_resize((void **)&s->union_w, grown, sizeof(float), "union weights") != 0 ||
      skm_resize((void **)&s->kept_row, grown, sizeof(size_t), "kept rows") != 0 ||
      skm_resize((void **)&s->kept_weight, grown, sizeof(long), "kept weights") != 0)
    return -1;
  s->kept_cap = grown;
  return 0;
}

int skm_open(skm_session *s, size_t d, size_t max_rows, const skm_params *params) {
  memset(s, 0, sizeof *s);
  const int k = params->k;
  if (k < 1) return pc_fail("streaming k-means: k = %d, needs k >= 1", k);
  if (d < 1 || max_rows < 1) return pc_fail("streaming k-means: chunks of %zu points of %zu features", max_rows, d);
  s->d = d, s->max_rows = max_rows, s->k = k, s->seed = params->seed;
  s->draws = skm_draws_per_round(k);
  s->repetitions = params->repetitions ? params->repetitions : (int)fmax(1.0, ceil(3.0 * log((double)max_rows)));
  const size_t per_run = (size_t)k * (size_t)s->draws;
  s->per_run = per_run;
  size_t md;
  if (pc_mul_size(max_rows, d, &md, "streaming k-means chunk") != 0) return -1;
  const double t0 = pc_now();
  /* the arrays the device holds, through plain pointers as its kernels see them */
  double *xt = s->xt = pc_try_alloc_staging(md, sizeof(double), "dimension-major chunk"); /* copied per chunk */
  float *ones = s->ones = pc_try_alloc(max_rows, sizeof(float), "chunk weights");
  int *nearest = s->nearest = pc_try_alloc(max_rows, sizeof(int), "chunk nearest points");
  long *served = s->served = pc_try_alloc(per_run, sizeof(long), "served counts");
  s->costs = pc_try_alloc((size_t)s->repetitions, sizeof(double), "k-means# costs");
  s->best_row = pc_try_alloc(per_run, sizeof(size_t), "kept k-means# points");
  s->best_served = pc_try_alloc(per_run, sizeof(long), "kept served counts");
  if (!xt || !ones || !nearest || !s->costs || !s->best_row || !served || !s->best_served ||
      kmpp_sampler_open(&s->sampler, max_rows, s->repetitions, k, s->draws) != 0) {
    skm_close(s);
    return -1;
  }
  if (params->search_arity) s->sampler.search_arity = params->search_arity;
  s->sampler.kernels = params->kernels;
  for (size_t i = 0; i < max_rows; i++) ones[i] = 1.0f;
  const double t1 = pc_now();
  /* device: ones[max_rows] unit weights of a chunk; xt[max_rows * d] a chunk's points
   * (dimension-major), nearest[max_rows], served[k * draws] per run; until skm_close. */
  DEV_ENTER(map(to : ones[0 : max_rows]) map(alloc : xt[0 : md], nearest[0 : max_rows], served[0 : per_run]))
  s->mapped = 1;
  s->phase_s[SKM_PHASE_TRANSFERS] += pc_now() - t1;
  s->phase_s[SKM_PHASE_OTHER] += t1 - t0;
  return 0;
}

int skm_add(skm_session *s, const float *x, size_t rows) {
  const size_t d = s->d;
  if (skm_room_for_a_chunk(s) != 0) return -1;
  double t0 = pc_now();
  double *xt = s->xt;
  skm_transpose(x, rows, d, xt);
  double t1 = pc_now();
  s->phase_s[SKM_PHASE_GENERATION] += t1 - t0;
  DEV_UPDATE(to(xt[0 : rows * d])) /* into the chunk buffer mapped once, so no allocation per chunk */
  s->phase_s[SKM_PHASE_TRANSFERS] += pc_now() - t1;
  const kmpp_points chunk = {xt, s->ones, rows, d, 1, rows};
  const size_t count = skm_best_run(&chunk, &s->sampler, s->seed, s->chunks, s->costs, s->nearest, s->served,
                                    s->best_row, s->best_served, s->phase_s);
  for (size_t q = 0; q < count; q++) {
    s->kept_row[s->kept] = s->rows + s->best_row[q];
    s->kept_weight[s->kept++] = s->best_served[q];
    if (s->best_served[q] == 0) continue; /* drawn twice: the earlier copy serves its points */
    memcpy(s->union_x + s->union_size * d, x + s->best_row[q] * d, d * sizeof(float));
    s->union_w[s->union_size++] = (float)s->best_served[q];
  }
  s->chunks++;
  s->rows += rows;
  return 0;
}

int skm_centres(skm_session *s, float *centres) {
  const int k = s->k;
  const size_t d = s->d;
  if (s->union_size < (size_t)k)
    return pc_fail("streaming k-means: the chunks kept %zu weighted points, fewer than k = %d (the data has fewer than k "
                   "distinct points)", s->union_size, k);
  const double t0 = pc_now();
  size_t *pick = pc_try_alloc((size_t)k, sizeof(size_t), "union picks");
  int rc = pick ? 0 : -1;
  if (rc == 0 && kmpp_seed(s->union_x, s->union_w, s->union_size, d, k, s->seed, s->sampler.kernels, pick) != 0)
    rc = pc_fail_context("streaming k-means on the weighted union of %zu points", s->union_size);
  if (rc == 0)
    for (int c = 0; c < k; c++) memcpy(centres + (size_t)c * d, s->union_x + pick[c] * d, d * sizeof(float));
  free(pick);
  s->phase_s[SKM_PHASE_OTHER] += pc_now() - t0;
  return rc;
}

void skm_close(skm_session *s) {
  if (s->mapped) {
    const size_t md = s->max_rows * s->d, max_rows = s->max_rows, per_run = s->per_run;
    float *ones = s->ones;
    double *xt = s->xt;
    int *nearest = s->nearest;
    long *served = s->served;
    /* only the gpu variant's directive reads them */
    (void)md, (void)max_rows, (void)per_run, (void)ones, (void)xt, (void)nearest, (void)served;
    const double t0 = pc_now();
    DEV_EXIT(map(delete : ones[0 : max_rows], xt[0 : md], nearest[0 : max_rows], served[0 : per_run]))
    s->phase_s[SKM_PHASE_TRANSFERS] += pc_now() - t0;
  }
  kmpp_sampler_close(&s->sampler); /* also after a failed open (zeroed by skm_open) */
  pc_free_staging(s->xt), free(s->ones), free(s->nearest), free(s->costs), free(s->best_row), free(s->served);
  free(s->best_served), free(s->union_x), free(s->union_w), free(s->kept_row), free(s->kept_weight);
  s->xt = NULL, s->ones = NULL, s->nearest = NULL, s->costs = NULL, s->best_row = NULL, s->served = NULL;
  s->best_served = NULL, s->union_x = NULL, s->union_w = NULL, s->kept_row = NULL, s->kept_weight = NULL;
  s->mapped = 0;
}

void skm_rank_rows(size_t n, size_t chunk_size, size_t *first, size_t *count) {
  size_t chunk, chunks;
  pc_dist_share((n + chunk_size - 1) / chunk_size, &chunk, &chunks);
  *first = chunk * chunk_size < n ? chunk * chunk_size : n;
  *count = ((chunk + chunks) * chunk_size < n ? (chunk + chunks) * chunk_size : n) - *first;
}

/* Across MPI ranks, after each added its chunks: rank 0 puts every rank's kept points (rank
 * order is chunk order) in place of its own, as if it had added all `chunks` chunks of the `rows`
 * rows itself. 0, or -1 with a message (memory, on rank 0). */
static int skm_gather_kept(skm_session *s, size_t chunks, size_t rows) {
  size_t union_size, kept;
  float *union_x = pc_dist_gather(s->union_x, s->union_size, s->d * sizeof(float), &union_size);
  float *union_w = pc_dist_gather(s->union_w, s->union_size, sizeof(float), &union_size);
  size_t *kept_row = pc_dist_gather(s->kept_row, s->kept, sizeof(size_t), &kept);
  long *kept_weight = pc_dist_gather(s->kept_weight, s->kept, sizeof(long), &kept);
  if (pc_dist_rank() != 0) return 0;
  free(s->union_x), free(s->union_w), free(s->kept_row), free(s->kept_weight);
  s->union_x = union_x, s->union_w = union_w, s->kept_row = kept_row, s->kept_weight = kept_weight;
  if (!union_x || !union_w || !kept_row || !kept_weight) return -1;
  s->union_size = union_size, s->kept = s->kept_cap = kept, s->chunks = chunks, s->rows = rows;
  return 0;
}

int skm_run(const pc_stream *src, const skm_params *params, float *centres, skm_result *result) {
  const size_t n = src->n, d = src->d;
  const int k = params->k;
  memset(result, 0, sizeof *result);
  if (k < 1) return pc_fail("streaming k-means: k = %d, needs k >= 1", k);
  if (n < (size_t)k) return pc_fail("streaming k-means: k = %d is larger than the number of points (%zu)", k, n);
  const size_t m = skm_chunk_size(n, k, params->chunk_size);
  if (m < (size_t)k) return pc_fail("streaming k-means: k = %d is larger than a chunk (%zu points)", k, m);
  skm_params session_params = *params;
  if (!session_params.repetitions) session_params.repetitions = (int)fmax(1.0, ceil(3.0 * log((double)n)));
  size_t md;
  if (pc_mul_size(m, d, &md, "streaming k-means chunk") != 0) return -1;

  const double t_start = pc_now();
  skm_session s;
  float *buffer = pc_try_alloc(md, sizeof(float), "chunk rows");
  int rc = buffer ? skm_open(&s, d, m, &session_params) : -1;
  if (!buffer) memset(&s, 0, sizeof s);
  /* Across MPI ranks (dist.h) each rank adds its range of the chunks, as chunks of the whole
   * stream: skm_add's counters start from the chunks and rows before the range. */
  size_t first_row, rows_here;
  skm_rank_rows(n, m, &first_row, &rows_here);
  s.chunks = first_row / m, s.rows = first_row;
  for (size_t first = first_row; rc == 0 && first < first_row + rows_here; first += m) {
    const size_t rows = n - first < m ? n - first : m;
    const double t0 = pc_now();
    rc = src->read(src->ctx, first, rows, buffer);
    s.phase_s[SKM_PHASE_GENERATION] += pc_now() - t0;
    if (rc == 0) rc = skm_add(&s, buffer, rows);
    if (rc == 0 && pc_stop_requested())
      rc = pc_fail_stopped("streaming k-means: interrupted after %zu chunks", s.chunks);
  }
  /* rank 0 reduces every rank's kept points to the centres, once, and sends them to the others */
  if (pc_dist_any_failed(rc != 0)) rc = -1;
  else if (pc_dist_size() > 1) rc = skm_gather_kept(&s, (n + m - 1) / m, n);
  if (rc == 0 && pc_dist_rank() == 0) rc = skm_centres(&s, centres);
  if (pc_dist_any_failed(rc != 0)) rc = -1;
  else pc_dist_bcast(centres, (size_t)k * d * sizeof *centres);
  result->chunk_size = m;
  result->chunks = s.chunks;
  result->repetitions = s.repetitions;
  result->draws_per_round = s.draws;
  result->search_arity = s.sampler.search_arity;
  result->kept = s.kept;
  result->kept_row = s.kept_row, result->kept_weight = s.kept_weight; /* the result owns them now */
  s.kept_row = NULL, s.kept_weight = NULL;
  memcpy(result->phase_s, s.phase_s, sizeof result->phase_s);
  skm_close(&s);
  free(buffer);
  result->total_s = pc_now() - t_start;
  double accounted = 0.0;
  for (int p = 0; p < SKM_PHASE_OTHER; p++) accounted += result->phase_s[p];
  result->phase_s[SKM_PHASE_OTHER] = result->total_s - accounted;
  if (rc) skm_result_free(result);
  return rc;
}

/* labels and squared distances of the n points (xt dimension-major) to the nearest of k
 * centres (row-major). */
static void skm_nearest_centre(const double *xt, size_t n, size_t d, const float *centres, int k, int *labels, double *dist) {
  PAR_FOR()
  for (size_t i = 0; i < n; i++) {
    double best = INFINITY;
    int at = 0;
    for (int c = 0; c < k; c++) {
      double s = 0.0;
      for (size_t j = 0; j < d; j++) {
        const double diff = xt[j * n + i] - (double)centres[(size_t)c * d + j];
        s += diff * diff;
      }
      if (s < best) {
        best = s;
        at = c;
      }
    }
    labels[i] = at;
    dist[i] = best;
  }
}

int skm_assign(const pc_stream *src, const float *centres, int k, size_t chunk_size, int *labels, double *cost) {
  const size_t n = src->n, d = src->d, m = chunk_size < n ? chunk_size : n;
  size_t first_row, rows_here;
  skm_rank_rows(n, m, &first_row, &rows_here); /* across MPI ranks: this rank's chunks (dist.h) */
  const size_t chunks = (rows_here + m - 1) / m;
  float *buffer = pc_try_alloc(m, d * sizeof(float), "chunk rows");
  double *xt = pc_try_alloc_staging(m, d * sizeof(double), "dimension-major chunk");
  int *chunk_labels = pc_try_alloc(m, sizeof(int), "chunk labels");
  double *dist = pc_try_alloc(m, sizeof(double), "chunk distances");
  double *chunk_costs = pc_try_alloc(chunks ? chunks : 1, sizeof(double), "chunk costs");
  int rc = -1;
  *cost = 0.0;
  if (!buffer || !xt || !chunk_labels || !dist || !chunk_costs) goto done;
  rc = 0;
  /* device: centres[k * d]; chunk_labels / dist[m] a chunk's nearest centre and distance. */
  DEV_ENTER(map(to : centres[0 : (size_t)k * d]) map(alloc : chunk_labels[0 : m], dist[0 : m]))
  for (size_t c = 0; c < chunks && rc == 0; c++) {
    const size_t first = first_row + c * m, left = first_row + rows_here - first, rows = left < m ? left : m;
    if ((rc = skm_read_chunk(src, first, rows, buffer, xt)) != 0) break;
    /* device: xt[rows * d] this chunk's points (dimension-major). */
    DEV_ENTER(map(to : xt[0 : rows * d]))
    skm_nearest_centre(xt, rows, d, centres, k, chunk_labels, dist);
    chunk_costs[c] = pc_exclusive_scan_f64(dist, rows);
    if (isnan(chunk_costs[c])) rc = -1; /* no memory for the sum */
    DEV_UPDATE(from(chunk_labels[0 : rows]))
    DEV_EXIT(map(delete : xt[0 : rows * d]))
    if (labels) memcpy(labels + c * m, chunk_labels, rows * sizeof *labels);
  }
  DEV_EXIT(map(delete : centres[0 : (size_t)k * d], chunk_labels[0 : m], dist[0 : m]))
done:
  if (pc_dist_any_failed(rc != 0)) rc = -1;
  if (rc == 0) { /* every chunk's cost on every rank, added in chunk order: the one process's sum */
    size_t all;
    double *costs = pc_dist_gather(chunk_costs, chunks, sizeof *chunk_costs, &all);
    if (pc_dist_rank() == 0) {
      rc = costs ? 0 : -1;
      for (size_t c = 0; c < all && costs; c++) *cost += costs[c];
    }
    free(costs);
    if (pc_dist_any_failed(rc != 0)) rc = -1;
    else pc_dist_bcast(cost, sizeof *cost);
  }
  free(buffer), pc_free_staging(xt), free(chunk_labels), free(dist), free(chunk_costs);
  return rc;
}

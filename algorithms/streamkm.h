/*
 * streamkm.h - streaming k-means (Ailon, Jaiswal & Monteleoni, NIPS 2009) as Okuda & Fujimoto
 * accelerate it (001_63729beb6604192a.txt, sections 2.4, 2.5 and 3), one source for the seq,
 * omp and gpu variants.
 *
 * The stream is cut into chunks of m points (default ceil(sqrt(n k))), held one at a time. On
 * each chunk k-means# runs R times (default ceil(3 ln n)), independently; the run with the
 * lowest cost (sum of squared distances of the chunk to its nearest chosen point) is kept, and
 * each of its points is weighted by the number of chunk points it serves. Weighted k-means++ on
 * the union of the kept points of all chunks gives the k centres. Memory: O(d m k log k).
 *
 * k-means# (section 2.4): k rounds of b = 3 * max(1, ceil(log2 k)) independent D^2 draws each
 * (the first round by weight alone, i.e. uniform), so k * b points per run; see kmeanspp.h for
 * the draw rule. Draw q of round r of repetition e on chunk c uses counter
 * ((c * R + e) * k + r) * b + q of stream PC_STREAM_KMEANS_SHARP; the final k-means++ uses
 * stream PC_STREAM_KMEANSPP; both from the seed. Costs are summed in the scan's fixed order and
 * served counts are integers, so every variant keeps the same runs and returns the same centres.
 */
#ifndef SKM_STREAMKM_H
#define SKM_STREAMKM_H

#include "device.h"
#include "kmeanspp.h"
#include "stream_source.h"

#include <stddef.h>
#include <stdint.h>

/* Timed phases; names are the report's keys. generation: producing or reading a chunk (and its
 * dimension-major copy); transfers: chunks to and from the device; distance: D^2 updates;
 * selection: wheels, prefix sums and searches (and each run's cost); weighting: the served
 * counts of kept runs; other: the rest (the final k-means++ on the union included). */
typedef enum {
  SKM_PHASE_GENERATION,
  SKM_PHASE_TRANSFERS,
  SKM_PHASE_DISTANCE,
  SKM_PHASE_SELECTION,
  SKM_PHASE_WEIGHTING,
  SKM_PHASE_OTHER,
  SKM_NPHASES
} skm_phase;
extern const char *const skm_phase_names[SKM_NPHASES];


typedef struct {
  int k;
  size_t chunk_size; /* 0: ceil(sqrt(n k)); larger than n: n */
  int repetitions;   /* k-means# runs per chunk; 0: ceil(3 ln n) */
  int search_arity;  /* the wheel's search (kmeanspp.h): 2 binary, up to 1024 Okuda's; 0: KMPP_SEARCH_ARITY */
  uint64_t seed;
  pc_kernels kernels; /* the D^2 sampling's distance passes (kmeanspp_tuned.h): tuned or portable */
} skm_params;

typedef struct {
  size_t chunk_size, chunks;
  int repetitions, draws_per_round, search_arity;
  size_t kept;        /* points of the kept runs, all chunks (kept_row, kept_weight) */
  size_t *kept_row;   /* their rows in the stream, chunk by chunk, in draw order (owned) */
  long *kept_weight;  /* chunk points each serves (0 for a point drawn twice in a run) (owned) */
  double phase_s[SKM_NPHASES];
  double total_s;
} skm_result;

/* b, the points k-means# draws per round for k clusters. */
int skm_draws_per_round(int k);

/* A streaming k-means over chunks given one at a time (skm_run's steps; the library's
 * partial_fit): each chunk of at most max_rows points is summarised by the best of its k-means#
 * runs, kept in a weighted union that skm_centres reduces to k centres with weighted k-means++.
 * Chunk c's draws use the counters skm_run gives its chunk c, so chunks of skm_run's chunk size
 * and its repetitions give skm_run's centres. The device buffers stay mapped from skm_open to
 * skm_close. */
typedef struct {
  size_t d, max_rows, per_run;
  int k, repetitions, draws;
  uint64_t seed;
  size_t chunks, rows;              /* added so far */
  double *xt;                       /* a chunk, dimension-major, in double (staging memory) */
  float *ones;                      /* unit weights of a chunk's points */
  int *nearest;                     /* each chunk point's nearest chosen point */
  double *costs;                    /* each run's cost */
  size_t *best_row;                 /* the kept run's points (chunk rows) */
  long *served, *best_served;       /* points each chosen point serves: all runs, the kept one */
  kmpp_sampler sampler;
  int mapped;                       /* the device holds xt, ones, nearest, served */
  size_t kept, kept_cap;            /* kept points so far; room in the four arrays below */
  float *union_x, *union_w;         /* the kept points with a weight, and their weights */
  size_t union_size;
  size_t *kept_row;                 /* every kept point's row in the stream (weight 0 included) */
  long *kept_weight;
  double phase_s[SKM_NPHASES];
} skm_session;

/* Opens a session for chunks of at most max_rows points of d features (params: k, repetitions,
 * 0: ceil(3 ln max_rows), search_arity, seed, kernels; chunk_size unused). 0, or -1 with a
 * pc_fail message (nothing left to close). */
int skm_open(skm_session *s, size_t d, size_t max_rows, const skm_params *params);
/* Adds a chunk of `rows` points (x: rows x d, row-major; 1 <= rows <= max_rows, the caller's to
 * ensure). 0 or -1. */
int skm_add(skm_session *s, const float *x, size_t rows);
/* The k centres (k x d) of what was added so far; -1 with a message when the chunks kept fewer
 * than k weighted points. */
int skm_centres(skm_session *s, float *centres);
void skm_close(skm_session *s);

/* The rows of a chunk for n points and k centres: `wanted` (at most n), or by default
 * ceil(sqrt(n k)) (Okuda and Fujimoto), at most n. */
size_t skm_chunk_size(size_t n, int k, size_t wanted);
/* Across MPI ranks (common/dist.h) each rank takes a contiguous range of the chunks of
 * chunk_size rows: rows [*first, *first + *count) of the n. One process: all of them. */
void skm_rank_rows(size_t n, size_t chunk_size, size_t *first, size_t *count);

/* Clusters the stream into k centres (centres: k x d, row-major, points of the stream). Fills
 * *result (free its arrays with skm_result_free). Returns 0, or -1 with a pc_fail message:
 * k < 1, n < k, a chunk smaller than k, fewer than k distinct weighted points in the union,
 * a failed read, memory. Across MPI ranks each rank samples its chunks (skm_rank_rows), rank 0
 * runs the final k-means++ on every rank's kept points, and every rank gets the centres of the
 * one process; *result's kept points are all of them on rank 0, the rank's own elsewhere. */
int skm_run(const pc_stream *src, const skm_params *params, float *centres, skm_result *result);
void skm_result_free(skm_result *result);

/* A second pass over the stream, chunk_size points at a time: labels[i] (if not NULL) = the
 * nearest of the k centres (ties: the lower index), *cost = sum of squared distances to it
 * (chunk sums in the scan's order, added chunk by chunk). Across MPI ranks each rank labels the
 * rows of its chunks (skm_rank_rows; labels[0] is its first), and every rank gets the one
 * process's cost. Returns 0 or -1 with a message. */
int skm_assign(const pc_stream *src, const float *centres, int k, size_t chunk_size, int *labels, double *cost);

#endif

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

/* Clusters the stream into k centres (centres: k x d, row-major, points of the stream). Fills
 * *result (free its arrays with skm_result_free). Returns 0, or -1 with a pc_fail message:
 * k < 1, n < k, a chunk smaller than k, fewer than k distinct weighted points in the union,
 * a failed read, memory. */
int skm_run(const pc_stream *src, const skm_params *params, float *centres, skm_result *result);
void skm_result_free(skm_result *result);

/* A second pass over the stream, chunk_size points at a time: labels[i] (if not NULL) = the
 * nearest of the k centres (ties: the lower index), *cost = sum of squared distances to it
 * (chunk sums in the scan's order, added chunk by chunk). Returns 0 or -1 with a message. */
int skm_assign(const pc_stream *src, const float *centres, int k, size_t chunk_size, int *labels, double *cost);

#endif

/*
 * stream.h - Cao, Tung & Zhou's stream clustering (WAIM 2006, 000_df17675d4c891506.txt,
 * section 4.4) with the project's Lloyd k-means (kmeans.h) as the inner clusterer, one source
 * for the seq, omp and gpu variants.
 *
 * Entire stream (window = 0): STREAM's divide and conquer (Guha, Meyerson, Mishra, Motwani &
 * O'Callaghan, TKDE 2003), as Cao et al.'s STREAM-GPU uses it. The stream is read in blocks of
 * m = n^epsilon points (default epsilon 0.5, at least 2k points), one block in memory at a time.
 * Each block is clustered into k centres by k-means (k-means++ seeding, Lloyd to convergence);
 * each centre is weighted by the number of points it serves and goes to level 1. Whenever a
 * level holds m or more weighted points they are clustered into k weighted centres (weighted
 * k-means) that go one level up. At the end the weighted points of all levels are clustered into
 * the k centres. Memory: O(m d) per level, O(log n / log(m / k)) levels.
 *
 * Sliding window (window = N): only the N most recent points count (Babcock, Datar, Motwani &
 * O'Callaghan, PODS 2003, the algorithm Cao et al. adopt; their combination step is the GPU
 * k-means). The stream is cut into buckets of m points (default max(ceil(N^epsilon), 2k));
 * a full bucket is summarised by k weighted centres (k-means as above). Buckets are combined
 * as in an exponential histogram: bucket sizes are m * 2^c, and when a third bucket of size
 * class c appears the two oldest of that class are combined (weighted k-means on the union of
 * their summaries) into one of class c + 1. A bucket whose newest point has left the window is
 * dropped; the oldest bucket may still hold some expired points (it is kept whole, as in
 * Babcock et al.). The window's k centres: weighted k-means on the union of the live buckets'
 * summaries, at the end of the stream and every Q points (`query_every`, the "at any time" of
 * the paper). Note: buckets are combined by this count rule, not by Babcock et al.'s cost-based
 * invariant.
 *
 * Weighted k-means is km_run's assignment (one pass per call, labels to the host: Cao's GPU-L)
 * with the weighted centroids computed on the host in a fixed order, until no label changes
 * (or max_iter passes). Seeding: weighted k-means++ (kmpp_seed) with the seed of call c (the
 * c-th clustering of the run) = pc_hash_uniform(seed, PC_STREAM_STREAM, c) scaled to 53 bits;
 * when fewer than k points carry weight or distance (duplicates) k distinct random rows are
 * used instead. Empty clusters are dropped from a summary. Every variant draws the same seeds,
 * and raw blocks are clustered by km_run, whose fixed-point sums do not depend on the order of
 * the additions, so the variants agree bit for bit.
 */
#ifndef STRM_STREAM_H
#define STRM_STREAM_H

#include "stream_source.h"

#include <stddef.h>
#include <stdint.h>

#include "kmeans.h"

/* Timed phases; names are the report's keys. generation: producing or reading blocks;
 * seeding: k-means++; h2d, assign, update, d2h: km_run's phases summed over every k-means
 * (Cao's m2g, dc, gc, g2m; update also holds the host's weighted centroids); other: the rest
 * (layout changes, bookkeeping). */
typedef enum {
  STRM_PHASE_GENERATION,
  STRM_PHASE_SEEDING,
  STRM_PHASE_H2D,
  STRM_PHASE_ASSIGN,
  STRM_PHASE_UPDATE,
  STRM_PHASE_D2H,
  STRM_PHASE_OTHER,
  STRM_NPHASES
} strm_phase;
extern const char *const strm_phase_names[STRM_NPHASES];


#define STRM_DEFAULT_EPSILON 0.5
#define STRM_DEFAULT_MAX_ITER 100

typedef struct {
  int k;
  size_t block;        /* m, points per block or bucket; 0: max(ceil(base^epsilon), 2k), capped at base */
  double epsilon;      /* in (0, 1); base = n (entire stream) or N (window) */
  size_t window;       /* 0: the entire stream; N: the N most recent points */
  size_t query_every;  /* window: also cluster the window after each block in which a multiple of Q arrives */
  int max_iter;        /* Lloyd passes per k-means, >= 1 */
  km_update_where update;
  uint64_t seed;
  pc_kernels kernels;  /* of k-means' assign step and of the k-means++ seeding: tuned or portable */
} strm_params;

typedef struct {
  size_t block, blocks;     /* m, and the blocks (buckets) read */
  int levels;               /* entire stream: levels that held weighted points */
  size_t kmeans_runs;       /* k-means calls (blocks, combinations, final or queries) */
  long iterations;          /* Lloyd passes over all of them */
  size_t combined;          /* entire: level reclusterings; window: bucket combinations */
  size_t queries;           /* window: clusterings of the window (the last included) */
  size_t buckets;           /* window: live buckets at the end */
  size_t summary;           /* weighted points the last clustering took */
  size_t first_row, rows;   /* the rows the centres answer for: [first_row, first_row + rows) */
  double phase_s[STRM_NPHASES];
  double query_s;           /* window: time of the queries (inside the phases) */
  double total_s;
} strm_result;

/* The block size the run uses for these parameters and n points (0 when the parameters are
 * invalid; strm_run says why). */
size_t strm_block_size(const strm_params *params, size_t n);

/* Clusters the stream (entire or window, see above) into k centres (k x d, row-major).
 * Returns 0, or -1 with a pc_fail message: k < 1, n < k, a block (bucket) of fewer than 2k
 * points, a window smaller than a bucket, fewer than k distinct weighted points at the end, a
 * failed read, memory. */
int strm_run(const pc_stream *src, const strm_params *params, float *centres, strm_result *result);

/* A pass over rows [first, first + rows) of the stream, chunk points at a time: labels[i - first]
 * (if not NULL) = the nearest of the k centres (squared distance in float, ties: the lower
 * index), *cost = the sum of those distances (in double, in row order). 0 or -1 with a message. */
int strm_assign(const pc_stream *src, size_t first, size_t rows, const float *centres, int k, size_t chunk, int *labels,
                double *cost);

/* The second pass of a run that ended with *result: labels[0..n) (if not NULL) = the nearest of
 * the k centres for every row, *cost = the cost (strm_assign's) over the rows the centres answer
 * for (result->first_row, result->rows). 0 or -1 with a message. */
int strm_label_rows(const pc_stream *src, const strm_result *result, const float *centres, int k, int *labels,
                    double *cost);

#endif

/*
 * check.h - `--check`, the oracle of every subcommand (after BabelStream's and miniBUDE's
 * verification): after the timed runs, a sample of the results is recomputed here by brute force
 * in double, independently of the algorithms' kernels (tuned or portable, host or GPU), and
 * compared. A mismatch prints the first PC_CHECK_SHOWN differences and ends the program with exit
 * status 1 (pc_run_check), before any output is committed.
 *
 * What each check recomputes for its sample (pc_check_sample: all points up to PC_CHECK_SAMPLE,
 * fewer for very large inputs so that a check costs about as much as a run):
 *  - kmeans: the labels of one more assign pass from the final centroids (made by the run's own
 *    kernels) against the nearest centroid in double, a difference within the float32 rounding of
 *    a near tie counted as a tie, not a mismatch; every centroid of that pass against the mean of
 *    its points (all points); after a run that ended with no label changing, the run's labels
 *    against that pass's (all points).
 *  - dbscan: each sampled point's neighbour count against its core flag, and its label against
 *    its core neighbours' (clusters are connected, border points take the smallest cluster id,
 *    noise has no core neighbour).
 *  - dpc: rho, dependent point and delta of each sampled point, exactly (dpc.h's definitions).
 *  - streamkm, stream: the second pass's labels of the sampled rows against the nearest centre
 *    (ties as for kmeans); streamkm also: the kept points' weights add up to n, and each centre
 *    is one of the kept points.
 *  - generate: each sampled row generated again on its own, bit for bit.
 */
#ifndef PC_CHECK_H
#define PC_CHECK_H

#include <stddef.h>

#include "kmeans.h"
#include "stream_source.h"
#include "synth.h"

enum {
  PC_CHECK_SAMPLE = 1000, /* the most points a check samples */
  PC_CHECK_SHOWN = 10     /* mismatches printed */
};

typedef struct {
  const char *items;    /* what was sampled ("points", "rows") */
  size_t sampled;       /* items compared */
  size_t mismatches;
  size_t ties;          /* kmeans, streams: labels that differ within the rounding of a near tie */
  int shown;
  char first[PC_CHECK_SHOWN][240];
} pc_check;

/* The rows a check samples from n items of dimension d: min(n, PC_CHECK_SAMPLE), fewer when a
 * brute-force pass over n points per sampled point would cost more than about 4e9 values (at
 * least 64). Written to rows[] (PC_CHECK_SAMPLE entries) in increasing order, the same for every
 * variant; returns their number. */
size_t pc_check_sample(size_t n, size_t d, int all_pairs, size_t *rows);

/* Lloyd's assign and update steps: `labels` and `centroids_after` are those of one assign pass
 * (and update) of km_run from `centroids` (k x d, row-major) on xt (dimension-major, d x n),
 * with `distance` (its float32 rounding sets the tie tolerance). `run_labels` (NULL: not
 * compared): the run's labels, which must equal `labels` when the run's last pass changed none. */
void pc_check_kmeans(pc_check *ck, const float *xt, size_t n, size_t d, int k, km_distance distance,
                     const float *centroids, const int *labels, const float *centroids_after, const int *run_labels);

/* DBSCAN on row-major x: labels and core flags of every point. */
void pc_check_dbscan(pc_check *ck, const float *x, size_t n, size_t d, double eps, int min_pts, const int *labels,
                     const unsigned char *is_core);

/* Density peaks on the n points x[row[i]] (row NULL: x[i]), row-major: rho, delta and dependent
 * points of every point (dep indices are positions 0..n). */
void pc_check_dpc(pc_check *ck, const float *x, const int *row, size_t n, size_t d, double dc, const int *rho,
                  const double *delta, const int *dep);

/* Nearest-centre labels of rows [first, first + rows) of a stream (labels[r - first]) against
 * the k centres (row-major), each distance summed in float as the streaming passes do. */
void pc_check_nearest_centres(pc_check *ck, const pc_stream *src, size_t first, size_t rows, const float *centres,
                              int k, const int *labels);

/* Streaming k-means' kept points: their weights add up to n, and each centre is one of them. */
void pc_check_kept_points(pc_check *ck, const pc_stream *src, const size_t *kept_row, const long *kept_weight,
                          size_t kept, const float *centres, int k);

/* Rows of a generated data set against the generator called for each row alone. */
void pc_check_generated(pc_check *ck, const pc_gen_spec *spec, const float *x);

/* Records a mismatch (the first PC_CHECK_SHOWN are kept for printing). */
void pc_check_mismatch(pc_check *ck, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Ends the program with status 1 after printing the kept mismatches, when there are any. */
void pc_check_end(const pc_check *ck, const char *subcommand);

#endif

/*
 * kmeanspp.h - D^2 sampling: weighted k-means++ seeding (Arthur & Vassilvitskii 2007) and the
 * batched rounds k-means# is made of (Okuda & Fujimoto, 001_63729beb6604192a.txt, sections
 * 2.3, 2.4 and 3.3), one source for the seq, omp and gpu variants.
 *
 * A round draws `draws` points independently from one roulette wheel: point i with probability
 * w_i D(i)^2 / sum_j w_j D(j)^2, where D is the distance to the nearest point chosen in earlier
 * rounds (first round: probability w_i / sum w). Draw q of round r uses
 * u = pc_hash_uniform(seed, stream, first_draw + r * draws + q) and the target t = u * total
 * (if rounding makes t reach total, the largest double below total). The wheel is the
 * exclusive prefix sum E of the masses (common/scan.h, E[n] = total), and the point picked is
 * the first i with E[i+1] > t: a point of zero mass is never picked. E is computed in an order
 * that depends only on n, E is non-decreasing, and distances are summed in double in dimension
 * order, so every variant picks the same points for the same seed.
 */
#ifndef KM_KMEANSPP_H
#define KM_KMEANSPP_H

#include <stddef.h>
#include <stdint.h>

/* Chooses k distinct rows of x (n x d, row-major); weights (n values >= 0) or NULL for all 1.
 * Writes the row indices, in the order drawn, to chosen[0..k): k rounds of one draw from
 * stream PC_STREAM_KMEANSPP, first_draw 0. Returns 0, or -1 with a pc_fail message when fewer
 * than k points carry weight or distance (duplicates, zero weights). */
int kmpp_seed(const float *x, const float *weights, size_t n, size_t d, int k, uint64_t seed, size_t *chosen);

/* Points as D^2 sampling reads them: feature j of point i at x[i * point_stride + j * dim_stride]
 * (row-major: d, 1; dimension-major: 1, n), weight w[i] >= 0. In the gpu variant x and w must be
 * present on the device. */
typedef struct {
  const float *x, *w;
  size_t n, d, point_stride, dim_stride;
} kmpp_points;

/* Work arrays of kmpp_sample, n entries each (targets and picks: `draws`), present on the
 * device in the gpu variant. After a call, dist[i] is the squared distance of point i to its
 * nearest chosen point and nearest[i] that point's position in chosen[] (ties: the earlier). */
typedef struct {
  double *dist, *wheel, *targets;
  int *nearest;
  long *picks;
} kmpp_work;

/* Which counter-based uniforms a sampling run draws (see the rule above). */
typedef struct {
  uint64_t seed, stream, first_draw;
} kmpp_draws;

/* Seconds spent updating distances and selecting points, added to by kmpp_sample. */
typedef struct {
  double distance, selection;
} kmpp_times;

/* Up to `rounds` rounds of `draws` independent picks each; chosen[] (rounds * draws entries)
 * gets the picked point indices in draw order (a point may be picked twice in one round).
 * Stops early when no point carries mass (every point sits on a chosen one). Returns the
 * number of points chosen; *cost (if not NULL) gets sum_i w_i dist[i] (summed in the scan's
 * order). times may be NULL. */
size_t kmpp_sample(const kmpp_points *p, const kmpp_work *work, int rounds, int draws, kmpp_draws rng, size_t *chosen,
                   double *cost, kmpp_times *times);

/* The roulette wheel's search (Okuda section 3.3): for q < count, picks[q] = the first i < n with
 * wheel[i+1] > targets[q], where wheel[0..n) is non-decreasing, wheel[n] stands for a total
 * above every target, and the answer is at most n - 1. Each level splits the range into
 * `arity` parts and keeps the one where the comparison turns true (GPU: one team per target,
 * one thread per part; arity 2 is a binary search). Same answer for any arity >= 2. In the gpu
 * variant wheel, targets and picks must be present on the device. */
void kmpp_wheel_search(const double *wheel, size_t n, const double *targets, long *picks, int count, int arity);

/* Parts per level of the wheel's search: a team of 1024 threads on the GPU (Okuda's A), a
 * binary search on the host. */
#ifndef KMPP_SEARCH_ARITY
#if defined(PC_VARIANT_GPU)
#define KMPP_SEARCH_ARITY 1024
#else
#define KMPP_SEARCH_ARITY 2
#endif
#endif

#endif

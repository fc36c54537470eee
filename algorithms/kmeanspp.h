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
 * exclusive prefix sum E of the masses, added as common/scan.c adds them (E[n] = total: serial
 * sums within blocks of PC_SCAN_BLOCK, then the block totals in order), and the point picked is
 * the first i with E[i+1] > t: a point of zero mass is never picked. E is computed in an order
 * that depends only on n, E is non-decreasing, and distances are summed in double in dimension
 * order, so every variant picks the same points for the same seed.
 */
#ifndef KM_KMEANSPP_H
#define KM_KMEANSPP_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"

/* Chooses k distinct rows of x (n x d, row-major); weights (n values >= 0) or NULL for all 1.
 * Works on a double copy of x (8 n d bytes, on the device too in the gpu variant).
 * Writes the row indices, in the order drawn, to chosen[0..k): k rounds of one draw from
 * stream PC_STREAM_KMEANSPP, first_draw 0, by the `kernels` distance passes (the same rows
 * either way). Returns 0, or -1 with a pc_fail message when fewer than k points carry weight or
 * distance (duplicates, zero weights). */
int kmpp_seed(const float *x, const float *weights, size_t n, size_t d, int k, uint64_t seed, pc_kernels kernels,
              size_t *chosen);
/* kmpp_seed (unit weights) where x is this MPI rank's slice of the rows (common/dist.h's
 * pc_dist_slice of the ranks' total): chosen[] gets the global rows the one process draws from
 * all of them, on every rank. One process: kmpp_seed. */
int kmpp_seed_slices(const float *x, size_t n, size_t d, int k, uint64_t seed, pc_kernels kernels, size_t *chosen);

/* Points as D^2 sampling reads them: feature j of point i at x[i * point_stride + j * dim_stride]
 * (row-major: d, 1; dimension-major: 1, n), in double (the distances are summed in double: no
 * conversion per distance), weight w[i] >= 0. In the gpu variant x and w must be present on the
 * device. */
typedef struct {
  const double *x;
  const float *w;
  size_t n, d, point_stride, dim_stride;
} kmpp_points;

/* Which counter-based uniforms the runs draw: draw q of round r of run e uses counter
 * first_draw + e * run_stride + r * draws + q (see the rule above). */
typedef struct {
  uint64_t seed, stream, first_draw, run_stride;
} kmpp_draws;

/* Seconds spent updating distances and selecting points, added to by kmpp_sample. */
typedef struct {
  double distance, selection;
} kmpp_times;

/* Device-resident state of `runs` independent sampling runs of `rounds` rounds of `draws`
 * draws each on the same points (k-means# repeats its runs on one chunk; k-means++ is one run
 * of one draw per round). Arrays are present on the device in the gpu variant; the layout is
 * run-major for the n of the current kmpp_sample call (at most `capacity`). */
typedef struct {
  size_t capacity;
  int runs, rounds, draws;
  int search_arity;   /* kmpp_wheel_pick's arity; kmpp_sampler_open sets KMPP_SEARCH_ARITY */
  pc_kernels kernels; /* the distance passes' (kmeanspp_tuned.h); kmpp_sampler_open sets tuned */
  double *dist;       /* runs x n: squared distance to the nearest chosen point */
  double *wheel;      /* runs x n: exclusive prefix sums of the masses within each block */
  double *block_sums; /* runs x blocks of PC_SCAN_BLOCK: each block's total mass */
  double *offsets;    /* runs x (blocks + 1): the running sums of the block totals (the search's) */
  double *uniforms;   /* runs x rounds x draws: the uniforms of the rule */
  long *chosen;       /* runs x rounds x draws: picked points in draw order; -1 once the run's
                         mass is spent (every point sits on a chosen one) */
} kmpp_sampler;

/* Allocates the sampler (and its device copies). 0, or -1 with a pc_fail message. */
int kmpp_sampler_open(kmpp_sampler *s, size_t capacity, int runs, int rounds, int draws);
void kmpp_sampler_close(kmpp_sampler *s);

/* All the sampler's runs on p (p->n <= capacity), together: per round one pass updates every
 * run's distances against its previous round's points and sums its masses block by block,
 * and one pass draws every run's points from its wheel. costs[e] (host) gets run e's
 * sum_i w_i D(i)^2 at the end (summed in the scan's order; 0 if it chose nothing). The chosen
 * points stay on the device (kmpp_chosen_row). times may be NULL. */
void kmpp_sample(const kmpp_points *p, kmpp_sampler *s, kmpp_draws rng, double *costs, kmpp_times *times);

/* Copies run e's chosen points (rounds * draws entries, in draw order) to chosen[] and returns
 * how many it chose (the rounds before its mass ran out, times draws). */
size_t kmpp_chosen_row(const kmpp_sampler *s, int run, size_t *chosen);

/* nearest[i] (present on the device) = the position in run e's chosen points of point i's
 * nearest one (ties: the earlier), for its first `count` points; as run e's sampling saw it. */
void kmpp_nearest(const kmpp_points *p, const kmpp_sampler *s, int run, size_t count, int *nearest);

/* The roulette wheel's search (Okuda section 3.3), one round of draws for every run. Run e's
 * wheel: wheel[e n ..] holds exclusive prefix sums within blocks of PC_SCAN_BLOCK and
 * block_sums[e blocks ..] the blocks' totals; E[i] = wheel[i] + the running sum of the earlier
 * block totals (exactly common/scan.c's prefix sums), total = E[n]. For q < draws, with
 * u = uniforms[e * stride + q] and t = u * total (lowered below total if rounding reached it),
 * picks[e * stride + q] = the first i < n with E[i+1] > t, or -1 when total is 0. Per run, one
 * thread first adds its block totals in order (a team loads them into team-local memory) into
 * offsets[e (blocks + 1) ..] (runs x (blocks + 1) scratch); a draw's block is then found by a
 * binary search of them; within the block, arity 2 is a search by that thread (a thread per
 * draw, 16-ary steps), and arity A > 2 Okuda's A-ary search (on the GPU a team of A threads per
 * draw: each level splits the range into A parts and keeps the one where the comparison turns
 * true). The same answer for any arity. In the gpu variant all
 * arrays must be present on the device. */
void kmpp_wheel_pick(const double *wheel, const double *block_sums, double *offsets, size_t n, int runs, int draws,
                     const double *uniforms, long *picks, size_t stride, int arity);

/* Parts per level of the wheel's search: 2, a thread per draw searching by itself, in every
 * variant (the team per run that serves its draws was faster than Okuda's team of 1024 threads
 * per draw, which --search-arity 1024 keeps: docs/performance.md). */
#ifndef KMPP_SEARCH_ARITY
#define KMPP_SEARCH_ARITY 2
#endif

#endif

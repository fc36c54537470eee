/*
 * kmeanspp.h - weighted k-means++ seeding (Arthur & Vassilvitskii 2007; Okuda & Fujimoto,
 * 001_63729beb6604192a.txt, section 2.3), one source for the seq, omp and gpu variants.
 *
 * Round r draws point i with probability w_i D(i)^2 / sum_j w_j D(j)^2, where D is the distance
 * to the nearest point chosen so far (round 0: probability w_i / sum w). The draw is
 * u_r * total with u_r = pc_hash_uniform(seed, PC_STREAM_KMEANSPP, r), and the point picked is
 * the first whose inclusive prefix sum exceeds it (roulette wheel). The prefix sums are added in
 * an order that depends only on n (common/scan.h) and distances are summed in double in
 * dimension order, so every variant picks the same points for the same seed.
 */
#ifndef KM_KMEANSPP_H
#define KM_KMEANSPP_H

#include <stddef.h>
#include <stdint.h>

/* Chooses k distinct rows of x (n x d, row-major); weights (n values >= 0) or NULL for all 1.
 * Writes the row indices, in the order drawn, to chosen[0..k). Returns 0, or -1 with a pc_fail
 * message when fewer than k points carry weight or distance (duplicates, zero weights). */
int kmpp_seed(const float *x, const float *weights, size_t n, size_t d, int k, uint64_t seed, size_t *chosen);

#endif

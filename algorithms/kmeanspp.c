/*
 * kmeanspp.c - weighted k-means++ seeding; see kmeanspp.h for the sampling rule.
 *
 * Per round, on the device in the gpu variant (x, weights and the work arrays are mapped once):
 * prefix sums of the current weights w_i D(i)^2 (common/scan.c), a roulette-wheel draw by
 * binary search over them (one thread: O(log n)), and the update of D(i)^2 against the new
 * centre (one point per iteration). Only the chosen index comes back each round.
 */
#include "kmeanspp.h"
#include "par.h"
#include "scan.h"
#include "synth.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int kmpp_seed(const float *x, const float *weights, size_t n, size_t d, int k, uint64_t seed, size_t *chosen) {
  if (k < 1 || (size_t)k > n) return pc_fail("k-means++: k = %d is outside [1, %zu]", k, n);
  double *mass = pc_try_alloc(n, sizeof *mass, "k-means++ weights");  /* w_i D(i)^2 */
  double *wheel = pc_try_alloc(n, sizeof *wheel, "k-means++ prefix sums");
  float *w = pc_try_alloc(n, sizeof *w, "k-means++ point weights");
  if (!mass || !wheel || !w) {
    free(mass), free(wheel), free(w);
    return -1;
  }
  for (size_t i = 0; i < n; i++) w[i] = weights ? weights[i] : 1.0f;
  long pick[1] = {0};
  int rc = 0;
  DEV_ENTER(map(to : x[0 : n * d], w[0 : n]) map(alloc : mass[0 : n], wheel[0 : n], pick[0 : 1]))
  PAR_FOR()
  for (size_t i = 0; i < n; i++) mass[i] = (double)w[i]; /* round 0 draws by weight alone */
  for (int r = 0; r < k; r++) {
    PAR_FOR()
    for (size_t i = 0; i < n; i++) wheel[i] = mass[i];
    const double total = pc_exclusive_scan_f64(wheel, n);
    if (!(total > 0.0)) {
      rc = pc_fail("k-means++: only %d points carry weight or distance, fewer than k = %d (duplicates or zero weights)",
                   r, k);
      break;
    }
    const double target = pc_hash_uniform(seed, PC_STREAM_KMEANSPP, (uint64_t)r) * total;
    PAR_FOR() /* one iteration: the roulette wheel's binary search, where the sums are */
    for (int once = 0; once < 1; once++) {
      size_t lo = 0, hi = n - 1; /* the first i whose inclusive sum wheel[i] + mass[i] exceeds target */
      while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (wheel[mid] + mass[mid] > target) hi = mid;
        else lo = mid + 1;
      }
      while (lo > 0 && mass[lo] == 0.0) lo--; /* rounding at the very end of the wheel */
      pick[0] = (long)lo;
    }
    DEV_UPDATE(from(pick[0 : 1]))
    const size_t c = (size_t)pick[0];
    chosen[r] = c;
    const int first_round = r == 0;
    PAR_FOR()
    for (size_t i = 0; i < n; i++) {
      double s = 0.0;
      for (size_t j = 0; j < d; j++) {
        const double diff = (double)x[i * d + j] - (double)x[c * d + j];
        s += diff * diff;
      }
      const double m = (double)w[i] * s;
      mass[i] = first_round || m < mass[i] ? m : mass[i];
    }
  }
  DEV_EXIT(map(delete : x[0 : n * d], w[0 : n], mass[0 : n], wheel[0 : n], pick[0 : 1]))
  free(mass), free(wheel), free(w);
  return rc;
}

/* harness.c of 06-dpc-rho-schedule: data, a sequential reference, the speedup and the checks
 * (teaching/common/harness.h). */
#include "exercise.h"
#include "harness.h"
#include "par.h"

#include <math.h>
#include <stdio.h>

#if defined(PC_VARIANT_OMP)
#include <omp.h>
#endif

#define D 2
/* d_c = 8 grid steps; dc^2 between two squared grid distances, so no pair lies on the boundary. */
#define DC_STEPS 8
#define DC2 ((DC_STEPS * DC_STEPS + 0.5) / ((double)TH_GRID * TH_GRID))

typedef struct {
  const float *x;
  size_t n;
  int *rho;
} job;

static void run_student(void *arg) {
  job *j = arg;
  ex_rho(j->x, j->n, D, DC2, j->rho);
}

/* The first index in [0, n) whose first feature is >= v (x is sorted by it). */
static size_t lower_bound(const float *x, size_t n, double v) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if ((double)x[mid * D] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The reference: the candidates' range by binary search, distances by integer grid steps. */
static void reference_rho(const float *x, size_t n, int *rho) {
  const double dc = DC_STEPS / (double)TH_GRID;
  for (size_t i = 0; i < n; i++) {
    const size_t first = lower_bound(x, n, x[i * D] - dc), last = lower_bound(x, n, x[i * D] + dc + 0.5 / TH_GRID);
    int count = 0;
    for (size_t q = first; q < last; q++) {
      long s = 0;
      for (size_t j = 0; j < D; j++) {
        const long steps = (long)((x[i * D + j] - x[q * D + j]) * TH_GRID);
        s += steps * steps;
      }
      count += s <= DC_STEPS * DC_STEPS;
    }
    rho[i] = count;
  }
}

int main(int argc, char **argv) {
  const th_options o = th_start(argc, argv, TH_EXERCISE, 32768, 3);
  const size_t n = o.n;
  float *x = th_alloc(n * D, sizeof *x);
  int *rho = th_alloc(n, sizeof *rho), *want = th_alloc(n, sizeof *want);
  for (size_t i = 0; i < n; i++) { /* first feature u^3: dense at 0, sparse at 1, sorted */
    x[i * D] = th_on_grid(pow(((double)i + 0.5) / (double)n, 3));
    for (size_t j = 1; j < D; j++) x[i * D + j] = th_on_grid(th_uniform(1, i * D + j));
  }
  printf("data: n = %zu points, d = %d, sorted by the first feature, %.0fx denser at its low end; dc^2 = %g\n", n, D,
         pow((double)n, 2.0 / 3.0) / 3, DC2);
  reference_rho(x, n, want);

  /* device: in, x[n * D] points; out, rho[n]. */
  DEV_ENTER(map(to : x[0 : n * D]) map(alloc : rho[0 : n]))
  th_poison(x, n * D * sizeof *x); /* on a GPU: a loop on the host reads NaN */
  job j = {x, n, rho};
  th_watch_start();
  run_student(&j);
  const th_watch w = th_watch_stop();
  th_watch_print("ex_rho", &w);
  const double t = th_time("ex_rho", run_student, &j, o.repeat);
#if defined(PC_VARIANT_OMP)
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const double t1 = th_time("ex_rho on 1 thread", run_student, &j, o.repeat);
  omp_set_num_threads(threads);
  printf("speedup on %d threads: %.2f (ideal %d)\n", threads, t1 / t, threads);
#else
  (void)t;
#endif
  DEV_EXIT(map(from : rho[0 : n]) map(delete : x[0 : n * D]))

  for (size_t i = 0; i < n; i++)
    if (rho[i] != want[i]) th_fail("rho[%zu] = %d, expected %d", i, rho[i], want[i]);
  if (th_source_count("PAR_FOR") == 0)
    th_fail("exercise.c has no PAR_FOR: keep the loop parallel (static check)");
  if (!th_source_macro_has("HOST_ONLY", "schedule(dynamic") && !th_source_macro_has("HOST_ONLY", "schedule(guided"))
    th_fail("the host schedule is not dynamic or guided: one block of dense points keeps one thread busy while the "
            "others wait (static check; compare the speedups of omp)");
  th_require_parallel(&w, "ex_rho");
  th_pass("all %zu densities exact", n);
}

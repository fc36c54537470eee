/* harness.c of 02-dbscan-core-count: data, a sequential reference, the checks (teaching/common/harness.h). */
#include "exercise.h"
#include "harness.h"
#include "par.h"

#include <stdio.h>

#define D 2
#define CLUSTERS 16
#define NOISE 0.1     /* fraction of the points spread uniformly */
#define SPREAD 0.02   /* a cluster's standard deviation, about */
#define MIN_PTS 10
/* eps^2 between two squared grid distances (k / TH_GRID^2): no pair lies on the boundary. */
#define EPS2 (110.5 / ((double)TH_GRID * TH_GRID))

typedef struct {
  const float *x;
  size_t n;
  int *core;
} job;

static void run_student(void *arg) {
  job *j = arg;
  ex_core_flags(j->x, j->n, D, EPS2, MIN_PTS, j->core);
}

/* The reference: every neighbour counted (no early stop), squared distances by integer grid steps. */
static void reference_core(const float *x, size_t n, int *core) {
  for (size_t i = 0; i < n; i++) {
    long count = 0;
    for (size_t q = 0; q < n; q++) {
      long s = 0;
      for (size_t j = 0; j < D; j++) {
        const long steps = (long)((x[i * D + j] - x[q * D + j]) * TH_GRID);
        s += steps * steps;
      }
      count += (double)s / ((double)TH_GRID * TH_GRID) <= EPS2;
    }
    core[i] = count >= MIN_PTS;
  }
}

int main(int argc, char **argv) {
  const th_options o = th_start(argc, argv, TH_EXERCISE, 8000, 3);
  const size_t n = o.n;
  float *x = th_alloc(n * D, sizeof *x);
  int *core = th_alloc(n, sizeof *core), *want = th_alloc(n, sizeof *want);
  for (size_t i = 0; i < n; i++) {
    const int noise = th_uniform(1, i) < NOISE, c = (int)(th_uniform(2, i) * CLUSTERS);
    for (size_t j = 0; j < D; j++) {
      const double centre = 0.1 + 0.8 * th_uniform(3, (uint64_t)c * D + j);
      const double bell = th_uniform(4, i * D + j) + th_uniform(5, i * D + j) + th_uniform(6, i * D + j) - 1.5;
      const double v = noise ? th_uniform(7, i * D + j) : centre + 2 * SPREAD * bell;
      x[i * D + j] = th_on_grid(v < 0 ? 0 : v > 0.999 ? 0.999 : v);
    }
    core[i] = -1;
  }
  printf("data: n = %zu points, d = %d, %d clusters and %.0f%% noise; eps^2 = %g, min_pts = %d\n", n, D, CLUSTERS,
         NOISE * 100, EPS2, MIN_PTS);
  reference_core(x, n, want);

  /* device: in, x[n * D] points; out, core[n] flags. */
  DEV_ENTER(map(to : x[0 : n * D], core[0 : n]))
  th_poison(x, n * D * sizeof *x); /* on a GPU: a loop on the host reads NaN */
  job j = {x, n, core};
  th_watch_start();
  run_student(&j);
  const th_watch w = th_watch_stop();
  th_watch_print("ex_core_flags", &w);
  th_time("ex_core_flags", run_student, &j, o.repeat);
  DEV_EXIT(map(from : core[0 : n]) map(delete : x[0 : n * D]))

  size_t wrong = 0, first = 0, cores = 0;
  for (size_t i = 0; i < n; i++) {
    if (core[i] != want[i] && wrong++ == 0) first = i;
    cores += want[i] == 1;
  }
  if (wrong)
    th_fail("%zu of %zu flags wrong, the first at point %zu: core = %d, expected %d%s", wrong, n, first, core[first],
            want[first], core[first] == -1 ? " (never written: in the gpu build the loop must run where core is)" : "");
  if (th_source_count("PAR_FOR") == 0)
    th_fail("exercise.c has no PAR_FOR yet: the loop over the points runs on one thread (static check)");
  if (th_source_count("DEV_FUNCS_BEGIN") == 0 || th_source_count("DEV_FUNCS_END") == 0)
    th_fail("ex_within is not between DEV_FUNCS_BEGIN and DEV_FUNCS_END: functions called in a PAR_FOR loop must "
            "be compiled for the device (static check; common/par.h's rules)");
  th_require_parallel(&w, "ex_core_flags");
  th_pass("all %zu core flags right (%zu core points)", n, cores);
}

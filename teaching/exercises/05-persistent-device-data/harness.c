/* harness.c of 05-persistent-device-data: data, a sequential reference, the copies counted and
 * the checks (teaching/common/harness.h). */
#include "exercise.h"
#include "harness.h"
#include "par.h"

#include <stdio.h>
#include <string.h>

#if PC_HAS_DEVICE
#include <omp.h>
#endif

#define D 4
#define K 16
#define PASSES 10

typedef struct {
  const float *x;
  size_t n;
  const float *c0;
  float *c;
  int *labels;
  long changed;
} job;

/* The points the student's function was given, and the passes that began with them on the device. */
static const float *watched_points;
static int passes_on_device;

void ex_between_passes(void) {
#if PC_HAS_DEVICE
  if (th_on_gpu() && omp_target_is_present(watched_points, omp_get_default_device())) passes_on_device++;
#endif
}

/* One call from the initial centroids and labels (the timed runs repeat the same work). */
static void run_student(void *arg) {
  job *j = arg;
  memcpy(j->c, j->c0, K * D * sizeof *j->c);
  for (size_t i = 0; i < j->n; i++) j->labels[i] = -1;
  j->changed = ex_assign_passes(j->x, j->n, D, j->c, K, PASSES, j->labels);
}

/* The reference: the passes one point at a time, squared distances by integer grid steps (exact,
 * as the float sums of the grid data are). */
static long reference_passes(const float *x, size_t n, float *c, int *labels) {
  long changed = 0;
  for (int pass = 0; pass < PASSES; pass++) {
    ex_move_centroids(c, K, D, pass);
    for (size_t i = 0; i < n; i++) {
      int best = -1;
      long best_d2 = 0;
      for (int q = 0; q < K; q++) {
        long d2 = 0;
        for (size_t j = 0; j < D; j++) {
          const long steps = (long)((x[i * D + j] - c[(size_t)q * D + j]) * TH_GRID);
          d2 += steps * steps;
        }
        if (best < 0 || d2 < best_d2) best = q, best_d2 = d2;
      }
      changed += labels[i] != best;
      labels[i] = best;
    }
  }
  return changed;
}

int main(int argc, char **argv) {
  const th_options o = th_start(argc, argv, TH_EXERCISE, (size_t)1 << 18, 3);
  const size_t n = o.n;
  float *x = th_alloc(n * D, sizeof *x);
  int *labels = th_alloc(n, sizeof *labels), *want = th_alloc(n, sizeof *want);
  float c0[K * D], c[K * D], want_c[K * D];
  for (size_t e = 0; e < K * D; e++) c0[e] = want_c[e] = th_on_grid(0.1 + 0.8 * th_uniform(2, e));
  for (size_t e = 0; e < n * D; e++) x[e] = th_on_grid(th_uniform(1, e));
  for (size_t i = 0; i < n; i++) want[i] = -1;
  printf("data: n = %zu points, d = %d, k = %d, %d passes; the points are %zu bytes, the centroids %zu\n", n, D, K,
         PASSES, n * D * sizeof *x, sizeof c);
  const long want_changed = reference_passes(x, n, want_c, want);

  job j = {x, n, c0, c, labels, 0};
  watched_points = x;
  th_watch_start();
  run_student(&j);
  const th_watch w = th_watch_stop();
  th_watch_print("one call", &w);
  const long changed = j.changed;
  const int resident = passes_on_device;
  if (th_on_gpu())
    printf("the points were on the device at the start of %d of the %d passes: about %d copies of %zu bytes each\n",
           resident, PASSES, PASSES - resident + (resident > 0), n * D * sizeof *x);
  th_time("ex_assign_passes", run_student, &j, o.repeat);

  for (size_t i = 0; i < n; i++)
    if (labels[i] != want[i])
      th_fail("labels[%zu] = %d, expected %d%s", i, labels[i], want[i],
              labels[i] == -1 ? " (never written back: DEV_EXIT needs map(from : labels[0 : n]))" : "");
  if (changed != want_changed) th_fail("%ld labels changed over the passes, expected %ld", changed, want_changed);
  if (th_source_macro_has("PAR_FOR", "map("))
    th_fail("the PAR_FOR still has map clauses: in the gpu build every pass copies the points again (static check)");
  if (th_source_count("DEV_ENTER") == 0 || th_source_count("DEV_EXIT") == 0)
    th_fail("exercise.c has no DEV_ENTER/DEV_EXIT pair: the device data must outlive the passes (static check)");
  th_require_parallel(&w, "ex_assign_passes");
  if (th_on_gpu() && resident < PASSES)
    th_fail("the points were off the device between passes (present at %d of %d): each pass copied them again",
            resident, PASSES);
  th_pass("labels and %ld changes exact; the points are entered once%s", changed,
          th_on_gpu() ? " (seen on the device between passes)" : " (static check; a GPU run watches the device)");
}

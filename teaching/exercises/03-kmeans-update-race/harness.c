/* harness.c of 03-kmeans-update-race: data, a sequential reference, the race hunt and the checks
 * (teaching/common/harness.h). */
#include "exercise.h"
#include "harness.h"
#include "par.h"

#include <stdio.h>
#include <string.h>

#define D 4
#define K 8       /* few clusters: many threads update the same one at once */
#define RUNS 10   /* a race need not show every time: the harness looks ten times */

typedef struct {
  const float *xt;
  const int *labels;
  size_t n;
  double *sums;
  long *counts;
} job;

/* The harness's own zeroing, where the arrays live. */
static void zero_sums(const job *j) {
  double *sums = j->sums; /* plain pointers: a target region finds their device copies */
  long *counts = j->counts;
  PAR_FOR(GPU_THREADS)
  for (size_t e = 0; e < K * D; e++) sums[e] = 0;
  PAR_FOR()
  for (size_t c = 0; c < K; c++) counts[c] = 0;
}

static void run_student(void *arg) {
  job *j = arg;
  zero_sums(j);
  ex_cluster_sums(j->xt, j->labels, j->n, D, K, j->sums, j->counts);
}

/* The reference: point by point, all in one pass per cluster (grid data: the sums are exact). */
static void reference_sums(const float *xt, const int *labels, size_t n, double *sums, long *counts) {
  for (int c = 0; c < K; c++) {
    counts[c] = 0;
    for (size_t j = 0; j < D; j++) sums[j * K + (size_t)c] = 0;
    for (size_t i = 0; i < n; i++)
      if (labels[i] == c) {
        counts[c]++;
        for (size_t j = 0; j < D; j++) sums[j * K + (size_t)c] += xt[j * n + i];
      }
  }
}

int main(int argc, char **argv) {
  const th_options o = th_start(argc, argv, TH_EXERCISE, (size_t)1 << 20, 5);
  const size_t n = o.n;
  float *xt = th_alloc(n * D, sizeof *xt);
  int *labels = th_alloc(n, sizeof *labels);
  double sums[K * D], want_sums[K * D];
  long counts[K], want_counts[K];
  for (size_t i = 0; i < n; i++) {
    labels[i] = (int)(th_uniform(1, i) * K);
    for (size_t j = 0; j < D; j++) xt[j * n + i] = th_on_grid(th_uniform(2, i * D + j));
  }
  printf("data: n = %zu points, d = %d, k = %d\n", n, D, K);
  reference_sums(xt, labels, n, want_sums, want_counts);

  /* device: in, xt[n * D] points, labels[n]; made there, sums[K * D] and counts[K]. */
  DEV_ENTER(map(to : xt[0 : n * D], labels[0 : n]) map(alloc : sums[0 : K * D], counts[0 : K]))
  job j = {xt, labels, n, sums, counts};
  th_watch w = {0};
  for (int r = 0; r < RUNS; r++) {
    zero_sums(&j);
    if (r == 0) th_watch_start();
    ex_cluster_sums(xt, labels, n, D, K, sums, counts);
    if (r == 0) w = th_watch_stop();
    DEV_UPDATE(from(sums[0 : K * D], counts[0 : K]))
    for (int c = 0; c < K; c++)
      if (counts[c] == 0 && want_counts[c] > 0)
        th_fail("run %d of %d: counts[%d] = 0, expected %ld: no point was counted where the sums live (in the gpu "
                "build the loop must run on the device)", r + 1, RUNS, c, want_counts[c]);
      else if (counts[c] != want_counts[c])
        th_fail("run %d of %d: counts[%d] = %ld, expected %ld: %s", r + 1, RUNS, c, counts[c], want_counts[c],
                counts[c] < want_counts[c] ? "updates were lost - threads added to one counter at once (a data race)"
                                           : "more than there are points");
    for (int e = 0; e < K * D; e++)
      if (sums[e] != want_sums[e])
        th_fail("run %d of %d: sums[%d] = %.17g, expected %.17g: updates were lost - threads added to one sum at "
                "once (a data race)", r + 1, RUNS, e, sums[e], want_sums[e]);
  }
  th_watch_print("ex_cluster_sums", &w);
  th_time("ex_cluster_sums", run_student, &j, o.repeat);
  DEV_EXIT(map(delete : xt[0 : n * D], labels[0 : n], sums[0 : K * D], counts[0 : K]))

  const int atomics = th_source_count("PAR_ATOMIC"), gpu_atomics = th_source_count("GPU_ATOMIC");
  if (th_source_count("PAR_FOR") == 0)
    th_fail("exercise.c has no PAR_FOR any more: keep the loop parallel and make its updates safe (static check)");
  if (atomics < 2 && !(th_source_macro_has("PAR_FOR", "reduction(") && atomics + gpu_atomics >= 2))
    th_fail("the shared sums and counts are still updated without atomics or a reduction: the planted race is there "
            "(static check; the seq build cannot show it, omp and gpu can)");
  th_require_parallel(&w, "ex_cluster_sums");
  th_pass("%d runs, every count and sum exact (%s)", RUNS,
          atomics >= 2 ? "PAR_ATOMIC" : "a reduction on the host, GPU_ATOMIC on the GPU");
}

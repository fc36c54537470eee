/* harness.c of 01-sse-reduction: data, a sequential reference, the checks (teaching/common/harness.h). */
#include "exercise.h"
#include "harness.h"
#include "par.h"

#include <math.h>
#include <stdio.h>

#define D 8
#define K 16
/* The parallel sum adds the same n terms in another order: |relative error| <= n * 2^-53 in the
 * worst case, far less in practice; 1e-9 leaves room and still catches a lost term. */
#define TOLERANCE 1e-9

typedef struct {
  const float *xt, *ct;
  const int *labels;
  size_t n;
  double sse;
} job;

static void run_student(void *arg) {
  job *j = arg;
  j->sse = ex_sse(j->xt, j->ct, j->labels, j->n, D, K);
}

/* The reference, another way round: per cluster in long double, then the clusters' total. */
static double reference_sse(const float *xt, const float *ct, const int *labels, size_t n) {
  long double per_cluster[K] = {0};
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < D; j++) {
      const long double diff = (long double)xt[j * n + i] - (long double)ct[j * K + (size_t)labels[i]];
      per_cluster[labels[i]] += diff * diff;
    }
  long double total = 0;
  for (int c = 0; c < K; c++) total += per_cluster[c];
  return (double)total;
}

int main(int argc, char **argv) {
  const th_options o = th_start(argc, argv, TH_EXERCISE, (size_t)1 << 20, 5);
  const size_t n = o.n;
  float *xt = th_alloc(n * D, sizeof *xt), *ct = th_alloc(K * D, sizeof *ct);
  int *labels = th_alloc(n, sizeof *labels);
  for (size_t e = 0; e < K * D; e++) ct[e] = (float)th_uniform(2, e);
  for (size_t i = 0; i < n; i++) {
    labels[i] = (int)(th_uniform(3, i) * K);
    for (size_t j = 0; j < D; j++)
      xt[j * n + i] = ct[j * K + (size_t)labels[i]] + (float)(0.1 * (th_uniform(1, i * D + j) - 0.5));
  }
  printf("data: n = %zu points, d = %d, k = %d\n", n, D, K);
  const double want = reference_sse(xt, ct, labels, n);

  /* device: in, xt[n * D] points, ct[K * D] centroids, labels[n]: what km_run has there. */
  DEV_ENTER(map(to : xt[0 : n * D], ct[0 : K * D], labels[0 : n]))
  th_poison(xt, n * D * sizeof *xt); /* on a GPU: a loop on the host reads NaN */
  job j = {xt, ct, labels, n, 0.0};
  th_watch_start();
  run_student(&j);
  const th_watch w = th_watch_stop();
  const double got = j.sse;
  th_watch_print("ex_sse", &w);
  th_time("ex_sse", run_student, &j, o.repeat);
  DEV_EXIT(map(delete : xt[0 : n * D], ct[0 : K * D], labels[0 : n]))

  const double error = fabs(got - want) / want;
  if (isnan(got) && th_on_gpu())
    th_fail("sse is NaN: the loop read the host's copy of the points, which the harness poisoned; in the gpu build "
            "it must run on the device, where the data is (PAR_FOR)");
  if (!(error <= TOLERANCE))
    th_fail("sse = %.17g, reference %.17g (relative error %.2g > %g): terms were lost%s", got, want, error, TOLERANCE,
            th_source_macro_has("PAR_FOR", "reduction(") ? "" : " - the threads race on sse without a reduction");
  if (th_source_count("PAR_FOR") == 0)
    th_fail("exercise.c has no PAR_FOR yet: the loop over the points runs on one thread (static check)");
  if (!th_source_macro_has("PAR_FOR", "reduction(+"))
    th_fail("the PAR_FOR has no reduction(+ : sse): its threads would race on sse (static check)");
  th_require_parallel(&w, "ex_sse");
  th_pass("sse = %.17g, reference %.17g, relative error %.2g <= %g", got, want, error, TOLERANCE);
}

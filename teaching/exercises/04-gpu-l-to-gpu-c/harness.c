/* harness.c of 04-gpu-l-to-gpu-c: data, a sequential reference, the checks (teaching/common/harness.h). */
#include "exercise.h"
#include "harness.h"
#include "par.h"

#include <stdio.h>
#include <string.h>

#define D 4
#define K 16

typedef struct {
  const float *xt;
  int *labels;
  size_t n;
  float *ct;
  double *sums;
  long *counts;
} job;

static void run_student(void *arg) {
  job *j = arg;
  ex_update(j->xt, j->labels, j->n, D, K, j->ct, j->sums, j->counts);
}

/* The reference: each cluster's mean, one cluster at a time (grid data: the sums are exact, so
 * the means are the same double in any order and the same float on any device). */
static void reference_centroids(const float *xt, const int *labels, size_t n, float *ct) {
  for (int c = 0; c < K; c++) {
    double sum[D] = {0};
    long count = 0;
    for (size_t i = 0; i < n; i++)
      if (labels[i] == c) {
        count++;
        for (size_t j = 0; j < D; j++) sum[j] += xt[j * n + i];
      }
    for (size_t j = 0; j < D; j++)
      if (count > 0) ct[j * K + (size_t)c] = (float)(sum[j] / (double)count);
  }
}

int main(int argc, char **argv) {
  const th_options o = th_start(argc, argv, TH_EXERCISE, (size_t)1 << 21, 5);
  const size_t n = o.n;
  float *xt = th_alloc(n * D, sizeof *xt);
  int *labels = th_alloc(n, sizeof *labels);
  float ct[K * D], want[K * D];
  double sums[K * D];
  long counts[K];
  for (size_t e = 0; e < K * D; e++) ct[e] = want[e] = -1.0f; /* a cluster with no point keeps it */
  for (size_t i = 0; i < n; i++) {
    labels[i] = (int)(th_uniform(1, i) * (K - 1)); /* the last cluster stays empty */
    for (size_t j = 0; j < D; j++) xt[j * n + i] = th_on_grid(th_uniform(2, i * D + j));
  }
  printf("data: n = %zu points, d = %d, k = %d (cluster %d empty)\n", n, D, K, K - 1);
  reference_centroids(xt, labels, n, want);

  /* device: in, xt[n * D] points, labels[n] (the assign step's), ct[K * D] centroids; made there,
   * sums[K * D] and counts[K]. */
  DEV_ENTER(map(to : xt[0 : n * D], labels[0 : n], ct[0 : K * D]) map(alloc : sums[0 : K * D], counts[0 : K]))
  if (th_on_gpu()) memset(labels, 0, n * sizeof *labels); /* the host's copy: still 0 after GPU-C */
  job j = {xt, labels, n, ct, sums, counts};
  th_watch_start();
  run_student(&j);
  const th_watch w = th_watch_stop();
  th_watch_print("one ex_update", &w);
  if (th_on_gpu()) { /* the host copy cleared: what is checked must come from the device */
    for (size_t e = 0; e < K * D; e++) ct[e] = 0;
    DEV_UPDATE(from(ct[0 : K * D]))
  }
  th_time("ex_update", run_student, &j, o.repeat);
  DEV_EXIT(map(delete : xt[0 : n * D], labels[0 : n], ct[0 : K * D], sums[0 : K * D], counts[0 : K]))

  for (int e = 0; e < K * D; e++)
    if (ct[e] != want[e])
      th_fail("ct[%d] (feature %d of centroid %d) = %.9g, expected %.9g%s", e, e / K, e % K, ct[e], want[e],
              e % K == K - 1 ? " (an empty cluster keeps its centroid)" : "");
  if (th_source_count("DEV_UPDATE") > 0)
    th_fail("exercise.c still copies with DEV_UPDATE: that is GPU-L, the labels crossing to the host every "
            "iteration; keep the update on the device (static check)");
  if (th_source_count("PAR_FOR") == 0)
    th_fail("exercise.c has no PAR_FOR: the update must run where the data is (static check)");
  if (th_source_count("GPU_ATOMIC") + th_source_count("PAR_ATOMIC") == 0)
    th_fail("the sums have no GPU_ATOMIC or PAR_ATOMIC: GPU threads would race on them (static check; see exercise 3)");
  th_require_parallel(&w, "ex_update");
  size_t copied = 0;
  for (size_t i = 0; th_on_gpu() && i < n; i++) copied += labels[i] != 0;
  if (copied)
    th_fail("the host's copy of the labels changed during the update: they came from the device (%zu bytes), as "
            "in GPU-L", n * sizeof *labels);
  th_pass("all %d centroid values exact; no DEV_UPDATE%s", K * D,
          th_on_gpu() ? ", and the labels stayed on the device" : "");
}

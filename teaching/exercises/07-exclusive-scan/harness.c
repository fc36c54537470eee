/* harness.c of 07-exclusive-scan: data, a sequential reference, the checks (teaching/common/harness.h). */
#include "exercise.h"
#include "harness.h"
#include "par.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  long *a;
  const long *values;
  size_t n;
  long total;
} job;

/* Fresh values into a, where it lives. */
static void refill(void *arg) {
  job *j = arg;
  long *a = j->a;
  const long *values = j->values;
  const size_t n = j->n;
  PAR_FOR(GPU_THREADS)
  for (size_t i = 0; i < n; i++) a[i] = values[i];
}

/* One scan of fresh values: the copy is the harness's part of the time. */
static void run_student(void *arg) {
  job *j = arg;
  refill(j);
  j->total = ex_exclusive_scan(j->a, j->n);
}

int main(int argc, char **argv) {
  const th_options o = th_start(argc, argv, TH_EXERCISE, (size_t)1 << 22, 5);
  const size_t n = o.n;
  long *a = th_alloc(n, sizeof *a), *values = th_alloc(n, sizeof *values), *want = th_alloc(n, sizeof *want);
  for (size_t i = 0; i < n; i++) values[i] = (long)(th_uniform(1, i) * 100), a[i] = 0;
  long want_total = 0; /* the reference: the running sum, kept apart from the values */
  for (size_t i = 0; i < n; i++) {
    want[i] = want_total;
    want_total += values[i];
  }
  printf("data: n = %zu values in [0, 100), total %ld\n", n, want_total);

  /* device: in, values[n]; made there, a[n] the scanned copy. */
  DEV_ENTER(map(to : values[0 : n]) map(alloc : a[0 : n]))
  job j = {a, values, n, 0};
  refill(&j);
  th_watch_start();
  const long total = ex_exclusive_scan(a, n);
  const th_watch w = th_watch_stop();
  th_watch_print("ex_exclusive_scan", &w);
  th_time("copy alone", refill, &j, o.repeat);
  th_time("copy and ex_exclusive_scan", run_student, &j, o.repeat);
  DEV_EXIT(map(from : a[0 : n]) map(delete : values[0 : n]))

  if (n > 1 && !memcmp(a, values, n * sizeof *a))
    th_fail("a holds the values, not their prefix sums: the scan ran on the host's copy of a, but in the gpu build "
            "a lives on the device (the harness reads the device's copy)");
  for (size_t i = 0; i < n; i++)
    if (a[i] != want[i])
      th_fail("a[%zu] = %ld, expected %ld (the sum of the %zu values before it)", i, a[i], want[i], i);
  if (total != want_total) th_fail("returned %ld, expected the total %ld", total, want_total);
  if (th_source_count("PAR_FOR") < 2)
    th_fail("exercise.c has %s PAR_FOR: the block scans and the offsets are two parallel passes (static check)",
            th_source_count("PAR_FOR") ? "one" : "no");
  th_require_parallel(&w, "ex_exclusive_scan");
  th_pass("all %zu prefix sums and the total exact", n);
}

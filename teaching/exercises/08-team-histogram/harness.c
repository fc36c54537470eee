/* harness.c of 08-team-histogram: data, a sequential reference, the checks (teaching/common/harness.h). */
#include "exercise.h"
#include "harness.h"
#include "par.h"

#include <stdio.h>

#define BINS 16 /* few bins: the one-level form's atomics collide */

typedef struct {
  const int *bin;
  size_t n;
  long *counts;
} job;

static void run_student(void *arg) {
  job *j = arg;
  long *counts = j->counts;
  PAR_FOR()
  for (int b = 0; b < BINS; b++) counts[b] = 0;
  ex_histogram(j->bin, j->n, BINS, counts);
}

int main(int argc, char **argv) {
  const th_options o = th_start(argc, argv, TH_EXERCISE, (size_t)1 << 23, 5);
  const size_t n = o.n;
  int *bin = th_alloc(n, sizeof *bin);
  long counts[BINS], want[BINS] = {0};
  for (size_t i = 0; i < n; i++) bin[i] = (int)(th_uniform(1, i) * th_uniform(2, i) * BINS); /* uneven bins */
  for (size_t i = 0; i < n; i++) want[bin[i]]++;
  printf("data: n = %zu values in %d bins\n", n, BINS);

  /* device: in, bin[n]; out, counts[BINS]. */
  DEV_ENTER(map(to : bin[0 : n]) map(alloc : counts[0 : BINS]))
  job j = {bin, n, counts};
  run_student(&j); /* the zeroing is the harness's, outside the watch */
  th_watch_start();
  ex_histogram(bin, n, BINS, counts);
  const th_watch w = th_watch_stop();
  th_watch_print("ex_histogram", &w);
  th_time("ex_histogram", run_student, &j, o.repeat);
  DEV_EXIT(map(from : counts[0 : BINS]) map(delete : bin[0 : n]))

  for (int b = 0; b < BINS; b++)
    if (counts[b] != want[b])
      th_fail("counts[%d] = %ld, expected %ld%s", b, counts[b], want[b],
              counts[b] == 0   ? " (nothing counted where counts lives: in the gpu build count on the device)"
              : counts[b] < want[b] ? " (counts lost: a team's adds to the global counters need PAR_ATOMIC)"
                                    : "");
  if (th_source_count("PAR_TEAMS_FOR") == 0 || th_source_count("TEAM_LOCAL") == 0)
    th_fail("every point still adds to the global counters: count in team memory first (PAR_TEAMS_FOR, TEAM_LOCAL; "
            "static check)");
  if (th_source_count("TEAM_PAR_FOR") == 0)
    th_fail("a team's points are counted by one thread: TEAM_PAR_FOR shares them among the team's threads (static "
            "check)");
  th_require_parallel(&w, "ex_histogram");
  th_pass("all %d counts exact", BINS);
}

/*
 * 08-team-histogram - a two-level histogram: counts in team memory, one global add per bin.
 *
 * The loop below is parallel and right: every point adds 1 to its global counter with an atomic
 * (PAR_ATOMIC). With few bins, thousands of GPU threads (or all of a CPU's cores) queue on the
 * same few addresses, and the atomics run one after the other. Run it first and note the time.
 *
 * TODO: count in two levels, as skm_count_served in algorithms/streamkm.c does:
 *   PAR_TEAMS_FOR(GPU_TEAMS((int)teams, PC_GPU_THREADS)) over teams = ceil(n / EX_POINTS_PER_TEAM)
 *   teams, each counting its block of EX_POINTS_PER_TEAM points:
 *     unsigned local[EX_MAX_BINS];  TEAM_LOCAL(local)   the team's counters, in team memory
 *     TEAM_PAR_FOR() zero the first `bins` local counters;
 *     TEAM_PAR_FOR() over the team's points: GPU_ATOMIC local[bin[i]] += 1u;
 *     TEAM_PAR_FOR() over the bins: where local[b] is not 0, PAR_ATOMIC counts[b] += local[b].
 *   GPU_TEAMS needs device.h. On the GPU a team's threads share its counters in fast on-chip
 *   memory; on the host a "team" is one thread (PAR_TEAMS_FOR is a parallel loop over the teams)
 *   whose counters are private, so GPU_ATOMIC is nothing there. Why is the last step's atomic a
 *   PAR_ATOMIC, not a GPU_ATOMIC? How many global atomics does a run make now?
 * Run: make exercise N=8
 */
#include "exercise.h"
#include "par.h"

void ex_histogram(const int *bin, size_t n, int bins, long *counts) {
  (void)bins; /* the two-level form needs it: its team counters cover bins [0, bins) */
  PAR_FOR(GPU_THREADS)
  for (size_t i = 0; i < n; i++) {
    PAR_ATOMIC
    counts[bin[i]] += 1;
  }
}

/*
 * 08-team-histogram, the reference solution, as skm_count_served in algorithms/streamkm.c: each
 * team counts its block of points in team memory, then adds each counter to the global one once,
 * so a run makes at most teams x bins global atomics instead of n.
 */
#include "exercise.h"
#include "device.h" /* pc_device_teams, which GPU_TEAMS calls */
#include "par.h"

void ex_histogram(const int *bin, size_t n, int bins, long *counts) {
  const size_t teams = (n + EX_POINTS_PER_TEAM - 1) / EX_POINTS_PER_TEAM;
  PAR_TEAMS_FOR(GPU_TEAMS((int)teams, PC_GPU_THREADS))
  for (size_t t = 0; t < teams; t++) {
    unsigned local[EX_MAX_BINS];
    TEAM_LOCAL(local)
    TEAM_PAR_FOR()
    for (int b = 0; b < bins; b++) local[b] = 0;
    const size_t first = t * EX_POINTS_PER_TEAM, end = first + EX_POINTS_PER_TEAM < n ? first + EX_POINTS_PER_TEAM : n;
    TEAM_PAR_FOR()
    for (size_t i = first; i < end; i++) {
      GPU_ATOMIC /* the team's threads share local on the GPU; on the host it is one thread's */
      local[bin[i]] += 1u;
    }
    TEAM_PAR_FOR()
    for (int b = 0; b < bins; b++)
      if (local[b]) {
        PAR_ATOMIC /* teams (host threads) meet here in every parallel variant */
        counts[b] += (long)local[b];
      }
  }
}

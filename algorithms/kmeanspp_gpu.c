/*
 * kmeanspp_gpu.c - D^2 sampling's tuned distance passes for the gpu variant built by clang (the
 * seam: kmeanspp_tuned.h; the portable passes are kmeanspp.c's). For d <= KMPP_REG_DIMS a thread
 * holds its point in registers, a copy of the distance loop per d makes it straight-line code,
 * and the chosen points are staged in team-local memory; the masses pass declares its register
 * budget to ptxas (LLVM's ompx_attribute(launch_bounds)), beyond standard OpenMP.
 */
#include "kmeanspp_tuned.h"
#include "device.h"
#include "knobs.h"
#include "par.h"
#include "scan.h"
#include "util.h"

#include <math.h>

/* Tuning knobs: settings of speed, not of results; -DNAME=value (make KNOBS='-DNAME=value')
 * overrides one, `info` lists them and a report names those changed (knobs.h). */
/* largest d whose distance passes keep a point in registers */
#define KMPP_REG_DIMS_DEFAULT 8
#ifndef KMPP_REG_DIMS
#define KMPP_REG_DIMS KMPP_REG_DIMS_DEFAULT
#endif
PC_KNOB(KMPP_REG_DIMS)
/* chosen points a team stages in team-local memory at a time */
#define KMPP_STAGE_PICKS_DEFAULT 32
#ifndef KMPP_STAGE_PICKS
#define KMPP_STAGE_PICKS KMPP_STAGE_PICKS_DEFAULT
#endif
PC_KNOB(KMPP_STAGE_PICKS)
/* threads per team of the masses pass */
#define KMPP_MASSES_THREADS_DEFAULT 128
#ifndef KMPP_MASSES_THREADS
#define KMPP_MASSES_THREADS KMPP_MASSES_THREADS_DEFAULT
#endif
PC_KNOB(KMPP_MASSES_THREADS)
/* threads the masses kernel is compiled for (launch_bounds; sizes its registers); 0: KMPP_MASSES_THREADS */
#define KMPP_MASSES_BOUND_DEFAULT 640
#ifndef KMPP_MASSES_BOUND
#define KMPP_MASSES_BOUND KMPP_MASSES_BOUND_DEFAULT
#endif
PC_KNOB(KMPP_MASSES_BOUND)
/* points of the kept run a team of kmpp_nearest stages at a time */
#define KMPP_NEAREST_TILE_DEFAULT 128
#ifndef KMPP_NEAREST_TILE
#define KMPP_NEAREST_TILE KMPP_NEAREST_TILE_DEFAULT
#endif
PC_KNOB(KMPP_NEAREST_TILE)
/* points a team of kmpp_nearest takes (a thread each): few, since a chunk has only about 65536
 * points to spread over the GPU */
#define KMPP_NEAREST_POINTS_DEFAULT 256
#ifndef KMPP_NEAREST_POINTS
#define KMPP_NEAREST_POINTS KMPP_NEAREST_POINTS_DEFAULT
#endif
PC_KNOB(KMPP_NEAREST_POINTS)

#define KMPP_UNROLL(count) PC_UNROLL_BY(count)

/* Both distance passes, for d <= KMPP_REG_DIMS: a thread loads its point once into registers,
 * the team first copies the chosen points it compares them with to team-local memory
 * (KMPP_REG_DIMS values each, zero beyond d; KMPP_STAGE_PICKS points at a time: all of a round's
 * draws in the masses pass, more take the generic loop), and every thread reads them from there.
 * Without it a thread re-read its point for every chosen one and each chosen point's address came
 * from a load of its index. Registers of a thread of the masses pass: the kernel declares teams
 * of KMPP_MASSES_BOUND threads (launch_bounds), so that ptxas fits it in 65536 /
 * KMPP_MASSES_BOUND registers (640: 96 registers, five teams of 128 an SM), while the thread
 * limit, given at run time, keeps teams of KMPP_MASSES_THREADS. The values tried and their
 * times: docs/performance.md. */
#if KMPP_MASSES_BOUND > 0
static int kmpp_masses_threads = KMPP_MASSES_THREADS; /* not a constant: a constant limit would size the kernel */
#define KMPP_MASSES_LIMIT                                                                                             \
  thread_limit(kmpp_masses_threads) ompx_attribute(__attribute__((launch_bounds(KMPP_MASSES_BOUND))))
#else
#define KMPP_MASSES_LIMIT thread_limit(KMPP_MASSES_THREADS)
#endif
DEV_FUNCS_BEGIN
/* Value v of a team's staged copy of chosen points: coordinate v % KMPP_REG_DIMS of point
 * picked[v / KMPP_REG_DIMS], or 0 beyond d. */
static inline double kmpp_staged_value(const double *x, const long *picked, size_t v, size_t d, size_t ps, size_t ds) {
  const size_t q = v / KMPP_REG_DIMS, j = v % KMPP_REG_DIMS;
  return j < d ? x[(size_t)picked[q] * ps + j * ds] : 0.0;
}

/* *best = s and, with at, *at = index, when s is lower (strictly: ties keep the earlier one). */
static inline __attribute__((always_inline)) void kmpp_lower(double s, double *best, int *at, int index) {
  if (s < *best) {
    *best = s;
    if (at) *at = index;
  }
}

/* A point's values xi (in registers) against the staged chosen points staged[q * KMPP_REG_DIMS
 * ..], q < count: *best = min(*best, D^2), summed in double in dimension order as the generic
 * loops sum it (the same bits); with at != NULL, *at = first + q of the chosen point that last
 * lowered *best (strictly: ties keep the earlier one). Two chosen points at a time, their sums
 * interleaved. `dims`, the data's d, is a constant wherever this is inlined (KMPP_SWITCH_DIMS),
 * so that a chosen point costs straight-line code: its values' loads, a subtraction and a
 * multiply-add per dimension (with d a run-time bound each dimension was a branch of its own
 * around one scalar load, three times the instructions: docs/performance.md). */
static inline __attribute__((always_inline)) void kmpp_point_picks(const double *xi, const size_t dims,
                                                                   const double *restrict staged, int count,
                                                                   double *best, int *at, int first) {
  int q = 0;
  KMPP_UNROLL(1)
  for (; q + 2 <= count; q += 2) {
    const double *c0 = __builtin_assume_aligned(staged + (size_t)q * KMPP_REG_DIMS, 64), *c1 = c0 + KMPP_REG_DIMS;
    double s0 = 0.0, s1 = 0.0;
    KMPP_UNROLL(KMPP_REG_DIMS)
    for (size_t j = 0; j < dims; j++) {
      const double diff0 = xi[j] - c0[j], diff1 = xi[j] - c1[j];
      s0 += diff0 * diff0;
      s1 += diff1 * diff1;
    }
    kmpp_lower(s0, best, at, first + q);
    kmpp_lower(s1, best, at, first + q + 1);
  }
  if (q < count) { /* an odd last one */
    const double *c = staged + (size_t)q * KMPP_REG_DIMS;
    double s2 = 0.0;
    KMPP_UNROLL(KMPP_REG_DIMS)
    for (size_t j = 0; j < dims; j++) {
      const double diff = xi[j] - c[j];
      s2 += diff * diff;
    }
    kmpp_lower(s2, best, at, first + q);
  }
}

/* The masses pass (kmpp_masses) by one thread with its points in registers: points first,
 * first + step, ... below end (team-local masses at mass[i - begin]; `fresh`: the round has
 * chosen points, else D^2 stays infinite and the mass is the weight). A point's values,
 * distance and weight are loaded while the one before is compared, so that the thread does not
 * wait for memory at every point. */
static inline __attribute__((always_inline)) void
kmpp_masses_span(const double *restrict x, size_t first, size_t end, size_t step, const size_t dims, size_t ps,
                 size_t ds, const double *restrict staged, int count, double *restrict dist_e,
                 const float *restrict w, double *restrict mass, size_t begin, int fresh) {
  if (first >= end) return;
  double xi[KMPP_REG_DIMS];
  KMPP_UNROLL(KMPP_REG_DIMS)
  for (size_t j = 0; j < dims; j++) xi[j] = x[first * ps + j * ds];
  double best = fresh ? dist_e[first] : INFINITY;
  float wi = w[first];
  for (size_t i = first; i < end; i += step) {
    const size_t next = i + step < end ? i + step : i; /* the last one loads its own point again */
    double xn[KMPP_REG_DIMS];
    KMPP_UNROLL(KMPP_REG_DIMS)
    for (size_t j = 0; j < dims; j++) xn[j] = x[next * ps + j * ds];
    const double best_next = fresh ? dist_e[next] : INFINITY;
    const float w_next = w[next];
    kmpp_point_picks(xi, dims, staged, count, &best, NULL, 0);
    dist_e[i] = best;
    mass[i - begin] = !fresh ? (double)wi : wi == 0.0f ? 0.0 : (double)wi * best;
    KMPP_UNROLL(KMPP_REG_DIMS)
    for (size_t j = 0; j < dims; j++) xi[j] = xn[j];
    best = best_next;
    wi = w_next;
  }
}

/* kmpp_nearest's: point i against the staged chosen points first .. first + count - 1. */
static inline __attribute__((always_inline)) void kmpp_nearest_point(const double *restrict x, size_t i,
                                                                     const size_t dims, size_t ps, size_t ds,
                                                                     const double *restrict staged, int count,
                                                                     double *best, int *at, int first) {
  double xi[KMPP_REG_DIMS];
  KMPP_UNROLL(KMPP_REG_DIMS)
  for (size_t j = 0; j < dims; j++) xi[j] = x[i * ps + j * ds];
  kmpp_point_picks(xi, dims, staged, count, best, at, first);
}

/* CALL(dims) with dims the constant d, for d = 1 .. KMPP_REG_DIMS. */
#define KMPP_SWITCH_DIMS(d, CALL)                                                                                     \
  switch (d) {                                                                                                        \
  case 1: CALL(1); break;                                                                                             \
  case 2: CALL(2); break;                                                                                             \
  case 3: CALL(3); break;                                                                                             \
  case 4: CALL(4); break;                                                                                             \
  case 5: CALL(5); break;                                                                                             \
  case 6: CALL(6); break;                                                                                             \
  case 7: CALL(7); break;                                                                                             \
  case 8: CALL(8); break;                                                                                             \
  }
_Static_assert(KMPP_REG_DIMS == 8, "KMPP_SWITCH_DIMS: one case per d up to KMPP_REG_DIMS");
DEV_FUNCS_END

/* kmpp_masses in a kernel with a register budget (KMPP_MASSES_LIMIT): a team takes a span of
 * points of one run (kmpp_team_span); for d <= KMPP_REG_DIMS and at most KMPP_STAGE_PICKS draws
 * a round it stages the round's chosen points and each thread holds its points in registers
 * (kmpp_masses_span), else it takes the portable generic loop; then each block of the team's
 * points is summed in order. */
static int kmpp_gpu_masses(const kmpp_points *p, kmpp_sampler *s, const long *fresh, size_t stride) {
  const double *x = p->x;
  const float *w = p->w;
  const size_t n = p->n, d = p->d, ps = p->point_stride, ds = p->dim_stride;
  if (!pc_offloading()) return 0;
  const int in_registers = d <= KMPP_REG_DIMS && s->draws <= KMPP_STAGE_PICKS;
  const size_t blocks = kmpp_blocks(n), span = kmpp_team_span(n, s->runs), spans = (n + span - 1) / span;
  const size_t teams = spans * (size_t)s->runs;
  const int draws = s->draws;
  double *dist = s->dist, *wheel = s->wheel, *block_sums = s->block_sums;
  PAR_TEAMS_FOR(num_teams(pc_device_teams((int)teams)) KMPP_MASSES_LIMIT)
  for (size_t t = 0; t < teams; t++) {
    const size_t e = t / spans, begin = (t % spans) * span;
    const size_t end = begin + span < n ? begin + span : n;
    const long *picked = fresh ? fresh + e * stride : NULL;
    const int count = picked && picked[0] >= 0 ? draws : 0; /* none once the run's mass is spent */
    double *dist_e = dist + e * n;
    double mass[KMPP_TEAM_POINTS];
    TEAM_LOCAL(mass)
    double staged[KMPP_STAGE_PICKS * KMPP_REG_DIMS] __attribute__((aligned(64)));
    TEAM_LOCAL(staged)
    if (in_registers) { /* thread `first` takes points first, first + KMPP_MASSES_THREADS, ... */
      TEAM_PAR_FOR()
      for (size_t v = 0; v < (size_t)count * KMPP_REG_DIMS; v++) staged[v] = kmpp_staged_value(x, picked, v, d, ps, ds);
      TEAM_PAR_FOR()
      for (size_t first = begin; first < begin + KMPP_MASSES_THREADS; first++) {
#define KMPP_MASSES_SPAN(dims)                                                                                        \
  kmpp_masses_span(x, first, end, KMPP_MASSES_THREADS, dims, ps, ds, staged, count, dist_e, w, mass, begin, picked != NULL)
        KMPP_SWITCH_DIMS(d, KMPP_MASSES_SPAN)
#undef KMPP_MASSES_SPAN
      }
    } else { /* the generic loop, inside this kernel's register budget */
      TEAM_PAR_FOR()
      for (size_t i0 = begin; i0 < end; i0 += KMPP_LANES)
        kmpp_lanes_masses(x, w, d, ps, ds, picked, count, i0, end, dist_e, mass, begin);
    }
    TEAM_PAR_FOR()
    for (size_t b = begin / PC_SCAN_BLOCK; b < (end - 1) / PC_SCAN_BLOCK + 1; b++)
      kmpp_block_prefix(mass, begin, end, b, wheel + e * n, block_sums + e * blocks);
  }
  return 1;
}

/* kmpp_nearest for d <= KMPP_REG_DIMS: a team takes KMPP_NEAREST_POINTS points
 * and compares them with the chosen points KMPP_NEAREST_TILE at a time, staged in team-local
 * memory; between tiles each point's best distance and position wait in team-local memory. */
static int kmpp_gpu_nearest(const kmpp_points *p, const long *row, size_t count, int *nearest) {
  const double *x = p->x;
  const size_t n = p->n, d = p->d, ps = p->point_stride, ds = p->dim_stride;
  if (!pc_offloading() || d > KMPP_REG_DIMS) return 0;
  const size_t teams = (n + KMPP_NEAREST_POINTS - 1) / KMPP_NEAREST_POINTS;
  PAR_TEAMS_FOR(GPU_TEAMS((int)teams, KMPP_NEAREST_POINTS))
  for (size_t t = 0; t < teams; t++) {
    const size_t begin = t * KMPP_NEAREST_POINTS, end = begin + KMPP_NEAREST_POINTS < n ? begin + KMPP_NEAREST_POINTS : n;
    double staged[KMPP_NEAREST_TILE * KMPP_REG_DIMS] __attribute__((aligned(64))), best[KMPP_NEAREST_POINTS];
    int at[KMPP_NEAREST_POINTS];
    TEAM_LOCAL(staged)
    TEAM_LOCAL(best)
    TEAM_LOCAL(at)
    for (size_t first = 0; first < count; first += KMPP_NEAREST_TILE) {
      const size_t tile = count - first < KMPP_NEAREST_TILE ? count - first : KMPP_NEAREST_TILE;
      TEAM_PAR_FOR()
      for (size_t v = 0; v < tile * KMPP_REG_DIMS; v++) staged[v] = kmpp_staged_value(x, row + first, v, d, ps, ds);
      TEAM_PAR_FOR()
      for (size_t i = begin; i < end; i++) {
        const size_t slot = i - begin;
        double point_best = first ? best[slot] : INFINITY;
        int point_at = first ? at[slot] : 0;
#define KMPP_NEAREST_POINT(dims) kmpp_nearest_point(x, i, dims, ps, ds, staged, (int)tile, &point_best, &point_at, (int)first)
        KMPP_SWITCH_DIMS(d, KMPP_NEAREST_POINT)
#undef KMPP_NEAREST_POINT
        best[slot] = point_best;
        at[slot] = point_at;
      }
    }
    TEAM_PAR_FOR()
    for (size_t i = begin; i < end; i++) nearest[i] = count ? at[i - begin] : 0;
  }
  return 1;
}

static const kmpp_tuned_kernels kmpp_gpu_kernels = {"gpu: points in registers, chosen points staged (d <= 8)",
                                                    kmpp_gpu_masses, kmpp_gpu_nearest};

const kmpp_tuned_kernels *kmpp_tuned(void) { return &kmpp_gpu_kernels; }

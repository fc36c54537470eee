/*
 * kmeanspp.c - D^2 sampling (k-means++ and k-means# rounds); see kmeanspp.h for the rule.
 *
 * Every run of a sampler advances together, so a round costs two passes over the device
 * whatever the number of runs (Okuda's design launches kernels per run and leaves a modern GPU
 * idle; the runs of one chunk are independent):
 *  1. masses: one team per (run, span of points: kmpp_team_span). Its threads update D(i)^2
 *     against the run's points of the previous round (one point per GPU thread,
 *     dimension-major data read coalesced, Okuda section 3.2) and write the masses to
 *     team-local memory; then a
 *     thread per block of the scan sums them in order (the scan's fixed order) into the
 *     block's prefix sums and total.
 *  2. picks: one team per run. One thread adds the run's block totals in order into offsets;
 *     then a thread per draw finds the block holding its target by a binary search and the
 *     point in it by 16-ary steps (Okuda's A-ary search by a team per draw, section 3.3, is kept
 *     as an option).
 * The uniforms are drawn on the device up front, so nothing crosses the bus per round; the
 * block totals come back once, for the runs' costs.
 */
#include "kmeanspp.h"
#include "device.h"
#include "dist.h"
#include "kmeanspp_tuned.h"
#include "knobs.h"
#include "par.h"
#include "scan.h"
#include "synth.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Tuning knobs: settings of speed, not of results; -DNAME=value (make KNOBS='-DNAME=value')
 * overrides one, `info` lists them and a report names those changed (knobs.h). */
/* threads per team of the portable masses pass (GPU) */
#define KMPP_PORTABLE_THREADS_DEFAULT 128
#ifndef KMPP_PORTABLE_THREADS
#define KMPP_PORTABLE_THREADS KMPP_PORTABLE_THREADS_DEFAULT
#endif
PC_KNOB(KMPP_PORTABLE_THREADS)
/* probes per step of the one-thread search (--search-arity 2) */
#define KMPP_THREAD_PROBES_DEFAULT 16
#ifndef KMPP_THREAD_PROBES
#define KMPP_THREAD_PROBES KMPP_THREAD_PROBES_DEFAULT
#endif
PC_KNOB(KMPP_THREAD_PROBES)
/* block totals a team stages at a time in team-local memory (4 KB) */
#define KMPP_TOTALS_TILE_DEFAULT 512
#ifndef KMPP_TOTALS_TILE
#define KMPP_TOTALS_TILE KMPP_TOTALS_TILE_DEFAULT
#endif
PC_KNOB(KMPP_TOTALS_TILE)
/* threads of a run's team in the picks */
#define KMPP_PICK_THREADS_DEFAULT 32
#ifndef KMPP_PICK_THREADS
#define KMPP_PICK_THREADS KMPP_PICK_THREADS_DEFAULT
#endif
PC_KNOB(KMPP_PICK_THREADS)
/* The knobs of kmeanspp_tuned.h. */
PC_KNOB(KMPP_TEAM_POINTS)
PC_KNOB(KMPP_TEAMS_PER_SM)
PC_KNOB(KMPP_UNROLL_TAIL)
PC_KNOB(KMPP_LANES)
PC_KNOB(KMPP_UNROLL_DIMS)


/* Unrolling on the GPU (the CPU leaves the loops to the compiler): the serial sums (the offsets
 * of the picks, and of the masses: kmpp_block_prefix) by KMPP_UNROLL_TAIL, the distance loop
 * not at all (kmpp_lanes_masses). */
#if defined(PC_VARIANT_GPU)
#define KMPP_UNROLL(count) PC_UNROLL_BY(count)
#else
#define KMPP_UNROLL(count)
#endif
#define KMPP_TAIL_LOOP KMPP_UNROLL(KMPP_UNROLL_TAIL)


int kmpp_sampler_open(kmpp_sampler *s, size_t capacity, int runs, int rounds, int draws) {
  memset(s, 0, sizeof *s);
  const size_t per_run = (size_t)rounds * (size_t)draws;
  size_t points, blocks, picks;
  if (pc_mul_size(capacity, (size_t)runs, &points, "D^2 sampling runs") ||
      pc_mul_size(kmpp_blocks(capacity), (size_t)runs, &blocks, "D^2 sampling runs") ||
      pc_mul_size(per_run, (size_t)runs, &picks, "D^2 sampling draws"))
    return -1;
  s->dist = pc_try_alloc(points, sizeof(double), "D^2 distances");
  s->wheel = pc_try_alloc(points, sizeof(double), "D^2 prefix sums");
  s->block_sums = pc_try_alloc(blocks, sizeof(double), "D^2 block sums");
  s->offsets = pc_try_alloc(blocks + (size_t)runs, sizeof(double), "D^2 block offsets");
  s->uniforms = pc_try_alloc(picks, sizeof(double), "D^2 uniforms");
  s->chosen = pc_try_alloc(picks, sizeof(long), "D^2 picks");
  if (!s->dist || !s->wheel || !s->block_sums || !s->offsets || !s->uniforms || !s->chosen) {
    free(s->dist), free(s->wheel), free(s->block_sums), free(s->offsets), free(s->uniforms), free(s->chosen);
    memset(s, 0, sizeof *s);
    return -1;
  }
  s->capacity = capacity;
  s->runs = runs;
  s->rounds = rounds;
  s->draws = draws;
  s->search_arity = KMPP_SEARCH_ARITY;
  s->kernels = PC_KERNELS_TUNED;
  /* device: dist / wheel[points] D^2 and its running sums, block_sums[blocks] scan block totals,
   * offsets[blocks + runs], uniforms / chosen[picks] the draws and the points they picked. */
  DEV_ENTER(map(alloc : s->dist[0 : points], s->wheel[0 : points], s->block_sums[0 : blocks],
                s->offsets[0 : blocks + (size_t)runs], s->uniforms[0 : picks],
                s->chosen[0 : picks]))
  return 0;
}

void kmpp_sampler_close(kmpp_sampler *s) {
  if (!s->dist) return;
  const size_t runs = (size_t)s->runs, per_run = (size_t)s->rounds * (size_t)s->draws;
  DEV_EXIT(map(delete : s->dist[0 : s->capacity * runs], s->wheel[0 : s->capacity * runs],
               s->block_sums[0 : kmpp_blocks(s->capacity) * runs], s->offsets[0 : (kmpp_blocks(s->capacity) + 1) * runs],
               s->uniforms[0 : per_run * runs],
               s->chosen[0 : per_run * runs]))
  (void)runs, (void)per_run; /* only the gpu variant's directive reads them */
  free(s->dist), free(s->wheel), free(s->block_sums), free(s->offsets), free(s->uniforms), free(s->chosen);
  memset(s, 0, sizeof *s);
}

DEV_FUNCS_BEGIN
/* The first steps of a draw, by one thread: with the run's offsets (the running sums of its
 * block totals, offsets[blocks] = total), the target t = u * total (below total) and the block
 * holding the answer, the first b with offsets[b+1] > t (a binary search). Returns 0 when the run
 * has no mass; else 1, with *target, *offset = offsets[b] and the block's points [*lo, *hi],
 * among which the answer lies (*hi, the block's last point, always qualifies). */
static inline int kmpp_draw_range(const double *offsets, size_t blocks, size_t n, double u, double *target, double *offset,
                                  size_t *lo, size_t *hi) {
  const double total = offsets[blocks];
  if (!(total > 0.0)) return 0;
  double t = u * total;
  if (!(t < total)) t = nextafter(total, 0.0);
  size_t b = 0, last = blocks - 1; /* last always qualifies: offsets[blocks] = total > t */
  while (b < last) {
    const size_t mid = b + (last - b) / 2;
    if (offsets[mid + 1] > t) last = mid;
    else b = mid + 1;
  }
  *target = t;
  *offset = offsets[b];
  *lo = b * PC_SCAN_BLOCK;
  *hi = (*lo + PC_SCAN_BLOCK < n ? *lo + PC_SCAN_BLOCK : n) - 1;
  return 1;
}

/* One probe of an A-ary step of a draw's search in [lo, hi] (the block's prefix sums `local`,
 * the block's offset and the target, from kmpp_draw_range): 1 when part `part` of `step`
 * candidates lies wholly before the answer (its last candidate m < hi has local[m + 1] + offset
 * <= target). The parts that do form a prefix, since the sums never decrease. */
static inline size_t kmpp_part_fails(const double *local, size_t lo, size_t hi, size_t step, size_t part, double offset,
                                     double target) {
  const size_t last = lo + (part + 1) * step - 1;
  return last < hi && !(local[last + 1] + offset > target);
}
DEV_FUNCS_END

/* The one-thread search (--search-arity 2) probes KMPP_THREAD_PROBES places a step: 16 finds a
 * point among 256 in two steps of 16 loads in flight together, where a binary search waits for 8
 * loads one after another. A run's team stages KMPP_TOTALS_TILE block totals at a time, each of
 * its KMPP_PICK_THREADS threads loading its share, the loads in flight together (figures:
 * docs/performance.md). */
DEV_FUNCS_BEGIN
/* A run's offsets, by its team (the body of a PAR_TEAMS_FOR iteration; tile: team-local, of
 * KMPP_TOTALS_TILE + 1): offsets[b] = the running sum of sums[0..b), added in order (the scan's
 * additions), and offsets[blocks] = the total. The team loads a tile of block totals together
 * (one memory latency), then one thread adds them from team memory, leaving the tile's offsets
 * (and after the last, the total) in it, where draws can search them when the run has one tile
 * of blocks. One thread loading the totals itself waited a memory latency per eight blocks
 * (figures: docs/performance.md). */
static inline void kmpp_team_offsets(const double *restrict sums, size_t blocks, double *restrict offsets,
                                     double *restrict tile) {
  for (size_t t0 = 0; t0 < blocks; t0 += KMPP_TOTALS_TILE) {
    const size_t len = blocks - t0 < KMPP_TOTALS_TILE ? blocks - t0 : KMPP_TOTALS_TILE;
    TEAM_PAR_FOR()
    for (size_t lane = 0; lane < KMPP_PICK_THREADS; lane++) { /* all of a thread's loads, then its stores */
      double v[KMPP_TOTALS_TILE / KMPP_PICK_THREADS];
      KMPP_UNROLL(KMPP_TOTALS_TILE / KMPP_PICK_THREADS)
      for (size_t u = 0; u < KMPP_TOTALS_TILE / KMPP_PICK_THREADS; u++) {
        const size_t b = lane + u * KMPP_PICK_THREADS;
        v[u] = b < len ? sums[t0 + b] : 0.0;
      }
      KMPP_UNROLL(KMPP_TOTALS_TILE / KMPP_PICK_THREADS)
      for (size_t u = 0; u < KMPP_TOTALS_TILE / KMPP_PICK_THREADS; u++)
        if (lane + u * KMPP_PICK_THREADS < len) tile[lane + u * KMPP_PICK_THREADS] = v[u];
    }
    TEAM_PAR_FOR()
    for (int one = 0; one < 1; one++) {
      double r = t0 == 0 ? 0.0 : offsets[t0 - 1] + sums[t0 - 1]; /* the previous tile's last addition */
      KMPP_TAIL_LOOP
      for (size_t b = 0; b < len; b++) {
        const double total = tile[b];
        offsets[t0 + b] = tile[b] = r;
        r += total;
      }
      if (t0 + len == blocks) offsets[blocks] = tile[len] = r;
    }
  }
}
DEV_FUNCS_END

void kmpp_wheel_pick(const double *wheel, const double *block_sums, double *offsets, size_t n, int runs, int draws,
                     const double *uniforms, long *picks, size_t stride, int arity) {
  const size_t blocks = kmpp_blocks(n), parts = (size_t)arity, all = (size_t)runs * (size_t)draws;
  if (arity <= 2) { /* a team per run: its offsets (in order), then a thread per draw, KMPP_THREAD_PROBES-ary search */
    PAR_TEAMS_FOR(GPU_TEAMS(runs, KMPP_PICK_THREADS))
    for (int e = 0; e < runs; e++) {
      double *run_offsets = offsets + (size_t)e * (blocks + 1);
      const double *local = wheel + (size_t)e * n;
      double tile[KMPP_TOTALS_TILE + 1];
      TEAM_LOCAL(tile)
      kmpp_team_offsets(block_sums + (size_t)e * blocks, blocks, run_offsets, tile);
      const double *search = blocks <= KMPP_TOTALS_TILE ? tile : run_offsets;
      TEAM_PAR_FOR()
      for (int q = 0; q < draws; q++) {
        double target = 0.0, offset = 0.0;
        size_t lo = 0, hi = 0;
        long pick = -1;
        if (kmpp_draw_range(search, blocks, n, uniforms[(size_t)e * stride + (size_t)q], &target, &offset, &lo, &hi)) {
          while (lo < hi) { /* KMPP_THREAD_PROBES-ary steps, the probes' loads in flight together */
            const size_t step = (hi - lo + KMPP_THREAD_PROBES) / KMPP_THREAD_PROBES;
            size_t failing = 0;
            KMPP_UNROLL(KMPP_THREAD_PROBES)
            for (size_t part = 0; part < KMPP_THREAD_PROBES; part++)
              failing += kmpp_part_fails(local, lo, hi, step, part, offset, target);
            lo += failing * step;
            hi = lo + step - 1 < hi ? lo + step - 1 : hi;
          }
          pick = (long)lo;
        }
        picks[(size_t)e * stride + (size_t)q] = pick;
      }
    }
    return;
  }
  PAR_TEAMS_FOR(GPU_TEAMS(runs, KMPP_PICK_THREADS))
  for (int e = 0; e < runs; e++) {
    double tile[KMPP_TOTALS_TILE + 1];
    TEAM_LOCAL(tile)
    kmpp_team_offsets(block_sums + (size_t)e * blocks, blocks, offsets + (size_t)e * (blocks + 1), tile);
  }
  /* Okuda's search: a team of `arity` threads per draw */
  PAR_TEAMS_FOR(GPU_TEAMS((int)all, arity))
  for (size_t t = 0; t < all; t++) {
    const size_t e = t / (size_t)draws, q = t % (size_t)draws;
    const double *local = wheel + e * n;
    double target = 0.0, offset = 0.0;
    size_t lo = 0, hi = 0;
    long pick = -1;
    if (kmpp_draw_range(offsets + e * (blocks + 1), blocks, n, uniforms[e * stride + q], &target, &offset, &lo, &hi)) {
      while (lo < hi) {
        /* parts of `step` candidates; those whose last candidate fails the test form a prefix */
        const size_t step = (hi - lo + parts) / parts;
        size_t failing = 0;
        TEAM_PAR_FOR(reduction(+ : failing))
        for (size_t part = 0; part < parts; part++) failing += kmpp_part_fails(local, lo, hi, step, part, offset, target);
        lo += failing * step;
        hi = lo + step - 1 < hi ? lo + step - 1 : hi;
      }
      pick = (long)lo;
    }
    picks[e * stride + q] = pick;
  }
}

/* Pass 1 of a round, every run: D(i)^2 against the run's points fresh[e * stride ..] of the
 * previous round (fresh NULL: the first round, masses = weights), the masses w_i D(i)^2, their
 * prefix sums within each block of the scan and the blocks' totals. A team takes a
 * span of points of one run (kmpp_team_span): its threads share the distances, then each of its
 * blocks of the scan is summed in order by one thread. */
static void kmpp_masses(const kmpp_points *p, kmpp_sampler *s, const long *fresh, size_t stride) {
  const kmpp_tuned_kernels *tuned = s->kernels == PC_KERNELS_TUNED ? kmpp_tuned() : NULL;
  if (tuned && tuned->masses(p, s, fresh, stride)) return;
  const double *x = p->x;
  const float *w = p->w;
  const size_t n = p->n, d = p->d, ps = p->point_stride, ds = p->dim_stride;
  const size_t blocks = kmpp_blocks(n), span = kmpp_team_span(n, s->runs), spans = (n + span - 1) / span;
  const size_t teams = spans * (size_t)s->runs;
  const int draws = s->draws;
  double *dist = s->dist, *wheel = s->wheel, *block_sums = s->block_sums;
  PAR_TEAMS_FOR(GPU_TEAMS((int)teams, KMPP_PORTABLE_THREADS))
  for (size_t t = 0; t < teams; t++) {
    const size_t e = t / spans, begin = (t % spans) * span;
    const size_t end = begin + span < n ? begin + span : n;
    const long *picked = fresh ? fresh + e * stride : NULL;
    const int count = picked && picked[0] >= 0 ? draws : 0; /* none once the run's mass is spent */
    double *dist_e = dist + e * n;
    double mass[KMPP_TEAM_POINTS];
    TEAM_LOCAL(mass)
    TEAM_PAR_FOR()
    for (size_t i0 = begin; i0 < end; i0 += KMPP_LANES)
      kmpp_lanes_masses(x, w, d, ps, ds, picked, count, i0, end, dist_e, mass, begin);
    TEAM_PAR_FOR()
    for (size_t b = begin / PC_SCAN_BLOCK; b < (end - 1) / PC_SCAN_BLOCK + 1; b++)
      kmpp_block_prefix(mass, begin, end, b, wheel + e * n, block_sums + e * blocks);
  }
}

void kmpp_sample(const kmpp_points *p, kmpp_sampler *s, kmpp_draws rng, double *costs, kmpp_times *times) {
  const int runs = s->runs, rounds = s->rounds, draws = s->draws;
  const size_t per_run = (size_t)rounds * (size_t)draws, all = per_run * (size_t)runs, blocks = kmpp_blocks(p->n);
  double *uniforms = s->uniforms, *block_sums = s->block_sums;
  long *chosen = s->chosen;
  double t0 = pc_now();
  PAR_FOR()
  for (size_t a = 0; a < all; a++)
    uniforms[a] = pc_hash_uniform(rng.seed, rng.stream, rng.first_draw + a / per_run * rng.run_stride + a % per_run);
  kmpp_times spent = {0.0, pc_now() - t0};
  for (int r = 0; r <= rounds; r++) {
    t0 = pc_now();
    kmpp_masses(p, s, r ? chosen + (size_t)(r - 1) * (size_t)draws : NULL, per_run);
    const double t1 = pc_now();
    spent.distance += t1 - t0;
    if (r == rounds) break; /* the last pass only brings the distances and costs up to date */
    const size_t round = (size_t)r * (size_t)draws;
    kmpp_wheel_pick(s->wheel, block_sums, s->offsets, p->n, runs, draws, uniforms + round, chosen + round, per_run,
                    s->search_arity);
    spent.selection += pc_now() - t1;
  }
  t0 = pc_now();
  DEV_UPDATE(from(block_sums[0 : blocks * (size_t)runs]))
  for (int e = 0; e < runs; e++) {
    double total = 0.0;
    for (size_t b = 0; b < blocks; b++) total += block_sums[(size_t)e * blocks + b];
    costs[e] = total;
  }
  spent.selection += pc_now() - t0;
  if (times) {
    times->distance += spent.distance;
    times->selection += spent.selection;
  }
}

size_t kmpp_chosen_row(const kmpp_sampler *s, int run, size_t *chosen) {
  const size_t per_run = (size_t)s->rounds * (size_t)s->draws;
  long *row = s->chosen + (size_t)run * per_run;
  DEV_UPDATE(from(row[0 : per_run]))
  size_t count = 0;
  while (count < per_run && row[count] >= 0) {
    chosen[count] = (size_t)row[count];
    count++;
  }
  return count;
}

void kmpp_nearest(const kmpp_points *p, const kmpp_sampler *s, int run, size_t count, int *nearest) {
  const double *x = p->x;
  const size_t n = p->n, d = p->d, ps = p->point_stride, ds = p->dim_stride;
  const long *row = s->chosen + (size_t)run * (size_t)s->rounds * (size_t)s->draws;
  const kmpp_tuned_kernels *tuned = s->kernels == PC_KERNELS_TUNED ? kmpp_tuned() : NULL;
  if (tuned && tuned->nearest(p, row, count, nearest)) return;
  PAR_FOR() /* KMPP_LANES points per step, as in kmpp_masses */
  for (size_t i0 = 0; i0 < n; i0 += KMPP_LANES) {
    const size_t lanes = n - i0 < KMPP_LANES ? n - i0 : KMPP_LANES;
    double best[KMPP_LANES];
    int at[KMPP_LANES];
    for (size_t l = 0; l < KMPP_LANES; l++) best[l] = INFINITY, at[l] = 0;
    for (size_t q = 0; q < count; q++) {
      const size_t c = (size_t)row[q];
      double s2[KMPP_LANES] = {0.0};
      for (size_t j = 0; j < d; j++) { /* unrolled as the compiler likes: this pass is light on registers */
        const double cj = x[c * ps + j * ds];
        for (size_t l = 0; l < KMPP_LANES; l++) {
          const double diff = x[(i0 + (l < lanes ? l : 0)) * ps + j * ds] - cj;
          s2[l] += diff * diff;
        }
      }
      for (size_t l = 0; l < KMPP_LANES; l++) { /* strict: ties stay with the earlier chosen point */
        const int better = s2[l] < best[l];
        best[l] = better ? s2[l] : best[l];
        at[l] = better ? (int)q : at[l];
      }
    }
    for (size_t l = 0; l < lanes; l++) nearest[i0 + l] = at[l];
  }
}

/* k-means++ over the MPI ranks' slices of the rows (common/dist.h; p: this rank's n rows, whose
 * buffer has room for one more, row n; `first` its first global row). The scan's blocks are whole
 * on one rank (slices start at multiples of PC_DIST_ROW_GROUP = PC_SCAN_BLOCK), so each rank's
 * masses and block totals are the one process's. Per round: every rank gets every block total in
 * global order and adds them as kmpp_wheel_pick's team does (the offsets), the same uniform finds
 * the target's block on every rank, the rank holding it finds the point in its block (the first
 * i with E[i+1] > t, as the search does), and the chosen row goes to every rank, which puts it
 * in its row n (`row`, just past p's rows) for the next round's distances. The rows the one
 * process draws. Returns how many it drew. */
static size_t kmpp_seed_ranks(const kmpp_points *p, double *row, kmpp_sampler *s, size_t first, int k, uint64_t seed,
                              size_t *chosen) {
  _Static_assert(PC_DIST_ROW_GROUP == PC_SCAN_BLOCK, "a rank's slice must hold whole blocks of the wheel");
  const size_t n = p->n, d = p->d, n_all = (size_t)pc_dist_sum_long((long)n);
  const size_t blocks = kmpp_blocks(n), blocks_all = kmpp_blocks(n_all), first_block = first / PC_SCAN_BLOCK;
  double *offsets = pc_xalloc(blocks_all + 1, sizeof *offsets, "k-means++ block offsets");
  double *block_sums = s->block_sums, *wheel = s->wheel;
  long *fresh = s->chosen;
  size_t got = 0;
  for (int r = 0; r < k; r++) {
    if (n) kmpp_masses(p, s, r ? fresh : NULL, 1);
    DEV_UPDATE(from(block_sums[0 : blocks]))
    size_t gathered;
    double *totals = pc_dist_allgather(block_sums, blocks, sizeof *block_sums, &gathered);
    double sum = 0.0;
    for (size_t b = 0; b < blocks_all; b++) offsets[b] = sum, sum += totals[b];
    offsets[blocks_all] = sum;
    free(totals);
    double target, offset;
    size_t lo, hi;
    if (!kmpp_draw_range(offsets, blocks_all, n_all, pc_hash_uniform(seed, PC_STREAM_KMEANSPP, (uint64_t)r), &target,
                         &offset, &lo, &hi))
      break; /* every point sits on a chosen one */
    long pick = -1;
    if (lo / PC_SCAN_BLOCK - first_block < blocks) { /* the target's block is this rank's */
      double *local = wheel + (lo - first);
      const size_t len = hi - lo + 1;
      DEV_UPDATE(from(local[0 : len]))
      size_t i = 0;
      while (i + 1 < len && !(local[i + 1] + offset > target)) i++;
      pick = (long)(lo + i);
      memcpy(row, p->x + (lo + i - first) * d, d * sizeof *row);
    } else {
      memset(row, 0, d * sizeof *row);
    }
    pick = pc_dist_max_long(pick);
    _Static_assert(sizeof(double) == 2 * sizeof(uint32_t), "a row's bits travel as uint32 pairs");
    pc_dist_or_u32((uint32_t *)row, 2 * d); /* the holder's bits; the others added zeros */
    chosen[got++] = (size_t)pick;
    fresh[0] = (long)n; /* the next distances are against row n */
    DEV_UPDATE(to(row[0 : d], fresh[0 : 1]))
  }
  free(offsets);
  return got;
}

/* kmpp_seed's work; across_ranks: x is this rank's slice of rows spread over the MPI ranks
 * (kmpp_seed_slices), else all the rows. */
static int kmpp_seed_rows(const float *x, const float *weights, size_t n, size_t d, int k, uint64_t seed,
                          pc_kernels kernels, int across_ranks, size_t *chosen) {
  const size_t n_all = across_ranks ? (size_t)pc_dist_sum_long((long)n) : n, rows = across_ranks ? n + 1 : n;
  if (k < 1 || (size_t)k > n_all) return pc_fail("k-means++: k = %d is outside [1, %zu]", k, n_all);
  float *w = pc_try_alloc(rows, sizeof *w, "k-means++ point weights");
  double *xd = pc_try_alloc(rows, d * sizeof *xd, "k-means++ points in double");
  kmpp_sampler sampler;
  if (!w || !xd || kmpp_sampler_open(&sampler, rows, 1, k, 1) != 0) {
    free(w), free(xd);
    return -1;
  }
  sampler.kernels = kernels;
  for (size_t i = 0; i < n; i++) w[i] = weights ? weights[i] : 1.0f;
  for (size_t a = 0; a < n * d; a++) xd[a] = (double)x[a];
  const kmpp_points points = {xd, w, n, d, d, 1};
  size_t got;
  /* device: xd[rows * d] points (and across ranks row n: the last chosen one), w[rows] weights. */
  DEV_ENTER(map(to : xd[0 : rows * d], w[0 : rows]))
  if (across_ranks) {
    size_t first, count;
    pc_dist_slice(n_all, &first, &count);
    got = kmpp_seed_ranks(&points, xd + n * d, &sampler, first, k, seed, chosen);
  } else {
    double cost;
    kmpp_sample(&points, &sampler, (kmpp_draws){seed, PC_STREAM_KMEANSPP, 0, 0}, &cost, NULL);
    got = kmpp_chosen_row(&sampler, 0, chosen);
  }
  DEV_EXIT(map(delete : xd[0 : rows * d], w[0 : rows]))
  kmpp_sampler_close(&sampler);
  free(w), free(xd);
  if (got < (size_t)k)
    return pc_fail("k-means++: only %zu points carry weight or distance, fewer than k = %d (duplicates or zero weights)", got,
                   k);
  return 0;
}

int kmpp_seed(const float *x, const float *weights, size_t n, size_t d, int k, uint64_t seed, pc_kernels kernels,
              size_t *chosen) {
  return kmpp_seed_rows(x, weights, n, d, k, seed, kernels, 0, chosen);
}

int kmpp_seed_slices(const float *x, size_t n, size_t d, int k, uint64_t seed, pc_kernels kernels, size_t *chosen) {
  return kmpp_seed_rows(x, NULL, n, d, k, seed, kernels, pc_dist_size() > 1, chosen);
}

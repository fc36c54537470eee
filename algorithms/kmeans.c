/*
 * kmeans.c - Lloyd's k-means in one source for three variants (see common/par.h).
 *
 * Per iteration:
 *  1. assign: each point finds its nearest centroid (squared Euclidean distance, ties to
 *     the lowest index) and counts whether its label changed. One point per GPU thread or
 *     per CPU loop iteration. Centroids are compared in tiles of KM_TILE: a point keeps
 *     KM_TILE partial distances in registers and reads each of its features once per tile,
 *     so the inner loop is KM_TILE independent multiply-adds against one broadcast feature
 *     value (the GPU's threads of a warp read the same centroid values; the CPU vectorises
 *     across the tile's centroids).
 *  2. update: per-cluster sums (double, so that centroids stay accurate for n = 10^7) and
 *     counts, then new centroid = sum / count. CPU variants privatise the sums through an
 *     OpenMP array reduction; GPU threads add with atomics into several copies of the sums
 *     (fewer collisions on one address), which are then added up per centroid.
 * Layout: points are dimension-major (xt[j*n + i]) so that the threads of a GPU warp read
 * consecutive addresses; centroids are dimension-major too, padded to a whole number of
 * tiles (ct[j*kpad + c]).
 * Device data (gpu variant): xt, ct, labels, sums and counts are mapped once per run
 * (DEV_ENTER) and stay on the GPU across iterations; per iteration only the number of
 * changed labels comes back (a reduction result). With KM_UPDATE_HOST (Cao's GPU-L) the
 * labels go to the host, the update runs there, and the centroids go back.
 */
#include "kmeans.h"
#include "device.h"
#include "par.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if !defined(PC_VARIANT_SEQ)
#include <omp.h>
#endif

const char *const km_phase_names[KM_NPHASES] = {"h2d", "assign", "update", "d2h"};

/* Centroids compared per pass over a point's features; partial distances live in registers. */
#ifndef KM_TILE
#define KM_TILE 16
#endif

void km_transpose(const float *x, size_t n, size_t d, float *xt) {
  HOST_PAR_FOR(schedule(static))
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < d; j++) xt[j * n + i] = x[i * d + j];
}

/* Assigns every point to its nearest centroid; returns how many labels changed. */
static long km_assign(const float *restrict xt, const float *restrict ct, int *restrict labels, size_t n, size_t d,
                      int k, int kpad) {
  long changed = 0;
  PAR_FOR(reduction(+ : changed) GPU_ONLY(num_teams(pc_reduction_teams(n)) thread_limit(PC_GPU_THREADS)))
  for (size_t i = 0; i < n; i++) {
    float best = INFINITY;
    int best_c = 0;
    for (int t = 0; t < kpad; t += KM_TILE) {
      float dist[KM_TILE];
      for (int c = 0; c < KM_TILE; c++) dist[c] = 0.0f;
      for (size_t j = 0; j < d; j++) {
        const float xj = xt[j * n + i];
        const float *cj = ct + j * (size_t)kpad + t;
        for (int c = 0; c < KM_TILE; c++) {
          const float diff = xj - cj[c];
          dist[c] += diff * diff;
        }
      }
      for (int c = 0; c < KM_TILE; c++)
        if (dist[c] < best && t + c < k) {
          best = dist[c];
          best_c = t + c;
        }
    }
    changed += labels[i] != best_c;
    labels[i] = best_c;
  }
  return changed;
}

/* Number of copies of the cluster sums the update step adds into. GPU threads add point i
 * into copy i % copies, so that fewer atomics collide on one address (the copies are summed
 * afterwards); as many copies as fit in KM_SUM_COPY_BYTES, at most KM_MAX_SUM_COPIES. CPU
 * threads get private copies from the OpenMP reduction instead, so they use one. */
#ifndef KM_SUM_COPY_BYTES
#define KM_SUM_COPY_BYTES (8u << 20)
#endif
#ifndef KM_MAX_SUM_COPIES
#define KM_MAX_SUM_COPIES 64
#endif
static inline size_t km_sum_copies(size_t kd) {
#if defined(PC_VARIANT_GPU)
  size_t copies = KM_SUM_COPY_BYTES / (kd * sizeof(double));
  return copies < 1 ? 1 : copies > KM_MAX_SUM_COPIES ? KM_MAX_SUM_COPIES : copies;
#else
  (void)kd;
  return 1;
#endif
}

/* Cluster sums and counts on the device: GPU threads add point i into copy i % copies with
 * atomics; CPU threads (copies = 1) sum into private copies through the array reduction. */
static void km_accumulate(const float *restrict xt, const int *restrict labels, double *restrict sums,
                          long *restrict counts, size_t n, size_t d, int k, size_t copies) {
  const size_t kd = (size_t)k * d;
  PAR_FOR(GPU_ONLY(thread_limit(PC_GPU_THREADS)))
  for (size_t e = 0; e < copies * kd; e++) sums[e] = 0.0;
  PAR_FOR(GPU_ONLY(thread_limit(PC_GPU_THREADS)))
  for (size_t e = 0; e < copies * (size_t)k; e++) counts[e] = 0;

  /* The one loop where variants differ in method: reduction on the CPU, atomics on the GPU. */
  PAR_FOR(HOST_ONLY(reduction(+ : sums[0 : kd], counts[0 : k])) GPU_ONLY(thread_limit(PC_GPU_THREADS)))
  for (size_t i = 0; i < n; i++) {
    const size_t slot = (i % copies) * (size_t)k + (size_t)labels[i];
    for (size_t j = 0; j < d; j++) {
      GPU_ATOMIC
      sums[slot * d + j] += xt[j * n + i];
    }
    GPU_ATOMIC
    counts[slot] += 1;
  }
}

/* Cao et al.'s GPU-L: the host sums the points by the labels it retrieved (one copy). Only
 * the gpu variant calls it; in the others the device is the host. */
static __attribute__((unused)) void km_accumulate_on_host(const float *restrict xt, const int *restrict labels,
                                                          double *restrict sums, long *restrict counts, size_t n,
                                                          size_t d, int k) {
  memset(sums, 0, (size_t)k * d * sizeof *sums);
  memset(counts, 0, (size_t)k * sizeof *counts);
  for (size_t i = 0; i < n; i++) {
    const size_t c = (size_t)labels[i];
    for (size_t j = 0; j < d; j++) sums[c * d + j] += xt[j * n + i];
    counts[c] += 1;
  }
}

/* New centroids from `copies` copies of the sums and counts: ct[:, c] = mean of cluster c,
 * unchanged for an empty cluster. Returns the summed squared shift of the centroids. Runs on
 * the device, or on the host (one thread, host copies) when on_device is 0. */
static double km_finalize(const double *restrict sums, const long *restrict counts, float *restrict ct, size_t d,
                          int k, int kpad, size_t copies, int on_device) {
  const size_t kd = (size_t)k * d;
  double shift = 0.0;
  (void)on_device;
  PAR_FOR(reduction(+ : shift) GPU_ONLY(if(target : on_device) num_teams(on_device ? pc_reduction_teams(kd) : 1)
                                            thread_limit(on_device ? PC_GPU_THREADS : 1)))
  for (size_t e = 0; e < kd; e++) {
    const size_t c = e / d, j = e % d;
    long count = 0;
    double sum = 0.0;
    for (size_t p = 0; p < copies; p++) {
      count += counts[p * (size_t)k + c];
      sum += sums[p * kd + e];
    }
    if (count > 0) {
      const float updated = (float)(sum / (double)count);
      const double delta = (double)updated - (double)ct[j * (size_t)kpad + c];
      shift += delta * delta;
      ct[j * (size_t)kpad + c] = updated;
    }
  }
  return shift;
}

static double km_sse(const float *restrict xt, const float *restrict ct, const int *restrict labels, size_t n, size_t d,
                     int kpad) {
  double sse = 0.0;
  PAR_FOR(reduction(+ : sse) GPU_ONLY(num_teams(pc_reduction_teams(n)) thread_limit(PC_GPU_THREADS)))
  for (size_t i = 0; i < n; i++) {
    const int c = labels[i];
    double s = 0.0;
    for (size_t j = 0; j < d; j++) {
      const double diff = (double)xt[j * n + i] - (double)ct[j * (size_t)kpad + c];
      s += diff * diff;
    }
    sse += s;
  }
  return sse;
}

int km_run(const float *xt, size_t n, size_t d, const km_params *params, float *centroids, int *labels,
           km_result *result) {
  const int k = params->k;
  const int kpad = (k + KM_TILE - 1) / KM_TILE * KM_TILE;
  const size_t kd = (size_t)k * d, ct_len = (size_t)kpad * d, copies = km_sum_copies(kd);
  /* Outside the gpu variant the device is the host: both update modes are the same code. */
  const int on_device = params->update == KM_UPDATE_DEVICE || !PC_HAS_DEVICE;
  double *iteration_s = result->iteration_s;
  memset(result, 0, sizeof *result);
  result->iteration_s = iteration_s;

  float *ct = pc_try_alloc(ct_len, sizeof *ct, "centroids");
  double *sums = pc_try_alloc(copies * kd, sizeof *sums, "centroid sums");
  long *counts = pc_try_alloc(copies * (size_t)k, sizeof *counts, "cluster counts");
  if (!ct || !sums || !counts) {
    free(ct);
    free(sums);
    free(counts);
    return -1;
  }
  memset(ct, 0, ct_len * sizeof *ct);
  for (int c = 0; c < k; c++)
    for (size_t j = 0; j < d; j++) ct[j * (size_t)kpad + (size_t)c] = centroids[(size_t)c * d + j];
  for (size_t i = 0; i < n; i++) labels[i] = -1;

  const double t_start = pc_now();
  double t0 = t_start;
  DEV_ENTER(map(to : xt[0 : n * d], ct[0 : ct_len], labels[0 : n]) map(alloc : sums[0 : copies * kd], counts[0 : copies * k]))
  result->phase_s[KM_PHASE_H2D] += pc_now() - t0;

  const int iterations_wanted = params->fixed_iter > 0 ? params->fixed_iter : params->max_iter;
  for (int it = 0; it < iterations_wanted; it++) {
    const double t_iter = pc_now();
    t0 = t_iter;
    const long changed = km_assign(xt, ct, labels, n, d, k, kpad);
    double t1 = pc_now();
    result->phase_s[KM_PHASE_ASSIGN] += t1 - t0;
    result->iterations = it + 1;
    result->last_changed = changed;

    double shift;
    if (on_device) {
      km_accumulate(xt, labels, sums, counts, n, d, k, copies);
      shift = km_finalize(sums, counts, ct, d, k, kpad, copies, 1);
      result->phase_s[KM_PHASE_UPDATE] += pc_now() - t1;
    } else { /* Cao's GPU-L: labels to the host, centroids computed there, sent back */
      DEV_UPDATE(from(labels[0 : n]))
      double t2 = pc_now();
      result->phase_s[KM_PHASE_D2H] += t2 - t1;
      km_accumulate_on_host(xt, labels, sums, counts, n, d, k);
      shift = km_finalize(sums, counts, ct, d, k, kpad, 1, 0);
      double t3 = pc_now();
      result->phase_s[KM_PHASE_UPDATE] += t3 - t2;
      DEV_UPDATE(to(ct[0 : ct_len]))
      result->phase_s[KM_PHASE_H2D] += pc_now() - t3;
    }
    if (iteration_s) iteration_s[it] = pc_now() - t_iter;
    if (params->fixed_iter > 0) continue;
    if (changed == 0 || shift <= params->tol) {
      result->converged = 1;
      break;
    }
  }

  result->sse = km_sse(xt, ct, labels, n, d, kpad);
  t0 = pc_now();
  DEV_UPDATE(from(labels[0 : n], ct[0 : ct_len]))
  DEV_EXIT(map(delete : xt[0 : n * d], ct[0 : ct_len], labels[0 : n], sums[0 : copies * kd], counts[0 : copies * k]))
  result->phase_s[KM_PHASE_D2H] += pc_now() - t0;
  result->total_s = pc_now() - t_start;

  for (int c = 0; c < k; c++)
    for (size_t j = 0; j < d; j++) centroids[(size_t)c * d + j] = ct[j * (size_t)kpad + (size_t)c];
  free(ct);
  free(sums);
  free(counts);
  return 0;
}

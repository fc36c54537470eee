/*
 * kmeans.h - Lloyd's k-means, one source for the seq, omp and gpu variants.
 *
 * Papers: Calamai & Mercatanti's course report (sequential / OpenMP / CUDA Lloyd, stop when no
 * assignment changes) and Cao, Tung & Zhou (WAIM 2006): the centroid update either on the
 * host from the retrieved label array (GPU-L, KM_UPDATE_HOST) or on the device (GPU-C,
 * KM_UPDATE_DEVICE). See kmeans.c for the parallel strategy.
 */
#ifndef KM_KMEANS_H
#define KM_KMEANS_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"

typedef enum { KM_UPDATE_DEVICE, KM_UPDATE_HOST } km_update_where;

/* How the assign step computes distances. KM_DISTANCE_DIRECT:
 * sum((x - c)^2), a subtraction and a multiply-add per feature (the course report's formula;
 * exact ties go to the lowest index). KM_DISTANCE_DOT: |c|^2 - 2 x.c on centroids shifted by
 * their initial mean, one multiply-add per feature (what GEMM-based k-means does; float32
 * rounding can break exact ties and reorder near-ties). KM_DISTANCE_GEMM and KM_DISTANCE_GEMM_TF32
 * (gpu variant only, kmeans_gemm.h): the dot form with the dot products from cuBLAS' SGEMM, in
 * float32 or on TF32 tensor cores (inputs rounded to 10-bit mantissas, as PyTorch with
 * allow_tf32); other builds, or a gpu run on the host, fail with a message. KM_DISTANCE_DOT_3XTF32
 * (gpu variant on a GPU only, likewise): the dot form with x.c from the TF32 tensor cores, each
 * float split into two TF32 parts ("3xTF32"), about as accurate as float32
 * (kmeans_assign_gpu.c, km_assign_mma; the tuned kernels only); KM_DISTANCE_DOT_TF32 the same
 * kernel with one product of the TF32 heads (Flash-KMeans' and PyTorch allow_tf32's precision:
 * about 2^-11 of a product); its value follows AUTO's, which the library's API fixed first.
 * KM_DISTANCE_DOT_FP16 and KM_DISTANCE_DOT_BF16 (likewise): the dot form with x.c from the 16-bit
 * tensor cores, points and centroids both shifted by the centroids' initial mean and rounded to
 * fp16 (11-bit significands, the values scaled by a power of two into fp16's range) or bf16 (8-bit
 * significands), products summed in float32; the points' 16-bit copy is made once a run and kept
 * on the device (2 bytes a value: kmeans_assign_gpu.c, km_pack). KM_DISTANCE_AUTO (the
 * program's and the library's default): the fastest of these whose labels are direct's on data
 * without exact ties, by the shape and where the kernels run (km_distance_for). */
typedef enum {
  KM_DISTANCE_DIRECT,
  KM_DISTANCE_DOT,
  KM_DISTANCE_GEMM,
  KM_DISTANCE_GEMM_TF32,
  KM_DISTANCE_DOT_3XTF32,
  KM_DISTANCE_AUTO,
  KM_DISTANCE_DOT_TF32,
  KM_DISTANCE_DOT_FP16,
  KM_DISTANCE_DOT_BF16,
  KM_NDISTANCES
} km_distance;
extern const char *const km_distance_names[KM_NDISTANCES];
/* How a distance uses the tensor cores (kmeans_tuned.h's km_assign_job.tensor): the TF32 forms'
 * values are their products of an x.c (3: dot-3xtf32, 1: dot-tf32). */
typedef enum {
  KM_TENSOR_NONE = 0,
  KM_TENSOR_TF32 = 1,
  KM_TENSOR_3XTF32 = 3,
  KM_TENSOR_FP16 = 4,
  KM_TENSOR_BF16 = 5
} km_tensor_form;
km_tensor_form km_tensor_form_of(km_distance distance);
/* The TF32 products of an x.c: 3 (dot-3xtf32), 1 (dot-tf32), 0 (other distances, the 16-bit forms too). */
int km_tensor_products(km_distance distance);
/* Whether a distance takes the cuBLAS GEMM path (gemm, gemm-tf32), which the program loads at run time. */
int km_distance_is_gemm(km_distance distance);

/* Timed phases of one run; names follow the report's JSON keys. Cao et al.'s cost model:
 * h2d = m2g, assign = dc (distances and labelling), update = gc (generating centroids),
 * d2h = g2m (GPU to main memory). */
typedef enum { KM_PHASE_H2D, KM_PHASE_ASSIGN, KM_PHASE_UPDATE, KM_PHASE_D2H, KM_NPHASES } km_phase;
extern const char *const km_phase_names[KM_NPHASES];

typedef struct {
  int k;
  int max_iter;         /* upper bound on iterations (>= 1) */
  int fixed_iter;       /* > 0: run exactly this many iterations, ignoring convergence (benchmarks) */
  double tol;           /* also stop when the summed squared centroid shift <= tol (< 0: off) */
  km_update_where update;
  int resum_all;        /* 1: the update sums every point again each iteration (--sums all); 0: it keeps
                           the sums and moves only the points whose label changed (the same centroids) */
  km_distance distance;
  pc_kernels kernels;     /* the assign step's: tuned (kmeans_tuned.h) or portable; the same labels */
  size_t device_memory;   /* gpu variant: the most device memory the run may take, in bytes (km_plan_memory);
                             0: what the device has free */
  size_t stream_block;    /* gpu variant: out of core, the points stream through the device in blocks of
                             this many (km_plan_memory's choice); 0 (or n and more): they stay there */
} km_params;

typedef struct {
  int iterations;        /* assignment passes made */
  int converged;         /* 1 when the last pass changed no label (or the tol test held) */
  long last_changed;     /* labels changed by the last pass */
  double sse;            /* sum of squared distances to the assigned centroid (double) */
  double phase_s[KM_NPHASES];
  double total_s;        /* whole run: h2d, iterations, d2h */
  double *iteration_s;   /* max_iter entries (caller-owned): time of each iteration */
  km_distance distance;  /* the distance the run used (KM_DISTANCE_AUTO resolved: km_distance_for) */
  int splits;            /* ranges the centroids were split into per point (tuned GPU kernels: small n) */
  const char *kernels;   /* the assign kernels that ran: "portable", "cublas" or the tuned ones' name */
  const char *update_points; /* which points the update step added each iteration: "changed" (the sums
                                kept between iterations, kmeans.c's km_keeps_sums) or "all" */
  const char *update_sums; /* how the update step summed the clusters: "whole-clusters",
                              "by-dimension", "shared" (kmeans.c, km_plan_update) or "host" */
  int update_in_assign;    /* the tuned assign kernel added the points to the sums, or moved the changed ones
                              there, in its own pass (kmeans_tuned.h: sums_in_pass, moves_in_pass) */
  /* Out of core (params->stream_block): each pass took `blocks` blocks of block_points points (the
   * last may hold fewer); h2d_bytes were copied to the device in h2d_copy_s, each block's copy timed
   * from its packing until it was seen complete (when the computing on the other block outlasted it,
   * later than it was). All 0 in memory. */
  size_t blocks, block_points;
  double h2d_bytes, h2d_copy_s;
} km_result;

/*
 * Runs Lloyd's algorithm on n points of dimension d stored dimension-major
 * (xt[j*n + i] is feature j of point i; see km_transpose). `centroids` holds k x d initial
 * centroids, row-major, and receives the final ones; labels[0..n) receives the assignment.
 * A cluster that loses all its points keeps its previous centroid. Ties go to the lowest
 * centroid index. With params->stream_block (gpu variant, km_plan_memory) the points stay on the
 * host and stream through the device in blocks each pass (out of core): the same labels and
 * centroids. Returns 0, or -1 with a pc_fail message (sizes that cannot be allocated;
 * with the gemm distances: not the gpu variant, no GPU or cuBLAS, a cuBLAS error).
 */
int km_run(const float *xt, size_t n, size_t d, const km_params *params, float *centroids, int *labels, km_result *result);

/* The distance a run with params on n points of d features uses: params->distance, or for
 * KM_DISTANCE_AUTO, by the crossovers measured (docs/performance.md, 2026-11-27): direct where a dot
 * form's rounding would be far from direct's (k > 4^d below d = 16); on a GPU direct where the
 * small-run paths take the shape, else the tensor cores (dot-3xtf32) where this build has them
 * (else direct); on the host the dot form from k d = KM_AUTO_HOST_DOT_KD, else direct.
 * Across MPI ranks pass the ranks' total n, so that every rank and one process choose alike. */
km_distance km_distance_for(size_t n, size_t d, const km_params *params);

/* How km_run will use the device's memory (gpu variant): the limit it may take (params->device_memory,
 * at most what the device has free for this process, less KM_DEVICE_RESERVE; SIZE_MAX where no
 * limit is known: the seq and omp variants, the gpu variant on the host), the bytes a run with the
 * points on the device needs, and, where that is more than the limit, the blocks of the out-of-core
 * path (else block = blocks = 0). */
typedef struct {
  size_t limit, in_memory;
  size_t block, blocks; /* points per block (at most KM_STREAM_BLOCK_BYTES of them), blocks of the n */
} km_memory_plan;

/* Plans the device memory of a k-means run of n points of d features with params (its k, distance
 * and device_memory): the caller then sets params->stream_block = plan->block. Returns 0, or -1
 * with a pc_fail message where even two blocks of one point do not fit beside the labels,
 * centroids and sums. */
int km_plan_memory(size_t n, size_t d, const km_params *params, km_memory_plan *plan);

/* Writes the dimension-major copy xt (d x n) of row-major x (n x d). */
void km_transpose(const float *x, size_t n, size_t d, float *xt);

/* What km_layout_on_device saw in the points: the largest |value| among the finite ones, and how
 * many are NaN or infinite. */
typedef struct {
  float max_abs;
  size_t nonfinite;
} km_points_scan;

/* km_transpose on the device, for km_run to read there: x goes to the device as it is and is
 * transposed there into a device copy of xt that stays mapped, so that km_run's map of xt finds it
 * present and copies nothing; the host's xt is not written (release the copy with
 * km_layout_release after km_run). The scan comes from the same pass, so that a caller checks the
 * values without a pass of its own. Where the device is the host it is a transpose there, slower
 * than pc_finite_max_abs and km_transpose: the library calls it only where kernels run on a GPU. */
km_points_scan km_layout_on_device(const float *x, size_t n, size_t d, float *xt);

/* Unmaps the device copy of xt that km_layout_on_device left (nothing where it is not mapped). */
void km_layout_release(float *xt, size_t n, size_t d);

/* The k x d initial centroids (row-major) from the rows of x (n x d, row-major): k distinct rows
 * drawn with seed (pc_sample_distinct), or with `kmeanspp` the rows k-means++ seeding picks
 * (kmpp_seed_slices, with its kernels). The same rows in every variant. 0, or -1 with a pc_fail message
 * (k outside [1, n], memory). */
int km_initial_centroids(const float *x, size_t n, size_t d, int k, int kmeanspp, uint64_t seed, pc_kernels kernels,
                         float *centroids);

#endif

/*
 * kmeans_gemm.h - the assign step of k-means through cuBLAS: --distance gemm (float32 SGEMM)
 * and --distance gemm-tf32 (SGEMM on TF32 tensor cores), as matmul-based k-means (PyTorch)
 * computes it. The gpu variant only: the other builds compile stubs that fail with a message.
 *
 * Per block of points, one GEMM writes the dot products x.cs_c of the block's points with all k
 * shifted centroids into device scratch, then an OpenMP kernel takes, per point, the centroid
 * with the least cn[c] - 2 x.cs_c (ties to the lowest index): the dot form of kmeans.c, on the
 * same cs and cn (km_prepare). cuBLAS is opened at run time (dlopen), so the program has no
 * link-time dependency on CUDA. See kmeans_gemm.c for the synchronisation with libomptarget.
 */
#ifndef KM_KMEANS_GEMM_H
#define KM_KMEANS_GEMM_H

#include <stddef.h>

/* 1 where this build can run the cuBLAS path (the gpu variant), else 0. */
int km_gemm_built(void);

/* Loads cuBLAS and the CUDA driver once and creates a cuBLAS handle on the primary context of
 * the OpenMP default device (the context libomptarget uses), then sets its math mode: TF32
 * tensor-core math when tf32 is set, else plain float32 (CUBLAS_DEFAULT_MATH). The library is
 * $PRAGMACLUST_CUBLAS when set, else the first of libcublas.so, libcublas.so.13, .so.12, .so.11
 * that the dynamic loader finds. Returns 0, or -1 with a pc_fail message: not the gpu variant,
 * target regions running on the host (--allow-host without a GPU), library or symbol missing,
 * or a CUDA/cuBLAS error. Not thread-safe (one handle per process). */
int km_gemm_load(int tf32);

/* The cuBLAS file km_gemm_load opened ("" before) and, in *version, cuBLAS' version number
 * (major * 10000 + minor * 100 + patch; 0 when unknown). */
const char *km_gemm_library(int *version);

/* Device scratch of one run: dot products of `block` points with the k centroids. */
typedef struct {
  float *dots;  /* device memory (omp_target_alloc), block * k floats, column-major block x k */
  size_t block; /* points per GEMM */
  int device;   /* OpenMP device number of dots */
} km_gemm_scratch;

/* Loads cuBLAS (km_gemm_load(tf32)) and allocates the scratch for n points and k centroids:
 * blocks of at most KM_GEMM_SCRATCH_BYTES (256 MiB). Returns 0, or -1 with a pc_fail message
 * (as km_gemm_load; n beyond cuBLAS' 32-bit sizes; device memory exhausted). */
int km_gemm_begin(size_t n, size_t d, int k, int tf32, km_gemm_scratch *s);

/* The device scratch km_gemm_begin allocates for n points and k centroids, in bytes (0 outside the
 * gpu variant). */
size_t km_gemm_scratch_bytes(size_t n, int k);

/* Frees the scratch (nothing when begin failed or was not called: s zeroed). */
void km_gemm_end(km_gemm_scratch *s);

/* Assigns every point to the centroid with the least cn[c] - 2 x.cs_c, c < k (ties to the
 * lowest index), writing labels[0..n). xt (d x n, dimension-major), cs (d x kpad,
 * dimension-major), cn and labels must be present on the default device (DEV_ENTER). Returns
 * the number of labels that changed, or -1 with a pc_fail message (a cuBLAS or CUDA error). */
long km_gemm_assign(const km_gemm_scratch *s, const float *xt, const float *cs, const float *cn, int *labels,
                    size_t n, size_t d, int k, int kpad);

#endif

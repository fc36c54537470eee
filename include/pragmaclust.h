/*
 * pragmaclust.h - the C library API of pragmaclust: k-means (random, k-means++ or given initial
 * centroids; direct, dot, GEMM, 3xTF32 or auto distances; centroid update on the device or the host), streaming
 * k-means, Cao et al.'s stream clustering, DBSCAN and density peaks (DPC) with incremental insert
 * and delete. The same functions in every build variant (libpragmaclust-seq, -omp, -gpu); the
 * variant decides where the parallel loops run.
 *
 * Conventions (every function):
 *  - Points are float, row-major: point i, feature j at x[i * d + j]; n points of d features.
 *    The caller owns every array it passes and every array it receives results in; the library
 *    keeps no pointer to them after the call returns (a DPC model keeps its own copy of the points).
 *  - Functions return PRAGMACLUST_OK (0) or a pragmaclust_status code; after a failure
 *    pragmaclust_last_error() gives a one-line message saying why. Nothing in the library ends
 *    the program, prints, or leaves a half-written output: on failure the output arrays hold
 *    unspecified values.
 *  - Options structs are filled with their defaults by the matching *_options_init function;
 *    set the fields you need after it. Options are read during the call only.
 *  - Thread safety: the error message is per thread. The device state (pragmaclust_init) is per
 *    process, and the algorithms use the OpenMP runtime's threads: call the clustering functions
 *    from one thread at a time.
 *  - Labels are int: n is at most INT_MAX.
 * Linking: pkg-config --cflags --libs pragmaclust-<variant> (seq, omp or gpu).
 */
#ifndef PRAGMACLUST_H
#define PRAGMACLUST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status, errors, build ---------------------------------------------------------------- */

typedef enum {
  PRAGMACLUST_OK = 0,
  PRAGMACLUST_ERR_INVALID_ARGUMENT = 1, /* a NULL pointer, a size or option out of range, non-finite
                                           values, or data the algorithm cannot cluster as asked
                                           (fewer than k distinct points, no DPC peak selected, ...) */
  PRAGMACLUST_ERR_OUT_OF_MEMORY = 2,    /* host or device memory could not be had */
  PRAGMACLUST_ERR_NO_DEVICE = 3,        /* gpu library: no usable GPU and allow_host not set */
  PRAGMACLUST_ERR_UNSUPPORTED = 4,      /* not in this build (the GEMM distances outside the gpu
                                           variant, tensor-core distances without a GPU, no cuBLAS) */
  PRAGMACLUST_ERR_INTERNAL = 5,         /* a bug: please report it with the message */
  PRAGMACLUST_ERR_INTERRUPTED = 6       /* pragmaclust_interrupt() stopped the call */
} pragmaclust_status;

/* The message of the last failed call made by this thread ("" when none failed). The text is
 * valid until this thread's next library call. */
const char *pragmaclust_last_error(void);

/* A constant name of a status code ("ok", "invalid argument", ...). */
const char *pragmaclust_status_name(int status);

/* Asks the call now running (on any thread) to stop at its next check point: each Lloyd
 * iteration of pragmaclust_kmeans and of the k-means runs inside pragmaclust_stream, each chunk
 * of pragmaclust_streamkm, the ends of pragmaclust_dbscan's index and connect phases, and the
 * ends of the rho and delta phases of pragmaclust_dpc and _dpc_create; the call then releases
 * what it holds and returns PRAGMACLUST_ERR_INTERRUPTED. The others (the streaming model's
 * calls, dpc_insert and dpc_delete) have no check point and run to their end. Safe from any
 * thread and from a signal handler. The functions with check points clear the request when they
 * start, so a request made before the call started is lost: repeat it until the call returns. */
void pragmaclust_interrupt(void);

/* The library's release ("0.9.0") and its build variant ("seq", "omp" or "gpu"). Constant strings. */
const char *pragmaclust_version(void);
const char *pragmaclust_variant(void);

/* ---- the device --------------------------------------------------------------------------- */

typedef struct {
  int allow_host; /* gpu library: run the kernels on the host when no GPU is usable (default 0:
                     PRAGMACLUST_ERR_NO_DEVICE instead); other variants ignore it */
  int threads;    /* host OpenMP threads (omp, and the gpu variant's host side); 0: the OpenMP default */
} pragmaclust_init_options;

void pragmaclust_init_options_init(pragmaclust_init_options *options);

/* Brings the device up once per process (the gpu variant probes the GPU, about a second on the
 * first call). Optional: the first clustering call makes it with the defaults. A later call
 * after a success changes the thread count only; a failed call (no GPU) may be retried with
 * allow_host set. options NULL: the defaults. Errors: PRAGMACLUST_ERR_NO_DEVICE. */
int pragmaclust_init(const pragmaclust_init_options *options);

/* Where the kernels run, for reports ("GPU NVIDIA H100 ...", "host, 8 OpenMP threads", ...); ""
 * before a successful pragmaclust_init. Valid until the next pragmaclust_init. */
const char *pragmaclust_device(void);

/* ---- results ------------------------------------------------------------------------------ */

#define PRAGMACLUST_MAX_PHASES 8

/* What a run measured. Fields an algorithm has no use for are 0. */
typedef struct {
  long iterations;  /* k-means: Lloyd passes; stream: Lloyd passes of all its k-means runs */
  int converged;    /* k-means: 1 when the last pass changed no label (or the tol test held) */
  double cost;      /* k-means, streamkm, stream: sum of squared distances to the nearest centre
                       (stream: over the rows the centres answer for, see pragmaclust_stream) */
  long clusters;    /* clusters found (DBSCAN, DPC) or k */
  long noise;       /* DBSCAN: points labelled -1 */
  double total_s;   /* wall time of the algorithm (the phases and what lies between them) */
  int nphases;      /* entries of phase_name and phase_s used */
  const char *phase_name[PRAGMACLUST_MAX_PHASES]; /* constant strings: "h2d", "assign", ... */
  double phase_s[PRAGMACLUST_MAX_PHASES];         /* seconds per phase */
} pragmaclust_result;

/* ---- k-means (Lloyd) ---------------------------------------------------------------------- */

typedef enum {
  PRAGMACLUST_INIT_RANDOM,   /* k distinct rows drawn with seed (the CLI's --init random) */
  PRAGMACLUST_INIT_KMEANSPP, /* k-means++ seeding with seed (--init kmeans++) */
  PRAGMACLUST_INIT_GIVEN     /* the k x d centroids passed in (--init FILE) */
} pragmaclust_kmeans_init;

typedef enum { PRAGMACLUST_UPDATE_DEVICE, PRAGMACLUST_UPDATE_HOST } pragmaclust_update;

typedef enum {
  PRAGMACLUST_DISTANCE_DIRECT,    /* sum((x - c)^2); exact ties to the lowest centroid index */
  PRAGMACLUST_DISTANCE_DOT,       /* |c|^2 - 2 x.c on shifted centroids */
  PRAGMACLUST_DISTANCE_GEMM,      /* the dot form by cuBLAS SGEMM (gpu variant on a GPU) */
  PRAGMACLUST_DISTANCE_GEMM_TF32, /* the same on TF32 tensor cores */
  PRAGMACLUST_DISTANCE_DOT_3XTF32, /* x.c on TF32 tensor cores, split in two parts (gpu variant on a GPU) */
  PRAGMACLUST_DISTANCE_AUTO,       /* the default: the fastest of these whose labels are DIRECT's on data
                                      without exact ties (DOT_3XTF32 on a GPU from k = 256, d = 16; else DIRECT) */
  PRAGMACLUST_DISTANCE_DOT_TF32,   /* x.c on TF32 tensor cores in one product of 10-bit mantissas (gpu variant
                                      on a GPU): faster than DOT_3XTF32, TF32's precision */
  PRAGMACLUST_DISTANCE_DOT_FP16,   /* x.c on fp16 tensor cores, points and centroids shifted by the centroids'
                                      mean, scaled by a power of two and rounded to 11-bit significands (gpu
                                      variant on a GPU; a 16-bit copy of the points on the device) */
  PRAGMACLUST_DISTANCE_DOT_BF16    /* the same in bf16 (8-bit significands) */
} pragmaclust_distance;

typedef enum { PRAGMACLUST_KERNELS_TUNED, PRAGMACLUST_KERNELS_PORTABLE } pragmaclust_kernels;

typedef struct {
  int k;                        /* clusters, 1 <= k <= n (no default: 0) */
  pragmaclust_kmeans_init init; /* default PRAGMACLUST_INIT_RANDOM */
  uint64_t seed;                /* of the random and k-means++ initialisations; default 1 */
  int max_iter;                 /* at most this many passes, >= 1; default 1000 */
  int fixed_iter;               /* > 0: exactly this many passes, ignoring convergence; default 0 */
  double tol;                   /* also stop when the summed squared centroid shift <= tol; < 0 (default): off */
  pragmaclust_update update;    /* where centroids are recomputed (gpu variant); default device */
  pragmaclust_distance distance;/* default auto */
  pragmaclust_kernels kernels;  /* tuned (default) or portable assign kernels: the same labels */
  size_t device_memory;         /* gpu library: the most device memory the call may take, in bytes; 0 (default):
                                   what the GPU has free. Points beyond it stream through the GPU in blocks
                                   (out of core), with the same results; other variants ignore it */
} pragmaclust_kmeans_options;

void pragmaclust_kmeans_options_init(pragmaclust_kmeans_options *options);

/* Lloyd's k-means on x (n x d). centroids (k x d, row-major): with PRAGMACLUST_INIT_GIVEN the
 * initial centroids on entry; the final ones on return. labels (n entries, may be NULL): each
 * point's centroid, 0..k-1. result (may be NULL): iterations, converged, cost = SSE, phases
 * h2d, assign, update, d2h. The same labels as `pragmaclust-<variant> kmeans` with the same
 * options and --seed. Errors: INVALID_ARGUMENT (NULL x or centroids, n, d or k out of range,
 * non-finite values, values whose squared distances overflow float, fewer than k distinct
 * points for k-means++, a device_memory too small for the labels, centroids and two points),
 * OUT_OF_MEMORY (also: a GPU whose free memory is too small so), UNSUPPORTED (GEMM / 3xTF32
 * distances without their GPU), NO_DEVICE. */
int pragmaclust_kmeans(const float *x, size_t n, size_t d, const pragmaclust_kmeans_options *options, float *centroids,
                       int *labels, pragmaclust_result *result);

/* ---- streaming k-means (Ailon et al., k-means# per chunk) --------------------------------- */

typedef struct {
  int k;              /* centres, 1 <= k <= n (no default) */
  size_t chunk_size;  /* points per chunk; 0 (default): ceil(sqrt(n k)) */
  int repetitions;    /* k-means# runs per chunk; 0 (default): ceil(3 ln n) */
  uint64_t seed;      /* default 1 */
  pragmaclust_kernels kernels;
} pragmaclust_streamkm_options;

void pragmaclust_streamkm_options_init(pragmaclust_streamkm_options *options);

/* Streaming k-means over the rows of x (n x d), read a chunk at a time: centres (k x d) receive
 * the k centres (rows of x); labels (n entries, may be NULL) the nearest centre of each point;
 * result: cost (over all n points), phases generation, transfers, distance, selection, weighting,
 * other. Errors: INVALID_ARGUMENT (as k-means; a chunk smaller than k; fewer than k distinct
 * weighted points), OUT_OF_MEMORY, NO_DEVICE. */
int pragmaclust_streamkm(const float *x, size_t n, size_t d, const pragmaclust_streamkm_options *options, float *centres,
                         int *labels, pragmaclust_result *result);

/* Streaming k-means fed one chunk at a time (scikit-learn's partial_fit): each chunk is
 * summarised by the best of its k-means# runs as pragmaclust_streamkm summarises its chunks, and
 * pragmaclust_streamkm_centres gives the k centres of everything added so far (weighted
 * k-means++ on the kept points). Chunks of pragmaclust_streamkm's chunk size, with its
 * repetitions and seed, give its centres. The device buffers stay allocated until the free. */
typedef struct pragmaclust_streamkm_model pragmaclust_streamkm_model;

/* A model for chunks of at most max_chunk rows of d features. options: k (1 <= k <= max_chunk),
 * repetitions (0: ceil(3 ln max_chunk)), seed, kernels; chunk_size is not used. Errors:
 * INVALID_ARGUMENT, OUT_OF_MEMORY, NO_DEVICE; *model is NULL then. */
int pragmaclust_streamkm_open(size_t d, size_t max_chunk, const pragmaclust_streamkm_options *options,
                              pragmaclust_streamkm_model **model);
/* Adds the chunk x (rows x d, 1 <= rows <= max_chunk). result: the call's phases. Errors:
 * INVALID_ARGUMENT (rows out of range, non-finite values), OUT_OF_MEMORY. */
int pragmaclust_streamkm_add(pragmaclust_streamkm_model *model, const float *x, size_t rows,
                             pragmaclust_result *result);
/* The k centres (k x d) of the chunks added so far. Errors: INVALID_ARGUMENT (fewer than k
 * distinct weighted points kept, as after no chunk), OUT_OF_MEMORY. */
int pragmaclust_streamkm_centres(pragmaclust_streamkm_model *model, float *centres, pragmaclust_result *result);
/* Releases the model (NULL is allowed). */
void pragmaclust_streamkm_free(pragmaclust_streamkm_model *model);

/* ---- stream clustering (Cao, Tung & Zhou; STREAM or a sliding window) --------------------- */

typedef struct {
  int k;                      /* centres (no default) */
  size_t block;               /* points per block (bucket); 0 (default): max(ceil(base^epsilon), 2k) */
  double epsilon;             /* in (0, 1); default 0.5 */
  size_t window;              /* 0 (default): the entire stream; N: the N most recent points */
  size_t query_every;         /* window: also cluster the window every Q points; 0: at the end only */
  int max_iter;               /* Lloyd passes per k-means, >= 1; default 100 */
  pragmaclust_update update;  /* default device */
  uint64_t seed;              /* default 1 */
  pragmaclust_kernels kernels;
} pragmaclust_stream_options;

void pragmaclust_stream_options_init(pragmaclust_stream_options *options);

/* Cao et al.'s stream clustering of the rows of x (n x d) into centres (k x d). labels (n
 * entries, may be NULL): the nearest centre of every point. result: iterations (all Lloyd
 * passes), cost (SSE over the rows the centres answer for: all n, or with a window its last
 * rows), phases generation, seeding, h2d, assign, update, d2h, other. Errors: INVALID_ARGUMENT
 * (k, block, window or epsilon out of range, too few distinct points), OUT_OF_MEMORY, NO_DEVICE. */
int pragmaclust_stream(const float *x, size_t n, size_t d, const pragmaclust_stream_options *options, float *centres,
                       int *labels, pragmaclust_result *result);

/* ---- DBSCAN ------------------------------------------------------------------------------- */

typedef enum {
  PRAGMACLUST_DBSCAN_INDEX_AUTO,      /* default: the grid for d <= 3, else the projected grid (as the CLI) */
  PRAGMACLUST_DBSCAN_INDEX_GRID,      /* hashed grid of side eps over every dimension (d <= 8) */
  PRAGMACLUST_DBSCAN_INDEX_DIRECTORY, /* CUDA-DClust*'s directory of quantile partitions */
  PRAGMACLUST_DBSCAN_INDEX_NONE,      /* every pair */
  PRAGMACLUST_DBSCAN_INDEX_PROJECTED  /* the grid over the 3 dimensions of widest span, any d */
} pragmaclust_dbscan_index;

typedef enum { PRAGMACLUST_DBSCAN_UNION_FIND, PRAGMACLUST_DBSCAN_CHAINS } pragmaclust_dbscan_method;

typedef struct {
  double eps;                       /* neighbourhood radius, > 0 (no default) */
  int min_pts;                      /* neighbours (itself included) of a core point, >= 1 (no default) */
  pragmaclust_dbscan_index index;   /* default auto */
  pragmaclust_dbscan_method method; /* default union-find */
  int chains;                       /* chains: expansions at once; default the CLI's */
  int seed_list;                    /* chains: seed list capacity; default 2048 */
  int levels, fanout;               /* directory: default 3 levels of fanout 16 */
} pragmaclust_dbscan_options;

void pragmaclust_dbscan_options_init(pragmaclust_dbscan_options *options);

/* DBSCAN of x (n x d): labels (n entries) receive cluster ids 0.. numbered by each cluster's
 * smallest point index, -1 for noise (scikit-learn's labels); is_core (n entries, may be NULL)
 * 1 for core points. result: clusters, noise, phases h2d, index, core, connect, label, d2h.
 * Errors: INVALID_ARGUMENT (eps <= 0 or not finite, min_pts < 1, NULL x or labels, n or d 0,
 * non-finite values, the grid with d > 8 or too many cells), OUT_OF_MEMORY, NO_DEVICE. */
int pragmaclust_dbscan(const float *x, size_t n, size_t d, const pragmaclust_dbscan_options *options, int *labels,
                       unsigned char *is_core, pragmaclust_result *result);

/* ---- density peaks (DPC / GDPC), from scratch and incremental ----------------------------- */

typedef enum { PRAGMACLUST_DPC_INDEX_VPTREE, PRAGMACLUST_DPC_INDEX_NONE } pragmaclust_dpc_index;
typedef enum { PRAGMACLUST_DPC_RHO_INCIDENTAL, PRAGMACLUST_DPC_RHO_SEPARATE } pragmaclust_dpc_rho_update;
typedef enum { PRAGMACLUST_DPC_SEARCH_POINT, PRAGMACLUST_DPC_SEARCH_LEAF } pragmaclust_dpc_search;

typedef struct {
  double dc;                              /* cut-off distance > 0; 0 (default): estimated from dc_percent */
  double dc_percent;                      /* d_c = this quantile (%) of the base points' pairwise
                                             distances, in (0, 100]; default 2 */
  size_t dc_samples;                      /* pairs sampled for it (with seed); default 100000 */
  long peaks;                             /* > 0: the `peaks` points of largest gamma; 0: the thresholds */
  double rho_min, delta_min;              /* peaks = points with rho >= rho_min and delta >= delta_min */
  pragmaclust_dpc_index index;            /* default the VP-tree */
  pragmaclust_dpc_rho_update rho_update;  /* insert/delete: default incidental */
  pragmaclust_dpc_search rho_search, delta_search; /* default point */
  uint64_t seed;                          /* default 1 */
} pragmaclust_dpc_options;

void pragmaclust_dpc_options_init(pragmaclust_dpc_options *options);

/* Density peaks of x (n x d), from scratch: labels (n entries) the cluster of every point
 * (peaks ranked by gamma: 0 is the absolute peak). result: clusters, phases transfers,
 * tree_build, rho, delta, assignment. Errors: INVALID_ARGUMENT (dc < 0 or dc_percent outside
 * (0, 100], peaks > n, no peak selected, all distances 0), OUT_OF_MEMORY, NO_DEVICE. */
int pragmaclust_dpc(const float *x, size_t n, size_t d, const pragmaclust_dpc_options *options, int *labels,
                    pragmaclust_result *result);

/* An incremental density-peaks clustering: the points so far (ids 0.. in insertion order; a
 * deleted id is never reused), the index and rho, delta, dependents and labels, on the device in
 * the gpu variant. Opaque; one thread at a time. */
typedef struct pragmaclust_dpc_model pragmaclust_dpc_model;

/* Clusters the first n points x (n x d, copied) and returns the model in *model. capacity >= n:
 * the most points the model will hold, deleted ones included (insertions beyond it fail). d_c
 * (given or estimated from these n points) stays fixed for the model's life. Free with
 * pragmaclust_dpc_free. Errors: as pragmaclust_dpc, and capacity < n; *model is NULL then. */
int pragmaclust_dpc_create(const float *x, size_t n, size_t d, size_t capacity, const pragmaclust_dpc_options *options,
                           pragmaclust_dpc_model **model, pragmaclust_result *result);

/* Inserts count points (count x d, copied) as one batch (GDPC section 5); they get the next ids.
 * Errors: INVALID_ARGUMENT (beyond the capacity, non-finite values), OUT_OF_MEMORY; after an
 * error other than INVALID_ARGUMENT the model must only be freed. */
int pragmaclust_dpc_insert(pragmaclust_dpc_model *model, const float *x, size_t count, pragmaclust_result *result);

/* Deletes the points of ids[0..count) (live, distinct) as one batch. Errors: INVALID_ARGUMENT
 * (an id never inserted or already deleted, a repeated id, deleting every point left). */
int pragmaclust_dpc_delete(pragmaclust_dpc_model *model, const int *ids, size_t count, pragmaclust_result *result);

/* The number of ids so far (inserted points, deleted ones included): the length of the arrays
 * pragmaclust_dpc_get fills. 0 for a NULL model. */
size_t pragmaclust_dpc_size(const pragmaclust_dpc_model *model);

/* The current values by id (pragmaclust_dpc_size entries each; any may be NULL): labels (-1
 * for deleted points), rho, delta (the distance to the dependent point), dependent (the nearest
 * denser point's id; -1 for the absolute peak and deleted points), alive (1, or 0 for deleted).
 * Errors: INVALID_ARGUMENT (NULL model). */
int pragmaclust_dpc_get(pragmaclust_dpc_model *model, int *labels, int *rho, double *delta, int *dependent,
                        unsigned char *alive);

/* Releases the model (NULL is allowed). */
void pragmaclust_dpc_free(pragmaclust_dpc_model *model);

#ifdef __cplusplus
}
#endif

#endif

/*
 * pragmaclust.c - the library API (include/pragmaclust.h) over the algorithms: checks the
 * arguments, brings the device up once, converts the public options to each algorithm's
 * parameters and the layouts it wants (k-means' dimension-major copy, an in-memory stream for the
 * streaming algorithms, the DPC model's own copy of its points), and turns the algorithms' -1 and
 * pc_fail messages into status codes. No parallel code of its own: the algorithms' loops run in
 * the variant this file is built for.
 */
#include "pragmaclust.h"

#include "data.h"
#include "dbscan.h"
#include "device.h"
#include "dpc.h"
#include "kmeans.h"
#include "kmeans_gemm.h"
#include "report.h"
#include "stream.h"
#include "stream_source.h"
#include "streamkm.h"
#include "synth.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The defaults the options_init functions give: the command line's. */
enum { API_DEFAULT_SEED = 1, API_KMEANS_MAX_ITER = 1000, API_DPC_SAMPLES = 100000 };
#define API_DPC_PERCENT 2.0

const char *pragmaclust_last_error(void) { return pc_last_error(); }

const char *pragmaclust_status_name(int status) {
  switch (status) {
    case PRAGMACLUST_OK: return "ok";
    case PRAGMACLUST_ERR_INVALID_ARGUMENT: return "invalid argument";
    case PRAGMACLUST_ERR_OUT_OF_MEMORY: return "out of memory";
    case PRAGMACLUST_ERR_NO_DEVICE: return "no device";
    case PRAGMACLUST_ERR_UNSUPPORTED: return "unsupported";
    case PRAGMACLUST_ERR_INTERNAL: return "internal error";
    case PRAGMACLUST_ERR_INTERRUPTED: return "interrupted";
    default: return "unknown status";
  }
}

const char *pragmaclust_version(void) { return pc_build_version(); }
const char *pragmaclust_variant(void) { return pc_build_variant(); }

/* A failure: stores the printf-style message for pragmaclust_last_error, returns `status`. */
__attribute__((format(printf, 2, 3))) static int failure(int status, const char *fmt, ...) {
  char message[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  pc_fail("%s", message);
  return status;
}
#define INVALID(...) failure(PRAGMACLUST_ERR_INVALID_ARGUMENT, __VA_ARGS__)

/* The status of an algorithm's -1: out of memory when pc_try_alloc said so, interrupted when it
 * stopped at pragmaclust_interrupt's request, otherwise inputs it could not cluster as asked (its
 * message says which). */
static int algorithm_failed(void) {
  if (pc_last_error_stopped()) return PRAGMACLUST_ERR_INTERRUPTED;
  return pc_last_error_out_of_memory() ? PRAGMACLUST_ERR_OUT_OF_MEMORY : PRAGMACLUST_ERR_INVALID_ARGUMENT;
}

void pragmaclust_interrupt(void) { pc_request_stop(); }

/* ---- the device ---- */

static pc_device_info device;
static int device_ready;

void pragmaclust_init_options_init(pragmaclust_init_options *options) {
  if (options) memset(options, 0, sizeof *options);
}

int pragmaclust_init(const pragmaclust_init_options *options) {
  pragmaclust_init_options defaults;
  pragmaclust_init_options_init(&defaults);
  if (!options) options = &defaults;
  if (options->threads < 0) return INVALID("pragmaclust_init: threads must be >= 0, got %d", options->threads);
  /* again after a success: a host fallback stays one (the probe would fail without it) */
  const int allow_host = options->allow_host || (device_ready && device.host_fallback);
  if (pc_device_try_init(allow_host, options->threads, &device) != 0) {
    device_ready = 0;
    return PRAGMACLUST_ERR_NO_DEVICE;
  }
  device_ready = 1;
  return PRAGMACLUST_OK;
}

const char *pragmaclust_device(void) { return device_ready ? device.where : ""; }

static int ensure_device(void) { return device_ready ? PRAGMACLUST_OK : pragmaclust_init(NULL); }

/* ---- argument checks shared by the algorithms ---- */

/* x is n x d, 1 <= n <= PC_MAX_POINTS, d >= 1 (its values are check_finite's). */
static int check_shape(const char *fn, const float *x, size_t n, size_t d) {
  if (!x) return INVALID("%s: x is NULL", fn);
  if (n == 0) return INVALID("%s: n must be at least 1", fn);
  if (d == 0) return INVALID("%s: d must be at least 1", fn);
  if (n > (size_t)PC_MAX_POINTS) return INVALID("%s: n = %zu is more than the %d points a run takes", fn, n, PC_MAX_POINTS);
  size_t count;
  return pc_mul_size(n, d, &count, fn) != 0 ? PRAGMACLUST_ERR_INVALID_ARGUMENT : PRAGMACLUST_OK;
}

/* The n x d values of x are finite, the largest |value| then in *max_abs (unless NULL); else the
 * first that is not, as the error. */
static int check_finite(const char *fn, const float *x, size_t n, size_t d, float *max_abs) {
  float top;
  if (pc_finite_max_abs(x, n * d, &top)) { /* the fast pass; the loop below names the first bad value */
    if (max_abs) *max_abs = top;
    return PRAGMACLUST_OK;
  }
  for (size_t e = 0; e < n * d; e++)
    if (!isfinite(x[e]))
      return INVALID("%s: x[%zu] (point %zu, feature %zu) is %g; NaN and infinity are not accepted", fn, e, e / d,
                     e % d, (double)x[e]);
  return PRAGMACLUST_OK;
}

/* x is n x d finite floats, 1 <= n <= PC_MAX_POINTS, d >= 1; their largest |value| in *max_abs
 * (unless NULL). */
static int check_points(const char *fn, const float *x, size_t n, size_t d, float *max_abs) {
  const int rc = check_shape(fn, x, n, d);
  return rc != PRAGMACLUST_OK ? rc : check_finite(fn, x, n, d, max_abs);
}

static int check_kernels(const char *fn, pragmaclust_kernels kernels) {
  if (kernels != PRAGMACLUST_KERNELS_TUNED && kernels != PRAGMACLUST_KERNELS_PORTABLE)
    return INVALID("%s: kernels must be PRAGMACLUST_KERNELS_TUNED or _PORTABLE, got %d", fn, (int)kernels);
  return PRAGMACLUST_OK;
}

static int check_update(const char *fn, pragmaclust_update update) {
  if (update != PRAGMACLUST_UPDATE_DEVICE && update != PRAGMACLUST_UPDATE_HOST)
    return INVALID("%s: update must be PRAGMACLUST_UPDATE_DEVICE or _HOST, got %d", fn, (int)update);
  return PRAGMACLUST_OK;
}

static pc_kernels to_kernels(pragmaclust_kernels kernels) {
  return kernels == PRAGMACLUST_KERNELS_PORTABLE ? PC_KERNELS_PORTABLE : PC_KERNELS_TUNED;
}

static km_update_where to_update(pragmaclust_update update) {
  return update == PRAGMACLUST_UPDATE_HOST ? KM_UPDATE_HOST : KM_UPDATE_DEVICE;
}

/* Starts a result: zeroed, with the algorithm's phase names. */
static void result_begin(pragmaclust_result *r, const char *const *names, int nphases) {
  memset(r, 0, sizeof *r);
  r->nphases = nphases;
  for (int p = 0; p < nphases; p++) r->phase_name[p] = names[p];
}

static void result_phases(pragmaclust_result *r, const double *phase_s, double total_s) {
  for (int p = 0; p < r->nphases; p++) r->phase_s[p] = phase_s[p];
  r->total_s = total_s;
}

/* The rows of an array served as a stream (stream_source.h) to the streaming algorithms. */
typedef struct {
  const float *x;
  size_t d;
} array_rows;

static int read_array_rows(void *ctx, size_t first, size_t rows, float *out) {
  const array_rows *a = ctx;
  memcpy(out, a->x + first * a->d, rows * a->d * sizeof *out);
  return 0;
}

/* ---- k-means ---- */

void pragmaclust_kmeans_options_init(pragmaclust_kmeans_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->init = PRAGMACLUST_INIT_RANDOM;
  o->seed = API_DEFAULT_SEED;
  o->max_iter = API_KMEANS_MAX_ITER;
  o->tol = -1.0;
  o->update = PRAGMACLUST_UPDATE_DEVICE;
  o->distance = PRAGMACLUST_DISTANCE_AUTO;
  o->kernels = PRAGMACLUST_KERNELS_TUNED;
}

/* The k x d initial centroids of o->init into centroids (given ones are already there). */
static int initial_centroids(const float *x, size_t n, size_t d, const pragmaclust_kmeans_options *o, float *centroids) {
  if (o->init == PRAGMACLUST_INIT_GIVEN) return PRAGMACLUST_OK;
  return km_initial_centroids(x, n, d, o->k, o->init == PRAGMACLUST_INIT_KMEANSPP, o->seed, to_kernels(o->kernels),
                              centroids) == 0
             ? PRAGMACLUST_OK
             : algorithm_failed();
}

int pragmaclust_kmeans(const float *x, size_t n, size_t d, const pragmaclust_kmeans_options *o, float *centroids,
                       int *labels, pragmaclust_result *result) {
  static const char fn[] = "pragmaclust_kmeans";
  int rc;
  pc_clear_stop(); /* a request made before this call is not for it */
  if (!o) return INVALID("%s: options is NULL", fn);
  if ((rc = check_shape(fn, x, n, d)) != 0) return rc; /* the values: in the layout's pass below */
  if (!centroids) return INVALID("%s: centroids is NULL", fn);
  if (o->k < 1 || (size_t)o->k > n) return INVALID("%s: k must lie in [1, n = %zu], got %d", fn, n, o->k);
  if (o->init != PRAGMACLUST_INIT_RANDOM && o->init != PRAGMACLUST_INIT_KMEANSPP && o->init != PRAGMACLUST_INIT_GIVEN)
    return INVALID("%s: init must be PRAGMACLUST_INIT_RANDOM, _KMEANSPP or _GIVEN, got %d", fn, (int)o->init);
  if (o->max_iter < 1) return INVALID("%s: max_iter must be at least 1, got %d", fn, o->max_iter);
  if (o->fixed_iter < 0) return INVALID("%s: fixed_iter must be >= 0, got %d", fn, o->fixed_iter);
  if (isnan(o->tol)) return INVALID("%s: tol is NaN", fn);
  if ((int)o->distance < 0 || (int)o->distance >= (int)KM_NDISTANCES)
    return INVALID("%s: distance %d is not a pragmaclust_distance", fn, (int)o->distance);
  if ((rc = check_update(fn, o->update)) != 0 || (rc = check_kernels(fn, o->kernels)) != 0) return rc;
  const size_t k = (size_t)o->k;
  float given_max_abs = 0.0f; /* of the given centroids */
  if (o->init == PRAGMACLUST_INIT_GIVEN && (rc = check_points(fn, centroids, k, d, &given_max_abs)) != 0) return rc;
  if ((rc = ensure_device()) != 0) return rc;
  _Static_assert((int)PRAGMACLUST_DISTANCE_DOT_BF16 == (int)KM_DISTANCE_DOT_BF16 &&
                     (int)PRAGMACLUST_DISTANCE_DOT_BF16 + 1 == (int)KM_NDISTANCES,
                 "pragmaclust_distance and km_distance list the same distances in the same order");
  const km_distance distance = (km_distance)o->distance;
  const int gemm = km_distance_is_gemm(distance);
  if (gemm && !km_gemm_built())
    return failure(PRAGMACLUST_ERR_UNSUPPORTED, "%s: the GEMM distances need the gpu variant (cuBLAS on the GPU); this is the %s library",
                   fn, pc_build_variant());
  if (gemm && km_gemm_load(distance == KM_DISTANCE_GEMM_TF32) != 0) return PRAGMACLUST_ERR_UNSUPPORTED;
  static const char *const tensor_names[] = {[KM_TENSOR_TF32] = "DOT_TF32", [KM_TENSOR_3XTF32] = "DOT_3XTF32",
                                             [KM_TENSOR_FP16] = "DOT_FP16", [KM_TENSOR_BF16] = "DOT_BF16"};
  if (km_tensor_form_of(distance) && !pc_offloading())
    return failure(PRAGMACLUST_ERR_UNSUPPORTED,
                   "%s: PRAGMACLUST_DISTANCE_%s runs on a GPU's tensor cores; "
                   "the kernels of this library run on the host",
                   fn, tensor_names[km_tensor_form_of(distance)]);

  km_params params = {.k = o->k, .max_iter = o->max_iter, .fixed_iter = o->fixed_iter, .tol = o->tol,
                       .update = to_update(o->update), .distance = distance, .kernels = to_kernels(o->kernels),
                       .device_memory = o->device_memory};
  /* the gpu variant's device memory: the points there, or out of core, in blocks (km_plan_memory) */
  km_memory_plan memory;
  if (km_plan_memory(n, d, &params, &memory) != 0)
    return failure(o->device_memory ? PRAGMACLUST_ERR_INVALID_ARGUMENT : PRAGMACLUST_ERR_OUT_OF_MEMORY, "%s: %s", fn,
                   pc_last_error());
  params.stream_block = memory.block;
  float *xt = pc_try_alloc(n * d, sizeof *xt, "dimension-major copy of the points");
  int *own_labels = labels ? NULL : pc_try_alloc(n, sizeof *own_labels, "labels");
  if (!xt || (!labels && !own_labels)) {
    free(xt);
    free(own_labels);
    return PRAGMACLUST_ERR_OUT_OF_MEMORY;
  }
  /* The points laid out for km_run where it reads them, their values checked: the time of a copy in.
   * Where kernels run on a GPU and the points stay in its memory, they are copied as they are and
   * transposed there, their values checked in the same pass (where the copy fits beside them); else
   * the host checks them in one vectorised pass and its threads transpose them. */
  const int on_device = pc_offloading() && !memory.block && memory.limit - memory.in_memory >= n * d * sizeof *x;
  const double t_layout = pc_now();
  km_points_scan scan = {0.0f, 0};
  if (on_device) scan = km_layout_on_device(x, n, d, xt);
  else if (!pc_finite_max_abs(x, n * d, &scan.max_abs)) scan.nonfinite = 1;
  else km_transpose(x, n, d, xt);
  const double layout_s = pc_now() - t_layout;
  km_result res;
  memset(&res, 0, sizeof res);
  if (scan.nonfinite > 0) rc = check_finite(fn, x, n, d, NULL); /* names the first */
  else rc = initial_centroids(x, n, d, o, centroids);
  /* distances are float32: every centroid stays within the range of the data and the initial ones
   * (given ones measured when they were checked) */
  if (rc == PRAGMACLUST_OK) {
    const float init_max_abs = o->init == PRAGMACLUST_INIT_GIVEN ? given_max_abs : (float)pc_max_abs(centroids, k * d);
    if (pc_check_float_distances(fmax(scan.max_abs, init_max_abs), d, fn) != 0) rc = PRAGMACLUST_ERR_INVALID_ARGUMENT;
  }
  if (rc == PRAGMACLUST_OK)
    rc = km_run(xt, n, d, &params, centroids, labels ? labels : own_labels, &res) == 0 ? PRAGMACLUST_OK
                                                                                       : algorithm_failed();
  km_layout_release(xt, n, d);
  free(xt);
  free(own_labels);
  if (rc == PRAGMACLUST_OK && result) {
    result_begin(result, km_phase_names, KM_NPHASES);
    result_phases(result, res.phase_s, res.total_s);
    result->phase_s[KM_PHASE_H2D] += layout_s;
    result->total_s += layout_s;
    result->iterations = res.iterations;
    result->converged = res.converged;
    result->cost = res.sse;
    result->clusters = o->k;
  }
  return rc;
}

/* ---- streaming k-means ---- */

void pragmaclust_streamkm_options_init(pragmaclust_streamkm_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->seed = API_DEFAULT_SEED;
  o->kernels = PRAGMACLUST_KERNELS_TUNED;
}

int pragmaclust_streamkm(const float *x, size_t n, size_t d, const pragmaclust_streamkm_options *o, float *centres,
                         int *labels, pragmaclust_result *result) {
  static const char fn[] = "pragmaclust_streamkm";
  int rc;
  pc_clear_stop(); /* a request made before this call is not for it */
  if (!o) return INVALID("%s: options is NULL", fn);
  float max_abs;
  if ((rc = check_points(fn, x, n, d, &max_abs)) != 0) return rc;
  if (!centres) return INVALID("%s: centres is NULL", fn);
  if (o->k < 1 || (size_t)o->k > n) return INVALID("%s: k must lie in [1, n = %zu], got %d", fn, n, o->k);
  if (o->repetitions < 0) return INVALID("%s: repetitions must be >= 0, got %d", fn, o->repetitions);
  if ((rc = check_kernels(fn, o->kernels)) != 0) return rc;
  if (pc_check_float_distances(max_abs, d, fn) != 0) return PRAGMACLUST_ERR_INVALID_ARGUMENT;
  if ((rc = ensure_device()) != 0) return rc;
  array_rows rows = {x, d};
  const pc_stream src = {n, d, read_array_rows, &rows};
  const skm_params params = {o->k, o->chunk_size, o->repetitions, 0, o->seed, to_kernels(o->kernels)};
  skm_result res;
  memset(&res, 0, sizeof res);
  double cost = 0.0;
  rc = skm_run(&src, &params, centres, &res) == 0 && skm_assign(&src, centres, o->k, res.chunk_size, labels, &cost) == 0
           ? PRAGMACLUST_OK
           : algorithm_failed();
  if (rc == PRAGMACLUST_OK && result) {
    result_begin(result, skm_phase_names, SKM_NPHASES);
    result_phases(result, res.phase_s, res.total_s);
    result->cost = cost;
    result->clusters = o->k;
  }
  skm_result_free(&res);
  return rc;
}

/* A streaming k-means fed a chunk at a time: its session (skm_session). */
struct pragmaclust_streamkm_model {
  skm_session session;
};

int pragmaclust_streamkm_open(size_t d, size_t max_chunk, const pragmaclust_streamkm_options *o,
                              pragmaclust_streamkm_model **model) {
  static const char fn[] = "pragmaclust_streamkm_open";
  int rc;
  if (!model) return INVALID("%s: model is NULL", fn);
  *model = NULL;
  if (!o) return INVALID("%s: options is NULL", fn);
  if (d < 1) return INVALID("%s: d must be at least 1", fn);
  if (o->k < 1 || (size_t)o->k > max_chunk)
    return INVALID("%s: k must lie in [1, max_chunk = %zu], got %d", fn, max_chunk, o->k);
  if (o->repetitions < 0) return INVALID("%s: repetitions must be >= 0, got %d", fn, o->repetitions);
  if ((rc = check_kernels(fn, o->kernels)) != 0) return rc;
  if ((rc = ensure_device()) != 0) return rc;
  pragmaclust_streamkm_model *m = calloc(1, sizeof *m);
  if (!m) return failure(PRAGMACLUST_ERR_OUT_OF_MEMORY, "%s: cannot allocate the model", fn);
  const skm_params params = {o->k, 0, o->repetitions, 0, o->seed, to_kernels(o->kernels)};
  if (skm_open(&m->session, d, max_chunk, &params) != 0) {
    free(m);
    return algorithm_failed();
  }
  *model = m;
  return PRAGMACLUST_OK;
}

/* The phases a session spent since `before` (a copy of its phase times). */
static void streamkm_phases_since(pragmaclust_result *result, const skm_session *s, const double *before,
                                  double t_start) {
  if (!result) return;
  double spent[SKM_NPHASES];
  for (int p = 0; p < SKM_NPHASES; p++) spent[p] = s->phase_s[p] - before[p];
  result_begin(result, skm_phase_names, SKM_NPHASES);
  result_phases(result, spent, pc_now() - t_start);
  result->clusters = s->k;
}

int pragmaclust_streamkm_add(pragmaclust_streamkm_model *m, const float *x, size_t rows, pragmaclust_result *result) {
  static const char fn[] = "pragmaclust_streamkm_add";
  int rc;
  if (!m) return INVALID("%s: model is NULL", fn);
  skm_session *s = &m->session;
  if (rows < 1 || rows > s->max_rows)
    return INVALID("%s: a chunk of %zu rows, outside [1, max_chunk = %zu]", fn, rows, s->max_rows);
  float max_abs;
  if ((rc = check_points(fn, x, rows, s->d, &max_abs)) != 0) return rc;
  if (pc_check_float_distances(max_abs, s->d, fn) != 0) return PRAGMACLUST_ERR_INVALID_ARGUMENT;
  double before[SKM_NPHASES];
  memcpy(before, s->phase_s, sizeof before);
  const double t_start = pc_now();
  if (skm_add(s, x, rows) != 0) return algorithm_failed();
  streamkm_phases_since(result, s, before, t_start);
  return PRAGMACLUST_OK;
}

int pragmaclust_streamkm_centres(pragmaclust_streamkm_model *m, float *centres, pragmaclust_result *result) {
  static const char fn[] = "pragmaclust_streamkm_centres";
  if (!m) return INVALID("%s: model is NULL", fn);
  if (!centres) return INVALID("%s: centres is NULL", fn);
  skm_session *s = &m->session;
  double before[SKM_NPHASES];
  memcpy(before, s->phase_s, sizeof before);
  const double t_start = pc_now();
  if (skm_centres(s, centres) != 0) return algorithm_failed();
  streamkm_phases_since(result, s, before, t_start);
  return PRAGMACLUST_OK;
}

void pragmaclust_streamkm_free(pragmaclust_streamkm_model *m) {
  if (!m) return;
  skm_close(&m->session);
  free(m);
}

/* ---- stream clustering ---- */

void pragmaclust_stream_options_init(pragmaclust_stream_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->epsilon = STRM_DEFAULT_EPSILON;
  o->max_iter = STRM_DEFAULT_MAX_ITER;
  o->update = PRAGMACLUST_UPDATE_DEVICE;
  o->seed = API_DEFAULT_SEED;
  o->kernels = PRAGMACLUST_KERNELS_TUNED;
}

int pragmaclust_stream(const float *x, size_t n, size_t d, const pragmaclust_stream_options *o, float *centres,
                       int *labels, pragmaclust_result *result) {
  static const char fn[] = "pragmaclust_stream";
  int rc;
  pc_clear_stop(); /* a request made before this call is not for it */
  if (!o) return INVALID("%s: options is NULL", fn);
  float max_abs;
  if ((rc = check_points(fn, x, n, d, &max_abs)) != 0) return rc;
  if (!centres) return INVALID("%s: centres is NULL", fn);
  if (o->k < 1 || (size_t)o->k > n) return INVALID("%s: k must lie in [1, n = %zu], got %d", fn, n, o->k);
  if ((rc = check_update(fn, o->update)) != 0 || (rc = check_kernels(fn, o->kernels)) != 0) return rc;
  if (pc_check_float_distances(max_abs, d, fn) != 0) return PRAGMACLUST_ERR_INVALID_ARGUMENT;
  if ((rc = ensure_device()) != 0) return rc;
  array_rows rows = {x, d};
  const pc_stream src = {n, d, read_array_rows, &rows};
  const strm_params params = {.k = o->k, .block = o->block, .epsilon = o->epsilon, .window = o->window,
                              .query_every = o->query_every, .max_iter = o->max_iter, .update = to_update(o->update),
                              .seed = o->seed, .kernels = to_kernels(o->kernels)};
  strm_result res;
  memset(&res, 0, sizeof res);
  if (strm_run(&src, &params, centres, &res) != 0) return algorithm_failed();
  double cost = 0.0;
  if (strm_label_rows(&src, &res, centres, o->k, labels, &cost) != 0) return algorithm_failed();
  if (result) {
    result_begin(result, strm_phase_names, STRM_NPHASES);
    result_phases(result, res.phase_s, res.total_s);
    result->iterations = res.iterations;
    result->cost = cost;
    result->clusters = o->k;
  }
  return PRAGMACLUST_OK;
}

/* ---- DBSCAN ---- */

void pragmaclust_dbscan_options_init(pragmaclust_dbscan_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->index = PRAGMACLUST_DBSCAN_INDEX_AUTO;
  o->method = PRAGMACLUST_DBSCAN_UNION_FIND;
  o->chains = DB_DEFAULT_CHAINS;
  o->seed_list = DB_DEFAULT_SEED_LIST;
  o->levels = DB_DEFAULT_LEVELS;
  o->fanout = DB_DEFAULT_FANOUT;
}

int pragmaclust_dbscan(const float *x, size_t n, size_t d, const pragmaclust_dbscan_options *o, int *labels,
                       unsigned char *is_core, pragmaclust_result *result) {
  static const char fn[] = "pragmaclust_dbscan";
  int rc;
  pc_clear_stop(); /* a request made before this call is not for it */
  if (!o) return INVALID("%s: options is NULL", fn);
  if ((rc = check_points(fn, x, n, d, NULL)) != 0) return rc;
  if (!labels) return INVALID("%s: labels is NULL", fn);
  if (!(o->eps > 0.0) || !isfinite(o->eps)) return INVALID("%s: eps must be finite and > 0, got %g", fn, o->eps);
  if (o->min_pts < 1) return INVALID("%s: min_pts must be at least 1, got %d", fn, o->min_pts);
  if (o->method != PRAGMACLUST_DBSCAN_UNION_FIND && o->method != PRAGMACLUST_DBSCAN_CHAINS)
    return INVALID("%s: method %d is not a pragmaclust_dbscan_method", fn, (int)o->method);
  if (o->chains < 1 || o->seed_list < 1)
    return INVALID("%s: chains and seed_list must be at least 1, got %d and %d", fn, o->chains, o->seed_list);
  if (o->levels < 1 || o->levels > DB_DIR_MAX_LEVELS || o->fanout < 2)
    return INVALID("%s: levels must lie in [1, %d] and fanout be at least 2, got %d and %d", fn, DB_DIR_MAX_LEVELS, o->levels,
                   o->fanout);
  db_index_kind index;
  switch (o->index) {
    case PRAGMACLUST_DBSCAN_INDEX_AUTO: index = DB_INDEX_AUTO; break;
    case PRAGMACLUST_DBSCAN_INDEX_PROJECTED: index = DB_INDEX_PROJECTED; break;
    case PRAGMACLUST_DBSCAN_INDEX_GRID: index = DB_INDEX_GRID; break;
    case PRAGMACLUST_DBSCAN_INDEX_DIRECTORY: index = DB_INDEX_DIRECTORY; break;
    case PRAGMACLUST_DBSCAN_INDEX_NONE: index = DB_INDEX_NONE; break;
    default: return INVALID("%s: index %d is not a pragmaclust_dbscan_index", fn, (int)o->index);
  }
  for (size_t e = 0; e < n * d; e++)
    if (!isfinite((double)x[e] / o->eps))
      return INVALID("%s: value %g divided by eps %g overflows the grid; rescale the data", fn, (double)x[e], o->eps);
  if ((rc = ensure_device()) != 0) return rc;
  const db_params params = {o->eps,    o->min_pts,   index,     o->method == PRAGMACLUST_DBSCAN_CHAINS ? DB_METHOD_CHAINS : DB_METHOD_UNION_FIND,
                            o->chains, o->seed_list, o->levels, o->fanout};
  db_result res;
  memset(&res, 0, sizeof res);
  if (dbscan_run(x, n, d, &params, labels, is_core, &res) != 0) return algorithm_failed();
  if (result) {
    result_begin(result, db_phase_names, DB_NPHASES);
    result_phases(result, res.phase_s, res.total_s);
    result->clusters = res.clusters;
    result->noise = res.noise;
  }
  return PRAGMACLUST_OK;
}

/* ---- density peaks ---- */

struct pragmaclust_dpc_model {
  dpc_state *state; /* reads its points from x */
  float *x;         /* capacity x d: the points so far, then room for insertions */
  size_t n, capacity, d; /* ids so far, the most points, features */
};

void pragmaclust_dpc_options_init(pragmaclust_dpc_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->dc_percent = API_DPC_PERCENT;
  o->dc_samples = API_DPC_SAMPLES;
  o->index = PRAGMACLUST_DPC_INDEX_VPTREE;
  o->rho_update = PRAGMACLUST_DPC_RHO_INCIDENTAL;
  o->rho_search = o->delta_search = PRAGMACLUST_DPC_SEARCH_POINT;
  o->seed = API_DEFAULT_SEED;
}

static void dpc_result_to(pragmaclust_result *result, const dpc_result *res) {
  if (!result) return;
  result_begin(result, dpc_phase_names, DPC_NPHASES);
  result_phases(result, res->phase_s, res->total_s);
  result->clusters = res->clusters;
}

/* The options as dpc_params for the base points x (n x d): d_c given, or estimated. */
static int dpc_params_of(const char *fn, const float *x, size_t n, size_t d, const pragmaclust_dpc_options *o,
                         dpc_params *params) {
  if (!(o->dc >= 0.0) || !isfinite(o->dc)) return INVALID("%s: dc must be finite and >= 0 (0: estimated), got %g", fn, o->dc);
  if (o->dc == 0.0 && !(o->dc_percent > 0.0 && o->dc_percent <= 100.0))
    return INVALID("%s: dc_percent must lie in (0, 100], got %g", fn, o->dc_percent);
  if (o->dc == 0.0 && o->dc_samples < 1) return INVALID("%s: dc_samples must be at least 1", fn);
  if (o->peaks < 0 || (size_t)o->peaks > n) return INVALID("%s: peaks must lie in [0, n = %zu], got %ld", fn, n, o->peaks);
  if (o->peaks == 0 && !(o->rho_min >= 0.0 && o->delta_min >= 0.0))
    return INVALID("%s: rho_min and delta_min must be >= 0, got %g and %g", fn, o->rho_min, o->delta_min);
  if (o->index != PRAGMACLUST_DPC_INDEX_VPTREE && o->index != PRAGMACLUST_DPC_INDEX_NONE)
    return INVALID("%s: index %d is not a pragmaclust_dpc_index", fn, (int)o->index);
  if (o->rho_update != PRAGMACLUST_DPC_RHO_INCIDENTAL && o->rho_update != PRAGMACLUST_DPC_RHO_SEPARATE)
    return INVALID("%s: rho_update %d is not a pragmaclust_dpc_rho_update", fn, (int)o->rho_update);
  if ((o->rho_search != PRAGMACLUST_DPC_SEARCH_POINT && o->rho_search != PRAGMACLUST_DPC_SEARCH_LEAF) ||
      (o->delta_search != PRAGMACLUST_DPC_SEARCH_POINT && o->delta_search != PRAGMACLUST_DPC_SEARCH_LEAF))
    return INVALID("%s: rho_search and delta_search must be PRAGMACLUST_DPC_SEARCH_POINT or _LEAF", fn);
  double dc = o->dc;
  if (dc == 0.0) {
    dc = dpc_dc_percentile(x, n, d, o->dc_percent, o->dc_samples, o->seed);
    if (!(dc > 0.0)) return algorithm_failed();
  }
  *params = (dpc_params){dc,
                         o->index == PRAGMACLUST_DPC_INDEX_NONE ? DPC_INDEX_NONE : DPC_INDEX_VPTREE,
                         o->peaks,
                         o->rho_min,
                         o->delta_min,
                         o->seed,
                         o->rho_update == PRAGMACLUST_DPC_RHO_SEPARATE ? DPC_RHO_SEPARATE : DPC_RHO_INCIDENTAL,
                         o->rho_search == PRAGMACLUST_DPC_SEARCH_LEAF ? DPC_SEARCH_LEAF : DPC_SEARCH_POINT,
                         o->delta_search == PRAGMACLUST_DPC_SEARCH_LEAF ? DPC_SEARCH_LEAF : DPC_SEARCH_POINT};
  return PRAGMACLUST_OK;
}

int pragmaclust_dpc_create(const float *x, size_t n, size_t d, size_t capacity, const pragmaclust_dpc_options *o,
                           pragmaclust_dpc_model **model, pragmaclust_result *result) {
  static const char fn[] = "pragmaclust_dpc_create";
  int rc;
  pc_clear_stop(); /* a request made before this call is not for it */
  if (!model) return INVALID("%s: model is NULL", fn);
  *model = NULL;
  if (!o) return INVALID("%s: options is NULL", fn);
  if ((rc = check_points(fn, x, n, d, NULL)) != 0) return rc;
  if (capacity < n || capacity > (size_t)PC_MAX_POINTS)
    return INVALID("%s: capacity must lie in [n = %zu, %d], got %zu", fn, n, PC_MAX_POINTS, capacity);
  if ((rc = ensure_device()) != 0) return rc;
  dpc_params params;
  if ((rc = dpc_params_of(fn, x, n, d, o, &params)) != 0) return rc;
  pragmaclust_dpc_model *m = calloc(1, sizeof *m);
  if (!m) return failure(PRAGMACLUST_ERR_OUT_OF_MEMORY, "%s: cannot allocate the model", fn);
  m->capacity = capacity;
  m->d = d;
  m->x = pc_try_alloc(capacity * d, sizeof *m->x, "the model's points");
  if (!m->x) {
    free(m);
    return PRAGMACLUST_ERR_OUT_OF_MEMORY;
  }
  memcpy(m->x, x, n * d * sizeof *m->x);
  m->n = n;
  dpc_result res;
  m->state = dpc_open(m->x, n, capacity, d, &params, &res);
  if (!m->state) {
    rc = algorithm_failed();
    free(m->x);
    free(m);
    return rc;
  }
  dpc_result_to(result, &res);
  *model = m;
  return PRAGMACLUST_OK;
}

int pragmaclust_dpc_insert(pragmaclust_dpc_model *m, const float *x, size_t count, pragmaclust_result *result) {
  static const char fn[] = "pragmaclust_dpc_insert";
  int rc;
  if (!m) return INVALID("%s: model is NULL", fn);
  const size_t n = m->n;
  if (count == 0) return INVALID("%s: count must be at least 1", fn);
  if (count > m->capacity - n)
    return INVALID("%s: %zu more points exceed the capacity of %zu (%zu held)", fn, count, m->capacity, n);
  if ((rc = check_points(fn, x, count, m->d, NULL)) != 0) return rc;
  memcpy(m->x + n * m->d, x, count * m->d * sizeof *m->x);
  dpc_result res;
  if (dpc_insert(m->state, count, &res) != 0) return algorithm_failed();
  m->n = n + count;
  dpc_result_to(result, &res);
  return PRAGMACLUST_OK;
}

int pragmaclust_dpc_delete(pragmaclust_dpc_model *m, const int *ids, size_t count, pragmaclust_result *result) {
  static const char fn[] = "pragmaclust_dpc_delete";
  if (!m) return INVALID("%s: model is NULL", fn);
  if (!ids) return INVALID("%s: ids is NULL", fn);
  if (count == 0) return INVALID("%s: count must be at least 1", fn);
  dpc_result res;
  if (dpc_delete(m->state, ids, count, &res) != 0) return algorithm_failed();
  dpc_result_to(result, &res);
  return PRAGMACLUST_OK;
}

size_t pragmaclust_dpc_size(const pragmaclust_dpc_model *m) { return m ? m->n : 0; }

int pragmaclust_dpc_get(pragmaclust_dpc_model *m, int *labels, int *rho, double *delta, int *dependent,
                        unsigned char *alive) {
  if (!m) return INVALID("pragmaclust_dpc_get: model is NULL");
  dpc_results(m->state, rho, delta, dependent, labels);
  if (alive) dpc_alive(m->state, alive);
  return PRAGMACLUST_OK;
}

void pragmaclust_dpc_free(pragmaclust_dpc_model *m) {
  if (!m) return;
  dpc_close(m->state);
  free(m->x);
  free(m);
}

int pragmaclust_dpc(const float *x, size_t n, size_t d, const pragmaclust_dpc_options *o, int *labels,
                    pragmaclust_result *result) {
  if (!labels) return INVALID("pragmaclust_dpc: labels is NULL");
  pragmaclust_dpc_model *m;
  int rc = pragmaclust_dpc_create(x, n, d, n, o, &m, result);
  if (rc != PRAGMACLUST_OK) return rc;
  rc = pragmaclust_dpc_get(m, labels, NULL, NULL, NULL, NULL);
  pragmaclust_dpc_free(m);
  return rc;
}

/*
 * kmeans_cmd.c - the `kmeans` subcommand: options, initial centroids, outputs, the parameters
 * and results of the report. The run protocol (warm-up, repetitions, timing, summary) is run.c's.
 */
#include "check.h"
#include "cli.h"
#include "commands.h"
#include "data.h"
#include "output.h"
#include "device.h"
#include "dist.h"
#include "kmeans.h"
#include "kmeans_gemm.h"
#include "report.h"
#include "run.h"
#include "synth.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: {prog} kmeans INPUT -k K [options]\n"
    "Lloyd's k-means. INPUT is a text/CSV file, a .npy file, raw float32 with --shape N,D,\n"
    "or a generator: gen:uniform:n=N,d=D[,seed=S] | gen:blobs:n=N,d=D[,centers=C,std=S,box=B,seed=S]\n"
    "  -k K                 number of clusters (1 <= K <= n)\n"
    "  --init random|kmeans++|FILE  initial centroids: K distinct random rows, or k-means++ seeding\n"
    "                       (both seeded by --seed, default 1; the same rows in every variant), or a\n"
    "                       file of K rows of d values (any readable format)\n"
    "  --max-iter N         stop after N iterations at most (default 1000)\n"
    "  --iterations N       run exactly N iterations, ignoring convergence (for benchmarks)\n"
    "  --tol T              also stop when the summed squared centroid shift <= T (default: off;\n"
    "                       the run stops when no assignment changes)\n"
    "  --update device|host where new centroids are computed (gpu variant): on the GPU (Cao's GPU-C,\n"
    "                       default) or on the host from the retrieved labels (GPU-L)\n"
    "  --sums changed|all   the update's cluster sums: kept between iterations, only the points whose\n"
    "                       label changed moved (default; exact integer sums, so the same centroids),\n"
    "                       or every point added again each iteration (Lloyd's step as written)\n"
    "  --distance auto      (default) the fastest distance below whose labels are direct's on data\n"
    "                       without exact ties (the report's distance_used): direct where k > 4^d\n"
    "                       (d < 16: clusters close against the data's spread); else on a GPU\n"
    "                       dot-3xtf32, but direct for runs small enough for one region an\n"
    "                       iteration and for k <= 16 (k <= 32 up to d = 16); on the host dot\n"
    "                       from k d = 256, else direct\n"
    "  --distance direct|dot  how the assign step measures distances: sum((x - c)^2) (the course\n"
    "                       report's; exact ties go to the lowest index) or |c|^2 - 2x.c on\n"
    "                       shifted centroids (one multiply-add per feature, as GEMM-based k-means:\n"
    "                       faster for large d, float32 rounding may break exact ties otherwise)\n"
    "  --distance gemm|gemm-tf32  (gpu variant) the dot form with the dot products from cuBLAS' SGEMM,\n"
    "                       in float32 or on TF32 tensor cores (as PyTorch with allow_tf32); cuBLAS is\n"
    "                       opened at run time: $PRAGMACLUST_CUBLAS, else libcublas.so[.13|.12|.11]\n"
    "  --distance dot-3xtf32  (gpu variant on a GPU) the dot form with x.c on the TF32 tensor cores,\n"
    "                       each float split into two TF32 parts: about float32's accuracy\n"
    "  --distance dot-tf32  (gpu variant on a GPU) the same kernel with one TF32 product (10-bit\n"
    "                       mantissas, as PyTorch's allow_tf32): faster, near-ties may move\n"
    "  --distance dot-fp16|dot-bf16  (gpu variant on a GPU) x.c on the 16-bit tensor cores: points\n"
    "                       and centroids shifted by the centroids' mean and rounded to fp16 (11-bit\n"
    "                       significands, scaled into its range) or bf16 (8-bit); a 16-bit copy of\n"
    "                       the points stays on the GPU (2 bytes a value). Fastest, least accurate\n"
    "  --device-memory BYTES|auto  (gpu variant) the most device memory the run may take (K, M, G, T:\n"
    "                       powers of 1024, e.g. 512M); default auto, what the GPU has free. Points\n"
    "                       beyond it stay on the host and stream through the GPU in blocks (out of\n"
    "                       core), with the same results. The seq and omp builds accept it and ignore\n"
    "                       it: their points are in host memory already\n"
    "  --labels FILE        write labels (0-based; .npy -> int32 array, else one per line)\n"
    "  --centroids FILE     write final centroids (.npy -> float32 K x d, else text)\n"
    "common options:\n"
    "  --seed S             seed for random initial centroids (default 1)\n"
    "  --shape N,D          INPUT is raw float32 with N rows of D values\n"
    "  --threads T          host threads (omp variant; host side of the gpu variant)\n"
    "  --allow-host         let the gpu build run on the host when no GPU is usable (labelled)\n"
    "  --repeat R           timed repetitions (default 1); --warmup W untimed runs first (default 0)\n"
    "  --report FILE        JSON report (parameters, iterations, SSE, phase times, device); - = stdout\n"
    "  --kernels tuned|portable  the assign step's and the k-means++ seeding's kernels: this build's\n"
    "                       tuned ones where they exist and apply (default), or the portable OpenMP\n"
    "                       loops every compiler builds (the same labels)\n"
    "  --check              after the run, one more assign pass from the final centroids, a sample of\n"
    "                       its labels checked against the nearest centroid in double (near ties\n"
    "                       within float rounding allowed) and its centroids against their clusters'\n"
    "                       means; exit 1 on a mismatch\n"
    "  --quiet              no summary on stderr\n";

enum { OPT_K = 'k', OPT_INIT = 2000, OPT_MAX_ITER, OPT_ITERATIONS, OPT_TOL, OPT_UPDATE, OPT_SUMS, OPT_DISTANCE,
       OPT_LABELS, OPT_CENTROIDS, OPT_DEVICE_MEMORY };

static const struct option own_options[] = {
    {"init", required_argument, NULL, OPT_INIT},       {"max-iter", required_argument, NULL, OPT_MAX_ITER},
    {"iterations", required_argument, NULL, OPT_ITERATIONS}, {"tol", required_argument, NULL, OPT_TOL},
    {"update", required_argument, NULL, OPT_UPDATE},   {"sums", required_argument, NULL, OPT_SUMS},
    {"distance", required_argument, NULL, OPT_DISTANCE}, {"labels", required_argument, NULL, OPT_LABELS},
    {"centroids", required_argument, NULL, OPT_CENTROIDS},
    {"device-memory", required_argument, NULL, OPT_DEVICE_MEMORY}, {NULL, 0, NULL, 0},
};

typedef struct {
  long long k;
  const char *init, *labels_path, *centroids_path;
  const char *device_memory; /* --device-memory as given; NULL: auto */
  km_params params;
} kmeans_opts;

static void handle_option(int id, const char *arg, void *ctx) {
  kmeans_opts *o = ctx;
  switch (id) {
    case OPT_K: o->k = pc_parse_int("-k", arg, 1, 0x7fffffff); break;
    case OPT_INIT:
      o->init = arg;
      if (strcmp(arg, "random") != 0 && strcmp(arg, "kmeans++") != 0) pc_io_input("--init", arg);
      break;
    case OPT_MAX_ITER: o->params.max_iter = (int)pc_parse_int("--max-iter", arg, 1, 100000000); break;
    case OPT_ITERATIONS: o->params.fixed_iter = (int)pc_parse_int("--iterations", arg, 1, 100000000); break;
    case OPT_TOL: o->params.tol = pc_parse_real("--tol", arg, 0.0, 1e300); break;
    case OPT_UPDATE:
      if (!strcmp(arg, "device")) o->params.update = KM_UPDATE_DEVICE;
      else if (!strcmp(arg, "host")) o->params.update = KM_UPDATE_HOST;
      else pc_die(PC_EXIT_USAGE, "option --update: expected device or host, got '%s'", arg);
      break;
    case OPT_SUMS:
      if (!strcmp(arg, "changed")) o->params.resum_all = 0;
      else if (!strcmp(arg, "all")) o->params.resum_all = 1;
      else pc_die(PC_EXIT_USAGE, "option --sums: expected changed or all, got '%s'", arg);
      break;
    case OPT_DISTANCE:
      if (!strcmp(arg, "auto")) o->params.distance = KM_DISTANCE_AUTO;
      else if (!strcmp(arg, "dot")) o->params.distance = KM_DISTANCE_DOT;
      else if (!strcmp(arg, "direct")) o->params.distance = KM_DISTANCE_DIRECT;
      else if (!strcmp(arg, "gemm")) o->params.distance = KM_DISTANCE_GEMM;
      else if (!strcmp(arg, "gemm-tf32")) o->params.distance = KM_DISTANCE_GEMM_TF32;
      else if (!strcmp(arg, "dot-3xtf32")) o->params.distance = KM_DISTANCE_DOT_3XTF32;
      else if (!strcmp(arg, "dot-tf32")) o->params.distance = KM_DISTANCE_DOT_TF32;
      else if (!strcmp(arg, "dot-fp16")) o->params.distance = KM_DISTANCE_DOT_FP16;
      else if (!strcmp(arg, "dot-bf16")) o->params.distance = KM_DISTANCE_DOT_BF16;
      else
        pc_die(PC_EXIT_USAGE,
               "option --distance: expected auto, direct, dot, gemm, gemm-tf32, dot-3xtf32, dot-tf32, dot-fp16 or "
               "dot-bf16, got '%s'",
               arg);
      if (km_distance_is_gemm(o->params.distance) && !km_gemm_built())
        pc_die(PC_EXIT_USAGE, "option --distance %s: needs the gpu variant (cuBLAS on the GPU); this is the %s build", arg,
               pc_build_variant());
      if (km_tensor_form_of(o->params.distance) && !PC_HAS_DEVICE)
        pc_die(PC_EXIT_USAGE, "option --distance %s: needs the gpu variant (the GPU's tensor cores); this is the %s build",
               arg, pc_build_variant());
      break;
    case OPT_DEVICE_MEMORY:
      o->device_memory = strcmp(arg, "auto") ? arg : NULL;
      o->params.device_memory = o->device_memory ? (size_t)pc_parse_bytes("--device-memory", arg) : 0;
      break;
    case OPT_LABELS: o->labels_path = arg; pc_io_output("--labels", arg); break;
    case OPT_CENTROIDS: o->centroids_path = arg; pc_io_output("--centroids", arg); break;
  }
}

/* k x d initial centroids: distinct random rows, or read from a file that must match. */
static float *initial_centroids(const kmeans_opts *o, const pc_common_opts *c, const pc_points *pts) {
  const size_t k = (size_t)o->k, d = pts->d;
  float *init = pc_xalloc(k * d, sizeof *init, "initial centroids");
  const int kmeanspp = o->init && !strcmp(o->init, "kmeans++");
  if (kmeanspp || !o->init || !strcmp(o->init, "random")) {
    if (km_initial_centroids(pts->x, pts->n, d, (int)k, kmeanspp, c->seed, c->kernels, init) != 0)
      pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    return init;
  }
  pc_points file;
  if (pc_read_points(o->init, 0, 0, &file) != 0) pc_die(PC_EXIT_USAGE, "--init: %s", pc_last_error());
  if (file.d != d) pc_die(PC_EXIT_USAGE, "--init %s: centroids have %zu values per row, the data has %zu", o->init, file.d, d);
  if (file.n != k) pc_die(PC_EXIT_USAGE, "--init %s: %zu centroids, but -k is %zu", o->init, file.n, k);
  memcpy(init, file.x, k * d * sizeof *init);
  pc_points_free(&file);
  return init;
}

/* One run of the protocol: Lloyd from the initial centroids; the timed runs' iteration times are
 * gathered in iteration_s (for their median across all runs). */
typedef struct {
  const float *xt;
  size_t n, d;
  const km_params *params;
  const float *init;
  float *centroids;
  int *labels;
  double *iteration_s;     /* [repeat * iteration cap] */
  size_t iterations_timed; /* entries of iteration_s filled */
  km_result res;
} kmeans_run_ctx;

static int kmeans_once(void *ctx, int run, pc_sample *s) {
  _Static_assert((int)KM_NPHASES <= (int)PC_RUN_MAX_PHASES, "the run protocol holds the phases");
  kmeans_run_ctx *c = ctx;
  memcpy(c->centroids, c->init, (size_t)c->params->k * c->d * sizeof *c->centroids);
  c->res.iteration_s = run >= 0 ? c->iteration_s + c->iterations_timed : NULL;
  if (km_run(c->xt, c->n, c->d, c->params, c->centroids, c->labels, &c->res) != 0) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", pc_last_error());
    return pc_fail("kmeans: %s", msg);
  }
  if (run >= 0) c->iterations_timed += (size_t)c->res.iterations;
  s->total_s = c->res.total_s;
  s->iterations = c->res.iterations;
  memcpy(s->phase_s, c->res.phase_s, sizeof c->res.phase_s);
  return 0;
}

/* --check: one more assign pass (and update) from the final centroids, with the run's kernels,
 * checked against the nearest centroids and the clusters' means in double (check.h). */
static void check_last_pass(pc_run *r, const km_params *params, const float *xt, size_t n, size_t d,
                            const float *centroids, const int *labels, const km_result *res) {
  const size_t k = (size_t)params->k;
  km_params one = *params;
  one.fixed_iter = 1;
  float *after = pc_xalloc(k * d, sizeof *after, "check centroids");
  int *pass_labels = pc_xalloc(n, sizeof *pass_labels, "check labels");
  memcpy(after, centroids, k * d * sizeof *after);
  km_result pass = {0};
  if (km_run(xt, n, d, &one, after, pass_labels, &pass) != 0) pc_die(PC_EXIT_USAGE, "kmeans --check: %s", pc_last_error());
  pc_check ck = {0};
  const int settled = res->converged && res->last_changed == 0;
  pc_check_kmeans(&ck, xt, n, d, (int)k, res->distance, centroids, pass_labels, after, settled ? labels : NULL);
  pc_run_check(r, &ck);
  free(after), free(pass_labels);
}

int pc_cmd_kmeans(int argc, char **argv) {
  kmeans_opts o = {.k = 0, .params = {.max_iter = 1000, .tol = -1.0, .update = KM_UPDATE_DEVICE, .distance = KM_DISTANCE_AUTO}};
  pc_common_opts c;
  pc_cli_parse("kmeans", argc, argv, own_options, "k:", handle_option, &o, usage, &c);
  if (o.k == 0) pc_die(PC_EXIT_USAGE, "kmeans: -k K is required");
  pc_cli_across_ranks("kmeans", &c); /* MPI ranks (dist.h): rank 0 reports and writes, every rank computes */

  pc_run r;
  pc_points pts;
  pc_run_start(&r, "kmeans", &c);
  pc_run_load(&r, &pts);
  /* cuBLAS is loaded before any timing, and its absence (or a run on the host) ends the run here */
  const int gemm = km_distance_is_gemm(o.params.distance);
  if (gemm && km_gemm_load(o.params.distance == KM_DISTANCE_GEMM_TF32) != 0)
    pc_die(PC_EXIT_NO_DEVICE, "kmeans: %s", pc_last_error());
  if (km_tensor_form_of(o.params.distance) && !pc_offloading())
    pc_die(PC_EXIT_NO_DEVICE,
           "kmeans: --distance %s runs on the GPU's tensor cores, but this run's kernels run on the host (--allow-host "
           "without a usable GPU); use --distance dot or direct",
           km_distance_names[o.params.distance]);
  const size_t n_all = pts.total, d = pts.d, k = (size_t)o.k;
  if ((size_t)o.k > n_all) pc_die(PC_EXIT_USAGE, "kmeans: -k %lld is larger than the number of points (%zu)", o.k, n_all);
  const size_t n = pts.n; /* across MPI ranks this rank's slice of the rows (dist.h; pc_load_input) */
  o.params.k = (int)k;
  o.params.kernels = c.kernels;
  /* --distance auto, by the whole problem's shape: alike on every rank and in one process */
  const km_distance asked = o.params.distance;
  o.params.distance = km_distance_for(n_all, d, &o.params);
  /* the gpu variant's device memory: the points on the device, or out of core, in blocks (each
   * rank's own: its slice, its share of its GPU; a limit too small for any rank is said once) */
  km_memory_plan memory;
  if (pc_dist_any_failed(km_plan_memory(n, d, &o.params, &memory) != 0))
    pc_die(PC_EXIT_USAGE, "kmeans%s%s: %s", o.device_memory ? " --device-memory " : "",
           o.device_memory ? o.device_memory : "", pc_last_error());
  o.params.stream_block = memory.block;

  float *init = initial_centroids(&o, &c, &pts);
  /* distances are float32: every centroid stays within the range of the data and the initial ones */
  float max_abs = (float)fmax(pc_max_abs(pts.x, n * d), pc_max_abs(init, k * d)); /* of floats: exact */
  pc_dist_max_float(&max_abs, 1);
  if (pc_check_float_distances(max_abs, d, "kmeans") != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  double t0 = pc_now();
  float *xt = pc_xalloc(n * d, sizeof *xt, "dimension-major copy of the data");
  km_transpose(pts.x, n, d, xt);
  const double layout_s = pc_now() - t0;
  pc_points_free(&pts);

  pc_dist_errors_alike(0); /* from here a failure may be one rank's own: it names its rank (dist.h) */
  const int iter_cap = o.params.fixed_iter > 0 ? o.params.fixed_iter : o.params.max_iter;
  kmeans_run_ctx run = {xt, n, d, &o.params, init, pc_xalloc(k * d, sizeof(float), "centroids"),
                        pc_xalloc(n, sizeof(int), "labels"),
                        pc_xalloc((size_t)c.repeat * (size_t)iter_cap, sizeof(double), "iteration times"), 0, {0}};
  pc_run_repeat(&r, km_phase_names, KM_NPHASES, 1, kmeans_once, &run);
  const km_result *res = &run.res;
  if (c.check) check_last_pass(&r, &o.params, xt, n, d, run.centroids, run.labels, res);

  int *labels_all = run.labels; /* across MPI ranks rank 0 gathers them in the global order */
  if (o.labels_path && pc_dist_size() > 1) {
    labels_all = pc_dist_rank() == 0 ? pc_xalloc(n_all, sizeof *labels_all, "all labels") : NULL;
    pc_dist_gather_ints(run.labels, n, labels_all);
  }
  if (pc_dist_rank() == 0) {
    if (o.labels_path && pc_write_labels(o.labels_path, labels_all, n_all) != 0)
      pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    if (o.centroids_path && pc_write_matrix(o.centroids_path, run.centroids, k, d) != 0)
      pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  }
  if (labels_all != run.labels) free(labels_all);

  const pc_stats per_iter = pc_stats_of(run.iteration_s, run.iterations_timed);
  const double flop_per_iter = 2.0 * (double)n_all * (double)k * (double)d;
  const double gflops = per_iter.median > 0 ? flop_per_iter / per_iter.median * 1e-9 : 0.0;
  /* out of core: the points copied to the device over the copies' time (kmeans.h, km_result) */
  const double h2d_gb_s = res->h2d_copy_s > 0 ? res->h2d_bytes / res->h2d_copy_s * 1e-9 : NAN;
  pc_json *j = pc_run_report(&r);
  if (j) {
    pc_json_int(j, "k", (long long)k);
    pc_json_object(j, "params");
    pc_json_str(j, "init", o.init ? o.init : "random");
    pc_json_int(j, "seed", (long long)c.seed);
    pc_json_int(j, "max_iter", o.params.max_iter);
    pc_json_int(j, "fixed_iterations", o.params.fixed_iter);
    pc_json_num(j, "tol", o.params.tol);
    pc_json_str(j, "update", o.params.update == KM_UPDATE_DEVICE ? "device" : "host");
    pc_json_str(j, "sums", o.params.resum_all ? "all" : "changed");
    pc_json_str(j, "distance", km_distance_names[asked]);
    pc_json_str(j, "distance_used", km_distance_names[res->distance]);
    pc_json_int(j, "device_memory", (long long)o.params.device_memory); /* 0: auto */
    if (gemm) {
      int version;
      const char *lib = km_gemm_library(&version);
      pc_json_str(j, "cublas", lib);
      pc_json_int(j, "cublas_version", version);
    }
    pc_json_end_object(j);
    pc_json_str(j, "assign_kernels", res->kernels);
    pc_json_int(j, "centroid_splits", res->splits);
    pc_json_str(j, "update_sums", res->update_sums);
    pc_json_str(j, "update_points", res->update_points);
    pc_json_bool(j, "update_in_assign", res->update_in_assign);
    pc_json_int(j, "iterations", res->iterations);
    pc_json_bool(j, "converged", res->converged);
    pc_json_num(j, "sse", res->sse);
    pc_json_num(j, "device_memory_limit", memory.limit == SIZE_MAX ? NAN : (double)memory.limit); /* null: none */
    pc_json_int(j, "device_memory_in_memory", (long long)memory.in_memory); /* what the points on the device need */
    pc_json_object(j, "out_of_core"); /* blocks 0: the points stayed on the device */
    pc_json_int(j, "blocks", (long long)res->blocks);
    pc_json_int(j, "block_points", (long long)res->block_points);
    pc_json_num(j, "h2d_bytes", res->h2d_bytes);
    pc_json_num(j, "h2d_copy_s", res->h2d_copy_s);
    pc_json_num(j, "h2d_gb_s", h2d_gb_s); /* null in memory */
    pc_json_end_object(j);
    pc_run_timing_begin(&r);
    pc_json_num(j, "layout_s", layout_s);
    pc_json_stats(j, "iteration_s", per_iter);
    pc_json_num(j, "gflops_per_s", gflops);
    pc_run_timing_end(&r);
  }
  char what[256];
  snprintf(what, sizeof what, "k=%zu: %d iterations%s, SSE %.10g; per iteration %.4g ms median (%.1f GFLOP/s)", k,
           res->iterations,
           res->converged ? " (converged)" : (o.params.fixed_iter ? " (fixed)" : " (not converged: --max-iter reached)"),
           res->sse, per_iter.median * 1e3, gflops);
  char stream[128] = "";
  if (res->blocks)
    snprintf(stream, sizeof stream, "; out of core: %zu blocks of %zu points, %.3g GB/s host-to-device", res->blocks,
             res->block_points, h2d_gb_s);
  pc_run_finish(&r, what, stream);
  free(run.iteration_s);
  free(run.labels);
  free(run.centroids);
  free(xt);
  free(init);
  return PC_EXIT_OK;
}

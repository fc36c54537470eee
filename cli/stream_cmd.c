/*
 * stream_cmd.c - the `stream` subcommand (Cao et al.'s entire-stream and sliding-window
 * clustering, stream.h): options, the stream (a generator read block by block, or a file), the
 * assignment pass for labels and cost, outputs, the parameters and results of the report. The
 * run protocol (warm-up, repetitions, timing, summary) is run.c's.
 */
#include "check.h"
#include "cli.h"
#include "commands.h"
#include "data.h"
#include "output.h"
#include "device.h"
#include "report.h"
#include "run.h"
#include "stream_source.h"
#include "stream.h"
#include "synth.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: {prog} stream INPUT -k K [options]\n"
    "Cao et al.'s stream clustering with k-means inside. Entire stream (default): STREAM's divide\n"
    "and conquer: blocks of M = n^epsilon points clustered into K weighted centres, a level of M or\n"
    "more weighted centres clustered again one level up, the union of the levels clustered at the\n"
    "end. Sliding window (--window N): only the N most recent points count; buckets of M points\n"
    "summarised by K weighted centres and combined as in an exponential histogram. The same\n"
    "centres in every variant for the same seed (to the rounding of k-means' centroid sums).\n"
    "INPUT: gen:uniform:... / gen:blobs:... (generated block by block, never held whole), or a\n"
    "  text/CSV file, a .npy file, raw float32 with --shape N,D (read whole, then streamed)\n"
    "  -k K                 number of centres (1 <= K <= n)\n"
    "  --block-size M       points per block (window: per bucket); at least 2K\n"
    "                       (default max(ceil(B^epsilon), 2K), B = n, or N with --window)\n"
    "  --epsilon E          the exponent of the default block size, in (0, 1) (default 0.5)\n"
    "  --window N           cluster the N most recent points (sliding window); N >= 2K\n"
    "  --query-every Q      with --window: also cluster the window every Q points (timed as queries)\n"
    "  --max-iter I         Lloyd passes per k-means at most (default 100)\n"
    "  --update device|host where each k-means of a block computes its centroids (gpu variant:\n"
    "                       device = Cao's GPU-C, host = GPU-L, the paper's STREAM-GPU; default device)\n"
    "  --centres FILE       write the K centres (.npy -> float32 K x d, else text); also --centroids\n"
    "  --labels FILE        a second pass: each point's nearest centre (0-based), all n points\n"
    "common options: --seed S (default 1), --shape N,D, --threads T, --allow-host, --repeat R,\n"
    "  --warmup W, --report FILE (JSON: sizes, SSE of the points the centres answer for, phase\n"
    "  times), --quiet, --kernels tuned|portable (k-means' assign step and the k-means++ seeding:\n"
    "  this build's tuned kernels, the default, or the portable loops; the same centres)\n"
    "  --check (after the run, the second pass's labels of a sample of rows checked against the nearest\n"
    "  centre in double; exit 1 on a mismatch)\n";

enum { OPT_K = 'k', OPT_BLOCK = 2000, OPT_EPSILON, OPT_WINDOW, OPT_QUERY_EVERY, OPT_MAX_ITER, OPT_UPDATE, OPT_CENTRES,
       OPT_LABELS };
static const struct option own_options[] = {
    {"block-size", required_argument, NULL, OPT_BLOCK},   {"epsilon", required_argument, NULL, OPT_EPSILON},
    {"window", required_argument, NULL, OPT_WINDOW},      {"query-every", required_argument, NULL, OPT_QUERY_EVERY},
    {"max-iter", required_argument, NULL, OPT_MAX_ITER},  {"update", required_argument, NULL, OPT_UPDATE},
    {"centres", required_argument, NULL, OPT_CENTRES},    {"centroids", required_argument, NULL, OPT_CENTRES},
    {"labels", required_argument, NULL, OPT_LABELS},      {NULL, 0, NULL, 0}};

typedef struct {
  long long k;
  strm_params params;
  const char *centres_path, *labels_path;
} stream_opts;

static void handle_option(int id, const char *arg, void *ctx) {
  stream_opts *o = ctx;
  switch (id) {
    case OPT_K: o->k = pc_parse_int("-k", arg, 1, 0x7fffffff); break;
    case OPT_BLOCK: o->params.block = (size_t)pc_parse_int("--block-size", arg, 1, PC_MAX_POINTS); break;
    case OPT_EPSILON:
      o->params.epsilon = pc_parse_real("--epsilon", arg, 0.0, 1.0);
      if (!(o->params.epsilon > 0.0 && o->params.epsilon < 1.0))
        pc_die(PC_EXIT_USAGE, "option --epsilon: expected a number in (0, 1), got '%s'", arg);
      break;
    case OPT_WINDOW: o->params.window = (size_t)pc_parse_int("--window", arg, 1, PC_MAX_POINTS); break;
    case OPT_QUERY_EVERY: o->params.query_every = (size_t)pc_parse_int("--query-every", arg, 1, PC_MAX_POINTS); break;
    case OPT_MAX_ITER: o->params.max_iter = (int)pc_parse_int("--max-iter", arg, 1, 100000000); break;
    case OPT_UPDATE:
      if (!strcmp(arg, "device")) o->params.update = KM_UPDATE_DEVICE;
      else if (!strcmp(arg, "host")) o->params.update = KM_UPDATE_HOST;
      else pc_die(PC_EXIT_USAGE, "option --update: expected device or host, got '%s'", arg);
      break;
    case OPT_CENTRES: o->centres_path = arg; pc_io_output("--centres", arg); break;
    case OPT_LABELS: o->labels_path = arg; pc_io_output("--labels", arg); break;
  }
}

/* One run of the protocol: the stream clustered once; the query times of the timed runs kept. */
typedef struct {
  const pc_stream *src;
  const strm_params *params;
  float *centres;
  double *query_s; /* [repeat] */
  strm_result res;
} stream_run_ctx;

static int stream_once(void *ctx, int run, pc_sample *s) {
  _Static_assert((int)STRM_NPHASES <= (int)PC_RUN_MAX_PHASES, "the run protocol holds the phases");
  stream_run_ctx *c = ctx;
  if (strm_run(c->src, c->params, c->centres, &c->res) != 0) return -1;
  s->total_s = c->res.total_s;
  s->iterations = c->res.iterations > 0x7fffffff ? 0x7fffffff : (int)c->res.iterations;
  memcpy(s->phase_s, c->res.phase_s, sizeof c->res.phase_s);
  if (run >= 0) c->query_s[run] = c->res.query_s;
  return 0;
}

int pc_cmd_stream(int argc, char **argv) {
  stream_opts o = {.k = 0,
                   .params = {.epsilon = STRM_DEFAULT_EPSILON, .max_iter = STRM_DEFAULT_MAX_ITER, .update = KM_UPDATE_DEVICE}};
  pc_common_opts c;
  pc_cli_parse("stream", argc, argv, own_options, "k:", handle_option, &o, usage, &c);
  if (o.k == 0) pc_die(PC_EXIT_USAGE, "stream: -k K is required");
  if (o.params.query_every && !o.params.window) pc_die(PC_EXIT_USAGE, "stream: --query-every needs --window");
  o.params.k = (int)o.k;
  o.params.seed = c.seed;

  pc_run r;
  pc_run_start(&r, "stream", &c);
  pc_stream_input in;
  if (pc_stream_open(c.input, c.raw_n, c.raw_d, &in) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  const pc_stream *src = &in.stream;
  const size_t n = src->n, d = src->d, k = (size_t)o.k;
  pc_run_input(&r, in.generated, n, d, in.loaded.header_line, in.load_s);
  o.params.kernels = c.kernels;
  if (k > n) pc_die(PC_EXIT_USAGE, "stream: -k %zu is larger than the number of points (%zu)", k, n);
  /* distances are float32 (k-means): a generator's data is bounded by its spec, a file's by its values */
  const double max_abs = in.generated ? pc_gen_max_abs(&in.spec) : pc_max_abs(in.loaded.x, n * d);
  if (pc_check_float_distances(max_abs, d, "stream") != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());

  stream_run_ctx run = {src, &o.params, pc_xalloc(k, d * sizeof(float), "centres"),
                        pc_xalloc((size_t)c.repeat, sizeof(double), "query times"), {0}};
  pc_run_repeat(&r, strm_phase_names, STRM_NPHASES, 1, stream_once, &run);
  const strm_result *res = &run.res;
  float *centres = run.centres;

  /* The second pass: labels of every point; the cost over the rows the centres answer for. */
  int *labels = o.labels_path || c.check ? pc_xalloc(n, sizeof *labels, "labels") : NULL;
  double sse = 0.0, cost_s = 0.0;
  if (labels || c.report) {
    const double t0 = pc_now();
    if (strm_label_rows(src, res, centres, (int)k, labels, &sse) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    cost_s = pc_now() - t0;
  }

  if (c.check) {
    pc_check ck = {0};
    pc_check_nearest_centres(&ck, src, 0, n, centres, (int)k, labels);
    pc_run_check(&r, &ck);
  }
  if (o.centres_path && pc_write_matrix(o.centres_path, centres, k, d) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  if (o.labels_path && pc_write_labels(o.labels_path, labels, n) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  pc_json *j = pc_run_report(&r);
  if (j) {
    pc_json_int(j, "k", (long long)k);
    pc_json_str(j, "mode", o.params.window ? "window" : "entire");
    pc_json_object(j, "params");
    pc_json_int(j, "seed", (long long)c.seed);
    pc_json_int(j, "block_size", (long long)res->block);
    pc_json_num(j, "epsilon", o.params.epsilon);
    pc_json_int(j, "window", (long long)o.params.window);
    pc_json_int(j, "query_every", (long long)o.params.query_every);
    pc_json_int(j, "max_iter", o.params.max_iter);
    pc_json_str(j, "update", o.params.update == KM_UPDATE_DEVICE ? "device" : "host");
    pc_json_end_object(j);
    pc_json_int(j, "blocks", (long long)res->blocks);
    pc_json_int(j, "levels", res->levels);
    pc_json_int(j, "kmeans_runs", (long long)res->kmeans_runs);
    pc_json_int(j, "iterations", res->iterations);
    pc_json_int(j, "combined", (long long)res->combined);
    pc_json_int(j, "queries", (long long)res->queries);
    pc_json_int(j, "buckets", (long long)res->buckets);
    pc_json_int(j, "summary", (long long)res->summary);
    pc_json_int(j, "cost_first_row", (long long)res->first_row);
    pc_json_int(j, "cost_rows", (long long)res->rows);
    pc_json_num(j, "sse", sse);
    pc_run_timing_begin(&r);
    pc_json_stats(j, "query_s", pc_stats_of(run.query_s, (size_t)c.repeat));
    pc_json_num(j, "cost_pass_s", cost_s);
    pc_run_timing_end(&r);
  }
  char what[256], tail[96] = "";
  int len = snprintf(what, sizeof what, "k=%zu, %s: %zu blocks of %zu, %zu k-means runs (%ld Lloyd passes)", k,
                     o.params.window ? "window" : "entire stream", res->blocks, res->block, res->kmeans_runs, res->iterations);
  if (o.params.window && len > 0 && (size_t)len < sizeof what)
    snprintf(what + len, sizeof what - (size_t)len, ", window %zu, %zu queries", o.params.window, res->queries);
  if (o.labels_path || c.report) snprintf(tail, sizeof tail, "; SSE %.10g over %zu points", sse, res->rows);
  pc_run_finish(&r, what, tail);
  free(run.query_s);
  free(labels);
  free(centres);
  pc_points_free(&in.loaded);
  return PC_EXIT_OK;
}

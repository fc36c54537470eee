/*
 * streamkm_cmd.c - the `streamkm` subcommand: options, the stream (a generator read chunk by
 * chunk, or a file), the optional assignment pass, outputs, the parameters and results of the
 * report. The run protocol (warm-up, repetitions, timing, summary) is run.c's.
 */
#include "check.h"
#include "cli.h"
#include "commands.h"
#include "data.h"
#include "output.h"
#include "device.h"
#include "dist.h"
#include "kmeanspp.h"
#include "report.h"
#include "run.h"
#include "stream_source.h"
#include "streamkm.h"
#include "synth.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: {prog} streamkm INPUT -k K [options]\n"
    "Streaming k-means (Ailon, Jaiswal & Monteleoni; Okuda & Fujimoto's GPU version): chunks of M\n"
    "points, R runs of k-means# per chunk (k rounds of 3*ceil(log2 K) D^2 draws), the best run's\n"
    "points weighted by the points they serve, weighted k-means++ on their union. The same centres\n"
    "in every variant for the same seed.\n"
    "INPUT: gen:uniform:... / gen:blobs:... (generated chunk by chunk, never held whole), or a\n"
    "  text/CSV file, a .npy file, raw float32 with --shape N,D (read whole, then streamed; across\n"
    "  MPI ranks each rank holds its chunks' rows only)\n"
    "  -k K                 number of centres (1 <= K <= chunk size <= n)\n"
    "  --chunk-size M       points per chunk (default ceil(sqrt(n K)))\n"
    "  --repetitions R      k-means# runs per chunk (default ceil(3 ln n))\n"
    "  --search-arity A     the roulette wheel's search: 2 = a thread per draw; 3..1024 =\n"
    "                       Okuda's A-ary search, a team of A threads per draw (default 2)\n"
    "  --centres FILE       write the K centres (.npy -> float32 K x d, else text); also --centroids\n"
    "  --labels FILE        second pass over the stream: each point's nearest centre (0-based)\n"
    "  --kept FILE          the points each chunk kept: stream row and points served, one per line\n"
    "common options: --seed S (default 1), --shape N,D, --threads T, --allow-host, --repeat R,\n"
    "  --warmup W, --report FILE (JSON: sizes, cost after a second pass, phase times), --quiet,\n"
    "  --kernels tuned|portable (the D^2 sampling's distance passes: this build's tuned ones, the\n"
    "  default, or the portable loops; the same centres)\n"
    "  --check (after the run, the second pass's labels of a sample of rows checked against the nearest\n"
    "  centre in double, the kept points' weights against n, the centres against the kept points;\n"
    "  exit 1 on a mismatch)\n";

enum { OPT_K = 'k', OPT_CHUNK_SIZE = 2000, OPT_REPETITIONS, OPT_SEARCH_ARITY, OPT_CENTRES, OPT_LABELS, OPT_KEPT };
static const struct option own_options[] = {
    {"chunk-size", required_argument, NULL, OPT_CHUNK_SIZE}, {"repetitions", required_argument, NULL, OPT_REPETITIONS},
    {"search-arity", required_argument, NULL, OPT_SEARCH_ARITY},
    {"centres", required_argument, NULL, OPT_CENTRES},      {"centroids", required_argument, NULL, OPT_CENTRES},
    {"labels", required_argument, NULL, OPT_LABELS},        {"kept", required_argument, NULL, OPT_KEPT},
    {NULL, 0, NULL, 0}};

typedef struct {
  long long k, chunk_size, repetitions, search_arity;
  const char *centres_path, *labels_path, *kept_path;
} streamkm_opts;

static void handle_option(int id, const char *arg, void *ctx) {
  streamkm_opts *o = ctx;
  switch (id) {
    case OPT_K: o->k = pc_parse_int("-k", arg, 1, 0x7fffffff); break;
    case OPT_CHUNK_SIZE: o->chunk_size = pc_parse_int("--chunk-size", arg, 1, PC_MAX_POINTS); break;
    case OPT_REPETITIONS: o->repetitions = pc_parse_int("--repetitions", arg, 1, 100000); break;
    case OPT_SEARCH_ARITY: o->search_arity = pc_parse_int("--search-arity", arg, 2, 1024); break;
    case OPT_CENTRES: o->centres_path = arg; pc_io_output("--centres", arg); break;
    case OPT_LABELS: o->labels_path = arg; pc_io_output("--labels", arg); break;
    case OPT_KEPT: o->kept_path = arg; pc_io_output("--kept", arg); break;
  }
}


static int write_kept(const char *path, const skm_result *res) {
  const size_t line = 48;
  char *text = pc_xalloc(res->kept ? res->kept : 1, line, "kept points");
  size_t len = 0;
  for (size_t q = 0; q < res->kept; q++)
    len += (size_t)snprintf(text + len, line, "%zu %ld\n", res->kept_row[q], res->kept_weight[q]);
  const int rc = pc_write_text_file(path, text, len);
  free(text);
  return rc;
}

/* One run of the protocol: streaming k-means over the whole stream; the last run's result stays. */
typedef struct {
  const pc_stream *src;
  const skm_params *params;
  float *centres;
  skm_result res;
} streamkm_run_ctx;

static int streamkm_once(void *ctx, int run, pc_sample *s) {
  _Static_assert((int)SKM_NPHASES <= (int)PC_RUN_MAX_PHASES, "the run protocol holds the phases");
  streamkm_run_ctx *c = ctx;
  (void)run;
  skm_result_free(&c->res);
  if (skm_run(c->src, c->params, c->centres, &c->res) != 0) return -1;
  s->total_s = c->res.total_s;
  memcpy(s->phase_s, c->res.phase_s, sizeof c->res.phase_s);
  return 0;
}

int pc_cmd_streamkm(int argc, char **argv) {
  streamkm_opts o = {0, 0, 0, 0, NULL, NULL, NULL};
  pc_common_opts c;
  pc_cli_parse("streamkm", argc, argv, own_options, "k:", handle_option, &o, usage, &c);
  if (o.k == 0) pc_die(PC_EXIT_USAGE, "streamkm: -k K is required");
  const int report = c.report != NULL; /* on every rank: the second pass for its cost runs on all */
  pc_cli_across_ranks("streamkm", &c); /* MPI ranks (dist.h): each its chunks; rank 0 reports and writes */

  pc_run r;
  pc_run_start(&r, "streamkm", &c);
  pc_stream_input in;
  if (pc_stream_open_part(c.input, c.raw_n, c.raw_d, &in) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  const pc_stream *src = &in.stream;
  const size_t n = src->n, d = src->d, k = (size_t)o.k;
  { /* across MPI ranks a file's rows move to the rank whose chunks hold them: none holds them all */
    size_t first, count;
    skm_rank_rows(n, skm_chunk_size(n, (int)o.k, (size_t)o.chunk_size), &first, &count);
    if (pc_stream_keep_rows(&in, first, count) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  }
  pc_run_input(&r, in.generated, n, d, in.loaded.header_line, in.load_s);
  const skm_params params = {(int)o.k, (size_t)o.chunk_size, (int)o.repetitions, (int)o.search_arity, c.seed, c.kernels};

  streamkm_run_ctx run = {src, &params, pc_xalloc(k, d * sizeof(float), "centres"), {0}};
  pc_run_repeat(&r, skm_phase_names, SKM_NPHASES, 0, streamkm_once, &run);
  const skm_result *res = &run.res;

  /* The second pass, for labels and for the cost the report gives. */
  const int assign = o.labels_path || report || c.check;
  size_t first_row, rows_here; /* across MPI ranks: this rank's rows are labelled here, gathered below */
  skm_rank_rows(n, res->chunk_size, &first_row, &rows_here);
  int *labels = o.labels_path || c.check ? pc_xalloc(rows_here, sizeof *labels, "labels") : NULL;
  double cost = 0.0, assign_s = 0.0;
  if (assign) {
    const double t0 = pc_now();
    if (skm_assign(src, run.centres, (int)k, res->chunk_size, labels, &cost) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    assign_s = pc_now() - t0;
  }
  if (labels && pc_dist_size() > 1) { /* rank 0 gathers every rank's labels, in row order */
    int *all = pc_dist_rank() == 0 ? pc_xalloc(n, sizeof *all, "all labels") : NULL;
    pc_dist_gather_ints(labels, rows_here, all);
    free(labels);
    labels = all;
  }

  if (c.check) {
    pc_check ck = {0};
    pc_check_nearest_centres(&ck, src, 0, n, run.centres, (int)k, labels);
    pc_check_kept_points(&ck, src, res->kept_row, res->kept_weight, res->kept, run.centres, (int)k);
    pc_run_check(&r, &ck);
  }
  if (pc_dist_rank() == 0) {
    if (o.centres_path && pc_write_matrix(o.centres_path, run.centres, k, d) != 0)
      pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    if (o.labels_path && pc_write_labels(o.labels_path, labels, n) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    if (o.kept_path && write_kept(o.kept_path, res) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  }
  pc_json *j = pc_run_report(&r);
  if (j) {
    pc_json_int(j, "k", (long long)k);
    pc_json_object(j, "params");
    pc_json_int(j, "seed", (long long)c.seed);
    pc_json_int(j, "chunk_size", (long long)res->chunk_size);
    pc_json_int(j, "repetitions", res->repetitions);
    pc_json_int(j, "draws_per_round", res->draws_per_round);
    pc_json_int(j, "search_arity", res->search_arity);
    pc_json_end_object(j);
    pc_json_int(j, "chunks", (long long)res->chunks);
    pc_json_int(j, "kept", (long long)res->kept);
    pc_json_num(j, "cost", cost);
    pc_run_timing_begin(&r);
    pc_json_num(j, "assign_s", assign_s);
    pc_run_timing_end(&r);
  }
  char what[256], tail[64] = "";
  snprintf(what, sizeof what, "k=%zu: %zu chunks of %zu, %d runs each, %zu points kept", k, res->chunks, res->chunk_size,
           res->repetitions, res->kept);
  if (assign) snprintf(tail, sizeof tail, "; cost %.10g", cost);
  pc_run_finish(&r, what, tail);
  skm_result_free(&run.res);
  free(labels);
  free(run.centres);
  pc_points_free(&in.loaded);
  return PC_EXIT_OK;
}

/*
 * dbscan_cmd.c - the `dbscan` subcommand: options, the parameters and results of its report,
 * labels. The run protocol (warm-up, repetitions, timing, summary) is run.c's.
 */
#include "check.h"
#include "cli.h"
#include "commands.h"
#include "data.h"
#include "output.h"
#include "dbscan.h"
#include "dist.h"
#include "device.h"
#include "par.h"
#include "report.h"
#include "run.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DB_TEXT_OF(value) #value
#define DB_TEXT(macro) DB_TEXT_OF(macro)

static const char usage[] =
    "usage: {prog} dbscan INPUT --eps E --min-pts M [options]\n"
    "DBSCAN with the result of sequential DBSCAN: core points have at least M points (themselves\n"
    "included) within distance E; clusters are numbered by their smallest point index; a border\n"
    "point joins the smallest cluster id among its core neighbours; noise is -1.\n"
    "INPUT: a text/CSV file, a .npy file, raw float32 with --shape N,D, or gen:uniform:... / gen:blobs:...\n"
    "  --eps E              neighbourhood radius (> 0)\n"
    "  --min-pts M          minimum neighbourhood size of a core point (>= 1)\n"
    "  --index auto|grid|projected|directory|none  neighbour search: a hashed grid of cell side E\n"
    "                       over every dimension (d <= 8), the same grid over the 3 dimensions of\n"
    "                       widest span (any d), CUDA-DClust*'s directory (quantile partitions of the\n"
    "                       first dimensions, sorted on the host), or every pair; auto (the default):\n"
    "                       the grid for d <= 3, the projected grid above (the report's index_used)\n"
    "  --levels L           directory: levels, one dimension each (default 3)\n"
    "  --fanout F           directory: partitions per node (default 16)\n"
    "  --method union-find|chains  core flags + lock-free union-find (default), or CUDA-DClust's chains\n"
    "  --chains C           chains: expansions run at once (default " DB_TEXT(DB_DEFAULT_CHAINS) ", at most n)\n"
    "  --seed-list S        chains: capacity of each chain's seed list (default 2048; overflow is refilled)\n"
    "  --labels FILE        write labels (.npy -> int32 array, else one per line)\n"
    "common options: --seed, --shape N,D, --threads T, --allow-host, --repeat R, --warmup W,\n"
    "  --report FILE (JSON: counts of clusters, core, border and noise points, working memory,\n"
    "  phase times), --quiet,\n"
    "  --kernels tuned|portable (DBSCAN has the portable loops only), --check (after the run, a sample of\n"
    "  points' neighbour counts, core flags and labels recomputed by brute force; exit 1 on a mismatch)\n";

enum { OPT_EPS = 2000, OPT_MIN_PTS, OPT_INDEX, OPT_LABELS, OPT_METHOD, OPT_CHAINS, OPT_SEED_LIST, OPT_LEVELS, OPT_FANOUT };
static const struct option own_options[] = {
    {"eps", required_argument, NULL, OPT_EPS}, {"min-pts", required_argument, NULL, OPT_MIN_PTS},
    {"index", required_argument, NULL, OPT_INDEX}, {"labels", required_argument, NULL, OPT_LABELS},
    {"method", required_argument, NULL, OPT_METHOD}, {"chains", required_argument, NULL, OPT_CHAINS},
    {"seed-list", required_argument, NULL, OPT_SEED_LIST}, {"levels", required_argument, NULL, OPT_LEVELS},
    {"fanout", required_argument, NULL, OPT_FANOUT},
    {NULL, 0, NULL, 0}};

typedef struct {
  double eps;
  long long min_pts;
  db_index_kind index;
  const char *labels_path;
  db_method method;
  int chains, seed_list, levels, fanout;
} dbscan_opts;

static void handle_option(int id, const char *arg, void *ctx) {
  dbscan_opts *o = ctx;
  switch (id) {
    case OPT_EPS:
      o->eps = pc_parse_real("--eps", arg, 0.0, 1e300);
      if (!(o->eps > 0.0)) pc_die(PC_EXIT_USAGE, "option --eps: must be > 0, got '%s'", arg);
      break;
    case OPT_MIN_PTS: o->min_pts = pc_parse_int("--min-pts", arg, 1, 0x7fffffff); break;
    case OPT_INDEX: {
      int k = 0;
      while (k <= DB_INDEX_AUTO && strcmp(arg, db_index_names[k]) != 0) k++;
      if (k > DB_INDEX_AUTO)
        pc_die(PC_EXIT_USAGE, "option --index: expected auto, grid, projected, directory or none, got '%s'", arg);
      o->index = (db_index_kind)k;
      break;
    }
    case OPT_LABELS: o->labels_path = arg; pc_io_output("--labels", arg); break;
    case OPT_METHOD:
      if (!strcmp(arg, "union-find")) o->method = DB_METHOD_UNION_FIND;
      else if (!strcmp(arg, "chains")) o->method = DB_METHOD_CHAINS;
      else pc_die(PC_EXIT_USAGE, "option --method: expected union-find or chains, got '%s'", arg);
      break;
    case OPT_CHAINS: o->chains = (int)pc_parse_int("--chains", arg, 1, 1 << 20); break;
    case OPT_SEED_LIST: o->seed_list = (int)pc_parse_int("--seed-list", arg, 1, 1 << 24); break;
    case OPT_LEVELS: o->levels = (int)pc_parse_int("--levels", arg, 1, DB_DIR_MAX_LEVELS); break;
    case OPT_FANOUT: o->fanout = (int)pc_parse_int("--fanout", arg, 2, 1 << 12); break;
  }
}

/* One run of the protocol: the whole clustering, its phases as dbscan_run times them. */
typedef struct {
  const pc_points *pts;
  const db_params *params;
  int *labels;
  unsigned char *is_core; /* --check: the core flags too (n bytes more from the device); else NULL */
  db_result res;
} dbscan_run_ctx;

static int dbscan_once(void *ctx, int run, pc_sample *s) {
  _Static_assert((int)DB_NPHASES <= (int)PC_RUN_MAX_PHASES, "the run protocol holds the phases");
  dbscan_run_ctx *c = ctx;
  (void)run;
  const pc_points *p = c->pts;
  const int rc = pc_dist_size() > 1 ? dbscan_run_ranks(p->x, p->n, p->d, c->params, c->labels, &c->res)
                                    : dbscan_run(p->x, p->n, p->d, c->params, c->labels, c->is_core, &c->res);
  if (rc != 0) return -1;
  s->total_s = c->res.total_s;
  memcpy(s->phase_s, c->res.phase_s, sizeof c->res.phase_s);
  return 0;
}

int pc_cmd_dbscan(int argc, char **argv) {
  dbscan_opts o = {0.0, 0, DB_INDEX_AUTO, NULL, DB_METHOD_UNION_FIND, DB_DEFAULT_CHAINS, DB_DEFAULT_SEED_LIST,
                   DB_DEFAULT_LEVELS, DB_DEFAULT_FANOUT};
  pc_common_opts c;
  pc_cli_parse("dbscan", argc, argv, own_options, "", handle_option, &o, usage, &c);
  if (o.eps == 0.0) pc_die(PC_EXIT_USAGE, "dbscan: --eps E is required");
  if (o.min_pts == 0) pc_die(PC_EXIT_USAGE, "dbscan: --min-pts M is required");
  pc_cli_across_ranks("dbscan", &c); /* MPI ranks (dist.h): rows by slices, rank 0 reports and writes */

  pc_run r;
  pc_points pts;
  pc_run_start(&r, "dbscan", &c);
  pc_run_load(&r, &pts);
  const size_t n = pts.n, d = pts.d;
  db_params params = {o.eps, (int)o.min_pts, o.index, o.method, o.chains, o.seed_list, o.levels, o.fanout};
  int overflows = 0; /* across MPI ranks a value in any rank's rows stops every rank */
  for (size_t e = 0; e < n * d && !overflows; e++)
    if (!isfinite((double)pts.x[e] / o.eps))
      overflows =
          pc_fail("dbscan: value %g divided by eps %g overflows the grid; rescale the data", (double)pts.x[e], o.eps);
  if (pc_dist_any_failed(overflows)) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());

  /* the labels come back from the GPU every run: page-locked memory (where the driver gives it)
   * takes them at the link's speed (docs/performance.md, 2026-11-25) */
  int *labels = pc_try_alloc_staging(n, sizeof(int), "labels");
  if (!labels) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  dbscan_run_ctx run = {&pts, &params, labels, c.check ? pc_xalloc(n, 1, "core flags") : NULL, {0}};
  pc_run_repeat(&r, db_phase_names, DB_NPHASES, 0, dbscan_once, &run);
  const db_result res = run.res;
  if (c.check) {
    pc_check ck = {0};
    pc_check_dbscan(&ck, pts.x, n, d, o.eps, (int)o.min_pts, run.labels, run.is_core);
    pc_run_check(&r, &ck);
  }
  int *labels_all = run.labels; /* across MPI ranks rank 0 gathers them in the global order */
  if (o.labels_path && pc_dist_size() > 1) {
    labels_all = pc_dist_rank() == 0 ? pc_xalloc(pts.total, sizeof *labels_all, "all labels") : NULL;
    pc_dist_gather_ints(run.labels, n, labels_all);
  }
  if (pc_dist_rank() == 0 && o.labels_path && pc_write_labels(o.labels_path, labels_all, pts.total) != 0)
    pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  if (labels_all != run.labels) free(labels_all);
  pc_json *j = pc_run_report(&r);
  if (j) {
    pc_json_object(j, "params");
    pc_json_num(j, "eps", o.eps);
    pc_json_int(j, "min_pts", o.min_pts);
    pc_json_str(j, "method", o.method == DB_METHOD_CHAINS ? "chains" : "union-find");
    if (o.method == DB_METHOD_CHAINS) {
      pc_json_int(j, "chains", o.chains);
      pc_json_int(j, "seed_list", o.seed_list);
      pc_json_int(j, "rounds", res.rounds);
    }
    pc_json_str(j, "index", db_index_names[params.index]);
    pc_json_str(j, "index_used", db_index_names[res.index]);
    if (params.index == DB_INDEX_DIRECTORY) {
      pc_json_int(j, "levels", o.levels);
      pc_json_int(j, "fanout", o.fanout);
    }
    pc_json_end_object(j);
    pc_json_int(j, "clusters", res.clusters);
    pc_json_int(j, "core", res.core);
    pc_json_int(j, "border", res.border);
    pc_json_int(j, "noise", res.noise);
    pc_json_int(j, "working_bytes", (long long)res.working_bytes);
    pc_json_num(j, "working_bytes_per_point", n ? (double)res.working_bytes / (double)n : 0.0);
    if (pc_dist_size() > 1) { /* rank 0's share of the last run: what its time went to */
      pc_json_object(j, "across_ranks");
      pc_json_num(j, "local_runs_s", res.ranks_local_s);
      pc_json_num(j, "exchanges_s", res.ranks_exchange_s);
      pc_json_num(j, "host_s", res.total_s - res.ranks_local_s - res.ranks_exchange_s);
      pc_json_int(j, "points_held", (long long)res.ranks_points_held);
      pc_json_end_object(j);
    }
    pc_run_timing_begin(&r);
    pc_run_timing_end(&r);
  }
  char what[256];
  snprintf(what, sizeof what, "eps=%g min_pts=%lld index=%s method=%s: %ld clusters, %ld core, %ld border, %ld noise", o.eps,
           o.min_pts, db_index_names[res.index], o.method == DB_METHOD_CHAINS ? "chains" : "union-find", res.clusters,
           res.core, res.border, res.noise);
  pc_run_finish(&r, what, NULL);
  pc_free_staging(run.labels);
  free(run.is_core);
  pc_points_free(&pts);
  return PC_EXIT_OK;
}

/*
 * dpc_cmd.c - the `dpc` subcommand: options, the points to insert, d_c, incremental batches with
 * an optional check against recomputation, labels, the decision graph (CSV and SVG), the
 * parameters and results of the report. The run protocol of the base run (warm-up, repetitions,
 * timing, summary) is run.c's.
 */
#include "check.h"
#include "cli.h"
#include "commands.h"
#include "data.h"
#include "output.h"
#include "device.h"
#include "dpc.h"
#include "par.h"
#include "report.h"
#include "run.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DPC_DEFAULT_PERCENT 2.0
#define DPC_DEFAULT_SAMPLES 100000
#define DPC_DEFAULT_BATCH 1000

static const char usage[] =
    "usage: {prog} dpc INPUT (--dc D | --dc-percent P) (--peaks K | --rho-min R --delta-min D) [options]\n"
    "Density peaks clustering (Rodriguez & Laio; GDPC): rho = points closer than d_c (itself included),\n"
    "delta = distance to the nearest denser point (denser: larger rho, ties to the lower index;\n"
    "distance ties to the lower index); peaks by gamma = rho * delta; every other point takes the\n"
    "cluster of the first peak on its chain of nearest denser points. Every variant and index gives\n"
    "the same rho, delta, dependent points and labels.\n"
    "INPUT: a text/CSV file, a .npy file, raw float32 with --shape N,D, or gen:uniform:... / gen:blobs:...\n"
    "  --dc D               cut-off distance (> 0)\n"
    "  --dc-percent P       d_c = the P% quantile of the pairwise distances (default 2, the original\n"
    "                       paper's 1-2% rule), estimated from --dc-samples pairs (default 100000; all\n"
    "                       pairs when there are fewer) drawn with --seed, on the base points\n"
    "  --peaks K            the K points of largest gamma are the peaks (the absolute peak first);\n"
    "                       K <= the points of INPUT (of the base with --base); once --delete leaves\n"
    "                       fewer than K points, every point left is a peak\n"
    "  --rho-min R, --delta-min D  peaks: every point with rho >= R and delta >= D (default 0 each)\n"
    "  --index vptree|none  GDPC's VP-tree (default) or all pairs (CUDA-DP)\n"
    "  --rho-search point|leaf  VP-tree rho: each point walks the tree (default), or one team per\n"
    "                       leaf shares the leaves its points can reach (GDPC 4.1); same rho\n"
    "  --delta-search point|leaf  VP-tree delta: each point searches within d_c (default), or one\n"
    "                       team per leaf searches those leaves, densest first (GDPC 4.2); both\n"
    "                       search the whole tree when no denser point is closer than d_c; same delta\n"
    "  --labels FILE        cluster of every point (.npy -> int32, else one per line)\n"
    "  --decision-graph FILE  CSV: index,rho,delta,dependent,label,row (dependent -1: the absolute\n"
    "                       peak; row: the point's input row, which differs after --delete)\n"
    "  --plot FILE          the decision graph as an SVG scatter plot (peaks in red)\n"
    "incremental (GDPC section 5): the base points first, then the rest in batches:\n"
    "  --base N             the first N rows of INPUT are the base; the others are inserted\n"
    "  --insert SOURCE      more points to insert (a file or gen:SPEC with INPUT's dimension)\n"
    "  --batch B            points per batch (default 1000)\n"
    "  --delete K           then delete K points (chosen with --seed) in batches of B; the outputs\n"
    "                       list the remaining points, in order, renumbered\n"
    "  --rho-update incidental|separate  old points' rho: atomic updates from the new (deleted)\n"
    "                       points (default) or a pass over the old points\n"
    "  --verify             after every batch, recompute from scratch and compare (exit 1 if any\n"
    "                       value differs); the report gets the recomputation times\n"
    "common options: --seed, --shape N,D, --threads T, --allow-host, --repeat R, --warmup W (runs\n"
    "  without insertions only), --report FILE (JSON: parameters, clusters, distance computations,\n"
    "  phase times, per-batch times), --quiet, --kernels tuned|portable (density peaks has the\n"
    "  portable loops only), --check (after the run, rho, delta and the dependent point of a sample\n"
    "  of the points recomputed by brute force; exit 1 on a mismatch)\n";

enum {
  OPT_DC = 2000, OPT_DC_PERCENT, OPT_DC_SAMPLES, OPT_PEAKS, OPT_RHO_MIN, OPT_DELTA_MIN, OPT_INDEX, OPT_LABELS,
  OPT_GRAPH, OPT_PLOT, OPT_BASE, OPT_INSERT, OPT_BATCH, OPT_RHO_UPDATE, OPT_VERIFY, OPT_DELETE,
  OPT_RHO_SEARCH, OPT_DELTA_SEARCH
};
static const struct option own_options[] = {
    {"dc", required_argument, NULL, OPT_DC}, {"dc-percent", required_argument, NULL, OPT_DC_PERCENT},
    {"dc-samples", required_argument, NULL, OPT_DC_SAMPLES}, {"peaks", required_argument, NULL, OPT_PEAKS},
    {"rho-min", required_argument, NULL, OPT_RHO_MIN}, {"delta-min", required_argument, NULL, OPT_DELTA_MIN},
    {"index", required_argument, NULL, OPT_INDEX}, {"labels", required_argument, NULL, OPT_LABELS},
    {"decision-graph", required_argument, NULL, OPT_GRAPH}, {"plot", required_argument, NULL, OPT_PLOT},
    {"base", required_argument, NULL, OPT_BASE}, {"insert", required_argument, NULL, OPT_INSERT},
    {"batch", required_argument, NULL, OPT_BATCH}, {"rho-update", required_argument, NULL, OPT_RHO_UPDATE},
    {"verify", no_argument, NULL, OPT_VERIFY}, {"delete", required_argument, NULL, OPT_DELETE},
    {"rho-search", required_argument, NULL, OPT_RHO_SEARCH}, {"delta-search", required_argument, NULL, OPT_DELTA_SEARCH},
    {NULL, 0, NULL, 0}};

typedef struct {
  double dc, percent, rho_min, delta_min;
  int have_dc, have_percent, have_thresholds;
  long long samples, peaks, base, batch, delete_count;
  dpc_index_kind index;
  dpc_rho_update rho_update;
  dpc_search rho_search, delta_search;
  const char *labels_path, *graph_path, *plot_path, *insert;
  int verify;
} dpc_opts;

static dpc_search parse_search(const char *opt, const char *arg) {
  if (!strcmp(arg, "point")) return DPC_SEARCH_POINT;
  if (!strcmp(arg, "leaf")) return DPC_SEARCH_LEAF;
  pc_die(PC_EXIT_USAGE, "option %s: expected point or leaf, got '%s'", opt, arg);
}

static void handle_option(int id, const char *arg, void *ctx) {
  dpc_opts *o = ctx;
  switch (id) {
    case OPT_DC:
      o->dc = pc_parse_real("--dc", arg, -1e300, 1e300);
      if (!(o->dc > 0.0)) pc_die(PC_EXIT_USAGE, "option --dc: must be > 0, got '%s'", arg);
      o->have_dc = 1;
      break;
    case OPT_DC_PERCENT:
      o->percent = pc_parse_real("--dc-percent", arg, -1e300, 1e300);
      if (!(o->percent > 0.0 && o->percent <= 100.0)) pc_die(PC_EXIT_USAGE, "option --dc-percent: must be in (0, 100], got '%s'", arg);
      o->have_percent = 1;
      break;
    case OPT_DC_SAMPLES: o->samples = pc_parse_int("--dc-samples", arg, 1, 1LL << 28); break;
    case OPT_PEAKS: o->peaks = pc_parse_int("--peaks", arg, 1, 0x7fffffff); break;
    case OPT_RHO_MIN:
      o->rho_min = pc_parse_real("--rho-min", arg, 0.0, 1e300);
      o->have_thresholds = 1;
      break;
    case OPT_DELTA_MIN:
      o->delta_min = pc_parse_real("--delta-min", arg, 0.0, 1e300);
      o->have_thresholds = 1;
      break;
    case OPT_INDEX:
      if (!strcmp(arg, "vptree")) o->index = DPC_INDEX_VPTREE;
      else if (!strcmp(arg, "none")) o->index = DPC_INDEX_NONE;
      else pc_die(PC_EXIT_USAGE, "option --index: expected vptree or none, got '%s'", arg);
      break;
    case OPT_LABELS: o->labels_path = arg; pc_io_output("--labels", arg); break;
    case OPT_GRAPH: o->graph_path = arg; pc_io_output("--decision-graph", arg); break;
    case OPT_PLOT: o->plot_path = arg; pc_io_output("--plot", arg); break;
    case OPT_BASE: o->base = pc_parse_int("--base", arg, 1, 0x7fffffff); break;
    case OPT_INSERT:
      o->insert = arg;
      if (strncmp(arg, "gen:", 4) != 0) pc_io_input("--insert", arg);
      break;
    case OPT_BATCH: o->batch = pc_parse_int("--batch", arg, 1, 0x7fffffff); break;
    case OPT_RHO_UPDATE:
      if (!strcmp(arg, "incidental")) o->rho_update = DPC_RHO_INCIDENTAL;
      else if (!strcmp(arg, "separate")) o->rho_update = DPC_RHO_SEPARATE;
      else pc_die(PC_EXIT_USAGE, "option --rho-update: expected incidental or separate, got '%s'", arg);
      break;
    case OPT_RHO_SEARCH: o->rho_search = parse_search("--rho-search", arg); break;
    case OPT_DELTA_SEARCH: o->delta_search = parse_search("--delta-search", arg); break;
    case OPT_VERIFY: o->verify = 1; break;
    case OPT_DELETE: o->delete_count = pc_parse_int("--delete", arg, 1, 0x7fffffff); break;
  }
}

/* The decision graph as CSV text. */
static void write_graph(const char *path, size_t n, const int *rho, const double *delta, const int *dep,
                        const int *labels, const int *row) {
  size_t cap = 64 + n * 84, len = 0;
  char *buf = pc_xalloc(cap, 1, "decision graph");
  len += (size_t)snprintf(buf, cap, "index,rho,delta,dependent,label,row\n");
  for (size_t i = 0; i < n; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%zu,%d,%.17g,%d,%d,%d\n", i, rho[i], delta[i], dep[i], labels[i],
                            row ? row[i] : (int)i);
  if (pc_write_text_file(path, buf, len) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  free(buf);
}

/* The decision graph as an SVG scatter plot: rho across, delta up, peaks (label of their own
 * index... the points whose dependent is another cluster's) in red. */
static void write_plot(const char *path, size_t n, const int *rho, const double *delta, const int *dep,
                       const int *labels) {
  const double w = 640, hgt = 480, m = 50;
  double rmax = 1, dmax = 0;
  for (size_t i = 0; i < n; i++) rmax = fmax(rmax, rho[i]), dmax = fmax(dmax, delta[i]);
  if (!(dmax > 0)) dmax = 1;
  size_t cap = 1024 + n * 96, len = 0;
  char *buf = pc_xalloc(cap, 1, "decision graph plot");
  len += (size_t)snprintf(buf + len, cap - len,
                          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\">\n"
                          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                          "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n"
                          "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n"
                          "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">rho (max %g)</text>\n"
                          "<text x=\"15\" y=\"%g\" transform=\"rotate(-90 15 %g)\" text-anchor=\"middle\">delta (max %.4g)</text>\n",
                          w, hgt, m, hgt - m, w - 10, hgt - m, m, hgt - m, m, 10.0, w / 2, hgt - 15, rmax, hgt / 2, hgt / 2, dmax);
  for (size_t i = 0; i < n; i++) {
    const int peak = dep[i] < 0 || labels[dep[i]] != labels[i];
    const double px = m + (w - m - 10) * rho[i] / rmax, py = hgt - m - (hgt - m - 10) * delta[i] / dmax;
    len += (size_t)snprintf(buf + len, cap - len, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"/>\n", px, py,
                            peak ? 4 : 2, peak ? "red" : "steelblue");
  }
  len += (size_t)snprintf(buf + len, cap - len, "</svg>\n");
  if (pc_write_text_file(path, buf, len) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  free(buf);
}

static void json_result(pc_json *j, const dpc_result *r) {
  pc_json_int(j, "clusters", r->clusters);
  pc_json_int(j, "distance_computations", r->distances);
  pc_json_int(j, "global_searches", r->global_searches);
  pc_json_int(j, "tree_height", r->height);
  pc_json_int(j, "tree_leaves", r->leaves);
}

/* One run of the protocol: the base points clustered from scratch; the last run's state stays
 * open for the incremental batches. */
typedef struct {
  const pc_points *pts;
  size_t n0, capacity;
  const dpc_params *params;
  dpc_state *st;
  dpc_result res;
} dpc_run_ctx;

static int dpc_once(void *ctx, int run, pc_sample *s) {
  _Static_assert((int)DPC_NPHASES <= (int)PC_RUN_MAX_PHASES, "the run protocol holds the phases");
  dpc_run_ctx *c = ctx;
  (void)run;
  if (c->st) dpc_close(c->st);
  c->st = dpc_open(c->pts->x, c->n0, c->capacity, c->pts->d, c->params, &c->res);
  if (!c->st) return -1;
  s->total_s = c->res.total_s;
  memcpy(s->phase_s, c->res.phase_s, sizeof c->res.phase_s);
  return 0;
}

int pc_cmd_dpc(int argc, char **argv) {
  dpc_opts o = {0};
  o.samples = DPC_DEFAULT_SAMPLES;
  o.batch = DPC_DEFAULT_BATCH;
  o.index = DPC_INDEX_VPTREE;
  o.rho_update = DPC_RHO_INCIDENTAL;
  o.rho_search = o.delta_search = DPC_SEARCH_POINT;
  o.percent = DPC_DEFAULT_PERCENT;
  pc_common_opts c;
  pc_cli_parse("dpc", argc, argv, own_options, "", handle_option, &o, usage, &c);
  if (o.have_dc && o.have_percent) pc_die(PC_EXIT_USAGE, "dpc: give --dc or --dc-percent, not both");
  if (o.peaks && o.have_thresholds) pc_die(PC_EXIT_USAGE, "dpc: give --peaks or --rho-min/--delta-min, not both");
  if (!o.peaks && !o.have_thresholds) pc_die(PC_EXIT_USAGE, "dpc: choose the peaks with --peaks K or --rho-min R --delta-min D");
  const int incremental = o.base > 0 || o.insert || o.delete_count;
  if (incremental && (c.repeat > 1 || c.warmup > 0))
    pc_die(PC_EXIT_USAGE, "dpc: --repeat and --warmup apply to runs without --base, --insert or --delete");

  pc_run r;
  pc_points pts;
  pc_run_start(&r, "dpc", &c);
  pc_run_load(&r, &pts);
  const size_t n_input = pts.n, d = pts.d;
  size_t n = n_input, insert_header = 0; /* the --insert file's skipped header line */
  if (o.base > 0 && (size_t)o.base > n) pc_die(PC_EXIT_USAGE, "dpc: --base %lld is more than the %zu points of INPUT", o.base, n);
  if (o.insert) { /* append the points to insert */
    pc_common_opts ic = c;
    ic.input = o.insert;
    pc_points more;
    double more_s;
    int more_gen;
    pc_load_input(&ic, &more, &more_s, &more_gen);
    if (more.d != d) pc_die(PC_EXIT_USAGE, "dpc: --insert %s has %zu columns, INPUT has %zu", o.insert, more.d, d);
    if (n + more.n > (size_t)PC_MAX_POINTS) pc_die(PC_EXIT_USAGE, "dpc: more than %d points in all", PC_MAX_POINTS);
    float *all = pc_try_alloc((n + more.n) * d, sizeof *all, "points");
    if (!all) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    memcpy(all, pts.x, n * d * sizeof *all);
    memcpy(all + n * d, more.x, more.n * d * sizeof *all);
    free(pts.x);
    pts.x = all;
    pts.n = n + more.n;
    n = pts.n;
    insert_header = more.header_line;
    pc_points_free(&more);
    r.load_s += more_s;
  }
  const size_t n0 = o.base > 0 ? (size_t)o.base : n_input; /* the base points */
  if (o.delete_count && (size_t)o.delete_count >= n)
    pc_die(PC_EXIT_USAGE, "dpc: --delete %lld would leave none of the %zu points", o.delete_count, n);
  if (o.peaks && (size_t)o.peaks > n0)
    pc_die(PC_EXIT_USAGE, "dpc: --peaks %lld asks for more clusters than the %zu points%s", o.peaks, n0,
           o.base > 0 ? " of the base (--base)" : "");

  double dc = o.dc, dc_s = 0.0;
  if (!o.have_dc) {
    const double t0 = pc_now();
    dc = dpc_dc_percentile(pts.x, n0, d, o.percent, (size_t)o.samples, c.seed);
    if (!(dc > 0.0)) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    dc_s = pc_now() - t0;
  }
  const dpc_params params = {dc, o.index, (long)o.peaks, o.rho_min, o.delta_min, c.seed, o.rho_update, o.rho_search, o.delta_search};

  /* the base run: repeated R times after W warm-ups when nothing is inserted */
  dpc_run_ctx run = {&pts, n0, n, &params, NULL, {0}};
  pc_run_repeat(&r, dpc_phase_names, DPC_NPHASES, 0, dpc_once, &run);
  dpc_state *st = run.st;
  const dpc_result base_res = run.res;

  /* incremental batches: insertions, then deletions */
  const size_t ndel = (size_t)o.delete_count;
  const size_t nins = (n - n0 + (size_t)o.batch - 1) / (size_t)o.batch;
  const size_t nbatches = nins + (ndel + (size_t)o.batch - 1) / (size_t)o.batch;
  size_t *del_sz = NULL;
  int *del = NULL;
  if (ndel) {
    del_sz = pc_xalloc(ndel, sizeof *del_sz, "deletions");
    del = pc_xalloc(ndel, sizeof *del, "deletions");
    if (pc_sample_distinct(c.seed, n, ndel, del_sz) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    for (size_t k = 0; k < ndel; k++) del[k] = (int)del_sz[k];
  }
  dpc_result *bres = pc_xcalloc(nbatches ? nbatches : 1, sizeof *bres, "batch results");
  double *restart_s = pc_xcalloc(nbatches ? nbatches : 1, sizeof *restart_s, "restart times");
  size_t *batch_n = pc_xcalloc(nbatches ? nbatches : 1, sizeof *batch_n, "batch sizes");
  int *v_rho = NULL, *v_dep = NULL, *v_lab = NULL, *w_rho = NULL, *w_dep = NULL, *w_lab = NULL, *renum = NULL;
  double *v_delta = NULL, *w_delta = NULL;
  float *copy = NULL;
  unsigned char *alive = pc_xalloc(n, 1, "deletion flags");
  if (o.verify && nbatches) {
    v_rho = pc_xalloc(n, sizeof(int), "check"), v_dep = pc_xalloc(n, sizeof(int), "check"), v_lab = pc_xalloc(n, sizeof(int), "check");
    w_rho = pc_xalloc(n, sizeof(int), "check"), w_dep = pc_xalloc(n, sizeof(int), "check"), w_lab = pc_xalloc(n, sizeof(int), "check");
    v_delta = pc_xalloc(n, sizeof(double), "check"), w_delta = pc_xalloc(n, sizeof(double), "check");
    renum = pc_xalloc(n, sizeof(int), "check");
    copy = pc_xalloc(n * d, sizeof(float), "check points");
  }
  double inc_total = 0.0;
  size_t at = n0, deleted = 0;
  for (size_t b = 0; b < nbatches; b++) {
    if (b < nins) {
      const size_t count = n - at < (size_t)o.batch ? n - at : (size_t)o.batch;
      if (dpc_insert(st, count, &bres[b]) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
      at += count;
    } else {
      const size_t count = ndel - deleted < (size_t)o.batch ? ndel - deleted : (size_t)o.batch;
      if (dpc_delete(st, del + deleted, count, &bres[b]) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
      deleted += count;
    }
    const size_t live = dpc_alive(st, alive);
    batch_n[b] = live;
    inc_total += bres[b].total_s;
    if (o.verify) { /* the remaining points, renumbered in order, from scratch */
      size_t m = 0;
      for (size_t i = 0; i < at; i++) {
        renum[i] = alive[i] ? (int)m : -1;
        if (alive[i]) memcpy(copy + m++ * d, pts.x + i * d, d * sizeof(float));
      }
      dpc_result fr;
      dpc_state *fresh = dpc_open(copy, m, m, d, &params, &fr);
      if (!fresh) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
      restart_s[b] = fr.total_s;
      dpc_results(fresh, v_rho, v_delta, v_dep, v_lab);
      dpc_close(fresh);
      dpc_results(st, w_rho, w_delta, w_dep, w_lab);
      for (size_t i = 0; i < at; i++) {
        if (!alive[i]) continue;
        const size_t fresh_i = (size_t)renum[i]; /* i's index in the recomputation */
        const int wd = w_dep[i] < 0 ? -1 : renum[w_dep[i]];
        if (v_rho[fresh_i] != w_rho[i] || v_delta[fresh_i] != w_delta[i] || v_dep[fresh_i] != wd || v_lab[fresh_i] != w_lab[i])
          pc_die(PC_EXIT_FAILURE,
                 "dpc --verify: batch %zu (%zu points): point %zu differs from recomputation: rho %d/%d delta %.17g/%.17g "
                 "dependent %d/%d label %d/%d (incremental/scratch)",
                 b + 1, m, fresh_i, w_rho[i], v_rho[fresh_i], w_delta[i], v_delta[fresh_i], wd, v_dep[fresh_i], w_lab[i],
                 v_lab[fresh_i]);
      }
    }
  }
  const dpc_result last = nbatches ? bres[nbatches - 1] : base_res;

  int *rho = pc_xalloc(n, sizeof *rho, "rho"), *dep = pc_xalloc(n, sizeof *dep, "dependent points");
  int *labels = pc_xalloc(n, sizeof *labels, "labels");
  double *delta = pc_xalloc(n, sizeof *delta, "delta");
  dpc_results(st, rho, delta, dep, labels);
  const size_t n_out = dpc_alive(st, alive);
  dpc_close(st);
  int *row = NULL;
  if (n_out < n) { /* deletions: the remaining points, in order, renumbered */
    row = pc_xalloc(n_out, sizeof *row, "rows");
    int *map = pc_xalloc(n, sizeof *map, "renumbering");
    size_t m = 0;
    for (size_t i = 0; i < n; i++) map[i] = alive[i] ? (int)m++ : -1;
    m = 0;
    for (size_t i = 0; i < n; i++) {
      if (!alive[i]) continue;
      rho[m] = rho[i], delta[m] = delta[i], labels[m] = labels[i];
      dep[m] = dep[i] < 0 ? -1 : map[dep[i]];
      row[m] = (int)i;
      m++;
    }
    free(map);
  }
  if (c.check) { /* the remaining points, in order: rows row[] of the input (all of them without deletions) */
    pc_check ck = {0};
    pc_check_dpc(&ck, pts.x, row, n_out, d, dc, rho, delta, dep);
    pc_run_check(&r, &ck);
  }
  if (o.labels_path && pc_write_labels(o.labels_path, labels, n_out) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  if (o.graph_path) write_graph(o.graph_path, n_out, rho, delta, dep, labels, row);
  if (o.plot_path) write_plot(o.plot_path, n_out, rho, delta, dep, labels);
  r.n = n_out;
  pc_json *j = pc_run_report(&r);
  if (j) {
    if (o.insert) pc_json_header_skipped(j, "insert_header_skipped", insert_header);
    pc_json_object(j, "params");
    pc_json_num(j, "dc", dc);
    if (!o.have_dc) {
      pc_json_num(j, "dc_percent", o.percent);
      pc_json_int(j, "dc_samples", o.samples);
    }
    pc_json_str(j, "index", dpc_index_names[o.index]);
    pc_json_str(j, "rho_search", dpc_search_names[o.rho_search]);
    pc_json_str(j, "delta_search", dpc_search_names[o.delta_search]);
    if (o.peaks) pc_json_int(j, "peaks", o.peaks);
    else {
      pc_json_num(j, "rho_min", o.rho_min);
      pc_json_num(j, "delta_min", o.delta_min);
    }
    pc_json_int(j, "seed", (long long)c.seed);
    if (incremental) {
      pc_json_int(j, "base", (long long)n0);
      pc_json_int(j, "batch", o.batch);
      pc_json_str(j, "rho_update", o.rho_update == DPC_RHO_INCIDENTAL ? "incidental" : "separate");
      pc_json_bool(j, "verify", o.verify);
      pc_json_int(j, "deleted", o.delete_count);
    }
    pc_json_end_object(j);
    json_result(j, &last);
    double rho_sum = 0.0;
    for (size_t i = 0; i < n_out; i++) rho_sum += rho[i];
    pc_json_num(j, "rho_mean", rho_sum / (double)n_out);
    pc_json_int(j, "base_distance_computations", base_res.distances);
    pc_json_num(j, "all_pairs_distance_computations", 2.0 * (double)n0 * (double)n0);
    pc_run_timing_begin(&r);
    pc_json_num(j, "dc_estimate_s", dc_s);
    pc_run_timing_end(&r);
    if (incremental) {
      pc_json_array(j, "batches");
      for (size_t b = 0; b < nbatches; b++) {
        pc_json_object(j, NULL);
        pc_json_str(j, "op", b < nins ? "insert" : "delete");
        pc_json_int(j, "n", (long long)batch_n[b]);
        pc_json_num(j, "total_s", bres[b].total_s);
        for (int p = 0; p < DPC_NPHASES; p++) pc_json_num(j, dpc_phase_names[p], bres[b].phase_s[p]);
        pc_json_int(j, "distance_computations", bres[b].distances);
        pc_json_int(j, "clusters", bres[b].clusters);
        pc_json_int(j, "leaf_splits", bres[b].splits);
        pc_json_int(j, "rebuilds", bres[b].rebuilds);
        if (o.verify) pc_json_num(j, "restart_s", restart_s[b]);
        pc_json_end_object(j);
      }
      pc_json_end_array(j);
      pc_json_num(j, "incremental_total_s", inc_total);
    }
  }
  char what[320], base[48] = "", tail[256] = "";
  if (incremental) snprintf(base, sizeof base, "base of %zu points, ", n0);
  snprintf(what, sizeof what, "%sdc=%g index=%s: %ld clusters, %lld distances%s", base, dc, dpc_index_names[o.index],
           base_res.clusters, base_res.distances, pc_header_note("--insert", insert_header));
  if (nbatches)
    snprintf(tail, sizeof tail, "; %zu batches of %lld to n=%zu: %.4g s (%.4g ms per batch), %ld clusters%s", nbatches, o.batch,
             n_out, inc_total, 1e3 * inc_total / (double)nbatches, last.clusters, o.verify ? ", identical to recomputation" : "");
  pc_run_finish(&r, what, tail);
  free(row), free(del_sz), free(del), free(batch_n), free(alive), free(renum);
  free(bres), free(restart_s), free(rho), free(dep), free(labels), free(delta);
  free(v_rho), free(v_dep), free(v_lab), free(w_rho), free(w_dep), free(w_lab), free(v_delta), free(w_delta), free(copy);
  pc_points_free(&pts);
  return PC_EXIT_OK;
}

/* run.c - see run.h. */
#include "run.h"
#include "dist.h"
#include "output.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pc_run_start(pc_run *r, const char *name, const pc_common_opts *c) {
  memset(r, 0, sizeof *r);
  r->subcommand = name;
  r->opts = c;
  r->input = c->input;
  pc_device_init(c->allow_host, c->threads, &r->dev);
}

void pc_run_load(pc_run *r, pc_points *points) {
  int generated;
  double seconds;
  pc_load_input(r->opts, points, &seconds, &generated);
  pc_run_input(r, generated, points->total, points->d, points->header_line, seconds);
}

void pc_run_input(pc_run *r, int generated, size_t n, size_t d, size_t header_line, double load_s) {
  r->generated = generated;
  r->n = n;
  r->d = d;
  r->header_line = header_line;
  r->load_s = load_s;
}

void pc_run_repeat(pc_run *r, const char *const *names, int nphases, int has_iterations,
                   int (*once)(void *ctx, int run, pc_sample *s), void *ctx) {
  if (nphases > PC_RUN_MAX_PHASES) pc_die(PC_EXIT_USAGE, "internal: %d phases, at most %d", nphases, PC_RUN_MAX_PHASES);
  const int repeat = r->opts->repeat;
  r->phase_names = names;
  r->nphases = nphases;
  r->has_iterations = has_iterations;
  r->total_s = pc_xalloc((size_t)repeat, sizeof *r->total_s, "run times");
  r->iterations = pc_xcalloc((size_t)repeat, sizeof *r->iterations, "run iterations");
  for (int p = 0; p < nphases; p++) r->phase_s[p] = pc_xalloc((size_t)repeat, sizeof(double), "phase times");
  for (int run = -r->opts->warmup; run < repeat; run++) {
    pc_sample s;
    memset(&s, 0, sizeof s);
    if (once(ctx, run, &s) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    if (run < 0) continue;
    r->total_s[run] = s.total_s;
    r->iterations[run] = s.iterations;
    for (int p = 0; p < nphases; p++) r->phase_s[p][run] = s.phase_s[p];
  }
  r->total = pc_stats_of(r->total_s, (size_t)repeat);
}

void pc_run_check(pc_run *r, const pc_check *ck) {
  pc_check_end(ck, r->subcommand);
  r->check = *ck;
  r->checked = 1;
}

pc_json *pc_run_report(pc_run *r) {
  if (!r->opts->report) return NULL;
  if (!r->reporting) {
    pc_json_run_header(&r->json, r->subcommand, &r->dev, r->input, r->generated, r->n, r->d, r->header_line);
    pc_json_str(&r->json, "kernels", pc_kernels_names[r->opts->kernels]);
    pc_json_int(&r->json, "mpi_ranks", pc_dist_size()); /* 1: one process (dist.h) */
    if (r->checked) {
      pc_json_object(&r->json, "check");
      pc_json_bool(&r->json, "passed", 1);
      pc_json_str(&r->json, "items", r->check.items);
      pc_json_int(&r->json, "sampled", (long long)r->check.sampled);
      pc_json_int(&r->json, "ties", (long long)r->check.ties);
      pc_json_end_object(&r->json);
    }
    r->reporting = 1;
  }
  return &r->json;
}

void pc_run_timing_begin(pc_run *r) {
  pc_json *j = pc_run_report(r);
  if (!j) return;
  pc_json_timing_begin(j, r->opts->repeat, r->opts->warmup, r->load_s);
  pc_json_stats(j, "total_s", r->total);
  pc_json_phase_stats(j, r->phase_names, r->nphases, r->phase_s, r->opts->repeat);
}

void pc_run_timing_end(pc_run *r) {
  pc_json *j = pc_run_report(r);
  if (!j) return;
  pc_json_end_object(j);
  pc_json_runs(j, r->phase_names, r->nphases, r->phase_s, r->total_s, r->has_iterations ? r->iterations : NULL,
               r->opts->repeat);
}

void pc_run_finish(pc_run *r, const char *what, const char *tail) {
  if (r->reporting) pc_json_finish(&r->json, r->opts->report);
  if (pc_outputs_commit() != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  char checked[128] = "", ties[64] = "", ranks[32] = "";
  if (pc_dist_size() > 1) snprintf(ranks, sizeof ranks, ", %d MPI ranks", pc_dist_size());
  if (r->check.ties) snprintf(ties, sizeof ties, ", %zu near ties within float rounding", r->check.ties);
  if (r->checked)
    snprintf(checked, sizeof checked, "; check passed: %zu %s sampled%s", r->check.sampled, r->check.items, ties);
  if (!r->opts->quiet)
    fprintf(stderr, "%s [%s, %s%s]: n=%zu d=%zu%s %s; run %.4g s median of %d%s%s\n", r->subcommand, pc_build_variant(),
            r->dev.where, ranks, r->n, r->d, pc_header_note(NULL, r->header_line), what, r->total.median, r->opts->repeat,
            tail ? tail : "", checked);
  for (int p = 0; p < r->nphases; p++) free(r->phase_s[p]);
  free(r->total_s);
  free(r->iterations);
  memset(r, 0, sizeof *r);
}

/*
 * run.h - the run protocol every subcommand shares (the driver of BabelStream and miniBUDE):
 * the device, the input, warm-up runs and timed repetitions, their statistics, the report's
 * header and timing block, the commit of the outputs and the one-line summary. A command fills
 * in its parameters and results only:
 *
 *   pc_run r;
 *   pc_run_start(&r, "dbscan", &common);             device up (or the program ends: no GPU)
 *   pc_run_load(&r, &points);                        INPUT read or generated
 *   pc_run_repeat(&r, names, NPHASES, 0, once, &ctx); W untimed, then R timed calls of once()
 *   if (r.opts->check) { pc_check ck = {0}; pc_check_...(&ck, ...); pc_run_check(&r, &ck); }
 *   pc_json *j = pc_run_report(&r);                  NULL without --report
 *   if (j) { ...parameters, results...; pc_run_timing_begin(&r); ...; pc_run_timing_end(&r); }
 *   pc_run_finish(&r, what, tail);                   report written, outputs committed, summary
 *
 * Everything here ends the program with a one-line message on failure (the command-line layer).
 */
#ifndef PC_RUN_H
#define PC_RUN_H

#include "check.h"
#include "cli.h"
#include "report.h"

enum { PC_RUN_MAX_PHASES = 8 };

/* What one call of a command's `once` measured. */
typedef struct {
  double phase_s[PC_RUN_MAX_PHASES];
  double total_s;
  int iterations; /* the algorithm's iterations (commands whose algorithm iterates) */
} pc_sample;

/* One run of a subcommand. The fields are read-only for commands, but n (the points the report
 * and the summary name) may be changed by a command whose point count changes (dpc --delete). */
typedef struct {
  const char *subcommand;
  const pc_common_opts *opts;
  pc_device_info dev;
  const char *input;
  int generated;
  size_t n, d, header_line;
  double load_s;
  const char *const *phase_names;
  int nphases, has_iterations;
  double *total_s;                     /* [repeat] */
  double *phase_s[PC_RUN_MAX_PHASES];  /* [repeat] each */
  int *iterations;                     /* [repeat] */
  pc_stats total;
  pc_json json;
  int reporting;
  int checked;                         /* --check passed: */
  pc_check check;                      /* what it compared */
} pc_run;

/* Brings up the device for subcommand `name` run with the common options *c (pc_device_init:
 * the gpu variant without a usable GPU and without --allow-host ends the program). */
void pc_run_start(pc_run *r, const char *name, const pc_common_opts *c);

/* Reads or generates INPUT into *points (pc_load_input) and records it. */
void pc_run_load(pc_run *r, pc_points *points);

/* Records an input the command opened itself (a stream): its size, whether it was generated,
 * the skipped header line (0: none) and the reading time. */
void pc_run_input(pc_run *r, int generated, size_t n, size_t d, size_t header_line, double load_s);

/* The protocol: --warmup untimed calls of once(ctx, run, s) with run < 0, then --repeat timed
 * ones, run = 0, 1, ...; once fills *s (the times of the phases names[0..nphases), the total, and
 * with has_iterations the iterations) and returns 0, or -1 with a pc_fail message, which ends
 * the program. The totals' median, min and max are in r->total afterwards. */
void pc_run_repeat(pc_run *r, const char *const *names, int nphases, int has_iterations,
                   int (*once)(void *ctx, int run, pc_sample *s), void *ctx);

/* The end of --check (check.h): a mismatch ends the program (status 1, no output committed);
 * otherwise the report gets a "check" object and the summary says what was compared. */
void pc_run_check(pc_run *r, const pc_check *ck);

/* The JSON report (with --report), opened with the run header (program, subcommand, build,
 * device, input, n, d, header_skipped, the --kernels asked for, and with --check what it compared): the command adds its parameters
 * and results to it. NULL without --report. */
pc_json *pc_run_report(pc_run *r);

/* The report's "timing" object: repeat, warmup, load_s, total_s and phases_s (median, min, max
 * over the timed runs). The command may add keys of its own between the two calls;
 * pc_run_timing_end closes it and adds "runs" (every timed run's total and phases). */
void pc_run_timing_begin(pc_run *r);
void pc_run_timing_end(pc_run *r);

/* Writes the report, commits the outputs (output.h), prints the summary on stderr unless
 * --quiet: "<subcommand> [<variant>, <where>]: n=N d=D<header note> <what>; run T s median of
 * R<tail>[; check passed: ...]" (tail may be NULL), and releases what r holds. */
void pc_run_finish(pc_run *r, const char *what, const char *tail);

#endif

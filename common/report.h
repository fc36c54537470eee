/*
 * report.h - a small JSON writer for run reports, and the build's provenance.
 *
 * A pc_json accumulates text in memory; pc_json_finish() writes it atomically (or to stdout
 * for "-"). Keys and values are added in order; the writer inserts commas itself.
 */
#ifndef PC_REPORT_H
#define PC_REPORT_H

#include <stddef.h>

#include "device.h"
#include "util.h"

typedef struct {
  char *buf;
  size_t len, cap;
  int need_comma;
} pc_json;

void pc_json_open(pc_json *j);              /* starts "{" */
void pc_json_object(pc_json *j, const char *key); /* "key": {   (key NULL inside arrays) */
void pc_json_end_object(pc_json *j);
void pc_json_array(pc_json *j, const char *key);  /* "key": [ */
void pc_json_end_array(pc_json *j);
void pc_json_str(pc_json *j, const char *key, const char *value);
void pc_json_num(pc_json *j, const char *key, double value); /* non-finite -> null */
void pc_json_int(pc_json *j, const char *key, long long value);
void pc_json_bool(pc_json *j, const char *key, int value);
void pc_json_stats(pc_json *j, const char *key, pc_stats s); /* {"median":..,"min":..,"max":..} */
/* Closes the outer object, writes it to path ("-": stdout) and releases j; a write that fails
 * stops the program with its message (PC_EXIT_USAGE). */
void pc_json_finish(pc_json *j, const char *path);

/* Build provenance, fixed at compile time (see the generated buildinfo.h). */
const char *pc_build_variant(void);
const char *pc_build_compiler(void);
const char *pc_build_flags(void);
const char *pc_build_commit(void);
const char *pc_build_version(void); /* the release, from the file VERSION */
/* Adds "variant", "compiler", "flags", "git_commit", "version" and "knobs" (the tuning knobs
 * whose value is not their default, name: value; knobs.h) to j. */
void pc_json_build(pc_json *j);
/* Opens a run report: "program", "subcommand", the build, the device, "input", "generated",
 * "n", "d" and "header_skipped" (the line number of the header line the text reader skipped,
 * pc_points.header_line; null for none). */
void pc_json_run_header(pc_json *j, const char *subcommand, const pc_device_info *dev, const char *input, int generated,
                        size_t n, size_t d, size_t header_line);
/* Adds "key": the line number of a skipped header line, or null when header_line is 0. */
void pc_json_header_skipped(pc_json *j, const char *key, size_t header_line);
/* Opens a run report's "timing" object with "repeat", "warmup" and "load_s" (the caller adds its
 * times and closes it). */
void pc_json_timing_begin(pc_json *j, int repeat, int warmup, double load_s);
/* Adds "phases_s": {name: {median, min, max}} over `repeat` timed runs (phases[p][run]). */
void pc_json_phase_stats(pc_json *j, const char *const *names, int nphases, double *const *phases, int repeat);
/* Adds "runs": [{"iterations" (when given), "total_s", one key per phase}] for each timed run. */
void pc_json_runs(pc_json *j, const char *const *names, int nphases, double *const *phases, const double *totals,
                  const int *iterations, int repeat);
/* Adds "device": {offloading, host_fallback, name, where, multiprocessors (null: no GPU, or
 * unknown), init_s} and "threads" to j. */
void pc_json_device(pc_json *j, const pc_device_info *dev);

#endif

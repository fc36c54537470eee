/* report.c - see report.h. */
#include "report.h"
#include "buildinfo.h"
#include "data.h"
#include "knobs.h"
#include "output.h"
#include "par.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(pc_json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(pc_json *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int need = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (need < 0) return;
  if (j->len + (size_t)need + 1 > j->cap) {
    size_t cap = j->cap ? j->cap : 1024;
    while (j->len + (size_t)need + 1 > cap) cap *= 2;
    char *nb = realloc(j->buf, cap);
    if (!nb) pc_die(PC_EXIT_USAGE, "out of memory writing the report");
    j->buf = nb;
    j->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(j->buf + j->len, j->cap - j->len, fmt, ap);
  va_end(ap);
  j->len += (size_t)need;
}

static void put_string(pc_json *j, const char *s) {
  put(j, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') put(j, "\\%c", c);
    else if (c < 0x20) put(j, "\\u%04x", c);
    else put(j, "%c", c);
  }
  put(j, "\"");
}

static void key(pc_json *j, const char *k) {
  if (j->need_comma) put(j, ", ");
  if (k) {
    put_string(j, k);
    put(j, ": ");
  }
  j->need_comma = 1;
}

void pc_json_open(pc_json *j) {
  memset(j, 0, sizeof *j);
  put(j, "{");
}
void pc_json_object(pc_json *j, const char *k) {
  key(j, k);
  put(j, "{");
  j->need_comma = 0;
}
void pc_json_end_object(pc_json *j) {
  put(j, "}");
  j->need_comma = 1;
}
void pc_json_array(pc_json *j, const char *k) {
  key(j, k);
  put(j, "[");
  j->need_comma = 0;
}
void pc_json_end_array(pc_json *j) {
  put(j, "]");
  j->need_comma = 1;
}
void pc_json_str(pc_json *j, const char *k, const char *v) {
  key(j, k);
  put_string(j, v);
}
void pc_json_num(pc_json *j, const char *k, double v) {
  key(j, k);
  if (isfinite(v)) put(j, "%.17g", v);
  else put(j, "null");
}
void pc_json_int(pc_json *j, const char *k, long long v) {
  key(j, k);
  put(j, "%lld", v);
}
void pc_json_bool(pc_json *j, const char *k, int v) {
  key(j, k);
  put(j, v ? "true" : "false");
}
void pc_json_stats(pc_json *j, const char *k, pc_stats s) {
  pc_json_object(j, k);
  pc_json_num(j, "median", s.median);
  pc_json_num(j, "min", s.min);
  pc_json_num(j, "max", s.max);
  pc_json_end_object(j);
}

void pc_json_finish(pc_json *j, const char *path) {
  put(j, "}\n");
  int rc;
  if (!strcmp(path, "-")) {
    fwrite(j->buf, 1, j->len, stdout);
    rc = fflush(stdout) == 0 ? 0 : pc_fail("cannot write the report to stdout");
  } else {
    rc = pc_write_text_file(path, j->buf, j->len);
  }
  if (rc != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  free(j->buf);
  memset(j, 0, sizeof *j);
}

const char *pc_build_variant(void) { return PC_VARIANT_NAME; }
const char *pc_build_compiler(void) { return PC_BUILD_COMPILER; }
const char *pc_build_flags(void) { return PC_BUILD_FLAGS; }
const char *pc_build_commit(void) { return PC_BUILD_COMMIT; }
const char *pc_build_version(void) { return PC_BUILD_VERSION; }

void pc_json_build(pc_json *j) {
  pc_json_str(j, "variant", pc_build_variant());
  pc_json_str(j, "compiler", pc_build_compiler());
  pc_json_str(j, "flags", pc_build_flags());
  pc_json_str(j, "git_commit", pc_build_commit());
  pc_json_str(j, "version", pc_build_version());
  pc_json_object(j, "knobs");
  size_t count;
  const pc_knob *const *knobs = pc_knobs(&count);
  for (size_t i = 0; i < count; i++)
    if (pc_knob_changed(knobs[i])) pc_json_str(j, knobs[i]->name, knobs[i]->value);
  pc_json_end_object(j);
}

void pc_json_device(pc_json *j, const pc_device_info *dev) {
  pc_json_object(j, "device");
  pc_json_bool(j, "offloading", dev->offloading);
  pc_json_bool(j, "host_fallback", dev->host_fallback);
  pc_json_str(j, "name", dev->name);
  pc_json_str(j, "where", dev->where);
  pc_json_num(j, "multiprocessors", dev->multiprocessors ? (double)dev->multiprocessors : NAN); /* NAN: null */
  pc_json_num(j, "init_s", dev->init_s);
  pc_json_end_object(j);
  pc_json_int(j, "threads", dev->threads);
}

void pc_json_header_skipped(pc_json *j, const char *k, size_t header_line) {
  key(j, k);
  if (header_line) put(j, "%zu", header_line);
  else put(j, "null");
}

void pc_json_run_header(pc_json *j, const char *subcommand, const pc_device_info *dev, const char *input, int generated,
                        size_t n, size_t d, size_t header_line) {
  pc_json_open(j);
  pc_json_str(j, "program", "pragmaclust");
  pc_json_str(j, "subcommand", subcommand);
  pc_json_build(j);
  pc_json_device(j, dev);
  pc_json_str(j, "input", input);
  pc_json_bool(j, "generated", generated);
  pc_json_int(j, "n", (long long)n);
  pc_json_int(j, "d", (long long)d);
  pc_json_header_skipped(j, "header_skipped", header_line);
}

void pc_json_timing_begin(pc_json *j, int repeat, int warmup, double load_s) {
  pc_json_object(j, "timing");
  pc_json_int(j, "repeat", repeat);
  pc_json_int(j, "warmup", warmup);
  pc_json_num(j, "load_s", load_s);
}

void pc_json_phase_stats(pc_json *j, const char *const *names, int nphases, double *const *phases, int repeat) {
  pc_json_object(j, "phases_s");
  for (int p = 0; p < nphases; p++) pc_json_stats(j, names[p], pc_stats_of(phases[p], (size_t)repeat));
  pc_json_end_object(j);
}

void pc_json_runs(pc_json *j, const char *const *names, int nphases, double *const *phases, const double *totals,
                  const int *iterations, int repeat) {
  pc_json_array(j, "runs");
  for (int run = 0; run < repeat; run++) {
    pc_json_object(j, NULL);
    if (iterations) pc_json_int(j, "iterations", iterations[run]);
    pc_json_num(j, "total_s", totals[run]);
    for (int p = 0; p < nphases; p++) pc_json_num(j, names[p], phases[p][run]);
    pc_json_end_object(j);
  }
  pc_json_end_array(j);
}

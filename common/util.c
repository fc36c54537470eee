/* util.c - see util.h. */
#include "util.h"

#include "dist.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Per thread: a library client may run clusterings on several threads, each reading its own
 * message. */
static _Thread_local char last_error[512];
static _Thread_local int last_error_out_of_memory;
static _Thread_local int last_error_stopped;
static int stop_requested; /* read and written with atomic builtins only */

/* The message and what kind of failure it is. Returns -1. */
static int store_failure(int stopped, const char *fmt, va_list ap) {
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  last_error_out_of_memory = 0;
  last_error_stopped = stopped;
  return -1;
}

int pc_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  store_failure(0, fmt, ap);
  va_end(ap);
  return -1;
}

const char *pc_last_error(void) { return last_error[0] ? last_error : "unknown error"; }

int pc_fail_context(const char *fmt, ...) {
  char message[sizeof last_error];
  snprintf(message, sizeof message, "%s", pc_last_error());
  va_list ap;
  va_start(ap, fmt);
  const int at = vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  size_t len = at < 0 ? 0 : (size_t)at < sizeof last_error ? (size_t)at : sizeof last_error - 1;
  for (const char *p = ": "; *p && len + 1 < sizeof last_error; p++) last_error[len++] = *p;
  for (const char *p = message; *p && len + 1 < sizeof last_error; p++) last_error[len++] = *p; /* as much as fits */
  last_error[len] = '\0';
  return -1;
}

int pc_last_error_out_of_memory(void) { return last_error_out_of_memory; }

int pc_fail_out_of_memory(const char *what) {
  pc_fail("%s: cannot allocate memory", what);
  last_error_out_of_memory = 1;
  return -1;
}

void pc_request_stop(void) { __atomic_store_n(&stop_requested, 1, __ATOMIC_RELAXED); }
void pc_clear_stop(void) { __atomic_store_n(&stop_requested, 0, __ATOMIC_RELAXED); }
int pc_stop_requested(void) { return __atomic_load_n(&stop_requested, __ATOMIC_RELAXED); }

int pc_fail_stopped(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  store_failure(1, fmt, ap);
  va_end(ap);
  return -1;
}

int pc_last_error_stopped(void) { return last_error_stopped; }

enum { MAX_AT_END = 8 };
static void (*at_end[MAX_AT_END])(void);
static int n_at_end;

static void run_at_end(void) {
  while (n_at_end > 0) at_end[--n_at_end]();
}

void pc_at_end(void (*fn)(void)) {
  if (n_at_end == 0) atexit(run_at_end);
  if (n_at_end == MAX_AT_END) pc_die(PC_EXIT_USAGE, "internal: too many end-of-program functions");
  at_end[n_at_end++] = fn;
}

void pc_die(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fflush(stdout);
  if (pc_dist_rank() == 0 || !pc_dist_errors_are_alike()) { /* across MPI ranks: an error all meet, said once */
    fputs("pragmaclust: error: ", stderr);
    if (pc_dist_size() > 1 && !pc_dist_errors_are_alike()) fprintf(stderr, "rank %d: ", pc_dist_rank());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
  }
  va_end(ap);
  fflush(stderr);
  run_at_end();
  _exit(code);
}

static const char *program_name = "pragmaclust";

void pc_set_program_name(const char *argv0) {
  if (!argv0 || !*argv0) return;
  const char *slash = strrchr(argv0, '/');
  program_name = slash && slash[1] ? slash + 1 : argv0;
}

const char *pc_program_name(void) { return program_name; }

void pc_print_usage(FILE *f, const char *text) {
  static const char token[] = "{prog}";
  for (const char *at; (at = strstr(text, token)) != NULL; text = at + sizeof token - 1) {
    fwrite(text, 1, (size_t)(at - text), f);
    fputs(program_name, f);
  }
  fputs(text, f);
}

char *pc_xstrdup(const char *s) {
  char *copy = pc_xalloc(strlen(s) + 1, 1, "a copy of a string");
  memcpy(copy, s, strlen(s) + 1);
  return copy;
}

int pc_has_suffix(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

int pc_mul_size(size_t a, size_t b, size_t *out, const char *what) {
  if (a != 0 && b > SIZE_MAX / a) return pc_fail("%s: size %zu x %zu overflows", what, a, b);
  *out = a * b;
  return 0;
}

void *pc_try_alloc(size_t count, size_t size, const char *what) {
  size_t bytes = 0;
  void *p = NULL;
  if (pc_mul_size(count, size, &bytes, what) != 0) goto none;
  if (bytes == 0) bytes = 1;
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded < bytes) {
    pc_fail("%s: %zu bytes cannot be allocated", what, bytes);
    goto none;
  }
  p = aligned_alloc(64, rounded);
  if (p) return p;
  pc_fail("%s: cannot allocate %zu bytes", what, bytes);
none:
  last_error_out_of_memory = 1;
  return NULL;
}

void *pc_xalloc(size_t count, size_t size, const char *what) {
  void *p = pc_try_alloc(count, size, what);
  if (!p) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  return p;
}

void *pc_xcalloc(size_t count, size_t size, const char *what) {
  void *p = pc_xalloc(count, size, what);
  memset(p, 0, count * size);
  return p;
}

int pc_finite_max_abs(const float *x, size_t count, float *max_abs) {
  /* the largest of |x|'s bits as an integer: for floats of one sign the integers order as the values
   * do, and every infinity and NaN is above the largest finite float. Integers, unlike fmax (whose
   * NaN rule orders its steps), let the compiler take several values an instruction. */
  int32_t top = 0;
  for (size_t i = 0; i < count; i++) {
    int32_t bits;
    memcpy(&bits, x + i, sizeof bits);
    bits &= INT32_MAX;
    top = bits > top ? bits : top;
  }
  memcpy(max_abs, &top, sizeof top);
  return isfinite(*max_abs);
}

double pc_max_abs(const float *x, size_t count) {
  float top;
  return pc_finite_max_abs(x, count, &top) ? top : INFINITY;
}

int pc_check_float_distances(double max_abs, size_t d, const char *what) {
  const double worst = (double)d * (2.0 * max_abs) * (2.0 * max_abs);
  if (worst > FLT_MAX)
    return pc_fail("%s: values up to %.3g make squared distances overflow float32 (d=%zu); rescale the data", what, max_abs,
                   d);
  return 0;
}

double pc_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

pc_stats pc_stats_of(const double *values, size_t n) {
  pc_stats s = {0, 0, 0};
  if (n == 0) return s;
  double *v = pc_xalloc(n, sizeof *v, "statistics");
  memcpy(v, values, n * sizeof *v);
  qsort(v, n, sizeof *v, cmp_double);
  s.min = v[0];
  s.max = v[n - 1];
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  free(v);
  return s;
}

/* synth.c - see synth.h. */
#include "synth.h"
#include "par.h"
#include "util.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { STREAM_VALUES = 1, STREAM_GAUSS = 2, STREAM_CENTERS = 3, STREAM_SAMPLE = 4, STREAM_NOISE = 5 };

static int parse_size(const char *key, const char *val, size_t *out) {
  char *end;
  errno = 0;
  if (*val == '-') return pc_fail("generator: %s must be a positive integer, got '%s'", key, val);
  unsigned long long v = strtoull(val, &end, 10);
  if (errno || end == val || *end || v == 0) return pc_fail("generator: %s must be a positive integer, got '%s'", key, val);
  *out = (size_t)v;
  return 0;
}

static int parse_pos_double(const char *key, const char *val, double *out) {
  char *end;
  errno = 0;
  double v = strtod(val, &end);
  if (errno || end == val || *end || !(v > 0) || !isfinite(v)) return pc_fail("generator: %s must be a positive number, got '%s'", key, val);
  *out = v;
  return 0;
}

static int parse_fraction(const char *key, const char *val, double *out) {
  char *end;
  errno = 0;
  double v = strtod(val, &end);
  if (errno || end == val || *end || !(v >= 0 && v < 1)) return pc_fail("generator: %s must be a fraction in [0, 1), got '%s'", key, val);
  *out = v;
  return 0;
}

int pc_gen_parse(const char *text, pc_gen_spec *spec) {
  memset(spec, 0, sizeof *spec);
  spec->seed = 1;
  spec->centers = 8;
  spec->std = 1.0;
  spec->box = 10.0;
  const char *colon = strchr(text, ':');
  size_t kind_len = colon ? (size_t)(colon - text) : strlen(text);
  if (kind_len == 7 && !strncmp(text, "uniform", 7)) spec->kind = PC_GEN_UNIFORM;
  else if (kind_len == 5 && !strncmp(text, "blobs", 5)) spec->kind = PC_GEN_BLOBS;
  else return pc_fail("generator: unknown kind '%.*s' (uniform or blobs)", (int)kind_len, text);
  char buf[512];
  if (!colon || strlen(colon + 1) >= sizeof buf) return pc_fail("generator: expected %.*s:n=N,d=D[,...]", (int)kind_len, text);
  strcpy(buf, colon + 1);
  for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (!eq) return pc_fail("generator: expected key=value, got '%s'", item);
    *eq = '\0';
    const char *key = item, *val = eq + 1;
    int rc;
    if (!strcmp(key, "n")) rc = parse_size(key, val, &spec->n);
    else if (!strcmp(key, "d")) rc = parse_size(key, val, &spec->d);
    else if (!strcmp(key, "seed")) {
      size_t s = 0;
      rc = parse_size(key, val, &s);
      spec->seed = s;
    } else if (!strcmp(key, "centers") && spec->kind == PC_GEN_BLOBS) rc = parse_size(key, val, &spec->centers);
    else if (!strcmp(key, "std") && spec->kind == PC_GEN_BLOBS) rc = parse_pos_double(key, val, &spec->std);
    else if (!strcmp(key, "box") && spec->kind == PC_GEN_BLOBS) rc = parse_pos_double(key, val, &spec->box);
    else if (!strcmp(key, "noise") && spec->kind == PC_GEN_BLOBS) rc = parse_fraction(key, val, &spec->noise);
    else rc = pc_fail("generator: unknown key '%s' for %.*s", key, (int)kind_len, text);
    if (rc) return -1;
  }
  if (!spec->n || !spec->d) return pc_fail("generator: n and d are required (e.g. %.*s:n=1000,d=8)", (int)kind_len, text);
  if (pc_gen_max_abs(spec) > FLT_MAX)
    return pc_fail("generator: values up to box + %.4g std = %.3g would not be finite float32 numbers (at most %.3g)",
                   PC_GEN_GAUSS_MAX, pc_gen_max_abs(spec), (double)FLT_MAX);
  size_t count;
  if (pc_mul_size(spec->n, spec->d, &count, "generator") || pc_mul_size(count, sizeof(float), &count, "generator")) return -1;
  return 0;
}

double pc_gen_max_abs(const pc_gen_spec *spec) {
  return spec->kind == PC_GEN_UNIFORM ? 1.0 : spec->box + PC_GEN_GAUSS_MAX * spec->std;
}

size_t pc_gen_blob_of(const pc_gen_spec *spec, size_t i) {
  if (spec->noise > 0 && pc_hash_uniform(spec->seed, STREAM_NOISE, i) < spec->noise) return PC_GEN_NOISE;
  return i % spec->centers;
}

/* Standard normal from two counter uniforms (Box-Muller, first output only). */
static double gauss(uint64_t seed, uint64_t index) {
  double u1 = 1.0 - pc_hash_uniform(seed, STREAM_GAUSS, 2 * index); /* (0, 1] */
  double u2 = pc_hash_uniform(seed, STREAM_GAUSS, 2 * index + 1);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void pc_gen_rows(const pc_gen_spec *spec, size_t row_begin, size_t rows, float *out) {
  const size_t d = spec->d;
  const uint64_t seed = spec->seed;
  if (spec->kind == PC_GEN_UNIFORM) {
    HOST_PAR_FOR(schedule(static))
    for (size_t r = 0; r < rows; r++)
      for (size_t j = 0; j < d; j++)
        out[r * d + j] = (float)pc_hash_uniform(seed, STREAM_VALUES, (row_begin + r) * d + j);
    return;
  }
  const double std = spec->std, box = spec->box;
  HOST_PAR_FOR(schedule(static))
  for (size_t r = 0; r < rows; r++) {
    const size_t i = row_begin + r, c = pc_gen_blob_of(spec, i);
    if (c == PC_GEN_NOISE) {
      for (size_t j = 0; j < d; j++) out[r * d + j] = (float)(box * (2.0 * pc_hash_uniform(seed, STREAM_VALUES, i * d + j) - 1.0));
      continue;
    }
    for (size_t j = 0; j < d; j++) {
      double center = box * (2.0 * pc_hash_uniform(seed, STREAM_CENTERS, c * d + j) - 1.0);
      out[r * d + j] = (float)(center + std * gauss(seed, i * d + j));
    }
  }
}

int pc_sample_distinct(uint64_t seed, size_t n, size_t k, size_t *idx) {
  /* Floyd: for j = n-k .. n-1 draw t in [0, j]; take t unless taken, else j. A small
   * open-addressing set keeps membership O(1). */
  size_t cap = 16;
  while (cap < 2 * k) cap *= 2;
  size_t *set = pc_try_alloc(cap, sizeof *set, "sample set");
  if (!set) return -1;
  for (size_t i = 0; i < cap; i++) set[i] = SIZE_MAX;
  size_t m = 0;
  for (size_t j = n - k; j < n; j++) {
    size_t t = (size_t)(pc_hash_uniform(seed, STREAM_SAMPLE, j) * (double)(j + 1));
    if (t > j) t = j;
    for (int pass = 0; pass < 2; pass++) {
      size_t h = (size_t)pc_mix64(t) & (cap - 1);
      while (set[h] != SIZE_MAX && set[h] != t) h = (h + 1) & (cap - 1);
      if (set[h] == SIZE_MAX) {
        set[h] = t;
        idx[m++] = t;
        break;
      }
      t = j; /* t was taken: j itself cannot be, it is new in this round */
    }
  }
  free(set);
  return 0;
}

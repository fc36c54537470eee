/* data.c - see data.h. */
#include "data.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void pc_points_free(pc_points *p) {
  free(p->x);
  p->x = NULL;
  p->n = p->d = 0;
}

/* Hands x (n x d) to out on success (rc == 0); frees it otherwise. Returns 0 or -1. */
static int finish_read(int rc, float *x, size_t n, size_t d, pc_points *out) {
  if (rc) {
    free(x);
    return -1;
  }
  out->n = n;
  out->d = d;
  out->x = x;
  return 0;
}

/* 0 when all count values of x (rows of d) are finite, else -1 naming the first bad one. */
static int check_finite(const float *x, size_t count, size_t d, const char *path) {
  for (size_t i = 0; i < count; i++)
    if (!isfinite(x[i])) return pc_fail("%s: element %zu (row %zu) is NaN or Inf", path, i, i / d + 1);
  return 0;
}

/* ---- text ---------------------------------------------------------------------------- */

static int is_separator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\r' || c == ';'; }

/* Parses one float token at *s (advancing it). Returns 1 on a number, 0 at end of line,
 * -1 on a token that is not a number, -2 on a number that is not a finite float (the
 * message names line and token). */
static int next_value(char **s, float *v, size_t line_no) {
  char *p = *s;
  while (*p && is_separator(*p)) p++;
  if (!*p || *p == '\n') {
    *s = p;
    return 0;
  }
  char *end;
  errno = 0;
  double val = strtod(p, &end);
  int bad = end == p || (*end && !is_separator(*end) && *end != '\n');
  if (!bad && !isfinite((float)val)) { /* NaN, Inf, or beyond the float range once rounded */
    pc_fail("line %zu: value '%.*s' is not a finite float", line_no, (int)(end - p), p);
    return -2;
  }
  if (bad) {
    char *tok_end = p;
    while (*tok_end && !is_separator(*tok_end) && *tok_end != '\n') tok_end++;
    pc_fail("line %zu: '%.*s' is not a number", line_no, (int)(tok_end - p > 40 ? 40 : tok_end - p), p);
    return -1;
  }
  *v = (float)val;
  *s = end;
  return 1;
}

int pc_read_text(const char *path, pc_points *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "r");
  if (!f) return pc_fail("cannot open '%s': %s", path, strerror(errno));
  size_t cap = 0, len = 0, d = 0, n = 0, line_no = 0;
  float *x = NULL;
  char *line = NULL;
  size_t line_cap = 0;
  ssize_t got;
  int rc = 0, seen_first = 0;
  while ((got = getline(&line, &line_cap, f)) >= 0) {
    line_no++;
    if (memchr(line, '\0', (size_t)got)) {
      rc = pc_fail("%s: line %zu: binary data in a text file", path, line_no);
      break;
    }
    char *s = line;
    while (*s && is_separator(*s)) s++;
    if (!*s || *s == '\n' || *s == '#') continue;
    size_t row_d = 0;
    float v;
    int r;
    size_t row_start = len;
    while ((r = next_value(&s, &v, line_no)) == 1) {
      if (len == cap) {
        cap = cap ? cap * 2 : 1024;
        float *nx = realloc(x, cap * sizeof *x);
        if (!nx) {
          rc = pc_fail("%s: out of memory at line %zu", path, line_no);
          break;
        }
        x = nx;
      }
      x[len++] = v;
      row_d++;
    }
    if (rc) break;
    if (r < 0) {
      if (r == -1 && !seen_first) { /* a first line with a word in it is a header: skip it */
        seen_first = 1;
        len = row_start;
        continue;
      }
      char msg[400];
      snprintf(msg, sizeof msg, "%s: %s", path, pc_last_error());
      rc = pc_fail("%s", msg);
      break;
    }
    seen_first = 1;
    if (d == 0) d = row_d;
    else if (row_d != d) {
      rc = pc_fail("%s: line %zu has %zu values, expected %zu (ragged rows)", path, line_no, row_d, d);
      break;
    }
    n++;
  }
  if (!rc && ferror(f)) rc = pc_fail("%s: read error: %s", path, strerror(errno));
  free(line);
  fclose(f);
  if (!rc && n == 0) rc = pc_fail("%s: no data rows", path);
  return finish_read(rc, x, n, d, out);
}

/* ---- npy ----------------------------------------------------------------------------- */

static int file_size(FILE *f, const char *path, size_t *size) {
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) return pc_fail("'%s' is not a regular file", path);
  *size = (size_t)st.st_size;
  return 0;
}

/* Finds `key` in a npy header dict and returns a pointer just past "key':" or NULL. */
static const char *npy_field(const char *hdr, const char *key) {
  char pattern[32];
  snprintf(pattern, sizeof pattern, "'%s':", key);
  const char *p = strstr(hdr, pattern);
  if (!p) return NULL;
  p += strlen(pattern);
  while (*p == ' ') p++;
  return p;
}

int pc_read_npy(const char *path, pc_points *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return pc_fail("cannot open '%s': %s", path, strerror(errno));
  int rc = 0;
  char *hdr = NULL;
  float *x = NULL;
  double *tmp = NULL;
  unsigned char pre[12];
  size_t fsize = 0, hdr_len, pre_len;
  if (file_size(f, path, &fsize) != 0) { rc = -1; goto done; }
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    rc = pc_fail("%s: not a NumPy .npy file", path);
    goto done;
  }
  if (pre[6] == 1) {
    hdr_len = (size_t)pre[8] | (size_t)pre[9] << 8;
    pre_len = 10;
  } else if (pre[6] == 2 || pre[6] == 3) {
    if (fread(pre + 10, 1, 2, f) != 2) { rc = pc_fail("%s: truncated .npy header", path); goto done; }
    hdr_len = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    pre_len = 12;
  } else {
    rc = pc_fail("%s: unsupported .npy version %d", path, pre[6]);
    goto done;
  }
  if (hdr_len > 65536 || pre_len + hdr_len > fsize) { rc = pc_fail("%s: bad .npy header length", path); goto done; }
  hdr = calloc(1, hdr_len + 1);
  if (!hdr || fread(hdr, 1, hdr_len, f) != hdr_len) { rc = pc_fail("%s: truncated .npy header", path); goto done; }
  const char *descr = npy_field(hdr, "descr"), *fortran = npy_field(hdr, "fortran_order"), *shape = npy_field(hdr, "shape");
  if (!descr || !fortran || !shape) { rc = pc_fail("%s: .npy header lacks descr/fortran_order/shape", path); goto done; }
  size_t item;
  if (!strncmp(descr, "'<f4'", 5) || !strncmp(descr, "'=f4'", 5)) item = 4;
  else if (!strncmp(descr, "'<f8'", 5) || !strncmp(descr, "'=f8'", 5)) item = 8;
  else { rc = pc_fail("%s: .npy dtype %.6s is not supported (float32 or float64, little-endian)", path, descr); goto done; }
  if (strncmp(fortran, "False", 5) != 0) { rc = pc_fail("%s: Fortran-ordered .npy arrays are not supported (save in C order)", path); goto done; }
  if (*shape != '(') { rc = pc_fail("%s: bad .npy shape", path); goto done; }
  unsigned long long dims[2] = {0, 1};
  int ndim = 0;
  const char *s = shape + 1;
  while (*s && *s != ')') {
    while (*s == ' ' || *s == ',') s++;
    if (*s == ')') break;
    if (!isdigit((unsigned char)*s) || ndim == 2) { rc = pc_fail("%s: .npy arrays must have shape (n, d) or (n,)", path); goto done; }
    char *e;
    dims[ndim++] = strtoull(s, &e, 10);
    s = e;
  }
  if (ndim == 0) { rc = pc_fail("%s: .npy arrays must have shape (n, d) or (n,)", path); goto done; }
  size_t n = (size_t)dims[0], d = (size_t)dims[1], count, bytes;
  if (n == 0 || d == 0) { rc = pc_fail("%s: empty array", path); goto done; }
  if (pc_mul_size(n, d, &count, path) || pc_mul_size(count, item, &bytes, path)) { rc = -1; goto done; }
  if (fsize - pre_len - hdr_len != bytes) {
    rc = pc_fail("%s: file holds %zu data bytes, shape (%zu, %zu) needs %zu", path, fsize - pre_len - hdr_len, n, d, bytes);
    goto done;
  }
  x = pc_try_alloc(count, sizeof *x, path);
  if (!x) { rc = -1; goto done; }
  if (item == 4) {
    if (fread(x, 4, count, f) != count) { rc = pc_fail("%s: read error", path); goto done; }
  } else {
    tmp = pc_try_alloc(count, sizeof *tmp, path);
    if (!tmp) { rc = -1; goto done; }
    if (fread(tmp, 8, count, f) != count) { rc = pc_fail("%s: read error", path); goto done; }
    for (size_t i = 0; i < count; i++) {
      if (!isfinite(tmp[i]) || fabs(tmp[i]) > FLT_MAX) {
        rc = pc_fail("%s: element %zu (row %zu) is not a finite float", path, i, i / d + 1);
        goto done;
      }
      x[i] = (float)tmp[i];
    }
  }
  if ((rc = check_finite(x, count, d, path)) != 0) goto done;
  out->n = n;
  out->d = d;
  out->x = x;
  x = NULL;
done:
  free(hdr);
  free(tmp);
  free(x);
  fclose(f);
  return rc;
}

/* ---- raw ----------------------------------------------------------------------------- */

int pc_read_raw_f32(const char *path, size_t n, size_t d, pc_points *out) {
  memset(out, 0, sizeof *out);
  size_t count, bytes, fsize;
  if (n == 0 || d == 0) return pc_fail("%s: raw shape must be positive", path);
  if (pc_mul_size(n, d, &count, path) || pc_mul_size(count, 4, &bytes, path)) return -1;
  FILE *f = fopen(path, "rb");
  if (!f) return pc_fail("cannot open '%s': %s", path, strerror(errno));
  int rc = file_size(f, path, &fsize);
  if (!rc && fsize != bytes) rc = pc_fail("%s: file has %zu bytes, shape %zux%zu float32 needs %zu", path, fsize, n, d, bytes);
  float *x = rc ? NULL : pc_try_alloc(count, sizeof *x, path);
  if (!rc && !x) rc = -1;
  if (!rc && fread(x, 4, count, f) != count) rc = pc_fail("%s: read error", path);
  if (!rc) rc = check_finite(x, count, d, path);
  fclose(f);
  return finish_read(rc, x, n, d, out);
}

static int has_suffix(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

int pc_read_points(const char *path, size_t raw_n, size_t raw_d, pc_points *out) {
  if (raw_n > 0) return pc_read_raw_f32(path, raw_n, raw_d, out);
  if (has_suffix(path, ".npy")) return pc_read_npy(path, out);
  return pc_read_text(path, out);
}

/* ---- writers ------------------------------------------------------------------------- */

/* Outputs are staged: each writer fills a temporary file beside its target, and
 * pc_outputs_commit() renames them all at the end, so that a failure anywhere (including a
 * later output, or pc_die) leaves no output file at all. Targets that are not regular files
 * (/dev/stdout, a FIFO) are written directly. */
enum { MAX_STAGED = 16 };
static struct {
  char *tmp, *path;
} staged[MAX_STAGED];
static int n_staged;

static void discard_staged(void) {
  for (int i = 0; i < n_staged; i++) {
    unlink(staged[i].tmp);
    free(staged[i].tmp);
    free(staged[i].path);
  }
  n_staged = 0;
}

int pc_outputs_commit(void) {
  int rc = 0;
  for (int i = 0; i < n_staged && rc == 0; i++)
    if (rename(staged[i].tmp, staged[i].path) != 0) rc = pc_fail("cannot write '%s': %s", staged[i].path, strerror(errno));
  discard_staged(); /* removes whatever was not renamed */
  return rc;
}

/* Opens the file a writer fills for `path`; *direct tells whether it is the target itself. */
static FILE *open_output(const char *path, char *tmp, size_t tmp_len, int *direct) {
  static int registered;
  struct stat st;
  *direct = 0;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    pc_fail("cannot write '%s': it is a directory", path);
    return NULL;
  }
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    *direct = 1;
    FILE *f = fopen(path, "wb");
    if (!f) pc_fail("cannot write '%s': %s", path, strerror(errno));
    return f;
  }
  if (n_staged == MAX_STAGED) {
    pc_fail("too many output files");
    return NULL;
  }
  int len = snprintf(tmp, tmp_len, "%s.tmp.%ld", path, (long)getpid());
  if (len < 0 || (size_t)len >= tmp_len) {
    pc_fail("output path '%s' is too long", path);
    return NULL;
  }
  FILE *f = fopen(tmp, "wb");
  if (!f) pc_fail("cannot write '%s': %s", path, strerror(errno));
  if (!registered) {
    atexit(discard_staged); /* pc_die() and any other exit drop uncommitted outputs */
    registered = 1;
  }
  return f;
}

/* Closes f; a complete staged file is remembered for pc_outputs_commit(), a failed one removed. */
static int close_output(FILE *f, const char *tmp, const char *path, int direct, int ok) {
  if (fflush(f) != 0 || ferror(f)) ok = 0;
  if (fclose(f) != 0) ok = 0;
  int err = errno;
  if (direct) return ok ? 0 : pc_fail("cannot write '%s': %s", path, strerror(err ? err : EIO));
  if (!ok) {
    unlink(tmp);
    return pc_fail("cannot write '%s': %s", path, strerror(err ? err : EIO));
  }
  staged[n_staged].tmp = strdup(tmp);
  staged[n_staged].path = strdup(path);
  n_staged++;
  return 0;
}

static void npy_header(FILE *f, const char *descr, size_t rows, size_t cols, int one_dim) {
  char dict[128];
  if (one_dim) snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }", descr, rows);
  else snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }", descr, rows, cols);
  size_t len = strlen(dict), total = 10 + len + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t hlen = len + pad + 1;
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
  fwrite(pre, 1, 10, f);
  fputs(dict, f);
  for (size_t i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
}

int pc_write_labels(const char *path, const int *labels, size_t n) {
  char tmp[4096];
  int direct;
  FILE *f = open_output(path, tmp, sizeof tmp, &direct);
  if (!f) return -1;
  int ok = 1;
  if (has_suffix(path, ".npy")) {
    npy_header(f, "<i4", n, 1, 1);
    for (size_t i = 0; i < n; i++) {
      int32_t v = labels[i];
      ok &= fwrite(&v, 4, 1, f) == 1;
    }
  } else {
    for (size_t i = 0; i < n && ok; i++) ok = fprintf(f, "%d\n", labels[i]) > 0;
  }
  return close_output(f, tmp, path, direct, ok);
}

int pc_write_matrix(const char *path, const float *m, size_t rows, size_t cols) {
  char tmp[4096];
  int direct;
  FILE *f = open_output(path, tmp, sizeof tmp, &direct);
  if (!f) return -1;
  int ok = 1;
  if (has_suffix(path, ".npy")) {
    npy_header(f, "<f4", rows, cols, 0);
    ok = fwrite(m, sizeof *m, rows * cols, f) == rows * cols;
  } else {
    for (size_t r = 0; r < rows && ok; r++)
      for (size_t c = 0; c < cols && ok; c++) ok = fprintf(f, c + 1 < cols ? "%.9g " : "%.9g\n", (double)m[r * cols + c]) > 0;
  }
  return close_output(f, tmp, path, direct, ok);
}

int pc_write_text_file(const char *path, const char *text, size_t len) {
  char tmp[4096];
  int direct;
  FILE *f = open_output(path, tmp, sizeof tmp, &direct);
  if (!f) return -1;
  return close_output(f, tmp, path, direct, fwrite(text, 1, len, f) == len);
}

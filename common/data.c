/* data.c - see data.h. */
#include "data.h"

#include "dist.h"
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
  p->n = p->d = p->header_line = 0;
}

const char *pc_header_note(const char *what, size_t header_line) {
  static char bufs[4][160];
  static unsigned next;
  if (!header_line) return "";
  char *b = bufs[next++ % 4];
  snprintf(b, sizeof bufs[0], " (%s%sheader line %zu skipped)", what ? what : "", what ? ": " : "", header_line);
  return b;
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
static int check_finite(const float *x, size_t count, size_t d, size_t first, const char *path) {
  float max_abs;
  if (pc_finite_max_abs(x, count, &max_abs)) return 0; /* the fast pass; the loop names the first */
  for (size_t i = 0; i < count; i++) /* x holds the file's rows from `first` on */
    if (!isfinite(x[i]))
      return pc_fail("%s: element %zu (row %zu) is NaN or Inf", path, first * d + i, first + i / d + 1);
  return 0;
}

/* The rows a binary reader reads: this MPI rank's slice (dist.h) when `part`, else all n; with
 * the file position moved to the first of them (rows of `row_bytes`). 0, or -1 with a message. */
static int seek_rows(FILE *f, const char *path, size_t n, size_t row_bytes, int part, size_t *first, size_t *count) {
  *first = 0, *count = n;
  if (part) pc_dist_slice(n, first, count);
  if (*first && fseeko(f, (off_t)(*first * row_bytes), SEEK_CUR) != 0) return pc_fail("%s: seek error", path);
  return 0;
}

/* ---- text ---------------------------------------------------------------------------- */

/* How the values of a row are separated. The rule that keeps n and d honest: within a row every
 * gap between values (and a trailing separator) is of one kind, and every data row of the file
 * is of the kind of the first row that has a gap. A gap is white space only (SEP_SPACE), or
 * exactly one ',' (SEP_COMMA) or one ';' (SEP_SEMICOLON) with optional white space around it,
 * so "1.5,2.5", "1.5, 2.5", "1.5 ; 2.5" and "1.5\t2.5" are plain rows, while a decimal comma
 * ("1,53 3,46", "1,53;3,46") mixes two kinds in one row and is refused instead of read as twice
 * the columns. Two separators with no value between them, or one before the first value, are an
 * empty field (CSV's missing value), also refused. The header line is not held to the rule. */
typedef enum { SEP_NONE, SEP_SPACE, SEP_COMMA, SEP_SEMICOLON } sep_kind;
static const char *const sep_names[] = {"nothing", "white space", "','", "';'"};

static int is_blank(char c) { return c == ' ' || c == '\t'; }
static int is_separator(char c) { return is_blank(c) || c == ',' || c == ';'; }

/* Skips the gap of separators at *s: returns its kind (SEP_NONE for no gap at all) and sets
 * *delims to the number of ',' and ';' in it. */
static sep_kind skip_gap(char **s, int *delims) {
  char *p = *s;
  int commas = 0, semicolons = 0;
  for (; is_separator(*p); p++) {
    commas += *p == ',';
    semicolons += *p == ';';
  }
  sep_kind kind = p == *s ? SEP_NONE : commas ? SEP_COMMA : semicolons ? SEP_SEMICOLON : SEP_SPACE;
  *s = p;
  *delims = commas + semicolons;
  return kind;
}

/* What parse_row found about a row's separators; checked once the row's values are known to be
 * numbers, so that a header line is never refused for its separators. */
typedef struct {
  sep_kind kind;   /* the row's separator; SEP_NONE for a single value */
  sep_kind mixed;  /* SEP_NONE, or a second kind met in the row */
  int empty_field; /* a ',' or ';' with no value before it */
} row_seps;

/* Parses the values of one line (NUL-terminated, not blank) and appends them to x (len of cap,
 * grown as needed). Returns the number of values; -1 on a token that is not a number, -2 on a
 * number that is not a finite float (both with a pc_fail message naming line and token), -3
 * when memory runs out. */
static long parse_row(char *s, size_t line_no, float **x, size_t *len, size_t *cap, row_seps *seps) {
  memset(seps, 0, sizeof *seps);
  int delims;
  skip_gap(&s, &delims);
  seps->empty_field = delims > 0;
  long row_d = 0;
  while (*s) {
    char *end;
    double val = strtod(s, &end);
    if (end == s || (*end && !is_separator(*end))) {
      char *tok_end = s;
      while (*tok_end && !is_separator(*tok_end)) tok_end++;
      pc_fail("line %zu: '%.*s' is not a number", line_no, (int)(tok_end - s > 40 ? 40 : tok_end - s), s);
      return -1;
    }
    if (!isfinite((float)val)) { /* NaN, Inf, or beyond the float range once rounded */
      pc_fail("line %zu: value '%.*s' is not a finite float", line_no, (int)(end - s), s);
      return -2;
    }
    if (*len == *cap) {
      size_t new_cap = *cap ? *cap * 2 : 1024;
      float *nx = realloc(*x, new_cap * sizeof *nx);
      if (!nx) return -3;
      *x = nx;
      *cap = new_cap;
    }
    (*x)[(*len)++] = (float)val;
    row_d++;
    s = end;
    const sep_kind gap = skip_gap(&s, &delims);
    if (delims > 1) seps->empty_field = 1;
    if (gap == SEP_NONE || (gap == SEP_SPACE && !*s)) break; /* end of line, or trailing blanks */
    if (seps->kind == SEP_NONE) seps->kind = gap;
    else if (gap != seps->kind && seps->mixed == SEP_NONE) seps->mixed = gap;
  }
  return row_d;
}

/* Ends the first line of the got bytes at buf (text from getline, so buf[got] is NUL): a line
 * ends at "\n", "\r\n" or a lone "\r" (old Mac files). Overwrites the line end with NUL, sets
 * *next past it and returns the line's length. */
static size_t split_line(char *buf, size_t got, char **next) {
  char *end = buf + got, *p = buf;
  while (p < end && *p != '\n' && *p != '\r') p++;
  *next = p == end ? end : p + 1 + (*p == '\r' && p + 1 < end && p[1] == '\n');
  *p = '\0';
  return (size_t)(p - buf);
}

/* The error of a row separated by `kind` in a file whose rows are separated by `file_kind` since
 * line kind_line. Returns -1. */
static int separator_mismatch(const char *path, size_t line, sep_kind kind, size_t kind_line, sep_kind file_kind) {
  return pc_fail("%s: line %zu separates values with %s, line %zu with %s (use one separator in a file)", path, line,
                 sep_names[kind], kind_line, sep_names[file_kind]);
}

/* A text file's reading so far: its rows, their shape and separator, and where they were met. */
typedef struct {
  float *x;
  size_t cap, len, d, n;
  size_t line_no;     /* lines read, blank ones included: the next line's number is line_no + 1 */
  size_t header_line; /* the skipped header's line, or 0 */
  size_t first_row_line, kind_line;
  sep_kind file_kind; /* the separator of the first row with a gap (kind_line) */
  int seen_first;     /* a data row or a header came already: a word now is an error */
  sep_kind mismatch;  /* the separator of a row that broke the file's (the error), or SEP_NONE */
  char header_error[512]; /* the error a header line would be after a row (an MPI rank's first line) */
} text_reading;

/* Reads the lines of f from the current position until `end` bytes into the file (the lines that
 * start before it: all, for SIZE_MAX), from byte `at` (a line's start) on, adding their rows to
 * *t. 0, or -1 with a pc_fail message naming the line. */
static int read_text_lines(FILE *f, const char *path, size_t at, size_t end, text_reading *t) {
  char *buf = NULL;
  size_t buf_cap = 0;
  ssize_t got;
  int rc = 0;
  while (!rc && at < end && (got = getline(&buf, &buf_cap, f)) >= 0) {
    char *chunk = buf, *chunk_end = buf + got;
    if (at == 0 && got >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) chunk += 3; /* a UTF-8 byte-order mark */
    const size_t chunk_at = at;
    while (!rc && chunk < chunk_end && chunk_at + (size_t)(chunk - buf) < end) {
      char *s = chunk;
      const size_t line_len = split_line(chunk, (size_t)(chunk_end - chunk), &chunk);
      t->line_no++;
      if (memchr(s, '\0', line_len)) {
        rc = pc_fail("%s: line %zu: binary data in a text file", path, t->line_no);
        break;
      }
      while (is_blank(*s)) s++;
      char *first = s; /* a line of separators only counts as blank, as it holds no value */
      while (is_separator(*first)) first++;
      if (!*first || *first == '#') continue;
      const size_t row_start = t->len;
      row_seps seps;
      const long row_d = parse_row(s, t->line_no, &t->x, &t->len, &t->cap, &seps);
      if (row_d == -3) {
        rc = pc_fail("%s: out of memory at line %zu", path, t->line_no);
      } else if (row_d == -1 && !t->seen_first) { /* a first line with a word in it is a header: skip it */
        snprintf(t->header_error, sizeof t->header_error, "%s: %s", path, pc_last_error());
        t->seen_first = 1;
        t->header_line = t->line_no;
        t->len = row_start;
      } else if (row_d < 0) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s: %s", path, pc_last_error());
        rc = pc_fail("%s", msg);
      } else if (seps.empty_field) {
        rc = pc_fail("%s: line %zu has an empty field (a ',' or ';' with no value before it)", path, t->line_no);
      } else if (seps.mixed != SEP_NONE) {
        rc = pc_fail("%s: line %zu mixes separators, %s and %s (decimal commas? use '.' in numbers and one separator)",
                     path, t->line_no, sep_names[seps.kind], sep_names[seps.mixed]);
      } else if (seps.kind != SEP_NONE && t->file_kind != SEP_NONE && seps.kind != t->file_kind) {
        t->mismatch = seps.kind;
        rc = separator_mismatch(path, t->line_no, seps.kind, t->kind_line, t->file_kind);
      } else {
        t->seen_first = 1;
        if (t->file_kind == SEP_NONE && seps.kind != SEP_NONE) {
          t->file_kind = seps.kind;
          t->kind_line = t->line_no;
        }
        if (t->d == 0) t->d = (size_t)row_d, t->first_row_line = t->line_no;
        else if ((size_t)row_d != t->d)
          rc = pc_fail("%s: line %zu has %zu values, expected %zu (ragged rows)", path, t->line_no, (size_t)row_d, t->d);
        t->n++;
      }
    }
    at += (size_t)got;
  }
  if (!rc && ferror(f)) rc = pc_fail("%s: read error: %s", path, strerror(errno));
  free(buf);
  return rc;
}

int pc_read_text(const char *path, pc_points *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "r");
  if (!f) return pc_fail("cannot open '%s': %s", path, strerror(errno));
  text_reading t = {0};
  int rc = read_text_lines(f, path, 0, SIZE_MAX, &t);
  fclose(f);
  if (!rc && t.n == 0) rc = pc_fail("%s: no data rows", path);
  if (finish_read(rc, t.x, t.n, t.d, out) != 0) return -1;
  out->header_line = t.header_line;
  out->first = 0, out->total = t.n;
  return 0;
}

/* ---- npy ----------------------------------------------------------------------------- */

static int file_size(FILE *f, const char *path, size_t *size) {
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) return pc_fail("'%s' is not a regular file", path);
  *size = (size_t)st.st_size;
  return 0;
}

/* The header dict of a .npy file, as numpy writes it with repr() and reads it with
 * ast.literal_eval: '{' key ': ' value pairs separated by ',' (a trailing one allowed) '}', then
 * padding white space. Keys are quoted strings ('...' or "...", no escapes): exactly 'descr' (a
 * string), 'fortran_order' (True or False) and 'shape' (a tuple of non-negative integers: "()",
 * "(6,)", "(3, 2)"), each once; anything else is an error. Parsing the literal, not searching its
 * text, is what keeps a key's name inside another value from being taken for the key. */
typedef struct {
  char descr[16];
  int fortran_order;
  int ndim; /* the tuple's length (dims holds the first 2) */
  unsigned long long dims[2];
} npy_header;

static const char *const npy_keys[] = {"descr", "fortran_order", "shape"};
enum { NPY_DESCR = 1, NPY_FORTRAN = 2, NPY_SHAPE = 4 }; /* bit i: npy_keys[i] */

static void npy_skip_space(const char **s) {
  while (**s == ' ' || **s == '\t' || **s == '\n' || **s == '\r') (*s)++;
}

/* The length of the excerpt of s that a message quotes: at most 20 bytes, up to a control
 * character (the message stays one line). */
static int npy_excerpt(const char *s) {
  int len = 0;
  while (len < 20 && (unsigned char)s[len] >= 0x20) len++;
  return len;
}

/* A quoted string at *s into out (cap bytes with the NUL). Returns 0, 1 when it does not fit,
 * or -1 when *s holds no quoted string (of printable characters, without escapes). */
static int npy_string(const char **s, char *out, size_t cap) {
  const char quote = **s;
  if (quote != '\'' && quote != '"') return -1;
  const char *start = *s + 1, *end = start;
  while ((unsigned char)*end >= 0x20 && *end != quote && *end != '\\') end++; /* no escapes, no control characters */
  if (*end != quote) return -1;
  *s = end + 1;
  if ((size_t)(end - start) >= cap) return 1;
  memcpy(out, start, (size_t)(end - start));
  out[end - start] = '\0';
  return 0;
}

/* The tuple of non-negative integers at *s into h (Python's tuple syntax: "(6)" is no tuple). */
static int npy_shape(const char **s, npy_header *h) {
  const char *p = *s;
  if (*p++ != '(') return -1;
  int commas = 0;
  npy_skip_space(&p);
  while (*p != ')') {
    if (!isdigit((unsigned char)*p) || (*p == '0' && isdigit((unsigned char)p[1]))) return -1;
    char *e;
    errno = 0;
    const unsigned long long v = strtoull(p, &e, 10);
    if (errno) return -1;
    if (h->ndim < 2) h->dims[h->ndim] = v;
    h->ndim++;
    p = e;
    npy_skip_space(&p);
    if (*p == ',') {
      p++;
      commas++;
      npy_skip_space(&p);
    } else if (*p != ')') {
      return -1;
    }
  }
  if (h->ndim == 1 && commas == 0) return -1;
  *s = p + 1;
  return 0;
}

/* Parses the header text hdr (hdr_len bytes) into h. Returns 0, or -1 with a message naming path. */
static int npy_parse_header(const char *hdr, size_t hdr_len, const char *path, npy_header *h) {
  memset(h, 0, sizeof *h);
  if (strlen(hdr) != hdr_len) return pc_fail("%s: .npy header holds a NUL byte", path);
  const char *s = hdr;
  unsigned seen = 0;
  npy_skip_space(&s);
  if (*s++ != '{') return pc_fail("%s: .npy header is not a dict: '%.*s'", path, npy_excerpt(hdr), hdr);
  for (;;) {
    npy_skip_space(&s);
    if (*s == '}') break;
    char key[24];
    const char *at = s;
    const int got = npy_string(&s, key, sizeof key);
    if (got < 0) return pc_fail("%s: .npy header: expected a quoted key or '}' at '%.*s'", path, npy_excerpt(at), at);
    if (got > 0) return pc_fail("%s: .npy header: unknown key %.*s...", path, npy_excerpt(at), at);
    unsigned which = 0;
    for (unsigned i = 0; i < 3; i++)
      if (!strcmp(key, npy_keys[i])) which = 1u << i;
    if (!which)
      return pc_fail("%s: .npy header: unknown key '%s' (expected 'descr', 'fortran_order', 'shape')", path, key);
    if (seen & which) return pc_fail("%s: .npy header: key '%s' given twice", path, key);
    seen |= which;
    npy_skip_space(&s);
    if (*s++ != ':') return pc_fail("%s: .npy header: expected ':' after '%s'", path, key);
    npy_skip_space(&s);
    at = s;
    if (which == NPY_DESCR) {
      if (npy_string(&s, h->descr, sizeof h->descr) != 0)
        return pc_fail("%s: .npy dtype %.*s is not supported (float32 or float64, little-endian)", path,
                       npy_excerpt(at), at);
    } else if (which == NPY_FORTRAN) {
      size_t word = 0;
      while (isalnum((unsigned char)s[word]) || s[word] == '_') word++;
      if (word == 4 && !strncmp(s, "True", 4)) h->fortran_order = 1;
      else if (!(word == 5 && !strncmp(s, "False", 5)))
        return pc_fail("%s: .npy header: 'fortran_order' must be True or False, not '%.*s'", path,
                       (int)(word ? (word > 20 ? 20 : word) : 1), s);
      s += word;
    } else if (npy_shape(&s, h) != 0) {
      return pc_fail("%s: .npy header: 'shape' must be a tuple of non-negative integers, not '%.*s'", path,
                     npy_excerpt(at), at);
    }
    npy_skip_space(&s);
    if (*s == ',') s++;
    else if (*s != '}') return pc_fail("%s: .npy header: expected ',' or '}' at '%.*s'", path, npy_excerpt(s), s);
  }
  s++;
  npy_skip_space(&s);
  if (*s) return pc_fail("%s: .npy header: '%.*s' after the dict", path, npy_excerpt(s), s);
  for (unsigned i = 0; i < 3; i++)
    if (!(seen & 1u << i)) return pc_fail("%s: .npy header lacks '%s'", path, npy_keys[i]);
  return 0;
}

/* pc_read_npy, of this MPI rank's rows only when `part` (seek_rows). */
static int read_npy_part(const char *path, int part, pc_points *out) {
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
  npy_header h;
  if (npy_parse_header(hdr, hdr_len, path, &h) != 0) { rc = -1; goto done; }
  size_t item;
  if (!strcmp(h.descr, "<f4") || !strcmp(h.descr, "=f4")) item = 4;
  else if (!strcmp(h.descr, "<f8") || !strcmp(h.descr, "=f8")) item = 8;
  else { rc = pc_fail("%s: .npy dtype '%s' is not supported (float32 or float64, little-endian)", path, h.descr); goto done; }
  if (h.fortran_order) { rc = pc_fail("%s: Fortran-ordered .npy arrays are not supported (save in C order)", path); goto done; }
  if (h.ndim < 1 || h.ndim > 2) { rc = pc_fail("%s: .npy arrays must have shape (n, d) or (n,)", path); goto done; }
  const unsigned long long dims[2] = {h.dims[0], h.ndim == 2 ? h.dims[1] : 1};
  size_t n = (size_t)dims[0], d = (size_t)dims[1], count, bytes;
  if (n == 0 || d == 0) { rc = pc_fail("%s: empty array", path); goto done; }
  if (pc_mul_size(n, d, &count, path) || pc_mul_size(count, item, &bytes, path)) { rc = -1; goto done; }
  if (fsize - pre_len - hdr_len != bytes) {
    rc = pc_fail("%s: file holds %zu data bytes, shape (%zu, %zu) needs %zu", path, fsize - pre_len - hdr_len, n, d, bytes);
    goto done;
  }
  size_t first;
  if (seek_rows(f, path, n, d * item, part, &first, &count) != 0) { rc = -1; goto done; }
  count *= d; /* values of this reader's rows */
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
        rc = pc_fail("%s: element %zu (row %zu) is not a finite float", path, first * d + i, first + i / d + 1);
        goto done;
      }
      x[i] = (float)tmp[i];
    }
  }
  if ((rc = check_finite(x, count, d, first, path)) != 0) goto done;
  out->n = count / d;
  out->d = d;
  out->x = x;
  out->first = first;
  out->total = n;
  x = NULL;
done:
  free(hdr);
  free(tmp);
  free(x);
  fclose(f);
  return rc;
}

/* ---- raw ----------------------------------------------------------------------------- */

/* pc_read_raw_f32, of this MPI rank's rows only when `part` (seek_rows). */
static int read_raw_f32_part(const char *path, size_t n, size_t d, int part, pc_points *out) {
  memset(out, 0, sizeof *out);
  size_t count, bytes, fsize = 0, first = 0;
  if (n == 0 || d == 0) return pc_fail("%s: raw shape must be positive", path);
  if (pc_mul_size(n, d, &count, path) || pc_mul_size(count, 4, &bytes, path)) return -1;
  FILE *f = fopen(path, "rb");
  if (!f) return pc_fail("cannot open '%s': %s", path, strerror(errno));
  int rc = file_size(f, path, &fsize);
  if (!rc && fsize != bytes) rc = pc_fail("%s: file has %zu bytes, shape %zux%zu float32 needs %zu", path, fsize, n, d, bytes);
  size_t rows = n;
  if (!rc) rc = seek_rows(f, path, n, d * 4, part, &first, &rows);
  count = rows * d;
  float *x = rc ? NULL : pc_try_alloc(count, sizeof *x, path);
  if (!rc && !x) rc = -1;
  if (!rc && fread(x, 4, count, f) != count) rc = pc_fail("%s: read error", path);
  if (!rc) rc = check_finite(x, count, d, first, path);
  fclose(f);
  if (finish_read(rc, x, rows, d, out) != 0) return -1;
  out->first = first, out->total = n;
  return 0;
}

int pc_read_npy(const char *path, pc_points *out) { return read_npy_part(path, 0, out); }

int pc_read_raw_f32(const char *path, size_t n, size_t d, pc_points *out) {
  return read_raw_f32_part(path, n, d, 0, out);
}

int pc_read_points(const char *path, size_t raw_n, size_t raw_d, pc_points *out) {
  return pc_read_points_part(path, raw_n, raw_d, 0, out);
}

/* The line starts of a text file in bytes [lo, hi): *count of them, the first at *first (hi when
 * none). A line starts at byte 0 and after "\n", "\r\n" or a lone "\r" (split_line's ends). */
static int text_line_starts(FILE *f, const char *path, size_t lo, size_t hi, size_t *first, size_t *count) {
  *first = hi, *count = 0;
  if (lo >= hi) return 0;
  const size_t from = lo ? lo - 1 : 0;
  if (fseeko(f, (off_t)from, SEEK_SET) != 0) return pc_fail("%s: seek error", path);
  char block[1 << 16];
  int prev = lo ? -1 : '\n'; /* byte 0 starts a line */
  for (size_t at = from; at < hi;) {
    const size_t want = hi - at < sizeof block ? hi - at : sizeof block, got = fread(block, 1, want, f);
    if (got == 0) return pc_fail("%s: read error", path);
    for (size_t i = 0; i < got; i++, at++) {
      const int c = (unsigned char)block[i];
      if (at >= lo && (prev == '\n' || (prev == '\r' && c != '\n'))) {
        if (*count == 0) *first = at;
        ++*count;
      }
      prev = c;
    }
  }
  return 0;
}

/* What a rank found in its part of a text file, for the checks that span ranks. */
typedef struct {
  uint64_t n, d, first_row_line, kind, kind_line, header_line, seen;
} text_part_summary;

/* A text file across MPI ranks, each reading the lines that start in its share of the bytes (a
 * split scan: line numbers continue from the earlier ranks' counts) and then sending its rows to
 * the ranks whose slices hold them (pc_dist_slice). What one process checks across the whole file
 * is checked across the parts: the header only on the file's first line with a value, one
 * separator and one row length throughout; the earliest error in the file is the one reported. */
static int read_text_part(const char *path, pc_points *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "r");
  int rc = f ? 0 : pc_fail("cannot open '%s': %s", path, strerror(errno));
  size_t size = 0, lo = 0, len = 0, start = 0, starts = 0;
  if (!rc) rc = file_size(f, path, &size);
  if (!rc) pc_dist_share(size, &lo, &len), rc = text_line_starts(f, path, lo, lo + len, &start, &starts);
  text_reading t = {0};
  if (!pc_dist_any_failed(rc != 0)) {
    size_t ranks;
    size_t *all_starts = pc_dist_allgather(&starts, 1, sizeof starts, &ranks);
    for (int r = 0; r < pc_dist_rank(); r++) t.line_no += all_starts[r];
    free(all_starts);
    if (start < lo + len && fseeko(f, (off_t)start, SEEK_SET) != 0) rc = pc_fail("%s: seek error", path);
    else if (start < lo + len) rc = read_text_lines(f, path, start, lo + len, &t);
  } else {
    rc = -1;
  }
  if (f) fclose(f);
  /* the checks that span ranks, against what the earlier ranks found */
  text_part_summary mine = {t.n, t.d, t.first_row_line, t.file_kind, t.kind_line, t.header_line, t.seen_first}, *all;
  size_t ranks;
  all = pc_dist_allgather(&mine, 1, sizeof mine, &ranks);
  text_part_summary before = {0};
  for (int r = 0; r < pc_dist_rank(); r++) {
    if (!before.d && all[r].n) before.d = all[r].d;
    if (!before.kind && all[r].kind) before.kind = all[r].kind, before.kind_line = all[r].kind_line;
    if (!before.seen && all[r].seen) before.seen = 1, before.header_line = all[r].header_line;
  }
  size_t error_line = rc ? t.line_no : SIZE_MAX; /* this rank's first error: its own, or one of these */
  if (t.mismatch && before.kind == t.file_kind) /* the file's separator came first on an earlier rank */
    rc = separator_mismatch(path, t.line_no, t.mismatch, (size_t)before.kind_line, (sep_kind)before.kind);
  if (t.header_line && before.seen && t.header_line <= error_line) /* a word after rows: no header */
    error_line = t.header_line, rc = pc_fail("%s", t.header_error);
  if (t.file_kind && before.kind && t.file_kind != before.kind && t.kind_line < error_line)
    error_line = t.kind_line,
    rc = separator_mismatch(path, t.kind_line, t.file_kind, (size_t)before.kind_line, (sep_kind)before.kind);
  if (t.n && before.d && t.d != before.d && t.first_row_line < error_line)
    rc = pc_fail("%s: line %zu has %zu values, expected %zu (ragged rows)", path, t.first_row_line, t.d,
                 (size_t)before.d);
  size_t total = 0, first_row = 0, d = 0, header_line = 0;
  for (size_t r = 0; r < ranks; r++) {
    if ((int)r < pc_dist_rank()) first_row += all[r].n;
    if (!d && all[r].n) d = all[r].d;
    if (!header_line && all[r].seen) header_line = all[r].header_line ? all[r].header_line : SIZE_MAX;
    total += all[r].n;
  }
  free(all);
  if (pc_dist_any_failed(rc != 0) || (total == 0 && pc_fail("%s: no data rows", path))) {
    free(t.x);
    return -1;
  }
  /* rows [first_row, first_row + t.n) go to the ranks whose slices hold them, in order */
  const int size_ranks = pc_dist_size();
  size_t *counts = pc_xalloc((size_t)size_ranks, sizeof *counts, "text rows to send");
  for (int r = 0; r < size_ranks; r++) counts[r] = 0;
  for (size_t i = 0; i < t.n; i++) counts[pc_dist_slice_owner(total, first_row + i)]++;
  size_t got;
  float *x = pc_dist_exchange(t.x, counts, d * sizeof *x, &got);
  free(t.x), free(counts);
  if (!x) return -1;
  out->x = x, out->d = d, out->n = got, out->total = total;
  size_t count;
  pc_dist_slice(total, &out->first, &count);
  out->header_line = header_line == SIZE_MAX ? 0 : header_line;
  return 0;
}

int pc_read_points_part(const char *path, size_t raw_n, size_t raw_d, int part, pc_points *out) {
  if (raw_n > 0) return read_raw_f32_part(path, raw_n, raw_d, part, out);
  if (pc_has_suffix(path, ".npy")) return read_npy_part(path, part, out);
  return part ? read_text_part(path, out) : pc_read_text(path, out);
}

int pc_points_move_rows(pc_points *p, size_t first, size_t count) {
  const int ranks = pc_dist_size();
  if (ranks == 1) return 0; /* one process holds every row, as it wants */
  const size_t want[2] = {first, count};
  size_t all;
  size_t *wanted = pc_dist_allgather(want, 1, sizeof want, &all); /* every rank's (first, count) */
  size_t *counts = pc_xalloc((size_t)ranks, sizeof *counts, "rows to send");
  for (int r = 0; r < ranks; r++) { /* the overlap of this rank's rows with rank r's range */
    const size_t lo = p->first > wanted[2 * r] ? p->first : wanted[2 * r];
    const size_t hi_mine = p->first + p->n, hi_theirs = wanted[2 * r] + wanted[2 * r + 1];
    const size_t hi = hi_mine < hi_theirs ? hi_mine : hi_theirs;
    counts[r] = hi > lo ? hi - lo : 0;
  }
  free(wanted);
  size_t got;
  float *x = pc_dist_exchange(p->x, counts, p->d * sizeof *x, &got); /* in rank order: row order */
  free(counts);
  /* the message first: pc_dist_any_failed hands the failing rank's to rank 0 */
  const int failed = !x || (got != count && pc_fail("moving rows across ranks: %zu rows came for %zu", got, count));
  if (pc_dist_any_failed(failed)) {
    free(x);
    return -1;
  }
  free(p->x);
  p->x = x, p->first = first, p->n = count;
  return 0;
}

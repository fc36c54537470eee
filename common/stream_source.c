/* stream_source.c - see stream_source.h. */
#include "stream_source.h"
#include "cli.h"
#include "util.h"

#include <string.h>

static int read_generated(void *ctx, size_t first, size_t rows, float *out) {
  pc_gen_rows(ctx, first, rows, out);
  return 0;
}

static int read_loaded(void *ctx, size_t first, size_t rows, float *out) {
  const pc_points *p = ctx;
  memcpy(out, p->x + first * p->d, rows * p->d * sizeof *out);
  return 0;
}

int pc_stream_open(const char *input, size_t raw_n, size_t raw_d, pc_gen_spec *spec, pc_points *loaded, int *generated,
                   double *load_s, pc_stream *out) {
  *generated = !strncmp(input, "gen:", 4);
  *load_s = 0.0;
  if (*generated) {
    if (pc_gen_parse(input + 4, spec) != 0) return -1;
    *out = (pc_stream){spec->n, spec->d, read_generated, spec};
  } else {
    const double t0 = pc_now();
    if (pc_read_points(input, raw_n, raw_d, loaded) != 0) return -1;
    *load_s = pc_now() - t0;
    *out = (pc_stream){loaded->n, loaded->d, read_loaded, loaded};
  }
  if (out->n > (size_t)PC_MAX_POINTS) return pc_fail("%zu points: at most %d are supported", out->n, PC_MAX_POINTS);
  return 0;
}

/* stream_source.c - see stream_source.h. */
#include "stream_source.h"
#include "dist.h"
#include "util.h"

#include <string.h>

static int read_generated(void *ctx, size_t first, size_t rows, float *out) {
  pc_gen_rows(ctx, first, rows, out);
  return 0;
}

static int read_loaded(void *ctx, size_t first, size_t rows, float *out) {
  const pc_points *p = ctx;
  if (first < p->first || first + rows > p->first + p->n)
    return pc_fail("rows %zu to %zu were not read here (rows %zu to %zu were)", first, first + rows, p->first,
                   p->first + p->n);
  memcpy(out, p->x + (first - p->first) * p->d, rows * p->d * sizeof *out);
  return 0;
}

static int stream_open(const char *input, size_t raw_n, size_t raw_d, int part, pc_stream_input *in) {
  memset(in, 0, sizeof *in);
  in->generated = !strncmp(input, "gen:", 4);
  if (in->generated) {
    if (pc_gen_parse(input + 4, &in->spec) != 0) return -1;
    in->stream = (pc_stream){in->spec.n, in->spec.d, read_generated, &in->spec};
  } else {
    const double t0 = pc_now();
    if (pc_read_points_part(input, raw_n, raw_d, part, &in->loaded) != 0) return -1; /* sets first, total */
    in->load_s = pc_now() - t0;
    in->stream = (pc_stream){in->loaded.total, in->loaded.d, read_loaded, &in->loaded};
  }
  if (in->stream.n > (size_t)PC_MAX_POINTS)
    return pc_fail("%zu points: at most %d are supported", in->stream.n, PC_MAX_POINTS);
  return 0;
}

int pc_stream_open(const char *input, size_t raw_n, size_t raw_d, pc_stream_input *in) {
  return stream_open(input, raw_n, raw_d, 0, in);
}

int pc_stream_open_part(const char *input, size_t raw_n, size_t raw_d, pc_stream_input *in) {
  return stream_open(input, raw_n, raw_d, pc_dist_size() > 1, in);
}

int pc_stream_keep_rows(pc_stream_input *in, size_t first, size_t count) {
  if (in->generated) return 0;
  const double t0 = pc_now();
  const int rc = pc_points_move_rows(&in->loaded, first, count);
  in->load_s += pc_now() - t0;
  return rc;
}

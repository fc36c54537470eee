/*
 * stream_source.h - points read a range of rows at a time, for the streaming algorithms
 * (streamkm, stream): a gen: input is generated on demand and never held whole; a file is read
 * whole, then served in ranges.
 */
#ifndef PC_STREAM_SOURCE_H
#define PC_STREAM_SOURCE_H

#include "data.h"
#include "synth.h"

#include <stddef.h>

/* read(ctx, first, rows, out) writes rows [first, first + rows) of the n x d data, row-major,
 * to out; returns 0, or -1 with a pc_fail message. */
typedef struct {
  size_t n, d;
  int (*read)(void *ctx, size_t first, size_t rows, float *out);
  void *ctx;
} pc_stream;

/* The stream behind a command's INPUT: "gen:SPEC" (parsed into *spec, which must outlive the
 * stream; *generated = 1), else a file read whole into *loaded (raw_n, raw_d: the shape of raw
 * float32; *load_s: its reading time). At most PC_MAX_POINTS points. Returns 0, or -1 with a
 * pc_fail message. */
int pc_stream_open(const char *input, size_t raw_n, size_t raw_d, pc_gen_spec *spec, pc_points *loaded, int *generated,
                   double *load_s, pc_stream *out);

#endif

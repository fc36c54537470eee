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

/* A command's INPUT as a stream: the stream and what it reads from. Not to be copied once open
 * (the stream points into it). */
typedef struct {
  pc_stream stream;
  int generated;     /* 1: "gen:SPEC", rows produced on demand from spec */
  pc_gen_spec spec;
  pc_points loaded;  /* else the file, read whole (free with pc_points_free) */
  double load_s;     /* the file's reading time */
} pc_stream_input;

/* Opens INPUT: "gen:SPEC", or a file (raw_n, raw_d: the shape of raw float32). At most
 * PC_MAX_POINTS points. Returns 0, or -1 with a pc_fail message. */
int pc_stream_open(const char *input, size_t raw_n, size_t raw_d, pc_stream_input *in);

#endif

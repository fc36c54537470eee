/*
 * stream_source.h - points read a range of rows at a time, for the streaming algorithms
 * (streamkm, stream): a gen: input is generated on demand and never held whole; a file is read
 * whole, then served in ranges (across MPI ranks, each rank's rows only: pc_stream_open_part).
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
  pc_points loaded;  /* else the file's rows [loaded.first, loaded.first + loaded.n) (free with pc_points_free) */
  double load_s;     /* the file's reading time */
} pc_stream_input;

/* Opens INPUT: "gen:SPEC", or a file (raw_n, raw_d: the shape of raw float32). At most
 * PC_MAX_POINTS points. Returns 0, or -1 with a pc_fail message. */
int pc_stream_open(const char *input, size_t raw_n, size_t raw_d, pc_stream_input *in);
/* The same across MPI ranks (dist.h), every rank calling it: a file's rows are read a slice a rank
 * (pc_read_points_part), so that no rank holds them all; once the caller knows the rows it will
 * read, pc_stream_keep_rows moves them there. The stream's n is every rank's rows. */
int pc_stream_open_part(const char *input, size_t raw_n, size_t raw_d, pc_stream_input *in);
/* This rank will read rows [first, first + count) only (a range for each rank, contiguous and in
 * rank order): a file's rows move there (pc_points_move_rows); a read outside them fails. Every
 * rank calls it; a generator needs nothing. 0, or -1 with a pc_fail message. */
int pc_stream_keep_rows(pc_stream_input *in, size_t first, size_t count);

#endif

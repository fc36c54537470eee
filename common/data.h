/*
 * data.h - reading points.
 *
 * Points are float32, row-major (point i, feature j at x[i*d + j]) in memory.
 * Readers (all return 0, or -1 with a pc_fail message; on failure *out is left empty). A reader
 * never changes n or d without saying so:
 *  - text: one point per line; lines end at LF, CRLF or a lone CR (old Mac files); a UTF-8
 *    byte-order mark at the start is skipped. Values are separated by white space, or by one ','
 *    or one ';' (white space around it allowed), one kind of separator in the whole file (a
 *    trailing separator counts): a row that mixes two (decimal commas: "1,53 3,46"), a row whose
 *    separator differs from the earlier rows', and an empty field ("1,,2", ",1") are errors
 *    naming the line. An optional header line (the first line with a non-numeric token) is
 *    skipped and its line number kept in header_line; blank lines, lines of separators only and
 *    lines starting with '#' are skipped. Ragged rows, non-numeric tokens, NaN/Inf, values
 *    outside the float range and empty input are errors naming the line.
 *  - .npy: NumPy arrays of '<f4' or '<f8', C order, shape (n, d) or (n,); the header is parsed
 *    as the Python literal dict it is: exactly the keys 'descr', 'fortran_order' and 'shape'.
 *  - raw float32 (native byte order) with an explicit shape: the file size must match.
 * The writers are in output.h.
 */
#ifndef PC_DATA_H
#define PC_DATA_H

#include <stddef.h>

/* Labels are int: the most points one run takes. */
#define PC_MAX_POINTS 0x7fffffff

typedef struct {
  size_t n, d;
  float *x;           /* n*d values, row-major; owned */
  size_t header_line; /* the line number of the header line the text reader skipped; 0: none */
  /* The input's rows are [first, first + n) of total: across MPI ranks (dist.h) a generator or a
   * .npy or raw file gives this rank's slice (pc_load_input, pc_read_points_part); else 0 and n. */
  size_t first, total;
} pc_points;

void pc_points_free(pc_points *p);

/* The summary line's note on a skipped header: " (header line 3 skipped)", or with `what`
 * " (--insert: header line 3 skipped)"; "" when header_line is 0. The text lives in one of 4
 * static buffers, used in turn: valid for the next 3 calls (enough for one printf). */
const char *pc_header_note(const char *what, size_t header_line);

int pc_read_text(const char *path, pc_points *out);
int pc_read_npy(const char *path, pc_points *out);
int pc_read_raw_f32(const char *path, size_t n, size_t d, pc_points *out);

/* Chooses the reader by name: ".npy" -> npy; raw when raw_n > 0 (shape given); else text. */
int pc_read_points(const char *path, size_t raw_n, size_t raw_d, pc_points *out);
/* The same, when `part`, reading only this MPI rank's slice of the rows (dist.h; first and total
 * say which): from a .npy or raw file by offset, from a text file by a split scan (each rank
 * parses the lines that start in its share of the bytes, then the rows move to their slices).
 * Every rank calls it; an error is every rank's. */
int pc_read_points_part(const char *path, size_t raw_n, size_t raw_d, int part, pc_points *out);
/* Across MPI ranks: the rows move so that this rank holds rows [first, first + count) of
 * p->total, where every rank names its own range (the ranges contiguous, in rank order, and
 * covering the rows, as the ranks' slices are): streaming k-means' chunks from pc_dist_slice's
 * groups. Every rank calls it. 0, or -1 with a pc_fail message (memory), on every rank. */
int pc_points_move_rows(pc_points *p, size_t first, size_t count);

#endif

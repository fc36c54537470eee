/*
 * data.h - reading points and writing results.
 *
 * Points are float32, row-major (point i, feature j at x[i*d + j]) in memory.
 * Readers (all return 0, or -1 with a pc_fail message; on failure *out is left empty):
 *  - text: one point per line, values separated by white space and/or commas; an optional
 *    header line (a first line with a non-numeric token); blank lines and lines starting
 *    with '#' are skipped. Ragged rows, non-numeric tokens, NaN/Inf, values outside the
 *    float range and empty input are errors naming the line.
 *  - .npy: NumPy arrays of '<f4' or '<f8', C order, shape (n, d) or (n,).
 *  - raw float32 (native byte order) with an explicit shape: the file size must match.
 * Writers stage their output in a temporary file beside the target; pc_outputs_commit()
 * renames every staged file into place once the program has succeeded, and an exit before
 * that (pc_die included) removes them: a failed run never leaves a partial or lone output.
 */
#ifndef PC_DATA_H
#define PC_DATA_H

#include <stddef.h>

typedef struct {
  size_t n, d;
  float *x; /* n*d values, row-major; owned */
} pc_points;

void pc_points_free(pc_points *p);

int pc_read_text(const char *path, pc_points *out);
int pc_read_npy(const char *path, pc_points *out);
int pc_read_raw_f32(const char *path, size_t n, size_t d, pc_points *out);

/* Chooses the reader by name: ".npy" -> npy; raw when raw_n > 0 (shape given); else text. */
int pc_read_points(const char *path, size_t raw_n, size_t raw_d, pc_points *out);

/* Writes labels (n ints) or a k x d float matrix; ".npy" names get NumPy files
 * (int32 / float32), other names text (one label per line; one centroid per line). */
int pc_write_labels(const char *path, const int *labels, size_t n);
int pc_write_matrix(const char *path, const float *m, size_t rows, size_t cols);

/* Stages `len` bytes of `text` for `path`. */
int pc_write_text_file(const char *path, const char *text, size_t len);

/* Moves every staged output into place; 0, or -1 with a message (the rest are removed). */
int pc_outputs_commit(void);

#endif

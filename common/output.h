/*
 * output.h - the files a run writes, written all-or-nothing.
 *
 * Every writer stages its output in a hidden temporary file in the target's folder
 * (".pragmaclust.tmp.<pid>.<i>", created with the umask's permissions); pc_outputs_commit()
 * renames every staged file into place once the program has succeeded. Until then nothing
 * exists under a target's name, and whatever ends the program first removes the staged files:
 * an exit (pc_die included) through atexit, and a signal whose default action ends the process
 * (SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGABRT from a runtime's abort, SIGSEGV, ...) through an
 * async-signal-safe handler that unlinks them and then lets the signal take its previous action.
 * SIGKILL cannot be caught. Targets that are not regular files (/dev/stdout, a FIFO) are
 * written directly.
 *
 * Before any work, the command-line layer names every file a run reads (pc_io_input) and
 * writes (pc_io_output); pc_io_check() refuses two outputs that are one file and an output that
 * is an input, comparing device and inode where the file exists and the resolved path where it
 * does not yet.
 */
#ifndef PC_OUTPUT_H
#define PC_OUTPUT_H

#include <stddef.h>

/* Writes labels (n ints) or a rows x cols float matrix; ".npy" names get NumPy files
 * (int32 / float32), other names text (one label per line; one row per line). 0, or -1 with a
 * pc_fail message. */
int pc_write_labels(const char *path, const int *labels, size_t n);
int pc_write_matrix(const char *path, const float *m, size_t rows, size_t cols);

/* Stages `len` bytes of `text` for `path`. */
int pc_write_text_file(const char *path, const char *text, size_t len);

/* Moves every staged output into place, with the terminating signals held back meanwhile (one
 * that arrives is acted on afterwards, with every output in place); 0, or -1 with a message
 * (the files not yet moved are removed). */
int pc_outputs_commit(void);

/* Records that option `option` (for example "--labels", or "INPUT") names a file the run reads
 * or writes. An empty path, or "-" for an output (standard output), is not a file. */
void pc_io_input(const char *option, const char *path);
void pc_io_output(const char *option, const char *path);

/* 0 when no two recorded outputs are one file and no output is a recorded input; else -1 with
 * a message naming both options and the path. */
int pc_io_check(void);

/* Forgets the recorded inputs and outputs (for tests that parse several command lines). */
void pc_io_reset(void);

#endif

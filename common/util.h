/*
 * util.h - errors, checked allocation and small helpers shared by every subcommand.
 *
 * Library functions report failure by returning -1 (or NULL) after pc_fail() has stored a
 * one-line message; the command-line layer prints it with pc_die(). Nothing here exits
 * except pc_die() and the pc_x*alloc() helpers, which end the program with PC_EXIT_USAGE
 * when memory cannot be had, since no caller can do better.
 */
#ifndef PC_UTIL_H
#define PC_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
  PC_EXIT_OK = 0,
  PC_EXIT_FAILURE = 1,   /* a self-check failed */
  PC_EXIT_USAGE = 2,     /* bad input, bad options, sizes that cannot be handled */
  PC_EXIT_NO_DEVICE = 3, /* the gpu variant found no usable GPU */
};

/* Stores a printf-style one-line message for pc_last_error(); returns -1. The message is the
 * calling thread's own (thread-local storage). */
int pc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *pc_last_error(void);
/* Puts "<context>: " before the last message, which stays an out-of-memory one if it was one
 * (a caller's context for a callee's failure). Returns -1. */
int pc_fail_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1 when the last pc_fail message of this thread was pc_try_alloc's (memory could not be had),
 * so that the library API can tell out-of-memory from other failures. */
int pc_last_error_out_of_memory(void);
/* pc_fail for memory that could not be had, as pc_try_alloc reports it: for a failure found in
 * a parallel loop, whose threads' messages the caller cannot see. Returns -1. */
int pc_fail_out_of_memory(const char *what);

/* A request that the running computation stop at its next check point (each k-means
 * iteration, streaming k-means chunk, DBSCAN and density-peaks phase end), for the library's
 * pragmaclust_interrupt: any thread or a signal handler may make it (a lock-free atomic store).
 * Cleared by pc_clear_stop when a library call starts. */
void pc_request_stop(void);
void pc_clear_stop(void);
int pc_stop_requested(void);
/* pc_fail for a computation that stopped at such a request; pc_last_error_stopped says whether
 * this thread's last failure was one. Returns -1. */
int pc_fail_stopped(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int pc_last_error_stopped(void);

/* Prints "pragmaclust: error: <message>" on stderr, runs the pc_at_end() functions and ends the
 * program with status `code`. It ends it by _exit, not exit: the memory still held is the
 * system's to take back at an error, so the sanitizer build reports no leak for it, and no
 * run-time library's exit handlers run after a failure. */
_Noreturn void pc_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Registers fn to run when the program ends: at exit() and return from main (through atexit),
 * and in pc_die(). At most 8 functions. */
void pc_at_end(void (*fn)(void));

/* The name the program was started as (the last part of argv[0], for example "pragmaclust-omp"),
 * set once by main(); "pragmaclust" before that. */
void pc_set_program_name(const char *argv0);
const char *pc_program_name(void);

/* Prints a usage text on f, with every "{prog}" in it replaced by pc_program_name(). */
void pc_print_usage(FILE *f, const char *text);

/* Sets *out = a * b; returns -1 (and a pc_fail message naming `what`) on size_t overflow. */
int pc_mul_size(size_t a, size_t b, size_t *out, const char *what);

/* malloc/calloc of count*size bytes, 64-byte aligned; on overflow or exhaustion they die with a
 * message naming `what`. pc_try_alloc returns NULL with a pc_fail message instead. */
void *pc_xalloc(size_t count, size_t size, const char *what);
void *pc_xcalloc(size_t count, size_t size, const char *what);
void *pc_try_alloc(size_t count, size_t size, const char *what);

/* strdup that dies (PC_EXIT_USAGE) when memory cannot be had. */
char *pc_xstrdup(const char *s);

/* 1 when s ends with suffix. */
int pc_has_suffix(const char *s, const char *suffix);

/* 1 when the count floats of x are all finite, with the largest |x[i]| in *max_abs (0 for none);
 * else 0 (*max_abs then infinity or NaN). One pass, vectorised. */
int pc_finite_max_abs(const float *x, size_t count, float *max_abs);

/* The largest |x[i]| of count finite floats (0 for none; infinity where one is not finite). */
double pc_max_abs(const float *x, size_t count);

/* 0 when float32 squared Euclidean distances in d dimensions between points whose values lie in
 * [-max_abs, max_abs] stay finite, else -1 with a pc_fail message naming `what`. For the
 * algorithms that measure distances in float32 (k-means and what is built on it). */
int pc_check_float_distances(double max_abs, size_t d, const char *what);

/* Monotonic wall-clock time in seconds. */
double pc_now(void);

/* Median, minimum and maximum of v[0..n-1] (all zero for n == 0). */
typedef struct {
  double median, min, max;
} pc_stats;
pc_stats pc_stats_of(const double *v, size_t n);

#endif

/*
 * cli.h - command-line conventions shared by every subcommand.
 *
 * Every subcommand takes one INPUT (a data file, or "gen:SPEC" for synthetic data, see
 * synth.h) and the common options below; it adds its own long options to the table it gives
 * pc_cli_parse(). Errors end the program with a one-line message and exit status 2.
 */
#ifndef PC_CLI_H
#define PC_CLI_H

#include <getopt.h>
#include <stddef.h>

#include "data.h"
#include "device.h"
#include "synth.h"


typedef struct {
  const char *input;      /* path or "gen:..." */
  size_t raw_n, raw_d;    /* --shape N,D: input is raw float32 */
  int threads;            /* --threads (0: OpenMP default) */
  int allow_host;         /* --allow-host: gpu build may run on the host */
  const char *report;     /* --report FILE ("-": stdout) */
  int repeat, warmup;     /* --repeat, --warmup */
  int quiet;              /* --quiet: no summary on stderr */
  unsigned long long seed;/* --seed */
  pc_kernels kernels;     /* --kernels tuned|portable (algorithms with tuned kernels; the others have the portable ones only) */
  int check;              /* --check: recompute a sample of the results after the run (check.h) */
} pc_common_opts;

/* Long options every subcommand accepts; ids >= PC_OPT_COMMON_FIRST. */
enum { PC_OPT_COMMON_FIRST = 1000, PC_OPT_SHAPE = PC_OPT_COMMON_FIRST, PC_OPT_THREADS, PC_OPT_ALLOW_HOST,
       PC_OPT_REPORT, PC_OPT_REPEAT, PC_OPT_WARMUP, PC_OPT_QUIET, PC_OPT_SEED, PC_OPT_HELP, PC_OPT_VERSION,
       PC_OPT_KERNELS, PC_OPT_CHECK,
       PC_OPT_COMMON_END };

/* Parses argv for subcommand `name`. `own` lists its options (terminated by a zeroed entry);
 * for each one found, handle(id, optarg, ctx) is called; a handler that takes a file names it
 * with pc_io_input / pc_io_output (output.h). `usage` is printed for --help, with "{prog}" as
 * the program's name (then exit 0); --version prints the build (exit 0). Fills *common; dies on
 * unknown options, a missing/extra INPUT, and (pc_io_check) outputs that are one file or an
 * input, before any work is done. */
void pc_cli_parse(const char *name, int argc, char **argv, const struct option *own, const char *short_opts,
                  void (*handle)(int id, const char *arg, void *ctx), void *ctx, const char *usage,
                  pc_common_opts *common);

/* Number parsing for options: dies with "option NAME: ..." unless text is a whole number in
 * [min, max] (or a finite real in [min, max]). */
long long pc_parse_int(const char *name, const char *text, long long min, long long max);
double pc_parse_real(const char *name, const char *text, double min, double max);
/* A size in bytes for an option: a positive whole number, optionally followed by K, M, G or T
 * (powers of 1024; either case): 64K, 512M, 2G. Dies with "option NAME: ..." otherwise. */
unsigned long long pc_parse_bytes(const char *name, const char *text);

/* "<program> [subcommand] <version> (variant, commit, compiler)" on stdout. */
void pc_print_version(const char *subcommand);

/* The most host threads --threads takes: 4 per logical CPU (or the OpenMP thread limit, when
 * lower). More only oversubscribe the cores, and thousands make the OpenMP runtime abort. */
int pc_max_threads(void);

/* Across MPI ranks (common/dist.h; nothing in one process): rank 0 alone reports and prints, the
 * other ranks run quiet and without a report; --check, which needs every point in one process,
 * is refused. */
void pc_cli_across_ranks(const char *name, pc_common_opts *common);

/* Loads or generates the input. Dies with the reader's message on failure; *seconds gets
 * the time it took, *gen the generator spec when INPUT was "gen:..." (else kind unset). */
void pc_load_input(const pc_common_opts *common, pc_points *points, double *seconds, int *generated);

#endif

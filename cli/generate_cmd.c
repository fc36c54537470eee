/*
 * generate_cmd.c - the `generate` subcommand: writes a synthetic data set (see synth.h) to a
 * file, so that experiments can time loading it (Cao et al.'s I/O cost) or share it.
 */
#include "check.h"
#include "cli.h"
#include "commands.h"
#include "data.h"
#include "output.h"
#include "synth.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: {prog} generate gen:SPEC --out FILE [--truth FILE]\n"
    "Writes the data set of a generator spec (gen:uniform:n=N,d=D[,seed=S] or\n"
    "gen:blobs:n=N,d=D[,centers=C,std=S,box=B,seed=S]): .npy names get a float32 array, others text.\n"
    "  --out FILE     the points\n"
    "  --truth FILE   for blobs: each point's generating cluster (0-based), one per line or .npy int32\n"
    "  --check        a sample of the rows generated again one at a time and compared bit for bit\n"
    "                 (exit 1 on a mismatch, and no file is written)\n";

enum { OPT_OUT = 2000, OPT_TRUTH };
static const struct option own_options[] = {
    {"out", required_argument, NULL, OPT_OUT}, {"truth", required_argument, NULL, OPT_TRUTH}, {NULL, 0, NULL, 0}};

typedef struct {
  const char *out, *truth;
} generate_opts;

static void handle_option(int id, const char *arg, void *ctx) {
  generate_opts *o = ctx;
  if (id == OPT_OUT) o->out = arg, pc_io_output("--out", arg);
  if (id == OPT_TRUTH) o->truth = arg, pc_io_output("--truth", arg);
}

int pc_cmd_generate(int argc, char **argv) {
  generate_opts o = {NULL, NULL};
  pc_common_opts c;
  pc_cli_parse("generate", argc, argv, own_options, "", handle_option, &o, usage, &c);
  if (!o.out) pc_die(PC_EXIT_USAGE, "generate: --out FILE is required");
  pc_gen_spec spec;
  if (strncmp(c.input, "gen:", 4) != 0) pc_die(PC_EXIT_USAGE, "generate: INPUT must be a gen:SPEC, got '%s'", c.input);
  if (pc_gen_parse(c.input + 4, &spec) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  if (o.truth && spec.kind != PC_GEN_BLOBS) pc_die(PC_EXIT_USAGE, "generate: --truth needs a blobs spec");
  if (spec.n > (size_t)PC_MAX_POINTS) pc_die(PC_EXIT_USAGE, "%zu points: at most %d are supported", spec.n, PC_MAX_POINTS);
  float *x = pc_xalloc(spec.n * spec.d, sizeof *x, "generated data");
  pc_gen_rows(&spec, 0, spec.n, x);
  if (c.check) {
    pc_check ck = {0};
    pc_check_generated(&ck, &spec, x);
    pc_check_end(&ck, "generate");
    if (!c.quiet) fprintf(stderr, "generate: check passed: %zu rows sampled\n", ck.sampled);
  }
  if (pc_write_matrix(o.out, x, spec.n, spec.d) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  free(x);
  if (o.truth) {
    int *truth = pc_xalloc(spec.n, sizeof *truth, "truth labels");
    for (size_t i = 0; i < spec.n; i++) {
      const size_t blob = pc_gen_blob_of(&spec, i);
      truth[i] = blob == PC_GEN_NOISE ? -1 : (int)blob;
    }
    if (pc_write_labels(o.truth, truth, spec.n) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    free(truth);
  }
  if (pc_outputs_commit() != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  return PC_EXIT_OK;
}

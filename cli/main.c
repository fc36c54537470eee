/*
 * main.c - pragmaclust-<variant>: dispatches to the subcommands.
 *   pragmaclust-gpu kmeans data.txt -k 8 --report run.json
 *   pragmaclust-seq info
 */
#include "cli.h"
#include "commands.h"
#include "device.h"
#include "dist.h"
#include "kmeans_tuned.h"
#include "kmeanspp_tuned.h"
#include "knobs.h"
#include "report.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

#if !defined(PC_VARIANT_SEQ)
#include <omp.h>
#endif

static const char usage[] =
    "usage: {prog} SUBCOMMAND [options]     ({prog} --version: the build)\n"
    "subcommands:\n"
    "  kmeans   Lloyd's k-means ({prog} kmeans --help)\n"
    "  dbscan   DBSCAN, identical to sequential DBSCAN ({prog} dbscan --help)\n"
    "  dpc      density peaks clustering (GDPC: VP-tree, incremental) ({prog} dpc --help)\n"
    "  streamkm streaming k-means: k-means# per chunk, k-means++ on the union ({prog} streamkm --help)\n"
    "  stream   Cao et al.'s stream clustering: STREAM over blocks, or a sliding window ({prog} stream --help)\n"
    "  generate write a synthetic data set to a file ({prog} generate --help)\n"
    "  info     variant, compiler, flags and the OpenMP devices this build sees ({prog} info --help)\n";

static const char info_usage[] =
    "usage: {prog} info [--require-gpu] [--offload-costs]\n"
    "Prints the variant, compiler, flags, commit and version of this build, the host threads and\n"
    "the OpenMP devices it sees, where its kernels run, which tuned kernels it has, and its tuning\n"
    "knobs.\n"
    "  --require-gpu    exit with status 3 when the gpu variant finds no usable GPU\n"
    "  --offload-costs  also time what iterations are made of (gpu variant): an empty target region,\n"
    "                   nowait ones, maps and updates of one int, two doubles mapped back or written\n"
    "                   to host memory by the device, a small loop with a reduction\n"
    "                   (median microseconds of 2000 each)\n";

/* The usage, then the build in one line. */
static void print_usage(FILE *f) {
  pc_print_usage(f, usage);
  fprintf(f, "This build: %s, variant %s, %s.\n", pc_build_version(), pc_build_variant(), pc_build_compiler());
}

int pc_cmd_info(int argc, char **argv) {
  int allow_host = 1, offload_costs = 0;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--require-gpu")) allow_host = 0;
    else if (!strcmp(argv[a], "--offload-costs")) offload_costs = 1;
    else if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
      pc_print_usage(stdout, info_usage);
      return PC_EXIT_OK;
    } else if (!strcmp(argv[a], "--version")) {
      pc_print_version("info");
      return PC_EXIT_OK;
    } else {
      pc_die(PC_EXIT_USAGE, "info: unknown option '%s' (info takes --require-gpu and --offload-costs; see %s info --help)",
             argv[a], pc_program_name());
    }
  }
  pc_device_info dev;
  pc_device_init(allow_host, 0, &dev);
  printf("variant:        %s\n", pc_build_variant());
  printf("compiler:       %s\n", pc_build_compiler());
  printf("flags:          %s\n", pc_build_flags());
  printf("git commit:     %s\n", pc_build_commit());
  printf("version:        %s\n", pc_build_version());
  printf("host threads:   %d\n", dev.threads);
  printf("openmp devices: %d\n", pc_device_count());
  printf("kernels run on: %s\n", dev.where);
  const km_tuned_kernels *assign = km_tuned();
  const kmpp_tuned_kernels *sampling = kmpp_tuned();
  if (assign || sampling)
    printf("tuned kernels:  k-means assign: %s; k-means++ sampling: %s\n", assign ? assign->name : "none",
           sampling ? sampling->name : "none");
  else
    printf("tuned kernels:  none (--kernels tuned runs the portable loops)\n");
  if (dev.multiprocessors) printf("multiprocessors: %d\n", dev.multiprocessors);
  size_t count;
  const pc_knob *const *knobs = pc_knobs(&count);
  printf("tuning knobs:   %zu (make KNOBS='-DNAME=value' sets them; * not the default)\n", count);
  for (size_t i = 0; i < count; i++) {
    const pc_knob *knob = knobs[i];
    if (pc_knob_changed(knob)) printf("  %-28s %s *  (default %s)\n", knob->name, knob->value, knob->default_value);
    else printf("  %-28s %s\n", knob->name, knob->value);
  }
  if (offload_costs) {
    pc_offload_cost costs[8];
    const int filled = pc_offload_costs(costs, 8, 2000);
    if (!filled) printf("offload costs:  none (no offload device in this variant)\n");
    else printf("offload costs:  median microseconds on %s\n", dev.where);
    for (int c = 0; c < filled; c++) printf("  %9.2f  %s\n", costs[c].median_us, costs[c].what);
  }
  return PC_EXIT_OK;
}

int main(int argc, char **argv) {
  pc_set_program_name(argv[0]);
  pc_dist_init(&argc, &argv); /* MPI=1 builds: this process is one of the ranks (dist.h) */
  if (argc < 2) {
    print_usage(stderr);
    pc_die(PC_EXIT_USAGE, "missing SUBCOMMAND");
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
    print_usage(stdout);
    return PC_EXIT_OK;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
    pc_print_version(NULL);
    return PC_EXIT_OK;
  }
  if (pc_dist_size() > 1 && strcmp(argv[1], "kmeans") && strcmp(argv[1], "streamkm") && strcmp(argv[1], "dbscan"))
    pc_die(PC_EXIT_USAGE, "%s runs on one MPI rank; across ranks kmeans, streamkm and dbscan run (start it with one "
                          "rank)", argv[1]);
  if (!strcmp(argv[1], "kmeans")) return pc_cmd_kmeans(argc - 1, argv + 1);
  if (!strcmp(argv[1], "dbscan")) return pc_cmd_dbscan(argc - 1, argv + 1);
  if (!strcmp(argv[1], "dpc")) return pc_cmd_dpc(argc - 1, argv + 1);
  if (!strcmp(argv[1], "streamkm")) return pc_cmd_streamkm(argc - 1, argv + 1);
  if (!strcmp(argv[1], "stream")) return pc_cmd_stream(argc - 1, argv + 1);
  if (!strcmp(argv[1], "info")) return pc_cmd_info(argc - 1, argv + 1);
  if (!strcmp(argv[1], "generate")) return pc_cmd_generate(argc - 1, argv + 1);
  pc_die(PC_EXIT_USAGE, "unknown subcommand '%s' (kmeans, dbscan, dpc, streamkm, stream, generate, info; see %s --help)",
         argv[1], pc_program_name());
}

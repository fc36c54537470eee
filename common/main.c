/*
 * main.c - pragmaclust-<variant>: dispatches to the subcommands.
 *   pragmaclust-gpu kmeans data.txt -k 8 --report run.json
 *   pragmaclust-seq info
 */
#include "commands.h"
#include "device.h"
#include "report.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

#if !defined(PC_VARIANT_SEQ)
#include <omp.h>
#endif

static const char usage[] =
    "usage: pragmaclust-<variant> SUBCOMMAND [options]\n"
    "subcommands:\n"
    "  kmeans   Lloyd's k-means (pragmaclust kmeans --help)\n"
    "  dbscan   DBSCAN, identical to sequential DBSCAN (pragmaclust dbscan --help)\n"
    "  dpc      density peaks clustering (GDPC: VP-tree, incremental) (pragmaclust dpc --help)\n"
    "  streamkm streaming k-means: k-means# per chunk, k-means++ on the union (pragmaclust streamkm --help)\n"
    "  stream   Cao et al.'s stream clustering: STREAM over blocks, or a sliding window (pragmaclust stream --help)\n"
    "  generate write a synthetic data set to a file (pragmaclust generate --help)\n"
    "  info     variant, compiler, flags and the OpenMP devices this build sees\n"
    "This build: variant %s, %s.\n";

int pc_cmd_info(int argc, char **argv) {
  int allow_host = 1;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--require-gpu")) allow_host = 0;
    else pc_die(PC_EXIT_USAGE, "info: unknown option '%s' (info takes only --require-gpu)", argv[a]);
  }
  pc_device_info dev;
  pc_device_init(allow_host, 0, &dev);
  printf("variant:        %s\n", pc_build_variant());
  printf("compiler:       %s\n", pc_build_compiler());
  printf("flags:          %s\n", pc_build_flags());
  printf("git commit:     %s\n", pc_build_commit());
  printf("host threads:   %d\n", dev.threads);
  printf("openmp devices: %d\n", pc_device_count());
  printf("kernels run on: %s\n", dev.where);
  return PC_EXIT_OK;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, usage, pc_build_variant(), pc_build_compiler());
    pc_die(PC_EXIT_USAGE, "missing SUBCOMMAND");
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
    printf(usage, pc_build_variant(), pc_build_compiler());
    return PC_EXIT_OK;
  }
  if (!strcmp(argv[1], "kmeans")) return pc_cmd_kmeans(argc - 1, argv + 1);
  if (!strcmp(argv[1], "dbscan")) return pc_cmd_dbscan(argc - 1, argv + 1);
  if (!strcmp(argv[1], "dpc")) return pc_cmd_dpc(argc - 1, argv + 1);
  if (!strcmp(argv[1], "streamkm")) return pc_cmd_streamkm(argc - 1, argv + 1);
  if (!strcmp(argv[1], "stream")) return pc_cmd_stream(argc - 1, argv + 1);
  if (!strcmp(argv[1], "info")) return pc_cmd_info(argc - 1, argv + 1);
  if (!strcmp(argv[1], "generate")) return pc_cmd_generate(argc - 1, argv + 1);
  pc_die(PC_EXIT_USAGE, "unknown subcommand '%s' (kmeans, dbscan, dpc, streamkm, stream, generate, info; see pragmaclust-%s --help)", argv[1], pc_build_variant());
}

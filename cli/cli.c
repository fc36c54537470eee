/* cli.c - see cli.h. */
#include "cli.h"
#include "dist.h"
#include "output.h"
#include "par.h"
#include "report.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(PC_VARIANT_SEQ)
#include <omp.h>
#endif

static const struct option common_options[] = {
    {"shape", required_argument, NULL, PC_OPT_SHAPE},   {"threads", required_argument, NULL, PC_OPT_THREADS},
    {"allow-host", no_argument, NULL, PC_OPT_ALLOW_HOST}, {"report", required_argument, NULL, PC_OPT_REPORT},
    {"repeat", required_argument, NULL, PC_OPT_REPEAT}, {"warmup", required_argument, NULL, PC_OPT_WARMUP},
    {"quiet", no_argument, NULL, PC_OPT_QUIET},         {"seed", required_argument, NULL, PC_OPT_SEED},
    {"help", no_argument, NULL, PC_OPT_HELP},           {"version", no_argument, NULL, PC_OPT_VERSION},
    {"kernels", required_argument, NULL, PC_OPT_KERNELS}, {"check", no_argument, NULL, PC_OPT_CHECK},
};
enum { N_COMMON = sizeof common_options / sizeof common_options[0] };

long long pc_parse_int(const char *name, const char *text, long long min, long long max) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end) pc_die(PC_EXIT_USAGE, "option %s: '%s' is not a whole number", name, text);
  if (v < min || v > max) pc_die(PC_EXIT_USAGE, "option %s: %lld is outside [%lld, %lld]", name, v, min, max);
  return v;
}

double pc_parse_real(const char *name, const char *text, double min, double max) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end || isnan(v)) pc_die(PC_EXIT_USAGE, "option %s: '%s' is not a number", name, text);
  if (isinf(v) || (errno == ERANGE && fabs(v) > 1.0))
    pc_die(PC_EXIT_USAGE, "option %s: '%s' is beyond the largest double (%g)", name, text, DBL_MAX);
  if (errno == ERANGE || (v != 0.0 && fabs(v) < DBL_MIN)) /* underflow: rounded to 0 or a subnormal */
    pc_die(PC_EXIT_USAGE, "option %s: '%s' is below the smallest normal double (%g); give 0 or a larger value", name,
           text, DBL_MIN);
  if (v < min || v > max) pc_die(PC_EXIT_USAGE, "option %s: %g is outside [%g, %g]", name, v, min, max);
  return v;
}

unsigned long long pc_parse_bytes(const char *name, const char *text) {
  static const char units[] = "KMGT"; /* powers of 1024 */
  char *end;
  errno = 0;
  const unsigned long long v = strtoull(text, &end, 10);
  int shift = 0;
  const char *unit = end != text && *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
  if (unit) shift = 10 * (int)(unit - units + 1), end++;
  if (errno == ERANGE || !isdigit((unsigned char)text[0]) || *end)
    pc_die(PC_EXIT_USAGE, "option %s: '%s' is not a size in bytes (a whole number, optionally with K, M, G or T: "
                          "64K, 512M, 2G)", name, text);
  if (v == 0) pc_die(PC_EXIT_USAGE, "option %s: '%s' is no bytes at all; give a positive size", name, text);
  if (v > ULLONG_MAX >> shift) pc_die(PC_EXIT_USAGE, "option %s: '%s' is more bytes than a size can count", name, text);
  return v << shift;
}

int pc_max_threads(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  long limit = 4 * (cpus > 0 ? cpus : 1);
#if !defined(PC_VARIANT_SEQ)
  if (omp_get_thread_limit() < limit) limit = omp_get_thread_limit();
#endif
  return (int)(limit < 1 ? 1 : limit);
}

static void parse_shape(const char *text, pc_common_opts *c) {
  char *end;
  errno = 0;
  unsigned long long n = strtoull(text, &end, 10);
  if (errno || end == text || (*end != ',' && *end != 'x') || text[0] == '-')
    pc_die(PC_EXIT_USAGE, "option --shape: expected N,D (e.g. 1000000,8), got '%s'", text);
  const char *dtext = end + 1;
  errno = 0;
  unsigned long long d = strtoull(dtext, &end, 10);
  if (errno || end == dtext || *end || dtext[0] == '-' || n == 0 || d == 0)
    pc_die(PC_EXIT_USAGE, "option --shape: expected positive N,D, got '%s'", text);
  c->raw_n = (size_t)n;
  c->raw_d = (size_t)d;
}

void pc_cli_parse(const char *name, int argc, char **argv, const struct option *own, const char *short_opts,
                  void (*handle)(int id, const char *arg, void *ctx), void *ctx, const char *usage,
                  pc_common_opts *common) {
  memset(common, 0, sizeof *common);
  common->repeat = 1;
  common->seed = 1;
  size_t n_own = 0;
  while (own && own[n_own].name) n_own++;
  struct option *all = pc_xcalloc(n_own + N_COMMON + 1, sizeof *all, "option table");
  memcpy(all, own, n_own * sizeof *all);
  memcpy(all + n_own, common_options, sizeof common_options);
  char shorts[64];
  snprintf(shorts, sizeof shorts, ":%s", short_opts ? short_opts : "");
  opterr = 0;
  optind = 1;
  int id;
  while ((id = getopt_long(argc, argv, shorts, all, NULL)) != -1) {
    switch (id) {
      case PC_OPT_SHAPE: parse_shape(optarg, common); break;
      case PC_OPT_THREADS:
        common->threads = (int)pc_parse_int("--threads", optarg, 1, 0x7fffffff);
        if (common->threads > pc_max_threads())
          pc_die(PC_EXIT_USAGE, "option --threads: %d is more than this machine takes (at most %d: 4 per logical CPU)",
                 common->threads, pc_max_threads());
        break;
      case PC_OPT_ALLOW_HOST: common->allow_host = 1; break;
      case PC_OPT_REPORT: common->report = optarg; pc_io_output("--report", optarg); break;
      case PC_OPT_REPEAT: common->repeat = (int)pc_parse_int("--repeat", optarg, 1, 100000); break;
      case PC_OPT_WARMUP: common->warmup = (int)pc_parse_int("--warmup", optarg, 0, 100000); break;
      case PC_OPT_QUIET: common->quiet = 1; break;
      case PC_OPT_CHECK: common->check = 1; break;
      case PC_OPT_KERNELS:
        if (!strcmp(optarg, "tuned")) common->kernels = PC_KERNELS_TUNED;
        else if (!strcmp(optarg, "portable")) common->kernels = PC_KERNELS_PORTABLE;
        else pc_die(PC_EXIT_USAGE, "option --kernels: expected tuned or portable, got '%s'", optarg);
        break;
      case PC_OPT_SEED: common->seed = (unsigned long long)pc_parse_int("--seed", optarg, 0, 0x7fffffffffffffffLL); break;
      case PC_OPT_HELP:
        pc_print_usage(stdout, usage);
        free(all);
        exit(PC_EXIT_OK);
      case PC_OPT_VERSION:
        pc_print_version(name);
        free(all);
        exit(PC_EXIT_OK);
      case ':':
        if (optopt > 0 && optopt < 256)
          pc_die(PC_EXIT_USAGE, "option '-%c' needs a value (see %s %s --help)", optopt, pc_program_name(), name);
        pc_die(PC_EXIT_USAGE, "option '%s' needs a value (see %s %s --help)", argv[optind - 1], pc_program_name(), name);
      case '?':
        if (optopt > 0 && optopt < 256)
          pc_die(PC_EXIT_USAGE, "unknown option '-%c' (see %s %s --help)", optopt, pc_program_name(), name);
        pc_die(PC_EXIT_USAGE, "unknown option '%s' (see %s %s --help)", argv[optind - 1], pc_program_name(), name);
      default: handle(id, optarg, ctx);
    }
  }
  free(all);
  if (optind >= argc)
    pc_die(PC_EXIT_USAGE, "%s: missing INPUT (a data file or gen:SPEC; see %s %s --help)", name, pc_program_name(), name);
  if (optind + 1 < argc) pc_die(PC_EXIT_USAGE, "%s: unexpected argument '%s' (one INPUT only)", name, argv[optind + 1]);
  common->input = argv[optind];
  if (strncmp(common->input, "gen:", 4) != 0) pc_io_input("INPUT", common->input);
  if (pc_io_check() != 0) pc_die(PC_EXIT_USAGE, "%s: %s", name, pc_last_error());
}

void pc_print_version(const char *subcommand) {
  printf("%s%s%s %s (variant %s, commit %s, %s)\n", pc_program_name(), subcommand ? " " : "", subcommand ? subcommand : "",
         pc_build_version(), pc_build_variant(), pc_build_commit(), pc_build_compiler());
}

void pc_cli_across_ranks(const char *name, pc_common_opts *common) {
  if (pc_dist_size() == 1) return;
  if (common->check) pc_die(PC_EXIT_USAGE, "%s: --check needs every point in one process; run it without mpirun", name);
  if (pc_dist_rank() != 0) common->report = NULL, common->quiet = 1;
}

void pc_load_input(const pc_common_opts *common, pc_points *points, double *seconds, int *generated) {
  double t0 = pc_now();
  memset(points, 0, sizeof *points);
  *generated = 0;
  if (!strncmp(common->input, "gen:", 4)) {
    pc_gen_spec spec;
    if (pc_gen_parse(common->input + 4, &spec) != 0) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    if (spec.n > (size_t)PC_MAX_POINTS) pc_die(PC_EXIT_USAGE, "%zu points: at most %d are supported", spec.n, PC_MAX_POINTS);
    /* across MPI ranks each generates its own slice of the rows only (counter-based: the same values) */
    pc_dist_slice(spec.n, &points->first, &points->n);
    points->x = pc_try_alloc(points->n * spec.d, sizeof(float), "generated data");
    if (!points->x) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    points->d = spec.d;
    points->total = spec.n;
    pc_gen_rows(&spec, points->first, points->n, points->x);
    *generated = 1;
  } else {
    /* across MPI ranks each reads only its own rows (a text file by a split scan), and an error
     * in any rank's rows ends every rank */
    const int part = pc_dist_size() > 1;
    const int rc = pc_read_points_part(common->input, common->raw_n, common->raw_d, part, points);
    if (pc_dist_any_failed(rc != 0)) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
  }
  if (points->n > (size_t)PC_MAX_POINTS) pc_die(PC_EXIT_USAGE, "%zu points: at most %d are supported", points->n, PC_MAX_POINTS);
  *seconds = pc_now() - t0;
}

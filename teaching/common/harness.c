/* harness.c - see harness.h. */
#include "harness.h"
#include "device.h"
#include "par.h"
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(PC_VARIANT_SEQ)
#include <omp.h>
#if __has_include(<omp-tools.h>)
#include <omp-tools.h>
#define TH_HAS_OMPT 1
#endif
#endif

#ifndef TH_SOURCE
#error "TH_SOURCE, the path of the student's exercise.c, is defined by teaching/exercises.mk"
#endif

/* The student's source as it was compiled, in the program itself (the assembler's .incbin, from
 * the folder the compiler ran in), so that the static checks read exactly what runs. The device
 * pass of the gpu build has no use for it. */
#if !defined(__NVPTX__) && !defined(__AMDGPU__) && !defined(__nvptx__)
__asm__(".section .rodata\n"
        "th_source_text:\n"
        ".incbin \"" TH_SOURCE "\"\n"
        ".byte 0\n"
        ".previous\n");
#endif
extern const char th_source_text[];

static const char *exercise_name = "exercise";
static pc_device_info device;

static const char *verdict_variant(void) {
  return device.host_fallback ? PC_VARIANT_NAME ", on the host" : PC_VARIANT_NAME;
}

static _Noreturn void verdict(int status, const char *word, const char *fmt, va_list ap) {
  fflush(stdout);
  printf("%s %s [%s]: ", word, exercise_name, verdict_variant());
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  exit(status);
}

void th_pass(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verdict(0, "PASS", fmt, ap);
}

void th_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verdict(1, "FAIL", fmt, ap);
}

void *th_alloc(size_t count, size_t size) {
  void *p = pc_try_alloc(count ? count : 1, size, "harness data");
  if (!p) th_fail("%s", pc_last_error());
  return p;
}

static _Noreturn void usage(const char *program, const char *why) {
  fprintf(stderr, "%s: %s\nusage: %s [--n N] [--repeat R] [--threads T] [--allow-host]\n", program, why, program);
  exit(PC_EXIT_USAGE);
}

static long positive_argument(const char *program, int argc, char **argv, int *a) {
  if (*a + 1 >= argc) usage(program, "an option lacks its value");
  char *end;
  const long v = strtol(argv[++*a], &end, 10);
  if (*end || v < 1) usage(program, "expected a positive integer");
  return v;
}

th_options th_start(int argc, char **argv, const char *exercise, size_t default_n, int default_repeat) {
  th_options o = {default_n, default_repeat};
  int allow_host = 0, threads = 0;
  exercise_name = exercise;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--allow-host")) allow_host = 1;
    else if (!strcmp(argv[a], "--n")) o.n = (size_t)positive_argument(argv[0], argc, argv, &a);
    else if (!strcmp(argv[a], "--repeat")) o.repeat = (int)positive_argument(argv[0], argc, argv, &a);
    else if (!strcmp(argv[a], "--threads")) threads = (int)positive_argument(argv[0], argc, argv, &a);
    else usage(argv[0], "unknown option");
  }
#if !defined(PC_VARIANT_SEQ)
  if (threads == 0) threads = omp_get_max_threads() < 2 ? 2 : omp_get_max_threads(); /* a race needs two */
#endif
  if (pc_device_try_init(allow_host, threads, &device) != 0) {
    printf("FAIL %s [%s]: %s\n", exercise_name, PC_VARIANT_NAME, pc_last_error());
    exit(PC_EXIT_NO_DEVICE);
  }
  printf("exercise %s, variant %s: %s\nsource: %s\n", exercise, PC_VARIANT_NAME, device.where, TH_SOURCE);
  if (device.host_fallback)
    printf("note: the gpu build runs on the host here (no GPU; --allow-host): its target regions run on host "
           "threads; GPU timings and transfers need a GPU\n");
  return o;
}

int th_on_gpu(void) { return device.offloading; }

/* splitmix64 of (seed, index): cheap, and a pure function of its arguments. */
double th_uniform(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-53;
}

float th_on_grid(double v) { return (float)(floor(v * TH_GRID) / TH_GRID); }

double th_time(const char *what, void (*fn)(void *), void *arg, int repeat) {
  double *t = th_alloc((size_t)repeat, sizeof *t);
  fn(arg); /* warm-up: first-touch pages, the device's kernel loading */
  for (int r = 0; r < repeat; r++) {
    const double t0 = pc_now();
    fn(arg);
    t[r] = pc_now() - t0;
  }
  const pc_stats s = pc_stats_of(t, (size_t)repeat);
  printf("time %s: %.3f ms median (min %.3f, max %.3f) of %d runs after 1 warm-up\n", what, s.median * 1e3,
         s.min * 1e3, s.max * 1e3, repeat);
  free(t);
  return s.median;
}

/* OMPT: the runtime calls ompt_start_tool, which a program may define, when it starts; the
 * callbacks count what they see while `watching` is set. */
static int watching;
static th_watch seen;

#if defined(TH_HAS_OMPT)
static void add_long(long *to, long v) { __atomic_add_fetch(to, v, __ATOMIC_RELAXED); }

static void on_parallel_begin(ompt_data_t *task, const ompt_frame_t *frame, ompt_data_t *parallel,
                              unsigned requested, int flags, const void *code) {
  (void)task, (void)frame, (void)parallel, (void)requested, (void)code;
  if (watching && (flags & ompt_parallel_team)) add_long(&seen.parallel_regions, 1);
}

static void on_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel, ompt_data_t *task,
                             unsigned actual, unsigned index, int flags) {
  (void)parallel, (void)task, (void)index;
  if (!watching || endpoint != ompt_scope_begin || !(flags & ompt_task_implicit)) return;
  long now = __atomic_load_n(&seen.largest_team, __ATOMIC_RELAXED);
  while ((long)actual > now &&
         !__atomic_compare_exchange_n(&seen.largest_team, &now, (long)actual, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

static int ompt_active;

static int tool_initialize(ompt_function_lookup_t lookup, int initial_device, ompt_data_t *data) {
  (void)initial_device, (void)data;
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  if (!set) return 0;
  ompt_active = set(ompt_callback_parallel_begin, (ompt_callback_t)on_parallel_begin) != ompt_set_never &&
                set(ompt_callback_implicit_task, (ompt_callback_t)on_implicit_task) != ompt_set_never;
  return 1;
}

static void tool_finalize(ompt_data_t *data) { (void)data; }

ompt_start_tool_result_t *ompt_start_tool(unsigned omp_version, const char *runtime_version);
ompt_start_tool_result_t *ompt_start_tool(unsigned omp_version, const char *runtime_version) {
  (void)omp_version, (void)runtime_version;
  static ompt_start_tool_result_t result = {tool_initialize, tool_finalize, {0}};
  return &result;
}
#endif

void th_watch_start(void) {
  memset(&seen, 0, sizeof seen);
  __atomic_store_n(&watching, 1, __ATOMIC_SEQ_CST);
}

th_watch th_watch_stop(void) {
  __atomic_store_n(&watching, 0, __ATOMIC_SEQ_CST);
  th_watch w = seen;
#if defined(TH_HAS_OMPT)
  w.active = ompt_active;
#endif
  return w;
}

void th_watch_print(const char *label, const th_watch *w) {
  if (device.offloading)
    printf("%s: on a GPU the harness checks where the loops ran through the data (host copies it spoiled or "
           "watches), not through OMPT\n", label);
  else if (!w->active)
    printf("%s: threads not observable in this build (%s)\n", label,
           strcmp(PC_VARIANT_NAME, "seq") ? "the OpenMP runtime has no OMPT" : "seq: no OpenMP");
  else
    printf("%s: %ld parallel region(s), the largest team %ld thread(s) (OMPT)\n", label, w->parallel_regions,
           w->largest_team);
}

void th_require_parallel(const th_watch *w, const char *what) {
  if (device.offloading) return; /* the result, from poisoned host copies, has told */
  if (!w->active) {
    printf("parallel check of %s: skipped (nothing to observe in this build; the static checks stand in)\n", what);
    return;
  }
  if (w->largest_team < 2)
    th_fail("%s ran on one thread: %s (PAR_FOR makes the loop parallel)", what,
            w->parallel_regions ? "its parallel regions had one thread each" : "it opened no parallel region");
}

void th_poison(void *host_copy, size_t bytes) {
  if (device.offloading) memset(host_copy, 0xff, bytes);
}

/* The student's source with comments removed (string and character literals kept as they are). */
static char *source_text(void) {
  static char *text;
  if (text) return text;
  const char *raw = th_source_text;
  const size_t len = strlen(raw);
  text = th_alloc(len + 1, 1);
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (raw[i] == '/' && raw[i + 1] == '*') {
      for (i += 2; i + 1 < len && !(raw[i] == '*' && raw[i + 1] == '/'); i++) {
      }
      i++;
      text[o++] = ' ';
    } else if (raw[i] == '/' && raw[i + 1] == '/') {
      while (i < len && raw[i] != '\n') i++;
      text[o++] = '\n';
    } else if (raw[i] == '"' || raw[i] == '\'') {
      const char quote = raw[i];
      text[o++] = raw[i++];
      for (; i < len && raw[i] != quote; i++) {
        if (raw[i] == '\\' && i + 1 < len) text[o++] = raw[i++];
        text[o++] = raw[i];
      }
      if (i < len) text[o++] = raw[i];
    } else {
      text[o++] = raw[i];
    }
  }
  text[o] = 0;
  return text;
}

static int is_word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* The next whole-word occurrence of `name` in s at or after `from`, or NULL. */
static const char *find_word(const char *s, const char *from, const char *name) {
  const size_t len = strlen(name);
  for (const char *p = strstr(from, name); p; p = strstr(p + 1, name))
    if ((p == s || !is_word_char(p[-1])) && !is_word_char(p[len])) return p;
  return NULL;
}

int th_source_count(const char *name) {
  const char *s = source_text();
  int count = 0;
  for (const char *p = find_word(s, s, name); p; p = find_word(s, p + 1, name)) count++;
  return count;
}

/* s without white space, in a buffer of the caller's. */
static void squeeze(const char *s, size_t len, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++)
    if (!isspace((unsigned char)s[i])) out[o++] = s[i];
  out[o] = 0;
}

int th_source_macro_has(const char *macro, const char *text) {
  const char *s = source_text();
  char *want = th_alloc(strlen(text) + 1, 1);
  squeeze(text, strlen(text), want);
  int found = 0;
  for (const char *p = find_word(s, s, macro); p && !found; p = find_word(s, p + 1, macro)) {
    const char *open = p + strlen(macro);
    while (isspace((unsigned char)*open)) open++;
    if (*open != '(') continue;
    int depth = 0;
    const char *close = open;
    for (; *close; close++) {
      depth += *close == '(';
      depth -= *close == ')';
      if (depth == 0) break;
    }
    char *args = th_alloc((size_t)(close - open) + 1, 1);
    squeeze(open, (size_t)(close - open), args);
    found = strstr(args, want) != NULL;
    free(args);
  }
  free(want);
  return found;
}

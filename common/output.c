/* output.c - see output.h. */
#include "output.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- staged files -------------------------------------------------------------------- */

/* The staged files. A slot's temporary name is complete before the count that publishes it
 * grows, so the signal handler, which may run at any instruction and on any thread, only ever
 * unlinks whole names (an emptied slot holds "", whose unlink fails harmlessly). */
enum { MAX_STAGED = 16 };
static struct {
  char tmp[PATH_MAX];
  char *path;
} staged[MAX_STAGED];
static int n_staged;                 /* read by the handler: __atomic loads and stores */
static int committing, pending_signal; /* pc_outputs_commit holds back asynchronous signals */

static const int end_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2,
                                  SIGXCPU, SIGXFSZ, SIGVTALRM, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS};
enum { N_END_SIGNALS = sizeof end_signals / sizeof end_signals[0] };
static struct sigaction previous[N_END_SIGNALS];

static int is_fault(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGSYS; }

static void unlink_staged(void) {
  const int n = __atomic_load_n(&n_staged, __ATOMIC_SEQ_CST);
  for (int i = 0; i < n; i++)
    if (staged[i].tmp[0]) unlink(staged[i].tmp);
}

/* Async-signal-safe: unlink (and sigaction, raise) only. A signal that arrives while the outputs
 * are being renamed into place is noted and acted on by pc_outputs_commit when it is done. */
static void on_end_signal(int sig) {
  const int saved_errno = errno;
  if (!is_fault(sig)) {
    __atomic_store_n(&pending_signal, sig, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&committing, __ATOMIC_SEQ_CST)) {
      errno = saved_errno;
      return;
    }
  }
  unlink_staged();
  for (int s = 0; s < N_END_SIGNALS; s++)
    if (end_signals[s] == sig) sigaction(sig, &previous[s], NULL);
  raise(sig); /* delivered with the previous action once this handler returns */
  errno = saved_errno;
}

/* On the first staged file: the handler for every signal that would end the program (one that
 * is ignored stays ignored), and the removal at exit. */
static void watch_for_endings(void) {
  static int installed;
  if (installed) return;
  installed = 1;
  struct sigaction act;
  memset(&act, 0, sizeof act);
  act.sa_handler = on_end_signal;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  for (int s = 0; s < N_END_SIGNALS; s++) {
    if (sigaction(end_signals[s], NULL, &previous[s]) != 0) continue;
    if (previous[s].sa_handler == SIG_IGN) continue;
    sigaction(end_signals[s], &act, NULL);
  }
  pc_at_end(unlink_staged);
}

/* Removes the staged entries (and their files, unless they were renamed). */
static void forget_staged(void) {
  const int n = __atomic_load_n(&n_staged, __ATOMIC_SEQ_CST);
  __atomic_store_n(&n_staged, 0, __ATOMIC_SEQ_CST);
  for (int i = 0; i < n; i++) {
    if (staged[i].tmp[0]) unlink(staged[i].tmp);
    staged[i].tmp[0] = '\0';
    free(staged[i].path);
    staged[i].path = NULL;
  }
}

int pc_outputs_commit(void) {
  int rc = 0;
  __atomic_store_n(&committing, 1, __ATOMIC_SEQ_CST);
  const int n = __atomic_load_n(&n_staged, __ATOMIC_SEQ_CST);
  for (int i = 0; i < n && rc == 0; i++) {
    if (!staged[i].tmp[0]) continue;
    if (rename(staged[i].tmp, staged[i].path) != 0) rc = pc_fail("cannot write '%s': %s", staged[i].path, strerror(errno));
    else staged[i].tmp[0] = '\0';
  }
  forget_staged(); /* removes whatever was not renamed */
  __atomic_store_n(&committing, 0, __ATOMIC_SEQ_CST);
  const int sig = __atomic_load_n(&pending_signal, __ATOMIC_SEQ_CST);
  if (sig) raise(sig); /* the held-back signal: its handler now finds nothing staged and ends the program */
  return rc;
}

/* The folder part of path ("." when it has none), into dir[len]; -1 when it does not fit. */
static int folder_of(const char *path, char *dir, size_t len) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 1;
  if (slash && n == 0) n = 1; /* "/name" */
  if (n + 1 > len) return -1;
  memcpy(dir, slash ? path : ".", n);
  dir[n] = '\0';
  return 0;
}

/* Creates the staged file for `path` and registers it in slot *slot. The temporary name does not
 * depend on the target's name, so any name the file system takes can be a target. */
static FILE *open_staged(const char *path, int *slot) {
  static unsigned counter;
  char dir[PATH_MAX];
  const int n = __atomic_load_n(&n_staged, __ATOMIC_SEQ_CST);
  if (n == MAX_STAGED) {
    pc_fail("too many output files");
    return NULL;
  }
  if (folder_of(path, dir, sizeof dir) != 0) {
    pc_fail("cannot write '%s': the path is too long", path);
    return NULL;
  }
  watch_for_endings();
  for (int attempt = 0; attempt < 100; attempt++) {
    int len = snprintf(staged[n].tmp, sizeof staged[n].tmp, "%s/.pragmaclust.tmp.%ld.%u", dir, (long)getpid(), counter++);
    if (len < 0 || (size_t)len >= sizeof staged[n].tmp) {
      staged[n].tmp[0] = '\0';
      pc_fail("cannot write '%s': the path is too long", path);
      return NULL;
    }
    __atomic_store_n(&n_staged, n + 1, __ATOMIC_SEQ_CST); /* published before the file exists */
    const int fd = open(staged[n].tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); /* the umask applies */
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (f) {
      staged[n].path = pc_xstrdup(path);
      *slot = n;
      return f;
    }
    const int err = errno;
    if (fd >= 0) close(fd), unlink(staged[n].tmp);
    staged[n].tmp[0] = '\0';
    __atomic_store_n(&n_staged, n, __ATOMIC_SEQ_CST);
    if (err != EEXIST) {
      pc_fail("cannot write '%s': %s", path, strerror(err));
      return NULL;
    }
  }
  pc_fail("cannot write '%s': no free temporary name in its folder", path);
  return NULL;
}

/* Opens the file a writer fills for `path`: a staged file (*slot >= 0), or the target itself
 * when it exists and is not a regular file (*slot = -1). */
static FILE *open_output(const char *path, int *slot) {
  struct stat st;
  *slot = -1;
  const int exists = stat(path, &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) {
    pc_fail("cannot write '%s': it is a directory", path);
    return NULL;
  }
  if (exists && !S_ISREG(st.st_mode)) {
    FILE *f = fopen(path, "wb");
    if (!f) pc_fail("cannot write '%s': %s", path, strerror(errno));
    return f;
  }
  return open_staged(path, slot);
}

/* Closes f; a complete staged file stays registered for pc_outputs_commit(), a failed one is
 * removed. */
static int close_output(FILE *f, const char *path, int slot, int ok) {
  if (fflush(f) != 0 || ferror(f)) ok = 0;
  int err = ok ? 0 : errno;
  if (fclose(f) != 0 && ok) ok = 0, err = errno;
  if (ok) return 0;
  if (slot >= 0) {
    unlink(staged[slot].tmp);
    staged[slot].tmp[0] = '\0';
  }
  return pc_fail("cannot write '%s': %s", path, strerror(err ? err : EIO));
}

static void npy_header(FILE *f, const char *descr, size_t rows, size_t cols, int one_dim) {
  char dict[128];
  if (one_dim) snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }", descr, rows);
  else snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }", descr, rows, cols);
  size_t len = strlen(dict), total = 10 + len + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t hlen = len + pad + 1;
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
  fwrite(pre, 1, 10, f);
  fputs(dict, f);
  for (size_t i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
}

int pc_write_labels(const char *path, const int *labels, size_t n) {
  int slot;
  FILE *f = open_output(path, &slot);
  if (!f) return -1;
  int ok = 1;
  if (pc_has_suffix(path, ".npy")) {
    npy_header(f, "<i4", n, 1, 1);
    for (size_t i = 0; i < n; i++) {
      int32_t v = labels[i];
      ok &= fwrite(&v, 4, 1, f) == 1;
    }
  } else {
    for (size_t i = 0; i < n && ok; i++) ok = fprintf(f, "%d\n", labels[i]) > 0;
  }
  return close_output(f, path, slot, ok);
}

int pc_write_matrix(const char *path, const float *m, size_t rows, size_t cols) {
  int slot;
  FILE *f = open_output(path, &slot);
  if (!f) return -1;
  int ok = 1;
  if (pc_has_suffix(path, ".npy")) {
    npy_header(f, "<f4", rows, cols, 0);
    ok = fwrite(m, sizeof *m, rows * cols, f) == rows * cols;
  } else {
    for (size_t r = 0; r < rows && ok; r++)
      for (size_t c = 0; c < cols && ok; c++) ok = fprintf(f, c + 1 < cols ? "%.9g " : "%.9g\n", (double)m[r * cols + c]) > 0;
  }
  return close_output(f, path, slot, ok);
}

int pc_write_text_file(const char *path, const char *text, size_t len) {
  int slot;
  FILE *f = open_output(path, &slot);
  if (!f) return -1;
  return close_output(f, path, slot, fwrite(text, 1, len, f) == len);
}

/* ---- which files a run reads and writes ----------------------------------------------- */

enum { MAX_IO = 32 };
static struct {
  const char *option, *path;
  int output;
} io[MAX_IO];
static int n_io;

static void io_add(const char *option, const char *path, int output) {
  if (!path || !*path || (output && !strcmp(path, "-"))) return;
  if (n_io == MAX_IO) pc_die(PC_EXIT_USAGE, "too many file options");
  io[n_io].option = option;
  io[n_io].path = path;
  io[n_io].output = output;
  n_io++;
}

void pc_io_input(const char *option, const char *path) { io_add(option, path, 0); }
void pc_io_output(const char *option, const char *path) { io_add(option, path, 1); }
void pc_io_reset(void) { n_io = 0; }

/* What a path names: an existing file (dev, ino; regular tells whether it is a regular file),
 * or, when nothing exists there yet, the resolved path its file will have. */
typedef struct {
  int exists, regular;
  dev_t dev;
  ino_t ino;
  char resolved[PATH_MAX + NAME_MAX + 2];
} io_identity;

static int identify(const char *path, int output, io_identity *id) {
  struct stat st;
  memset(id, 0, sizeof *id);
  if (stat(path, &st) == 0) {
    id->exists = 1;
    id->regular = S_ISREG(st.st_mode);
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    if (output && S_ISDIR(st.st_mode)) return pc_fail("cannot write '%s': it is a directory", path);
    return 0;
  }
  if (!output) return 0; /* a missing input is the reader's to report */
  char dir[PATH_MAX], real_dir[PATH_MAX];
  if (folder_of(path, dir, sizeof dir) != 0) return pc_fail("cannot write '%s': the path is too long", path);
  if (!realpath(dir, real_dir)) return pc_fail("cannot write '%s': %s", path, strerror(errno));
  const char *slash = strrchr(path, '/');
  snprintf(id->resolved, sizeof id->resolved, "%s/%s", real_dir, slash ? slash + 1 : path);
  return 0;
}

static int same_file(const io_identity *a, const io_identity *b) {
  if (a->exists != b->exists) return 0;
  if (a->exists) return a->regular && b->regular && a->dev == b->dev && a->ino == b->ino;
  return !strcmp(a->resolved, b->resolved);
}

int pc_io_check(void) {
  io_identity *ids = pc_xalloc((size_t)n_io + 1, sizeof *ids, "file identities");
  int rc = 0;
  for (int i = 0; i < n_io && !rc; i++) rc = identify(io[i].path, io[i].output, &ids[i]);
  for (int i = 0; i < n_io && !rc; i++) {
    if (!io[i].output) continue;
    for (int j = 0; j < n_io && !rc; j++) {
      if (j == i || !same_file(&ids[i], &ids[j])) continue;
      if (!io[j].output)
        rc = pc_fail("%s '%s' is the file the run reads (%s '%s'): choose another output file",
                     io[i].option, io[i].path, io[j].option, io[j].path);
      else if (j > i)
        rc = pc_fail("%s '%s' and %s '%s' are the same file: give each output its own file", io[i].option, io[i].path,
                     io[j].option, io[j].path);
    }
  }
  free(ids);
  return rc;
}

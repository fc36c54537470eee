/* library_memory.c - the installed library when memory runs out (tests/test_library.py): each
 * algorithm runs under a soft address-space limit a little above what the program holds, the
 * margin growing by half from 64 KB to 96 MB, so that allocations fail at every depth of the
 * algorithms (their first arrays, the prefix sums' block sums, the per-leaf search lists, ...).
 * Every call must return PRAGMACLUST_OK with the labels of an unlimited run, or
 * PRAGMACLUST_ERR_OUT_OF_MEMORY with a message: never exit, crash or return another code. Prints
 * one line per algorithm (calls, how many ran out of memory), "ok" at the end; exits 1 otherwise. */
#include <malloc.h>
#include <pragmaclust.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

enum { N = 60000, D = 2 };

/* The process's address space now (bytes), from /proc/self/statm. */
static size_t address_space(void) {
  unsigned long pages = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f || fscanf(f, "%lu", &pages) != 1) pages = 0;
  if (f) fclose(f);
  return pages * 4096;
}

static void soft_limit(rlim_t bytes) {
  struct rlimit r;
  getrlimit(RLIMIT_AS, &r);
  r.rlim_cur = bytes;
  setrlimit(RLIMIT_AS, &r);
}

static int run(int which, const float *x, int *labels) {
  switch (which) {
    case 0: {
      pragmaclust_dbscan_options o;
      pragmaclust_dbscan_options_init(&o);
      o.eps = 0.05, o.min_pts = 5;
      return pragmaclust_dbscan(x, N, D, &o, labels, NULL, NULL);
    }
    case 1: {
      pragmaclust_dbscan_options o;
      pragmaclust_dbscan_options_init(&o);
      o.eps = 0.05, o.min_pts = 5, o.method = PRAGMACLUST_DBSCAN_CHAINS;
      return pragmaclust_dbscan(x, N, D, &o, labels, NULL, NULL);
    }
    case 2: {
      pragmaclust_dpc_options o;
      pragmaclust_dpc_options_init(&o);
      o.dc = 0.05, o.peaks = 4, o.rho_search = o.delta_search = PRAGMACLUST_DPC_SEARCH_LEAF;
      return pragmaclust_dpc(x, N, D, &o, labels, NULL);
    }
    case 3: {
      pragmaclust_kmeans_options o;
      pragmaclust_kmeans_options_init(&o);
      o.k = 8, o.init = PRAGMACLUST_INIT_KMEANSPP;
      float centroids[8 * D];
      return pragmaclust_kmeans(x, N, D, &o, centroids, labels, NULL);
    }
    default: {
      pragmaclust_streamkm_options o;
      pragmaclust_streamkm_options_init(&o);
      o.k = 8;
      float centres[8 * D];
      return pragmaclust_streamkm(x, N, D, &o, centres, labels, NULL);
    }
  }
}

int main(int argc, char **argv) {
  static const char *const names[] = {"dbscan", "dbscan chains", "dpc leaf", "kmeans++", "streamkm"};
  /* blocks of 64 KB and more are mapped and given back on free (glibc), so that the address
   * space the limit is set from holds no freed memory the next call could reuse */
  mallopt(M_MMAP_THRESHOLD, 1 << 16);
  mallopt(M_TRIM_THRESHOLD, 1 << 16);
  pragmaclust_init_options init;
  pragmaclust_init_options_init(&init);
  init.allow_host = argc > 1 && !strcmp(argv[1], "allow-host");
  if (pragmaclust_init(&init) != PRAGMACLUST_OK) return 1;
  float *x = malloc(sizeof(float) * N * D);
  int *want = malloc(sizeof(int) * N), *got = malloc(sizeof(int) * N);
  unsigned state = 12345;
  for (size_t e = 0; e < (size_t)N * D; e++) { /* four squares of uniform points */
    state = state * 1103515245u + 12345u;
    x[e] = (float)((state >> 8) & 0xffff) / 65536.0f + (float)(((e / D) % 4) * 2 * (e % D == (e / D) % 2));
  }
  int failures = 0;
  for (int which = 0; which < 5; which++) {
    if (run(which, x, want) != PRAGMACLUST_OK) return 1; /* unlimited: threads and caches set up */
    int calls = 0, out_of_memory = 0;
    for (size_t margin = (size_t)64 << 10; margin <= (size_t)96 << 20; margin += margin / 2) {
      malloc_trim(0);
      const size_t now = address_space();
      soft_limit((rlim_t)(now + margin));
      const int status = run(which, x, got);
      soft_limit(RLIM_INFINITY);
      calls++;
      if (status == PRAGMACLUST_ERR_OUT_OF_MEMORY && pragmaclust_last_error()[0]) {
        out_of_memory++;
      } else if (status != PRAGMACLUST_OK || memcmp(got, want, sizeof(int) * N) != 0) {
        fprintf(stderr, "%s, margin %zu: status %s (%s)\n", names[which], margin, pragmaclust_status_name(status),
                pragmaclust_last_error());
        failures++;
      }
    }
    printf("%s: %d calls, %d out of memory\n", names[which], calls, out_of_memory);
    if (out_of_memory == 0 || out_of_memory == calls) failures++; /* the sweep must cross the need */
  }
  free(x), free(want), free(got);
  printf(failures ? "failed\n" : "ok\n");
  return failures != 0;
}

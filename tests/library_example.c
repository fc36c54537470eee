/* library_example.c - a client of the installed library (tests/test_library.py builds it with
 * `pkg-config --cflags --libs pragmaclust-<variant>`): reads N x D raw float32 points, clusters
 * them with k-means (K random rows, seed 1), DBSCAN (EPS, MINPTS) and density peaks (DC, K
 * peaks), and prints one line of labels per algorithm. Usage: library_example FILE N D K EPS
 * MINPTS DC [allow-host] */
#include <pragmaclust.h>
#include <stdio.h>
#include <stdlib.h>

static int check(int status, const char *what) {
  if (status != PRAGMACLUST_OK) fprintf(stderr, "%s: %s: %s\n", what, pragmaclust_status_name(status), pragmaclust_last_error());
  return status != PRAGMACLUST_OK;
}

static void print_labels(const char *name, const int *labels, size_t n) {
  printf("%s", name);
  for (size_t i = 0; i < n; i++) printf(" %d", labels[i]);
  printf("\n");
}

int main(int argc, char **argv) {
  if (argc < 8) return fprintf(stderr, "usage: %s FILE N D K EPS MINPTS DC [allow-host]\n", argv[0]), 2;
  size_t n = strtoul(argv[2], NULL, 10), d = strtoul(argv[3], NULL, 10);
  float *x = malloc(n * d * sizeof *x), *centroids = malloc((size_t)atoi(argv[4]) * d * sizeof *centroids);
  int *labels = malloc(n * sizeof *labels);
  FILE *f = fopen(argv[1], "rb");
  if (!f || fread(x, sizeof *x, n * d, f) != n * d) return fprintf(stderr, "cannot read %s\n", argv[1]), 2;
  fclose(f);
  pragmaclust_init_options init;
  pragmaclust_init_options_init(&init);
  init.allow_host = argc > 8;
  if (check(pragmaclust_init(&init), "init")) return 1;

  pragmaclust_kmeans_options km;
  pragmaclust_kmeans_options_init(&km);
  km.k = atoi(argv[4]);
  pragmaclust_result result;
  if (check(pragmaclust_kmeans(x, n, d, &km, centroids, labels, &result), "kmeans")) return 1;
  print_labels("kmeans", labels, n);

  pragmaclust_dbscan_options db;
  pragmaclust_dbscan_options_init(&db);
  db.eps = atof(argv[5]);
  db.min_pts = atoi(argv[6]);
  if (check(pragmaclust_dbscan(x, n, d, &db, labels, NULL, &result), "dbscan")) return 1;
  print_labels("dbscan", labels, n);

  pragmaclust_dpc_options dp;
  pragmaclust_dpc_options_init(&dp);
  dp.dc = atof(argv[7]);
  dp.peaks = km.k;
  if (check(pragmaclust_dpc(x, n, d, &dp, labels, &result), "dpc")) return 1;
  print_labels("dpc", labels, n);
  free(x), free(centroids), free(labels);
  return 0;
}

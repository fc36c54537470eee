/* library_errors.c - bad arguments to the installed library give a status code and a message,
 * never an exit or a crash (tests/test_library.py). Prints one line per case, "ok" at the end;
 * exits 1 at the first case that returned PRAGMACLUST_OK or no message. Usage: library_errors
 * [allow-host] */
#include <math.h>
#include <pragmaclust.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void expect(const char *name, int status, int want) {
  const char *message = pragmaclust_last_error();
  printf("%s: %s: %s\n", name, pragmaclust_status_name(status), status == PRAGMACLUST_OK ? "" : message);
  if (status != want || (want != PRAGMACLUST_OK && !message[0])) {
    fprintf(stderr, "%s: got status %d (%s), want %d\n", name, status, pragmaclust_status_name(status), want);
    failures++;
  }
}

/* A refusal of values whose squared distances would overflow float32, by that check's message. */
static void expect_overflow(const char *name, int status) {
  expect(name, status, PRAGMACLUST_ERR_INVALID_ARGUMENT);
  if (status != PRAGMACLUST_OK && !strstr(pragmaclust_last_error(), "overflow float32")) {
    fprintf(stderr, "%s: the message does not name the overflow\n", name);
    failures++;
  }
}

int main(int argc, char **argv) {
  enum { N = 6, D = 2 };
  float x[N * D] = {0, 0, 0, 1, 1, 0, 10, 10, 10, 11, 11, 10}, c[N * D], bad[N * D];
  int labels[N];
  pragmaclust_init_options init;
  pragmaclust_init_options_init(&init);
  init.allow_host = argc > 1 && !strcmp(argv[1], "allow-host");
  init.threads = -1;
  expect("init threads -1", pragmaclust_init(&init), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  init.threads = 0;
  expect("init", pragmaclust_init(&init), PRAGMACLUST_OK);

  pragmaclust_kmeans_options km;
  pragmaclust_kmeans_options_init(&km);
  expect("kmeans k = 0", pragmaclust_kmeans(x, N, D, &km, c, labels, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  km.k = N + 1;
  expect("kmeans k > n", pragmaclust_kmeans(x, N, D, &km, c, labels, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  km.k = 2;
  expect("kmeans n = 0", pragmaclust_kmeans(x, 0, D, &km, c, labels, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  expect("kmeans d = 0", pragmaclust_kmeans(x, N, 0, &km, c, labels, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  expect("kmeans x NULL", pragmaclust_kmeans(NULL, N, D, &km, c, labels, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  expect("kmeans options NULL", pragmaclust_kmeans(x, N, D, NULL, c, labels, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  memcpy(bad, x, sizeof bad);
  bad[3] = NAN;
  expect("kmeans NaN", pragmaclust_kmeans(bad, N, D, &km, c, labels, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  km.distance = PRAGMACLUST_DISTANCE_GEMM;
  if (strcmp(pragmaclust_variant(), "gpu") != 0)
    expect("kmeans gemm", pragmaclust_kmeans(x, N, D, &km, c, labels, NULL), PRAGMACLUST_ERR_UNSUPPORTED);
  const pragmaclust_distance on_tensor_cores[] = {PRAGMACLUST_DISTANCE_DOT_3XTF32, PRAGMACLUST_DISTANCE_DOT_TF32,
                                                  PRAGMACLUST_DISTANCE_DOT_FP16, PRAGMACLUST_DISTANCE_DOT_BF16};
  for (int i = 0; i < 4 && strcmp(pragmaclust_variant(), "gpu") != 0; i++) {
    km.distance = on_tensor_cores[i];
    expect("kmeans on the tensor cores", pragmaclust_kmeans(x, N, D, &km, c, labels, NULL), PRAGMACLUST_ERR_UNSUPPORTED);
  }
  km.distance = PRAGMACLUST_DISTANCE_DIRECT;
  km.init = PRAGMACLUST_INIT_KMEANSPP;
  float same[N * D] = {0};
  expect("kmeans++ on one distinct point", pragmaclust_kmeans(same, N, D, &km, c, labels, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  float huge[N * D]; /* squared distances beyond float32: d (2 10^19)^2 > FLT_MAX */
  memcpy(huge, x, sizeof huge);
  huge[5] = 1e19f;
  km.init = PRAGMACLUST_INIT_RANDOM;
  expect_overflow("kmeans overflowing points", pragmaclust_kmeans(huge, N, D, &km, c, labels, NULL));
  km.init = PRAGMACLUST_INIT_GIVEN;
  memcpy(c, huge + 4, 2 * D * sizeof *c); /* the given centroids: rows 2 and 3 of huge */
  expect_overflow("kmeans overflowing given centroids", pragmaclust_kmeans(x, N, D, &km, c, labels, NULL));

  pragmaclust_dbscan_options db;
  pragmaclust_dbscan_options_init(&db);
  db.min_pts = 2;
  expect("dbscan eps = 0", pragmaclust_dbscan(x, N, D, &db, labels, NULL, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  db.eps = 1.5;
  db.min_pts = 0;
  expect("dbscan min_pts = 0", pragmaclust_dbscan(x, N, D, &db, labels, NULL, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  db.min_pts = 2;
  expect("dbscan labels NULL", pragmaclust_dbscan(x, N, D, &db, NULL, NULL, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);

  pragmaclust_dpc_options dp;
  pragmaclust_dpc_options_init(&dp);
  dp.dc = -1;
  expect("dpc dc < 0", pragmaclust_dpc(x, N, D, &dp, labels, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  dp.dc = 1.5;
  dp.peaks = N + 1;
  expect("dpc peaks > n", pragmaclust_dpc(x, N, D, &dp, labels, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  dp.peaks = 2;
  pragmaclust_dpc_model *model;
  expect("dpc capacity < n", pragmaclust_dpc_create(x, N, D, N - 1, &dp, &model, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  expect("dpc create", pragmaclust_dpc_create(x, 4, D, N, &dp, &model, NULL), PRAGMACLUST_OK);
  expect("dpc insert beyond capacity", pragmaclust_dpc_insert(model, x, 3, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  int ids[2] = {1, 1};
  expect("dpc delete twice", pragmaclust_dpc_delete(model, ids, 2, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  ids[0] = 7;
  expect("dpc delete unknown id", pragmaclust_dpc_delete(model, ids, 1, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  int two[1] = {2};
  expect("dpc delete after refused batches", pragmaclust_dpc_delete(model, two, 1, NULL), PRAGMACLUST_OK);
  unsigned char alive[N];
  pragmaclust_dpc_get(model, NULL, NULL, NULL, NULL, alive);
  expect("dpc refused deletions left point 1 alive", alive[1] && !alive[2] ? PRAGMACLUST_OK : PRAGMACLUST_ERR_INTERNAL,
         PRAGMACLUST_OK);
  pragmaclust_dpc_free(model);

  pragmaclust_streamkm_options skm;
  pragmaclust_streamkm_options_init(&skm);
  expect("streamkm k = 0", pragmaclust_streamkm(x, N, D, &skm, c, labels, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  skm.k = 2;
  expect_overflow("streamkm overflowing", pragmaclust_streamkm(huge, N, D, &skm, c, labels, NULL));
  pragmaclust_streamkm_model *stream;
  skm.k = 4;
  expect("streamkm open k > max_chunk", pragmaclust_streamkm_open(D, 3, &skm, &stream), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  skm.k = 2;
  expect("streamkm open", pragmaclust_streamkm_open(D, 4, &skm, &stream), PRAGMACLUST_OK);
  expect("streamkm centres before a chunk", pragmaclust_streamkm_centres(stream, c, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  expect("streamkm add beyond max_chunk", pragmaclust_streamkm_add(stream, x, N, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  expect("streamkm add NaN", pragmaclust_streamkm_add(stream, bad, 3, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  expect_overflow("streamkm add overflowing", pragmaclust_streamkm_add(stream, huge, 4, NULL));
  expect("streamkm add", pragmaclust_streamkm_add(stream, x, 4, NULL), PRAGMACLUST_OK);
  expect("streamkm centres", pragmaclust_streamkm_centres(stream, c, NULL), PRAGMACLUST_OK);
  pragmaclust_streamkm_free(stream);
  pragmaclust_streamkm_free(NULL);
  pragmaclust_stream_options st;
  pragmaclust_stream_options_init(&st);
  st.k = 2;
  st.epsilon = 1.5;
  expect("stream epsilon 1.5", pragmaclust_stream(x, N, D, &st, c, labels, NULL), PRAGMACLUST_ERR_INVALID_ARGUMENT);
  st.epsilon = 0.5;
  expect_overflow("stream overflowing", pragmaclust_stream(huge, N, D, &st, c, labels, NULL));
  if (failures) return 1;
  printf("ok\n");
  return 0;
}

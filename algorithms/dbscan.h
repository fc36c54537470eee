/*
 * dbscan.h - DBSCAN with a result identical to sequential DBSCAN, one source for the seq,
 * omp and gpu variants.
 *
 * Semantics (Ester et al.; CUDA-DClust's paper, 002_cf90728d36e2b88f.txt, section 2):
 * the eps-neighbourhood of p is every q with ||p - q|| <= eps (Euclidean, computed in double),
 * p itself included; p is a core point when its neighbourhood has at least min_pts points.
 * Clusters are the connected components of core points under "within eps". Cluster ids are
 * numbered by each cluster's smallest point index (0, 1, ...). A non-core point with core
 * neighbours is a border point and joins the smallest cluster id among them; any other point is
 * noise (-1). These are exactly the labels of scikit-learn's DBSCAN, whose cluster expansion
 * runs in index order.
 */
#ifndef DB_DBSCAN_H
#define DB_DBSCAN_H

#include <stddef.h>

/* Neighbour search: every pair (no index, as CUDA-DClust); a uniform grid of cell side eps whose
 * cells are hashed into buckets (3^d cells are searched per point, so d is limited); the same
 * grid over the DB_PROJECTED_DIMS dimensions of widest span only (a neighbour within eps is
 * within eps in every projection, so the 3^3 cells around a point's projected cell hold all its
 * neighbours, at any d); CUDA-DClust*'s directory (`levels` levels of `fanout` quantile
 * partitions, level l on dimension l, built by sorting on the host); or auto, resolved by
 * dbscan_run: the grid up to d = DB_PROJECTED_DIMS, the projected grid above. */
typedef enum { DB_INDEX_NONE, DB_INDEX_GRID, DB_INDEX_DIRECTORY, DB_INDEX_PROJECTED, DB_INDEX_AUTO } db_index_kind;
#define DB_GRID_MAX_DIM 8
#define DB_PROJECTED_DIMS 3
#define DB_DIR_MAX_LEVELS 8
#define DB_DIR_MAX_PAGES (1 << 20)
extern const char *const db_index_names[5]; /* "none", "grid", "directory", "projected", "auto" */

/* Timed phases. core: the core flags (union-find method); connect: the union-find, or the
 * chains' expansion, which finds the core points as it goes; label: cluster numbering and
 * border points. */
typedef enum { DB_PHASE_H2D, DB_PHASE_INDEX, DB_PHASE_CORE, DB_PHASE_CONNECT, DB_PHASE_LABEL, DB_PHASE_D2H, DB_NPHASES } db_phase;
extern const char *const db_phase_names[DB_NPHASES];

/* How core points are found and connected: core flags plus a lock-free union-find (the
 * default), or CUDA-DClust's chains (many cluster expansions at once, one team per chain). */
typedef enum { DB_METHOD_UNION_FIND, DB_METHOD_CHAINS } db_method;

/* Chains expanded at once by default (the command line's and the library's): enough teams to
 * fill a current GPU (figures: docs/performance.md); the host builds keep a smaller number,
 * since more chains only add seed-list memory there. */
#if defined(PC_VARIANT_GPU)
#define DB_DEFAULT_CHAINS 16384
#else
#define DB_DEFAULT_CHAINS 1024
#endif
/* The other defaults: a chain's seed list, and the directory's levels and fanout. */
#define DB_DEFAULT_SEED_LIST 2048
#define DB_DEFAULT_LEVELS 3
#define DB_DEFAULT_FANOUT 16

typedef struct {
  double eps;      /* > 0 */
  int min_pts;     /* >= 1 */
  db_index_kind index;
  db_method method;
  int chains;      /* chains: how many are expanded at once (>= 1) */
  int seed_list;   /* chains: capacity of each chain's seed list (>= 1) */
  int levels;      /* directory: 1..DB_DIR_MAX_LEVELS (at most d are used) */
  int fanout;      /* directory: >= 2 */
} db_params;

typedef struct {
  db_index_kind index; /* the index the run used (auto resolved) */
  long clusters, core, border, noise;
  long rounds;     /* chains: expansion launches */
  size_t working_bytes; /* the arrays the run works on (on the GPU in the gpu variant), input copy included */
  double phase_s[DB_NPHASES];
  double total_s;
  /* dbscan_run_ranks, on the rank that reports: seconds in its three local runs and in the
   * exchanges between ranks, and the points it held (own and halo); 0 elsewhere */
  double ranks_local_s, ranks_exchange_s;
  size_t ranks_points_held;
} db_result;

/*
 * Clusters n points of dimension d (row-major x). labels[0..n) receives the cluster ids (-1 for
 * noise); is_core, if not NULL, receives 1 for core points. Returns 0, or -1 with a pc_fail
 * message (d beyond DB_GRID_MAX_DIM with the grid index, a grid of too many cells, a directory of more than
 * DB_DIR_MAX_PAGES pages, sizes that cannot be allocated).
 */
int dbscan_run(const float *x, size_t n, size_t d, const db_params *params, int *labels, unsigned char *is_core,
               db_result *result);

/* What a run may be given instead of finding it (dbscan_ranks.c's local runs, where both come
 * from other ranks too), in input order: core_in[i] = 1 for a core point, replacing the
 * neighbour counts (min_pts is then unused, and the union-find method runs whatever
 * params->method says); label_in (with core_in), the core points' cluster ids, replacing the
 * union-find: a core point's label is its label_in, a border point's the smallest label_in among
 * its core neighbours, and result->clusters is 0. */
typedef struct {
  const unsigned char *core_in;
  const int *label_in; /* NULL: cluster ids numbered as dbscan_run numbers them */
} db_given;
/* dbscan_run, told what `given` holds (NULL: nothing, as dbscan_run). */
int dbscan_run_given(const float *x, size_t n, size_t d, const db_params *params, const db_given *given, int *labels,
                     unsigned char *is_core, db_result *result);

/* dbscan_run across MPI ranks (common/dist.h; algorithms/dbscan_ranks.c): x holds this rank's
 * slice of the rows (pc_dist_slice of the ranks' total), labels gets theirs, the one process's
 * labels; *result the whole run's counts, with the partition's exchange timed as the index phase.
 * Every rank calls it. One process: as dbscan_run, the partition aside. 0, or -1 with a message
 * (on every rank). */
int dbscan_run_ranks(const float *x, size_t n, size_t d, const db_params *params, int *labels, db_result *result);

/* Step one of dbscan_run's labels, public for the tests that race it on many host threads:
 * given the union-find forest parent[] over n positions (core[s]: position s is a core point;
 * order[s]: its input index), writes each core position's cluster id to slabel[s] (ids in the
 * order of each cluster's smallest input index) and returns the number of clusters (-1 with a
 * pc_fail message when the prefix sum finds no memory). lowest and root_rank are scratch (n entries each). In the gpu variant every array must be on the device. */
long db_number_clusters(size_t n, const int *core, const int *order, int *parent, int *lowest, int *root_rank,
                        int *slabel);

#endif

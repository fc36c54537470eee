/*
 * dpc.h - density peaks clustering (Rodriguez & Laio) as GDPC puts it on the GPU (Liu et al.,
 * ../shared/papers/003_b63a9757f2263988.txt, sections 3 to 5), one source for the seq, omp and
 * gpu variants.
 *
 * Definitions (every variant and index gives exactly these values):
 *  - d2(i, j): the squared Euclidean distance of the float32 coordinates in double: each
 *    difference squared and rounded, the squares added in dimension order (no fused multiply-add).
 *  - rho_i = |{j : d2(i, j) < dc * dc}|, the point itself included (so rho_i >= 1).
 *  - j is denser than i when rho_j > rho_i, or rho_j == rho_i and j < i (ties by index).
 *  - dep_i: the nearest denser point (smallest d2, ties to the lowest index); delta_i =
 *    sqrt(d2(i, dep_i)). The absolute peak (the densest point) has dep = -1 and delta = the
 *    largest distance from it to any point.
 *  - gamma_i = rho_i * delta_i. Peaks: the K points of largest gamma (ties to the lowest index;
 *    the absolute peak always comes first), or every point with rho >= rho_min and delta >=
 *    delta_min (which always includes the absolute peak if it selects anything). Peaks are ranked
 *    by gamma (descending, ties by index); a peak's cluster id is its rank.
 *  - labels: each point takes the cluster of the first peak on its chain of dependent points.
 */
#ifndef DPC_DPC_H
#define DPC_DPC_H

#include <stddef.h>
#include <stdint.h>

/* Neighbour search: all pairs (CUDA-DP's approach), or GDPC's vectorized VP-tree. */
typedef enum { DPC_INDEX_NONE, DPC_INDEX_VPTREE } dpc_index_kind;
extern const char *const dpc_index_names[2]; /* "none", "vptree" */

/* How an insertion updates the densities of old points (GDPC section 5.2): incidental (each new
 * point adds 1 to the old points it finds, with atomic updates) or separate (each old point counts
 * the new points near it, no write conflicts). */
typedef enum { DPC_RHO_INCIDENTAL, DPC_RHO_SEPARATE } dpc_rho_update;

/* How a from-scratch run searches the VP-tree (GDPC section 4): every point walks the tree itself
 * (point), or one team per leaf (leaf): the leaf's points share the list of leaves that any of them
 * can reach, found once, and its threads compare them with those leaves' points together (staged
 * in team memory). Both give the same values; incremental batches always search per point. */
typedef enum { DPC_SEARCH_POINT, DPC_SEARCH_LEAF } dpc_search;
extern const char *const dpc_search_names[2]; /* "point", "leaf" */

/* Timed phases (GDPC section 6.1.3, plus the transfers). */
typedef enum { DPC_PHASE_TRANSFERS, DPC_PHASE_TREE, DPC_PHASE_RHO, DPC_PHASE_DELTA, DPC_PHASE_ASSIGN, DPC_NPHASES } dpc_phase;
extern const char *const dpc_phase_names[DPC_NPHASES]; /* transfers, tree_build, rho, delta, assignment */

/* Leaf capacity of the VP-tree (GDPC: 32 ids, one 128-byte line). */
#define VPT_LEAF 32
/* The deepest tree (levels of vantage points) that the searches' stacks allow. */
#define VPT_MAX_HEIGHT 40

typedef struct {
  double dc;              /* cut-off distance, > 0 */
  dpc_index_kind index;
  long peaks;             /* > 0: top `peaks` by gamma (every live point when fewer are left); 0: thresholds */
  double rho_min, delta_min;
  uint64_t seed;          /* the random start of the farthest-point heuristic */
  dpc_rho_update rho_update;
  dpc_search rho_search;   /* rho of a from-scratch run (dpc_open) */
  dpc_search delta_search; /* delta of a from-scratch run: the search within d_c */
} dpc_params;

typedef struct {
  long clusters;
  long long distances;    /* distance computations (vantage points included) */
  long global_searches;   /* VP-tree: points whose delta needed the search beyond d_c */
  int height;             /* VP-tree levels of vantage points */
  long leaves;
  long rebuilds, splits;  /* incremental: whole-tree rebuilds, leaf-splitting rounds */
  double phase_s[DPC_NPHASES];
  double total_s;
} dpc_result;

/* The clustering state of an incremental run: the points, the tree, rho, dep, delta2. */
typedef struct dpc_state dpc_state;

/*
 * Starts a run on the first n rows of x (row-major, `capacity` rows, d columns): maps them to the
 * device, builds the index, computes rho, dep and delta, picks the peaks and labels (see the
 * definitions above). Rows n..capacity are the points later batches insert (dpc_insert). Returns
 * the state, or NULL with a pc_fail message (no peak selected, sizes that cannot be allocated).
 * res receives the phase times, counts and clusters.
 */
dpc_state *dpc_open(const float *x, size_t n, size_t capacity, size_t d, const dpc_params *params, dpc_result *res);

/* Inserts rows [n, n + count) of the state's x (n: the current size) as one batch (GDPC
 * section 5): batched top-down VP-tree insertion (leaves split when full), rho of new and of
 * affected old points, delta by the paper's two cases, peaks and labels again. With the all-pairs
 * index it recomputes everything. 0, or -1 with a pc_fail message. */
int dpc_insert(dpc_state *s, size_t count, dpc_result *res);

/* Deletes the `count` points of ids del[] (live, distinct) as one batch (GDPC section 5.5): the
 * ids leave their leaves (ids are never reused: later insertions append), rho of the live points
 * near them drops (incidental or separate, as for insertions), delta is searched again for the
 * points whose rho changed and those whose dependent point died or is no longer denser (no other
 * dependent changes), peaks and labels again. Deleted points keep rho 0, delta 0, dependent -1
 * and label -1 in dpc_results. 0, or -1 with a pc_fail message (bad or repeated ids, all deleted). */
int dpc_delete(dpc_state *s, const int *del, size_t count, dpc_result *res);

/* Fills alive[0..n) with 1 for the points not deleted; returns their number. */
size_t dpc_alive(const dpc_state *s, unsigned char *alive);

/* Copies the current results to the host arrays (n entries each; any may be NULL): rho, delta
 * (the distance, not squared), dep and labels. Returns n. */
size_t dpc_results(dpc_state *s, int *rho, double *delta, int *dep, int *labels);

/* Releases the device data and the state. */
void dpc_close(dpc_state *s);

/* The cut-off distance as the original paper sets it: the value at `percent`% of the sorted
 * pairwise distances, estimated from at most `samples` pairs drawn with pc_hash_uniform(seed)
 * (all pairs when there are no more than that). Returns it, or -1 with a pc_fail message when n <
 * 2 or the distance is 0 (too many duplicates: give d_c). */
double dpc_dc_percentile(const float *x, size_t n, size_t d, double percent, size_t samples, uint64_t seed);

#endif

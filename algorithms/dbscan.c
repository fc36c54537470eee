/*
 * dbscan.c - exact DBSCAN by core flags and a parallel union-find (see dbscan.h for the
 * semantics), one source for the three variants (common/par.h).
 *
 * Phases, each a parallel loop over the points:
 *  1. index (grid only): each point's cell (side eps) is hashed to a bucket; a counting sort
 *     (atomic histogram, prefix sum, atomic scatter) lists the points of every bucket.
 *  2. core: count neighbours up to min_pts (the count stops early).
 *  3. union: every core point links to each core neighbour of smaller index with a lock-free
 *     union-find (compare-and-swap that hangs the larger root under the smaller one), so every
 *     component's root is its smallest index, whatever the order the threads run in.
 *  4. label: roots are numbered by a prefix sum over the points (cluster ids in index order);
 *     core points take their root's id, border points the smallest id among their core
 *     neighbours.
 * The candidates of a point come from db_next_candidate: all points without an index, or the
 * points of the 3^d cells around its cell with the grid. All device data (points, index,
 * flags, parents, labels) is mapped once and stays on the GPU through the phases.
 */
#include "dbscan.h"
#include "par.h"
#include "scan.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const db_phase_names[DB_NPHASES] = {"h2d", "index", "core", "union", "label", "d2h"};

DEV_FUNCS_BEGIN

/* What the candidate search reads; built inside each parallel loop from its device pointers. */
typedef struct {
  const float *x;
  const double *lo;    /* per-dimension minimum (grid origin) */
  const long *start;   /* bucket b holds order[start[b] .. start[b+1]) */
  const int *order;
  size_t n, d;
  double inv_eps;
  unsigned long bucket_mask;
  int cells_around;    /* 3^d with the grid, 0 without an index */
} db_view;

typedef struct {
  long home[DB_GRID_MAX_DIM], cell[DB_GRID_MAX_DIM];
  int around;
  size_t pos, end;
} db_cursor;

static inline void db_cell_of(const db_view *v, size_t q, long *cell) {
  for (size_t j = 0; j < v->d; j++) cell[j] = (long)floor(((double)v->x[q * v->d + j] - v->lo[j]) * v->inv_eps);
}

static inline unsigned long db_bucket(const db_view *v, const long *cell) {
  unsigned long h = 1469598103934665603UL;
  for (size_t j = 0; j < v->d; j++) h = (h ^ (unsigned long)cell[j]) * 1099511628211UL;
  return (h ^ (h >> 29)) & v->bucket_mask;
}

static inline void db_cursor_init(const db_view *v, size_t i, db_cursor *c) {
  c->around = -1;
  c->pos = 0;
  c->end = v->cells_around ? 0 : v->n;
  if (v->cells_around) db_cell_of(v, i, c->home);
}

/* Sets *q to the next candidate neighbour (i itself included); returns 0 when none is left.
 * With the grid, a bucket may hold points of other cells (hash collisions): they are skipped,
 * so that no point is seen twice. */
static inline int db_next_candidate(const db_view *v, db_cursor *c, size_t *q) {
  for (;;) {
    while (c->pos < c->end) {
      if (!v->cells_around) {
        *q = c->pos++;
        return 1;
      }
      const size_t cand = (size_t)v->order[c->pos++];
      long cell[DB_GRID_MAX_DIM];
      db_cell_of(v, cand, cell);
      int same = 1;
      for (size_t j = 0; j < v->d; j++) same &= cell[j] == c->cell[j];
      if (same) {
        *q = cand;
        return 1;
      }
    }
    if (!v->cells_around || ++c->around >= v->cells_around) return 0;
    for (size_t j = 0, t = (size_t)c->around; j < v->d; j++, t /= 3) c->cell[j] = c->home[j] + (long)(t % 3) - 1;
    const unsigned long b = db_bucket(v, c->cell);
    c->pos = (size_t)v->start[b];
    c->end = (size_t)v->start[b + 1];
  }
}

static inline int db_within(const float *x, size_t d, size_t p, size_t q, double eps2) {
  double s = 0.0;
  for (size_t j = 0; j < d; j++) {
    const double diff = (double)x[p * d + j] - (double)x[q * d + j];
    s += diff * diff;
  }
  return s <= eps2;
}

static inline int db_find(const int *parent, int a) {
  while (parent[a] != a) a = parent[a];
  return a;
}

/* Joins the sets of a and b: the larger root is hung under the smaller with compare-and-swap
 * (the compiler's atomic builtin, the same in every variant), retried if another thread moved it. */
static inline void db_union(int *parent, int a, int b) {
  for (;;) {
    a = db_find(parent, a);
    b = db_find(parent, b);
    if (a == b) return;
    if (a < b) {
      const int t = a;
      a = b;
      b = t;
    }
    int expected = a;
    if (__atomic_compare_exchange_n(&parent[a], &expected, b, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return;
  }
}

DEV_FUNCS_END

#define DB_VIEW {x, lo, start, order, n, d, inv_eps, bucket_mask, cells_around}

int dbscan_run(const float *x, size_t n, size_t d, const db_params *params, int *labels, unsigned char *is_core,
               db_result *result) {
  memset(result, 0, sizeof *result);
  const int use_grid = params->index == DB_INDEX_GRID;
  if (use_grid && d > DB_GRID_MAX_DIM)
    return pc_fail("dbscan: the grid index supports d <= %d (this data has d = %zu); use --index none", DB_GRID_MAX_DIM, d);
  const double eps2 = params->eps * params->eps, inv_eps = 1.0 / params->eps;
  const long min_pts = params->min_pts;
  int cells_around = 0;
  if (use_grid)
    for (size_t j = 0, p = 1; j < d; j++) cells_around = (int)(p *= 3);

  /* Buckets: a power of two >= 2n (grid only; one entry otherwise). */
  unsigned long nbuckets = 1;
  while (use_grid && nbuckets < 2 * (unsigned long)n) nbuckets <<= 1;
  const unsigned long bucket_mask = nbuckets - 1;
  const size_t nlo = d > 0 ? d : 1;
  double *lo = pc_try_alloc(nlo, sizeof *lo, "grid origin");
  long *start = pc_try_alloc(nbuckets + 1, sizeof *start, "grid buckets");
  long *fill = pc_try_alloc(nbuckets + 1, sizeof *fill, "grid fill");
  int *order = pc_try_alloc(n, sizeof *order, "grid order");
  int *parent = pc_try_alloc(n, sizeof *parent, "union-find parents");
  long *root_rank = pc_try_alloc(n, sizeof *root_rank, "cluster numbering");
  unsigned char *core = pc_try_alloc(n, sizeof *core, "core flags");
  if (!lo || !start || !fill || !order || !parent || !root_rank || !core) {
    free(lo), free(start), free(fill), free(order), free(parent), free(root_rank), free(core);
    return -1;
  }
  for (size_t j = 0; j < d; j++) {
    double m = INFINITY;
    for (size_t i = 0; i < n; i++) m = fmin(m, (double)x[i * d + j]);
    lo[j] = m;
  }

  const double t_start = pc_now();
  double t0 = t_start;
  DEV_ENTER(map(to : x[0 : n * d], lo[0 : nlo]) map(alloc : start[0 : nbuckets + 1], fill[0 : nbuckets + 1],
                                                      order[0 : n], parent[0 : n], root_rank[0 : n], core[0 : n],
                                                      labels[0 : n]))
  double t1 = pc_now();
  result->phase_s[DB_PHASE_H2D] = t1 - t0;

  if (use_grid) { /* counting sort of the points by bucket */
    PAR_FOR()
    for (unsigned long b = 0; b <= nbuckets; b++) start[b] = 0;
    PAR_FOR()
    for (size_t i = 0; i < n; i++) {
      const db_view v = DB_VIEW;
      long cell[DB_GRID_MAX_DIM];
      db_cell_of(&v, i, cell);
      const unsigned long b = db_bucket(&v, cell);
      PAR_ATOMIC
      start[b] += 1;
    }
    pc_exclusive_scan(start, nbuckets + 1);
    PAR_FOR()
    for (unsigned long b = 0; b <= nbuckets; b++) fill[b] = start[b];
    PAR_FOR()
    for (size_t i = 0; i < n; i++) {
      const db_view v = DB_VIEW;
      long cell[DB_GRID_MAX_DIM];
      db_cell_of(&v, i, cell);
      const unsigned long b = db_bucket(&v, cell);
      long slot;
      PAR_ATOMIC_CAPTURE
      slot = fill[b]++;
      order[slot] = (int)i;
    }
  }
  t0 = pc_now();
  result->phase_s[DB_PHASE_INDEX] = t0 - t1;

  PAR_FOR(GPU_ONLY(thread_limit(PC_GPU_THREADS)))
  for (size_t i = 0; i < n; i++) {
    const db_view v = DB_VIEW;
    db_cursor c;
    size_t q;
    long count = 0;
    db_cursor_init(&v, i, &c);
    while (count < min_pts && db_next_candidate(&v, &c, &q)) count += db_within(x, d, i, q, eps2);
    core[i] = count >= min_pts;
    parent[i] = (int)i;
  }
  t1 = pc_now();
  result->phase_s[DB_PHASE_CORE] = t1 - t0;

  PAR_FOR(GPU_ONLY(thread_limit(PC_GPU_THREADS)))
  for (size_t i = 0; i < n; i++) {
    if (!core[i]) continue;
    const db_view v = DB_VIEW;
    db_cursor c;
    size_t q;
    db_cursor_init(&v, i, &c);
    while (db_next_candidate(&v, &c, &q))
      if (q < i && core[q] && db_within(x, d, i, q, eps2)) db_union(parent, (int)i, (int)q);
  }
  t0 = pc_now();
  result->phase_s[DB_PHASE_UNION] = t0 - t1;

  PAR_FOR()
  for (size_t i = 0; i < n; i++) root_rank[i] = core[i] && parent[i] == (int)i;
  const long clusters = pc_exclusive_scan(root_rank, n);
  PAR_FOR()
  for (size_t i = 0; i < n; i++) labels[i] = core[i] ? (int)root_rank[db_find(parent, (int)i)] : -1;
  long n_core = 0, n_noise = 0;
  PAR_FOR(reduction(+ : n_core, n_noise) GPU_ONLY(thread_limit(PC_GPU_THREADS)))
  for (size_t i = 0; i < n; i++) {
    if (core[i]) {
      n_core++;
      continue;
    }
    const db_view v = DB_VIEW;
    db_cursor c;
    size_t q;
    int best = INT_MAX;
    db_cursor_init(&v, i, &c);
    while (db_next_candidate(&v, &c, &q))
      if (core[q] && labels[q] < best && db_within(x, d, i, q, eps2)) best = labels[q];
    labels[i] = best == INT_MAX ? -1 : best;
    n_noise += best == INT_MAX;
  }
  t1 = pc_now();
  result->phase_s[DB_PHASE_LABEL] = t1 - t0;

  DEV_UPDATE(from(labels[0 : n], core[0 : n]))
  DEV_EXIT(map(delete : x[0 : n * d], lo[0 : nlo], start[0 : nbuckets + 1], fill[0 : nbuckets + 1], order[0 : n],
                        parent[0 : n], root_rank[0 : n], core[0 : n], labels[0 : n]))
  result->phase_s[DB_PHASE_D2H] = pc_now() - t1;
  result->total_s = pc_now() - t_start;
  result->clusters = clusters;
  result->core = n_core;
  result->noise = n_noise;
  result->border = (long)n - n_core - n_noise;
  if (is_core) memcpy(is_core, core, n);
  free(lo), free(start), free(fill), free(order), free(parent), free(root_rank), free(core);
  return 0;
}

/*
 * dbscan_ranks.c - exact DBSCAN across MPI ranks (issue 22; common/dist.h), with the labels of
 * one process (dbscan.h's semantics). Each rank starts with its slice of the rows and ends with
 * their labels; in between the points move to a partition of space:
 *  1. partition: slabs along the first feature, balanced by point count (splitters at the
 *     quantiles of a sample every rank contributes to). Each point goes to the rank of its slab,
 *     and as a halo point to every other rank whose slab lies within eps of it along that
 *     feature, so each rank holds every neighbour of its own points. An index of space, not of
 *     rows: a slab may be thin, and a point is then a halo point of several ranks.
 *  2. core: dbscan_run on a rank's own and halo points gives its own points' core flags (each
 *     has all its neighbours there); the owners then tell the ranks that hold a point as halo
 *     whether it is core.
 *  3. connect: dbscan_run_given, told every local point's core flag, links the core points: its
 *     components, each named by its smallest row (the points are in row order). The components of
 *     neighbouring ranks meet in the points both hold, so rank 0 joins the names that such points
 *     link (a union-find over the rows of the boundary's core points, each set named by its
 *     smallest row: the smallest core row of the cluster, which dbscan.h numbers clusters by) and
 *     sends the joins back.
 *  4. label: the clusters' names, gathered from the ranks that own them and sorted, give the
 *     cluster ids; a core point takes its cluster's, and a third local run, told the core flags
 *     and those ids, gives a border point the smallest among its core neighbours (every neighbour
 *     of an own point is local); the rest is noise. The labels go back to the ranks that hold the
 *     rows.
 * The heavy work (the neighbour counts, the components and the border points) is the three
 * local runs', in any variant: on the GPU in the gpu variant, where the points stay between them.
 * The partition, the exchanges and the joins run on the host, in linear passes but for the
 * union-find of the boundary's points on rank 0.
 */
#include "dbscan.h"
#include "dist.h"
#include "par.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A point on the move: its row in the input and its features (then padding to 8 bytes). */
typedef struct {
  uint64_t row;
  uint32_t halo; /* 1: a copy for a neighbouring rank, 0: the rank's own point */
  float x[];
} db_moving;

/* Seconds this rank spent in the exchanges between ranks (the report's across_ranks; reset by
 * dbscan_run_ranks, which runs on one thread of a rank: MPI's calls are made from it). */
static double db_exchange_s;

/* pc_dist_exchange, timed into db_exchange_s. */
static void *db_exchange(const void *send, const size_t *counts, size_t size, size_t *total) {
  const double t0 = pc_now();
  void *got = pc_dist_exchange(send, counts, size, total);
  db_exchange_s += pc_now() - t0;
  return got;
}

/* One of a rank's local runs on its m points (none: nothing to do), timed into *seconds. */
static int db_local_run(const float *lx, size_t m, size_t d, const db_params *params, const db_given *given,
                        int *labels, unsigned char *is_core, db_result *part, double *seconds) {
  const double t0 = pc_now();
  const int rc = m ? dbscan_run_given(lx, m, d, params, given, labels, is_core, part) : 0;
  *seconds += pc_now() - t0;
  return rc;
}

/* The slabs' boundaries are the first feature's values at these many samples per rank. */
#define DB_RANKS_SAMPLES 1024
/* Halo widths are eps times this: a neighbour's features differ by at most eps, and this margin
 * keeps rounding in the comparisons with the slabs' boundaries from losing one (extra points cost
 * little). */
#define DB_RANKS_MARGIN 1.0001

static size_t db_moving_size(size_t d) { return (sizeof(db_moving) + d * sizeof(float) + 7) / 8 * 8; }
static db_moving *db_at(void *points, size_t d, size_t i) {
  return (db_moving *)((char *)points + i * db_moving_size(d));
}

static int db_cmp_float(const void *a, const void *b) {
  const float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}
static int db_cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The rank whose slab holds first-feature value v: splitters[r - 1] <= v < splitters[r]. */
static int db_slab_of(const float *splitters, int ranks, float v) {
  int lo = 0, hi = ranks - 1;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (v < splitters[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Ranks [*lo, *hi] are those whose slabs come within `reach` of v (the owner among them): slab
 * r is [splitters[r - 1], splitters[r]). The holders of a point's copies, on every rank alike. */
static void db_slabs_near(const float *splitters, int ranks, float v, double reach, int *lo, int *hi) {
  *lo = *hi = db_slab_of(splitters, ranks, v);
  while (*lo > 0 && (double)splitters[*lo - 1] >= (double)v - reach) (*lo)--;
  while (*hi < ranks - 1 && (double)splitters[*hi] <= (double)v + reach) (*hi)++;
}

/* Splitters: ranks - 1 first-feature values, the slabs' boundaries, the same on every rank. */
static float *db_splitters(const float *x, size_t n, size_t d, int ranks) {
  const size_t take = n < DB_RANKS_SAMPLES ? n : DB_RANKS_SAMPLES;
  float *sample = pc_xalloc(take ? take : 1, sizeof *sample, "DBSCAN partition sample");
  for (size_t s = 0; s < take; s++) sample[s] = x[(s * n / take) * d]; /* evenly spaced rows */
  size_t all;
  float *samples = pc_dist_allgather(sample, take, sizeof *sample, &all);
  qsort(samples, all, sizeof *samples, db_cmp_float);
  float *splitters = pc_xalloc((size_t)ranks, sizeof *splitters, "DBSCAN slab boundaries");
  for (int r = 1; r < ranks; r++) splitters[r - 1] = all ? samples[all * (size_t)r / (size_t)ranks] : 0.0f;
  splitters[ranks - 1] = INFINITY;
  free(sample), free(samples);
  return splitters;
}

/* Step 1: every rank's points, moved to their slabs' ranks, own and halo, in row order (rows
 * [first, first + n) are this rank's slice). */
static db_moving *db_partition(const float *x, size_t n, size_t first, size_t d, const float *splitters, double reach,
                               size_t *got) {
  const int ranks = pc_dist_size();
  const size_t item = db_moving_size(d);
  size_t *counts = pc_xalloc((size_t)ranks, sizeof *counts, "DBSCAN send counts");
  size_t *at = pc_xalloc((size_t)ranks, sizeof *at, "DBSCAN send offsets");
  for (int r = 0; r < ranks; r++) counts[r] = 0;
  for (size_t i = 0; i < n; i++) {
    int lo, hi;
    db_slabs_near(splitters, ranks, x[i * d], reach, &lo, &hi);
    for (int r = lo; r <= hi; r++) counts[r]++;
  }
  size_t total = 0;
  for (int r = 0; r < ranks; r++) at[r] = total, total += counts[r];
  void *send = pc_xalloc(total ? total : 1, item, "DBSCAN points to send");
  for (size_t i = 0; i < n; i++) {
    int lo, hi;
    db_slabs_near(splitters, ranks, x[i * d], reach, &lo, &hi);
    const int own = db_slab_of(splitters, ranks, x[i * d]);
    for (int r = lo; r <= hi; r++) {
      db_moving *m = db_at(send, d, at[r]++);
      memset(m, 0, item);
      m->row = first + i;
      m->halo = r != own;
      memcpy(m->x, x + i * d, d * sizeof(float));
    }
  }
  db_moving *mine = db_exchange(send, counts, item, got);
  free(send), free(counts), free(at);
  /* In row order already: each rank sends its rows in order, and the ranks' slices are in rank
   * order, as the exchange's senders are. */
  return mine;
}

/* The position of row `row` among the m points (sorted by row), or m. */
static size_t db_find_row(const void *points, size_t m, size_t d, uint64_t row) {
  size_t lo = 0, hi = m;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (db_at((void *)points, d, mid)->row < row) lo = mid + 1;
    else hi = mid;
  }
  return lo < m && db_at((void *)points, d, lo)->row == row ? lo : m;
}

/* Step 2's exchange: each rank sends the rows of its own core points to the ranks that hold
 * them as halo; is_core[] of those halo points becomes 1. 0, or -1 (memory). */
static int db_share_core_flags(const void *points, size_t m, size_t d, const float *splitters, double reach,
                               unsigned char *is_core) {
  const int ranks = pc_dist_size(), me = pc_dist_rank();
  size_t *counts = pc_xalloc((size_t)ranks, sizeof *counts, "DBSCAN send counts");
  size_t *at = pc_xalloc((size_t)ranks, sizeof *at, "DBSCAN send offsets");
  uint64_t *rows = NULL;
  for (int fill = 0; fill < 2; fill++) { /* count the rows for each rank, then place them in rank order */
    size_t total = 0;
    for (int r = 0; r < ranks; r++) {
      if (!fill) counts[r] = 0;
      at[r] = total, total += counts[r];
    }
    if (fill) rows = pc_xalloc(total ? total : 1, sizeof *rows, "DBSCAN core rows to send");
    for (size_t i = 0; i < m; i++) {
      const db_moving *p = db_at((void *)points, d, i);
      if (p->halo || !is_core[i]) continue;
      int lo, hi;
      db_slabs_near(splitters, ranks, p->x[0], reach, &lo, &hi);
      for (int r = lo; r <= hi; r++)
        if (r != me && fill) rows[at[r]++] = p->row;
        else if (r != me) counts[r]++;
    }
  }
  size_t got;
  uint64_t *core_rows = db_exchange(rows, counts, sizeof *rows, &got);
  for (size_t q = 0; core_rows && q < got; q++) {
    const size_t i = db_find_row(points, m, d, core_rows[q]);
    if (i < m) is_core[i] = 1;
  }
  free(rows), free(counts), free(at);
  const int rc = core_rows ? 0 : -1;
  free(core_rows);
  return rc;
}

/* A union-find over rows, each set named by its smallest: rank 0's join of the components. */
static size_t db_root(size_t *parent, size_t a) {
  while (parent[a] != a) a = parent[a] = parent[parent[a]];
  return a;
}

/* Step 3's join. pairs: (name of a component, row of a boundary core point in it), from every
 * rank; rank 0 joins the components that share a point and sends every name's set's smallest
 * name back. *names / *roots (count *joined, names sorted) are that map, on every rank. */
static void db_join_components(const uint64_t *pairs, size_t count, uint64_t **names, uint64_t **roots,
                               size_t *joined) {
  size_t all, distinct = 0;
  uint64_t *gathered = pc_dist_gather(pairs, count, 2 * sizeof *pairs, &all);
  uint64_t *ids = NULL, *root_of = NULL;
  if (pc_dist_rank() == 0) {
    if (!gathered) pc_die(PC_EXIT_USAGE, "%s", pc_last_error());
    ids = pc_xalloc(2 * all + 1, sizeof *ids, "DBSCAN boundary rows");
    memcpy(ids, gathered, 2 * all * sizeof *ids);
    qsort(ids, 2 * all, sizeof *ids, db_cmp_u64);
    for (size_t q = 0; q < 2 * all; q++)
      if (q == 0 || ids[q] != ids[q - 1]) ids[distinct++] = ids[q];
    size_t *parent = pc_xalloc(distinct + 1, sizeof *parent, "DBSCAN union-find");
    for (size_t q = 0; q < distinct; q++) parent[q] = q;
    for (size_t q = 0; q < all; q++) { /* positions in ids are in row order: the smaller root wins */
      const uint64_t *where = bsearch(&gathered[2 * q], ids, distinct, sizeof *ids, db_cmp_u64);
      const uint64_t *what = bsearch(&gathered[2 * q + 1], ids, distinct, sizeof *ids, db_cmp_u64);
      const size_t a = db_root(parent, (size_t)(where - ids)), b = db_root(parent, (size_t)(what - ids));
      if (a < b) parent[b] = a;
      else parent[a] = b;
    }
    root_of = pc_xalloc(distinct + 1, sizeof *root_of, "DBSCAN joined names");
    for (size_t q = 0; q < distinct; q++) root_of[q] = ids[db_root(parent, q)];
    free(parent);
  }
  free(gathered);
  uint64_t size = distinct;
  pc_dist_bcast(&size, sizeof size);
  if (pc_dist_rank() != 0) {
    ids = pc_xalloc(size + 1, sizeof *ids, "DBSCAN boundary rows");
    root_of = pc_xalloc(size + 1, sizeof *root_of, "DBSCAN joined names");
  }
  pc_dist_bcast(ids, size * sizeof *ids);
  pc_dist_bcast(root_of, size * sizeof *root_of);
  *names = ids, *roots = root_of, *joined = size;
}

int dbscan_run_ranks(const float *x, size_t n, size_t d, const db_params *params, int *labels, db_result *result) {
  memset(result, 0, sizeof *result);
  db_exchange_s = 0.0;
  const double t_start = pc_now(), reach = params->eps * DB_RANKS_MARGIN;
  const size_t n_all = (size_t)pc_dist_sum_long((long)n), item = db_moving_size(d);
  size_t first, count; /* this rank's rows: [first, first + n), count = n */
  pc_dist_slice(n_all, &first, &count);
  const int ranks = pc_dist_size();

  /* 1. partition */
  float *splitters = db_splitters(x, n, d, ranks);
  size_t m;
  db_moving *points = db_partition(x, n, first, d, splitters, reach, &m);
  if (pc_dist_any_failed(points == NULL)) {
    free(splitters);
    return -1;
  }
  float *lx = pc_xalloc(m ? m : 1, d * sizeof *lx, "DBSCAN local points");
  for (size_t i = 0; i < m; i++) memcpy(lx + i * d, db_at(points, d, i)->x, d * sizeof *lx);
  int *local = pc_xalloc(m ? m : 1, sizeof *local, "DBSCAN local labels");
  unsigned char *is_core = pc_xalloc(m ? m : 1, 1, "DBSCAN local core flags");
  const double t_partition = pc_now();

  /* device: in, lx[m * d] the local points, for the three local runs (each finds them there) */
  const size_t nlx = m * d;
  (void)nlx; /* used by the gpu variant's data directives */
  DEV_ENTER(map(to : lx[0 : nlx]))

  /* 2. core flags: exact for the rank's own points, then shared with the ranks holding them as halo */
  db_result part = {.index = params->index};
  double local_s = 0.0;
  int rc = db_local_run(lx, m, d, params, NULL, local, is_core, &part, &local_s);
  if (!pc_dist_any_failed(rc != 0)) rc = db_share_core_flags(points, m, d, splitters, reach, is_core);
  if (pc_dist_any_failed(rc != 0)) rc = -1;
  const double t_core = pc_now();

  /* 3. components of the rank's core points (the local run told the core flags): pieces of the
   * clusters, numbered by their smallest position, which is their smallest row; joined across ranks */
  const db_given core_given = {.core_in = is_core, .label_in = NULL};
  if (rc == 0 && db_local_run(lx, m, d, params, &core_given, local, NULL, &part, &local_s) != 0) rc = -1;
  if (pc_dist_any_failed(rc != 0)) rc = -1;
  const size_t pieces = rc == 0 ? (size_t)part.clusters : 0;
  uint64_t *name = pc_xalloc(pieces + 1, sizeof *name, "DBSCAN component names");
  for (size_t i = m; rc == 0 && i-- > 0;)
    if (is_core[i]) name[local[i]] = db_at(points, d, i)->row;
  size_t pairs = 0;
  uint64_t *pair = pc_xalloc(2 * m + 1, sizeof *pair, "DBSCAN boundary pairs");
  for (size_t i = 0; rc == 0 && i < m; i++) {
    const db_moving *p = db_at(points, d, i);
    if (!is_core[i]) continue;
    int lo, hi;
    db_slabs_near(splitters, ranks, p->x[0], reach, &lo, &hi);
    if (lo == hi) continue; /* held by this rank alone: nothing to join through it */
    pair[2 * pairs] = name[local[i]], pair[2 * pairs + 1] = p->row, pairs++;
  }
  uint64_t *joined_name = NULL, *joined_root = NULL;
  size_t joined = 0;
  if (rc == 0) db_join_components(pair, pairs, &joined_name, &joined_root, &joined);
  for (size_t c = 0; c < pieces; c++) { /* each piece's cluster: its joined name */
    const uint64_t *j = bsearch(&name[c], joined_name, joined, sizeof *joined_name, db_cmp_u64);
    if (j) name[c] = joined_root[j - joined_name];
  }
  const double t_connect = pc_now();

  /* 4. cluster ids: the sorted names of the clusters, gathered from the ranks owning them */
  size_t owned = 0;
  uint64_t *mine = pc_xalloc(pieces + 1, sizeof *mine, "DBSCAN cluster names");
  for (size_t c = 0; c < pieces; c++) {
    const size_t i = db_find_row(points, m, d, name[c]);
    if (i < m && !db_at(points, d, i)->halo) mine[owned++] = name[c];
  }
  qsort(mine, owned, sizeof *mine, db_cmp_u64);
  size_t distinct = 0;
  for (size_t c = 0; c < owned; c++)
    if (c == 0 || mine[c] != mine[c - 1]) mine[distinct++] = mine[c];
  size_t clusters;
  uint64_t *cluster = pc_dist_allgather(mine, distinct, sizeof *mine, &clusters);
  qsort(cluster, clusters, sizeof *cluster, db_cmp_u64);
  /* a core point's id; border points take the smallest among their core neighbours' ids in a
   * third local run, told the flags and these ids (every neighbour of an own point is here) */
  int *core_label = local; /* the pieces' numbers, replaced by the ids */
  for (size_t i = 0; rc == 0 && i < m; i++)
    if (is_core[i]) {
      const uint64_t *id = bsearch(&name[local[i]], cluster, clusters, sizeof *cluster, db_cmp_u64);
      core_label[i] = (int)(id - cluster);
    }
  int *label = pc_xalloc(m ? m : 1, sizeof *label, "DBSCAN local labels");
  const db_given ids_given = {.core_in = is_core, .label_in = core_label};
  if (rc == 0 && db_local_run(lx, m, d, params, &ids_given, label, NULL, &part, &local_s) != 0) rc = -1;
  DEV_EXIT(map(delete : lx[0 : nlx]))
  /* every own point's (row, label), back to the rank holding the row */
  int64_t *back = pc_xalloc(2 * m + 1, sizeof *back, "DBSCAN labels to send");
  size_t *counts = pc_xalloc((size_t)ranks, sizeof *counts, "DBSCAN send counts");
  for (int r = 0; r < ranks; r++) counts[r] = 0;
  size_t own = 0;
  long core = 0, border = 0;
  for (size_t i = 0; rc == 0 && i < m; i++) {
    const db_moving *p = db_at(points, d, i);
    if (p->halo) continue;
    core += is_core[i], border += !is_core[i] && label[i] >= 0;
    back[2 * own] = (int64_t)p->row, back[2 * own + 1] = label[i], own++;
    counts[pc_dist_slice_owner(n_all, p->row)]++;
  }
  /* grouped by destination rank: own points are in row order, and so are the ranks' slices */
  size_t got;
  int64_t *mine_back = db_exchange(back, counts, 2 * sizeof *back, &got);
  if (pc_dist_any_failed(rc != 0 || !mine_back)) rc = -1;
  for (size_t q = 0; rc == 0 && q < got; q++) labels[mine_back[2 * q] - (int64_t)first] = (int)mine_back[2 * q + 1];
  const double t_label = pc_now();

  result->index = part.index; /* as the first local run resolved it (auto: by d alone) */
  result->clusters = (long)clusters;
  result->core = pc_dist_sum_long(core);
  result->border = pc_dist_sum_long(border);
  result->noise = (long)n_all - result->core - result->border;
  result->working_bytes = m * (item + d * sizeof(float) + 2 * sizeof(int) + 1);
  result->phase_s[DB_PHASE_INDEX] = t_partition - t_start;
  result->phase_s[DB_PHASE_CORE] = t_core - t_partition;
  result->phase_s[DB_PHASE_CONNECT] = t_connect - t_core;
  result->phase_s[DB_PHASE_LABEL] = t_label - t_connect;
  result->total_s = pc_now() - t_start;
  result->ranks_local_s = local_s;
  result->ranks_exchange_s = db_exchange_s;
  result->ranks_points_held = m;
  free(splitters), free(points), free(lx), free(local), free(is_core), free(name), free(pair), free(joined_name);
  free(joined_root), free(mine), free(cluster), free(label), free(back), free(counts), free(mine_back);
  return rc;
}

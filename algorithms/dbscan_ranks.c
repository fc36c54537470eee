/*
 * dbscan_ranks.c - exact DBSCAN across MPI ranks (issue 22; common/dist.h), with the labels of
 * one process (dbscan.h's semantics). Each rank starts with its slice of the rows and ends with
 * their labels; in between the points move to a partition of space:
 *  1. partition: slabs along the first feature, balanced by point count (splitters at the
 *     quantiles of a sample every rank contributes to). Each point goes to the rank of its slab,
 *     and as a halo point to every other rank whose slab lies within eps of it along that
 *     feature, so each rank holds every neighbour of its own points. An index of space, not of
 *     rows: a slab may be thin, and a point is then a halo point of several ranks. A point's
 *     features and its row travel apart (the features are the local runs' input as they arrive);
 *     whether a point is a rank's own or halo follows from its first feature, on every rank alike.
 *  2. core: dbscan_run on a rank's own and halo points gives its own points' core flags (each
 *     has all its neighbours there); the owners then tell the ranks that hold a point as halo
 *     whether it is core (a byte a point: both sides know the points' order).
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
 *     rows, in row order (which is how each of them finds its rows' labels).
 * The heavy work (the neighbour counts, the components and the border points) is the three
 * local runs', in any variant: on the GPU in the gpu variant, where the points stay between them.
 * The partition, the exchanges and the joins run on the host, in linear passes on the host's
 * threads (blocks of positions, each counted and then filled, so that every destination gets its
 * items in position order), but for the union-find of the boundary's points on rank 0.
 */
#include "dbscan.h"
#include "dist.h"
#include "par.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
/* The host's passes over a rank's positions run in this many blocks of consecutive positions,
 * a block on one host thread at a time (enough to balance 64 threads; the per-block counts, a
 * size_t per block and rank, stay small). */
#define DB_BLOCKS 512

static int db_cmp_float(const void *a, const void *b) {
  const float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}
static int db_cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The first of block b's positions among m (block DB_BLOCKS: m). */
static size_t db_block_start(size_t m, size_t b) { return m / DB_BLOCKS * b + m % DB_BLOCKS * b / DB_BLOCKS; }

/* slot[b * ranks + r], block b's count of items for rank r, becomes the block's first slot in a
 * buffer grouped by rank (blocks in order within a rank); sends[r] gets rank r's count. Returns
 * the buffer's size. */
static size_t db_block_slots(size_t *slot, int ranks, size_t *sends) {
  size_t at = 0;
  for (int r = 0; r < ranks; r++) {
    const size_t first = at;
    for (size_t b = 0; b < DB_BLOCKS; b++) {
      const size_t count = slot[b * (size_t)ranks + (size_t)r];
      slot[b * (size_t)ranks + (size_t)r] = at, at += count;
    }
    sends[r] = at - first;
  }
  return at;
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

/* Ranks [*lo, *hi] are those whose slabs come within `reach` of v; returns the owner among them
 * (slab r is [splitters[r - 1], splitters[r])). The holders of a point's copies, on every rank alike. */
static int db_slabs_near(const float *splitters, int ranks, float v, double reach, int *lo, int *hi) {
  const int own = db_slab_of(splitters, ranks, v);
  *lo = *hi = own;
  while (*lo > 0 && (double)splitters[*lo - 1] >= (double)v - reach) (*lo)--;
  while (*hi < ranks - 1 && (double)splitters[*hi] <= (double)v + reach) (*hi)++;
  return own;
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
 * [first, first + n) are this rank's slice): *lx gets their features, *rows their rows, *m their
 * number. owned_by[b * ranks + r] gets the number of rows of this rank's block b (of its n) that
 * rank r owns: where the labels coming back are. 0, or -1 (memory; on every rank). */
static int db_partition(const float *x, size_t n, size_t first, size_t d, const float *splitters, double reach,
                        size_t *owned_by, float **lx, uint64_t **rows, size_t *m) {
  const int ranks = pc_dist_size();
  const size_t nr = (size_t)ranks;
  size_t *slot = pc_xalloc(DB_BLOCKS * nr, sizeof *slot, "DBSCAN send slots");
  size_t *counts = pc_xalloc(nr, sizeof *counts, "DBSCAN send counts");
  HOST_PAR_FOR(schedule(dynamic, 1))
  for (size_t b = 0; b < DB_BLOCKS; b++) { /* count each block's copies for each rank */
    size_t *to = slot + b * nr, *own = owned_by + b * nr;
    for (size_t r = 0; r < nr; r++) to[r] = own[r] = 0;
    for (size_t i = db_block_start(n, b); i < db_block_start(n, b + 1); i++) {
      int lo, hi;
      own[db_slabs_near(splitters, ranks, x[i * d], reach, &lo, &hi)]++;
      for (int r = lo; r <= hi; r++) to[r]++;
    }
  }
  const size_t total = db_block_slots(slot, ranks, counts);
  float *send_x = pc_xalloc(total ? total : 1, d * sizeof *send_x, "DBSCAN points to send");
  uint64_t *send_row = pc_xalloc(total ? total : 1, sizeof *send_row, "DBSCAN rows to send");
  HOST_PAR_FOR(schedule(dynamic, 1))
  for (size_t b = 0; b < DB_BLOCKS; b++) { /* place them, in row order within each rank's part */
    size_t *to = slot + b * nr;
    for (size_t i = db_block_start(n, b); i < db_block_start(n, b + 1); i++) {
      int lo, hi;
      db_slabs_near(splitters, ranks, x[i * d], reach, &lo, &hi);
      for (int r = lo; r <= hi; r++) {
        const size_t s = to[r]++;
        memcpy(send_x + s * d, x + i * d, d * sizeof *send_x);
        send_row[s] = first + i;
      }
    }
  }
  /* In row order as they arrive: each rank sends its rows in order, and the ranks' slices are in
   * rank order, as the exchange's senders are. */
  size_t got;
  *lx = db_exchange(send_x, counts, d * sizeof *send_x, m);
  free(send_x);
  *rows = *lx ? db_exchange(send_row, counts, sizeof *send_row, &got) : NULL;
  free(send_row), free(slot), free(counts);
  if (!*rows) {
    free(*lx), *lx = NULL;
    return -1;
  }
  return 0;
}

/* Step 2's exchange: each rank sends its own points' core flags to the ranks that hold them as
 * halo, a byte a point, in row order; each holder reads them in the order of its halo points
 * from that rank, which is the same. is_core[] of the halo points becomes the owners'. 0, or -1
 * (memory; on every rank). */
static int db_share_core_flags(const float *lx, size_t m, size_t d, const float *splitters, double reach,
                               unsigned char *is_core) {
  const int ranks = pc_dist_size(), me = pc_dist_rank();
  const size_t nr = (size_t)ranks;
  size_t *out = pc_xalloc(2 * DB_BLOCKS * nr, sizeof *out, "DBSCAN core flag slots");
  size_t *in = out + DB_BLOCKS * nr; /* in[b * ranks + r]: block b's halo points owned by rank r */
  size_t *counts = pc_xalloc(2 * nr, sizeof *counts, "DBSCAN core flag counts"), *expected = counts + nr;
  HOST_PAR_FOR(schedule(dynamic, 1))
  for (size_t b = 0; b < DB_BLOCKS; b++) {
    size_t *to = out + b * nr, *from = in + b * nr;
    for (size_t r = 0; r < nr; r++) to[r] = from[r] = 0;
    for (size_t i = db_block_start(m, b); i < db_block_start(m, b + 1); i++) {
      int lo, hi;
      const int own = db_slabs_near(splitters, ranks, lx[i * d], reach, &lo, &hi);
      if (own != me) from[own]++;
      else
        for (int r = lo; r <= hi; r++) to[r] += r != me;
    }
  }
  const size_t total = db_block_slots(out, ranks, counts);
  db_block_slots(in, ranks, expected);
  unsigned char *flags = pc_xalloc(total ? total : 1, 1, "DBSCAN core flags to send");
  HOST_PAR_FOR(schedule(dynamic, 1))
  for (size_t b = 0; b < DB_BLOCKS; b++) {
    size_t *to = out + b * nr;
    for (size_t i = db_block_start(m, b); i < db_block_start(m, b + 1); i++) {
      int lo, hi;
      if (db_slabs_near(splitters, ranks, lx[i * d], reach, &lo, &hi) != me) continue;
      for (int r = lo; r <= hi; r++)
        if (r != me) flags[to[r]++] = is_core[i];
    }
  }
  size_t got;
  unsigned char *halo_core = db_exchange(flags, counts, 1, &got);
  if (halo_core) {
    HOST_PAR_FOR(schedule(dynamic, 1))
    for (size_t b = 0; b < DB_BLOCKS; b++) {
      size_t *from = in + b * nr;
      for (size_t i = db_block_start(m, b); i < db_block_start(m, b + 1); i++) {
        const int own = db_slab_of(splitters, ranks, lx[i * d]);
        if (own != me) is_core[i] = halo_core[from[own]++];
      }
    }
  }
  const int rc = halo_core ? 0 : -1;
  free(out), free(counts), free(flags), free(halo_core);
  return rc;
}

/* Step 4's way back: each own point's label to the rank holding its row, in row order; labels[]
 * of this rank's n rows (its block b's rows owned by rank r: owned_by[b * ranks + r]) from them.
 * 0, or -1 (memory; on every rank). */
static int db_labels_back(const float *lx, const uint64_t *rows, const int *label, size_t m, size_t d,
                          const float *splitters, size_t n_all, const float *x, size_t n, size_t *owned_by,
                          int *labels) {
  const int ranks = pc_dist_size(), me = pc_dist_rank();
  const size_t nr = (size_t)ranks;
  size_t *slot = pc_xalloc(DB_BLOCKS * nr, sizeof *slot, "DBSCAN label slots");
  size_t *counts = pc_xalloc(2 * nr, sizeof *counts, "DBSCAN label counts"), *expected = counts + nr;
  HOST_PAR_FOR(schedule(dynamic, 1))
  for (size_t b = 0; b < DB_BLOCKS; b++) {
    size_t *to = slot + b * nr;
    for (size_t r = 0; r < nr; r++) to[r] = 0;
    for (size_t i = db_block_start(m, b); i < db_block_start(m, b + 1); i++)
      if (db_slab_of(splitters, ranks, lx[i * d]) == me) to[pc_dist_slice_owner(n_all, rows[i])]++;
  }
  const size_t total = db_block_slots(slot, ranks, counts);
  db_block_slots(owned_by, ranks, expected);
  int *send = pc_xalloc(total ? total : 1, sizeof *send, "DBSCAN labels to send");
  HOST_PAR_FOR(schedule(dynamic, 1))
  for (size_t b = 0; b < DB_BLOCKS; b++) {
    size_t *to = slot + b * nr;
    for (size_t i = db_block_start(m, b); i < db_block_start(m, b + 1); i++)
      if (db_slab_of(splitters, ranks, lx[i * d]) == me) send[to[pc_dist_slice_owner(n_all, rows[i])]++] = label[i];
  }
  size_t got;
  int *mine = db_exchange(send, counts, sizeof *send, &got);
  if (mine) {
    HOST_PAR_FOR(schedule(dynamic, 1))
    for (size_t b = 0; b < DB_BLOCKS; b++) {
      size_t *from = owned_by + b * nr;
      for (size_t i = db_block_start(n, b); i < db_block_start(n, b + 1); i++)
        labels[i] = mine[from[db_slab_of(splitters, ranks, x[i * d])]++];
    }
  }
  const int rc = mine ? 0 : -1;
  free(slot), free(counts), free(send), free(mine);
  return rc;
}

/* The position of row `row` among the m rows (sorted), or m. */
static size_t db_find_row(const uint64_t *rows, size_t m, uint64_t row) {
  const uint64_t *at = bsearch(&row, rows, m, sizeof *rows, db_cmp_u64);
  return at ? (size_t)(at - rows) : m;
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
  const size_t n_all = (size_t)pc_dist_sum_long((long)n);
  size_t first, count; /* this rank's rows: [first, first + n), count = n */
  pc_dist_slice(n_all, &first, &count);
  const int ranks = pc_dist_size(), me = pc_dist_rank();

  /* 1. partition */
  float *splitters = db_splitters(x, n, d, ranks);
  size_t *owned_by = pc_xalloc(DB_BLOCKS * (size_t)ranks, sizeof *owned_by, "DBSCAN label sources");
  float *lx;
  uint64_t *rows;
  size_t m;
  if (db_partition(x, n, first, d, splitters, reach, owned_by, &lx, &rows, &m) != 0) {
    free(splitters), free(owned_by);
    return -1;
  }
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
  if (!pc_dist_any_failed(rc != 0)) rc = db_share_core_flags(lx, m, d, splitters, reach, is_core);
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
    if (is_core[i]) name[local[i]] = rows[i];
  /* (name, row) of the core points other ranks hold too: the pieces they join */
  size_t *slot = pc_xalloc(DB_BLOCKS + 1, sizeof *slot, "DBSCAN boundary slots");
  slot[0] = 0;
  HOST_PAR_FOR(schedule(dynamic, 1))
  for (size_t b = 0; b < DB_BLOCKS; b++) {
    size_t boundary = 0;
    for (size_t i = db_block_start(m, b); rc == 0 && i < db_block_start(m, b + 1); i++) {
      int lo, hi;
      db_slabs_near(splitters, ranks, lx[i * d], reach, &lo, &hi);
      boundary += is_core[i] && lo != hi;
    }
    slot[b + 1] = boundary;
  }
  for (size_t b = 0; b < DB_BLOCKS; b++) slot[b + 1] += slot[b];
  const size_t pairs = slot[DB_BLOCKS];
  uint64_t *pair = pc_xalloc(2 * pairs + 1, sizeof *pair, "DBSCAN boundary pairs");
  HOST_PAR_FOR(schedule(dynamic, 1))
  for (size_t b = 0; b < DB_BLOCKS; b++) {
    size_t at = slot[b];
    for (size_t i = db_block_start(m, b); rc == 0 && i < db_block_start(m, b + 1); i++) {
      int lo, hi;
      db_slabs_near(splitters, ranks, lx[i * d], reach, &lo, &hi);
      if (is_core[i] && lo != hi) pair[2 * at] = name[local[i]], pair[2 * at + 1] = rows[i], at++;
    }
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
    const size_t i = db_find_row(rows, m, name[c]);
    if (i < m && db_slab_of(splitters, ranks, lx[i * d]) == me) mine[owned++] = name[c];
  }
  qsort(mine, owned, sizeof *mine, db_cmp_u64);
  size_t distinct = 0;
  for (size_t c = 0; c < owned; c++)
    if (c == 0 || mine[c] != mine[c - 1]) mine[distinct++] = mine[c];
  size_t clusters;
  uint64_t *cluster = pc_dist_allgather(mine, distinct, sizeof *mine, &clusters);
  qsort(cluster, clusters, sizeof *cluster, db_cmp_u64);
  /* each piece's cluster id; a core point takes its piece's, and border points the smallest among
   * their core neighbours' ids in a third local run, told the flags and these ids (every
   * neighbour of an own point is here) */
  int *piece_id = pc_xalloc(pieces + 1, sizeof *piece_id, "DBSCAN cluster ids");
  for (size_t c = 0; c < pieces; c++)
    piece_id[c] = (int)((uint64_t *)bsearch(&name[c], cluster, clusters, sizeof *cluster, db_cmp_u64) - cluster);
  int *core_label = local; /* the pieces' numbers, replaced by the ids */
  HOST_PAR_FOR(schedule(static))
  for (size_t i = 0; i < m; i++)
    if (rc == 0 && is_core[i]) core_label[i] = piece_id[local[i]];
  int *label = pc_xalloc(m ? m : 1, sizeof *label, "DBSCAN local labels");
  const db_given ids_given = {.core_in = is_core, .label_in = core_label};
  if (rc == 0 && db_local_run(lx, m, d, params, &ids_given, label, NULL, &part, &local_s) != 0) rc = -1;
  DEV_EXIT(map(delete : lx[0 : nlx]))
  long core = 0, border = 0;
  HOST_PAR_FOR(schedule(static) reduction(+ : core, border))
  for (size_t i = 0; i < m; i++)
    if (rc == 0 && db_slab_of(splitters, ranks, lx[i * d]) == me)
      core += is_core[i], border += !is_core[i] && label[i] >= 0;
  if (pc_dist_any_failed(rc != 0)) rc = -1;
  if (rc == 0) rc = db_labels_back(lx, rows, label, m, d, splitters, n_all, x, n, owned_by, labels);
  const double t_label = pc_now();

  result->index = part.index; /* as the first local run resolved it (auto: by d alone) */
  result->clusters = (long)clusters;
  result->core = pc_dist_sum_long(core);
  result->border = pc_dist_sum_long(border);
  result->noise = (long)n_all - result->core - result->border;
  result->working_bytes = m * (d * sizeof(float) + sizeof(uint64_t) + 2 * sizeof(int) + 1);
  result->phase_s[DB_PHASE_INDEX] = t_partition - t_start;
  result->phase_s[DB_PHASE_CORE] = t_core - t_partition;
  result->phase_s[DB_PHASE_CONNECT] = t_connect - t_core;
  result->phase_s[DB_PHASE_LABEL] = t_label - t_connect;
  result->total_s = pc_now() - t_start;
  result->ranks_local_s = local_s;
  result->ranks_exchange_s = db_exchange_s;
  result->ranks_points_held = m;
  free(splitters), free(owned_by), free(lx), free(rows), free(local), free(is_core), free(name), free(slot);
  free(pair), free(joined_name), free(joined_root), free(mine), free(cluster), free(piece_id), free(label);
  return rc;
}

/*
 * dbscan.c - exact DBSCAN by core flags and a parallel union-find (see dbscan.h for the
 * semantics), one source for the three variants (common/par.h).
 *
 * Phases, each a parallel loop:
 *  1. index: `order` lists the points grouped by grid cell (or directory page, or in input
 *     order without an index), and xs holds their coordinates in that order. Every later phase
 *     works on positions in xs: a point's candidate neighbours are a few contiguous ranges of
 *     positions, and consecutive positions (one GPU warp, one CPU chunk) are close in space, so
 *     they read the same ranges. The grid is an exact hash table of the occupied cells (side
 *     eps), cut into regions (coarse cells in Z-order, db_region_of): each cell is claimed by
 *     one of its points with compare-and-swap (linear probing within its region), and a
 *     counting sort (atomic histogram that also captures ranks, prefix sum, scatter) groups the points by cell,
 *     region after region, so that cells near in space are near in memory. The projected grid
 *     is the same grid over the 3 dimensions of widest span. Up to 3 grid dimensions each
 *     occupied cell then lists its neighbouring cells' ranges, nearest first
 *     (db_build_neighbour_lists), so that the phases below read a list instead of probing.
 *     From d = DB_TILED_MIN_DIM the union-find method also keeps the points in tiles (xt) for the
 *     tiled tests (the chains method tests a point at a time).
 *  2. core: count neighbours up to min_pts (the count stops early).
 *  3. union: every core point links to each core neighbour at a smaller position with a
 *     lock-free union-find (compare-and-swap that hangs the larger root under the smaller one;
 *     finds halve paths), so a point only scans the ranges before its own position. With tiles
 *     and neighbour lists, a block of a cell's points at a time against candidates staged in
 *     team memory (db_walk_blocks).
 * The distance test is always db_within's (double); the tiled walks sum in float first and test
 * again in double only the pairs near eps (db_tile_within).
 *  4. label: each component is named by its smallest input index (atomic minimum); those
 *     points are numbered by a prefix sum over the input order (cluster ids in index order);
 *     core points take their component's id, border points the smallest id among their core
 *     neighbours (with tiles and lists, by blocks too: db_walk_blocks); the labels are
 *     scattered back to input order.
 * All device data (points, index, flags, parents, labels) is mapped once and stays on the GPU
 * through the phases.
 */
#include "dbscan.h"
#include "device.h"
#include "knobs.h"
#include "par.h"
#include "scan.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Tuning knobs: settings of speed, not of results; -DNAME=value (make KNOBS='-DNAME=value')
 * overrides one, `info` lists them and a report names those changed (knobs.h). */
/* seeds one team takes from its chain per launch (chains) */
#define DB_SEEDS_PER_LAUNCH_DEFAULT 32
#ifndef DB_SEEDS_PER_LAUNCH
#define DB_SEEDS_PER_LAUNCH DB_SEEDS_PER_LAUNCH_DEFAULT
#endif
PC_KNOB(DB_SEEDS_PER_LAUNCH)
/* GPU threads per chain's team */
#define DB_CHAIN_THREADS_DEFAULT 128
#ifndef DB_CHAIN_THREADS
#define DB_CHAIN_THREADS DB_CHAIN_THREADS_DEFAULT
#endif
PC_KNOB(DB_CHAIN_THREADS)
/* candidate ranges a chain's team searches per parallel loop (the 3^3 grid cells of d = 3 fit) */
#define DB_RANGE_BATCH_DEFAULT 32
#ifndef DB_RANGE_BATCH
#define DB_RANGE_BATCH DB_RANGE_BATCH_DEFAULT
#endif
PC_KNOB(DB_RANGE_BATCH)
/* positions the search for new chain starts looks at per launch, at least (a window, so that
 * a launch costs no pass over all points) */
#define DB_START_WINDOW_DEFAULT ((size_t)1 << 16)
#ifndef DB_START_WINDOW
#define DB_START_WINDOW DB_START_WINDOW_DEFAULT
#endif
PC_KNOB(DB_START_WINDOW)

/* Positions per tile of the tiled distance tests: candidates tested
 * against a point at once, a bit each in an unsigned mask */
#define DB_TILE_DEFAULT 16
#ifndef DB_TILE
#define DB_TILE DB_TILE_DEFAULT
#endif
PC_KNOB(DB_TILE)
/* the d from which the union-find method tests distances a tile at a time (below, a candidate at a
 * time in double is as fast or faster: docs/performance.md) */
#define DB_TILED_MIN_DIM_DEFAULT 8
#ifndef DB_TILED_MIN_DIM
#define DB_TILED_MIN_DIM DB_TILED_MIN_DIM_DEFAULT
#endif
PC_KNOB(DB_TILED_MIN_DIM)
/* The block walks of the links and labels (db_walk_blocks): positions a team takes, and
 * candidates a round (at most 32: a bit each in a mask); the stage holds ROUND x d floats, so the
 * walks serve d <= DB_JOIN_MAX_DIM (16 KB of team memory); larger d walk a point at a time. */
#define DB_JOIN_THREADS_DEFAULT 128
#ifndef DB_JOIN_THREADS
#define DB_JOIN_THREADS DB_JOIN_THREADS_DEFAULT
#endif
PC_KNOB(DB_JOIN_THREADS)
#define DB_JOIN_ROUND_DEFAULT 32
#ifndef DB_JOIN_ROUND
#define DB_JOIN_ROUND DB_JOIN_ROUND_DEFAULT
#endif
PC_KNOB(DB_JOIN_ROUND)
/* GPU threads per team of the list walks' core count and links, a team a block of positions
 * (DB_NEIGHBOUR_LOOP_OF): measured (docs/performance.md, 2026-11-28), smaller teams for the count,
 * whose early stop at min_pts leaves a team waiting on its slowest thread, larger ones for the
 * links */
#define DB_CORE_THREADS_DEFAULT 64
#ifndef DB_CORE_THREADS
#define DB_CORE_THREADS DB_CORE_THREADS_DEFAULT
#endif
PC_KNOB(DB_CORE_THREADS)
#define DB_LINK_THREADS_DEFAULT 128
#ifndef DB_LINK_THREADS
#define DB_LINK_THREADS DB_LINK_THREADS_DEFAULT
#endif
PC_KNOB(DB_LINK_THREADS)
_Static_assert(DB_JOIN_ROUND >= 1 && DB_JOIN_ROUND <= 32, "a round's candidates are the bits of an unsigned mask");
#define DB_JOIN_MAX_DIM 128
_Static_assert(DB_TILE >= 1 && DB_TILE <= 32, "a tile's candidates are the bits of an unsigned mask");

const char *const db_index_names[5] = {"none", "grid", "directory", "projected", "auto"};
const char *const db_phase_names[DB_NPHASES] = {"h2d", "index", "core", "connect", "label", "d2h"};

/* The grid's limit on the span of the data in cells along any dimension (see the cell width). */
#define DB_GRID_MAX_CELLS 0x1p29
/* Up to this d the grid lists each cell's neighbouring cells once (3^d ranges a cell: 27 at
 * d = 3), so that no phase probes the cell table point by point; above it the lists would
 * outgrow the points (6,561 ranges a cell at d = 8) and each point probes its 3^d cells. */
#define DB_NEAR_MAX_DIM 3
#define DB_NEAR_CELLS 27 /* 3^DB_NEAR_MAX_DIM */

DEV_FUNCS_BEGIN

/* What the candidate search reads; built inside each parallel loop from its device pointers.
 * Points are named by their position in xs (index order). */
typedef struct {
  const float *xs;       /* the points in index order */
  const float *xt;       /* d >= DB_TILED_MIN_DIM: the same, tile by tile (db_tile_within); else NULL */
  const double *lo;      /* grid: per-dimension minimum (grid origin) */
  const int *region;     /* grid: region r's points begin at position region[r], and its slots of
                          * the cell table at 2 region[r] (db_region_of) */
  const int *start;      /* grid: slot h of the cell table holds positions [start[h], start[h + 1]),
                          * empty for a free slot; directory: page starts */
  const float *node_lo, *node_hi; /* directory: each node's range in its level's dimension */
  const int *cell_of;    /* grid, d <= DB_NEAR_MAX_DIM: each position's cell (0 .. cells - 1); else NULL */
  const int *near;       /* with cell_of: per cell, cells_around ranges [begin, end) of positions,
                          * neighbouring cell a at entry rank[a] (db_build_neighbour_lists),
                          * empty for a cell without points */
  size_t n, d;
  double eps, inv_eps;
  float inside2, outside2; /* tiles: float squared distances surely within eps / surely beyond it */
  int region_shift, region_bits; /* grid: regions of 2^shift cells a side, numbered by bits a dimension */
  int kind;              /* a db_index_kind: none, grid (the projected grid included) or directory */
  int gd;                /* grid: its dimensions, gdim[0 .. gd) (all d for the grid, the widest 3 projected) */
  int gdim[DB_GRID_MAX_DIM];
  int cells_around;      /* grid: 3^gd */
  int levels, fanout;    /* directory */
} db_view;

/* A walk over the candidate neighbours of one point: a sequence of ranges of positions. */
typedef struct {
  long home[DB_GRID_MAX_DIM];                         /* grid: the point's cell */
  int cell;                                           /* grid with neighbour lists: the point's cell */
  int around;                                         /* grid: which of the 3^d cells */
  int level, child[DB_DIR_MAX_LEVELS], node[DB_DIR_MAX_LEVELS]; /* directory: depth-first walk */
  double point[DB_DIR_MAX_LEVELS];                    /* directory: the point's first coordinates */
} db_cursor;

/* The grid cell of a point (its row of d coordinates): gd cell numbers, one per grid dimension. */
static inline void db_cell_of(const db_view *v, const float *row, long *cell) {
  for (int j = 0; j < v->gd; j++) {
    const int k = v->gdim[j];
    cell[j] = (long)floor(((double)row[k] - v->lo[k]) * v->inv_eps);
  }
}

static inline int db_same_cell(const db_view *v, const float *row, const long *cell) {
  long other[DB_GRID_MAX_DIM];
  db_cell_of(v, row, other);
  int same = 1;
  for (int j = 0; j < v->gd; j++) same &= other[j] == cell[j];
  return same;
}

/* The region of a cell. The cell table is cut into regions, one per coarse cell of 2^region_shift
 * cells a side, numbered in Z-order (the coarse cell numbers' bits interleaved, the lowest bits
 * first), with two slots for each of the region's points. A cell is hashed within its region, and
 * the counting sort by slot (db_build_grid) lays the regions out in that order: points near each
 * other in space are near each other in memory, so the neighbouring cells that a warp reads
 * stay in the GPU's cache (in the order of a hash over the whole table they were scattered over
 * all of memory). Returns 0 for a cell outside the grid (a neighbour of a cell on its border),
 * which holds no point. */
static inline int db_region_of(const db_view *v, const long *cell, unsigned long *region) {
  unsigned long r = 0;
  for (int j = 0; j < v->gd; j++) {
    if (cell[j] < 0) return 0;
    const unsigned long coarse = (unsigned long)cell[j] >> v->region_shift;
    if (coarse >> v->region_bits) return 0;
    for (int b = 0; b < v->region_bits; b++) r |= (coarse >> b & 1UL) << (b * v->gd + j);
  }
  *region = r;
  return 1;
}

/* The slot of a region of `slots` slots (fewer than 2^32) where probing for a cell starts. */
static inline unsigned long db_slot_hash(const db_view *v, const long *cell, unsigned long slots) {
  unsigned long h = 1469598103934665603UL;
  for (int j = 0; j < v->gd; j++) h = (h ^ (unsigned long)cell[j]) * 1099511628211UL;
  h ^= h >> 33; /* the cells of a region differ in their low bits: mixed into the high bits (MurmurHash3's finish) */
  h *= 0xff51afd7ed558ccdUL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53UL;
  return (h >> 32) * slots >> 32;
}

/* Neighbouring cell a (0 .. 3^gd - 1) of cell `home`: offsets -1, 0, +1 along each grid
 * dimension, the first varying fastest. */
static inline void db_neighbour_cell(const long *home, int gd, size_t a, long *cell) {
  for (int j = 0; j < gd; j++, a /= 3) cell[j] = home[j] + (long)(a % 3) - 1;
}

/* The positions [*first, *last) of the points in `cell`; 0 when no point is in it. Linear
 * probing within the cell's region from the cell's hash: a slot belongs to the cell of its first
 * point, and a free slot (an empty range) ends the search. A region has twice as many slots as
 * points. */
static inline int db_cell_range(const db_view *v, const long *cell, size_t *first, size_t *last) {
  unsigned long r;
  if (!db_region_of(v, cell, &r)) return 0;
  const unsigned long base = 2 * (unsigned long)v->region[r], end = 2 * (unsigned long)v->region[r + 1];
  if (base == end) return 0;
  for (unsigned long h = base + db_slot_hash(v, cell, end - base);; h = h + 1 < end ? h + 1 : base) {
    const long f = v->start[h], l = v->start[h + 1];
    if (f == l) return 0;
    if (db_same_cell(v, v->xs + (size_t)f * v->d, cell)) {
      *first = (size_t)f;
      *last = (size_t)l;
      return 1;
    }
  }
}

static inline void db_cursor_init(const db_view *v, size_t s, db_cursor *c) {
  c->around = -1;
  c->cell = 0;
  c->level = 0;
  c->child[0] = 0;
  if (v->kind == DB_INDEX_GRID) {
    if (v->near)
      c->cell = v->cell_of[s];
    else
      db_cell_of(v, v->xs + s * v->d, c->home);
  }
  if (v->kind == DB_INDEX_DIRECTORY)
    for (int l = 0; l < v->levels; l++) c->point[l] = (double)v->xs[s * v->d + (size_t)l];
}

/* First node of directory level l in the node arrays (levels hold F, F^2, ... nodes). */
static inline long db_level_offset(int fanout, int l) {
  long off = 0, width = fanout;
  for (int k = 0; k < l; k++, width *= fanout) off += width;
  return off;
}

/* The next range [*first, *last) of positions that may hold neighbours; returns 0 when none is
 * left. No index: all points. Grid: the occupied cells among the 3^d cells around the point.
 * Directory (CUDA-DClust*): a depth-first walk over the nodes whose range in their level's
 * dimension meets [x - eps, x + eps], down to the data pages. */
static inline int db_next_range(const db_view *v, db_cursor *c, size_t *first, size_t *last) {
  if (v->kind == DB_INDEX_NONE) {
    if (c->around++ >= 0) return 0;
    *first = 0;
    *last = v->n;
    return 1;
  }
  if (v->kind == DB_INDEX_GRID && v->near) { /* the cell's list, made once by db_build_neighbour_lists */
    while (++c->around < v->cells_around) {
      const int *range = v->near + ((size_t)c->cell * (size_t)v->cells_around + (size_t)c->around) * 2;
      if (range[0] == range[1]) continue;
      *first = (size_t)range[0];
      *last = (size_t)range[1];
      return 1;
    }
    return 0;
  }
  if (v->kind == DB_INDEX_GRID) {
    while (++c->around < v->cells_around) {
      long cell[DB_GRID_MAX_DIM];
      db_neighbour_cell(c->home, v->gd, (size_t)c->around, cell);
      if (db_cell_range(v, cell, first, last)) return 1;
    }
    return 0;
  }
  while (c->level >= 0) {
    const int l = c->level;
    if (c->child[l] >= v->fanout) { /* this node is done: back to its parent's next child */
      if (--c->level >= 0) c->child[c->level]++;
      continue;
    }
    const long idx = (l == 0 ? 0 : (long)c->node[l - 1] * v->fanout) + c->child[l];
    const long node = db_level_offset(v->fanout, l) + idx;
    if ((double)v->node_lo[node] > c->point[l] + v->eps || (double)v->node_hi[node] < c->point[l] - v->eps) {
      c->child[l]++;
      continue;
    }
    if (l == v->levels - 1) { /* a data page */
      c->child[l]++;
      *first = (size_t)v->start[idx];
      *last = (size_t)v->start[idx + 1];
      return 1;
    }
    c->node[l] = (int)idx;
    c->level++;
    c->child[l + 1] = 0;
  }
  return 0;
}

static inline int db_within(const float *x, size_t d, size_t p, size_t q, double eps2) {
  double s = 0.0;
  for (size_t j = 0; j < d; j++) {
    const double diff = (double)x[p * d + j] - (double)x[q * d + j];
    s += diff * diff;
  }
  return s <= eps2;
}

/* The tiled distance tests, d >= DB_TILED_MIN_DIM. xt holds the points of xs a tile of DB_TILE
 * positions at a time, feature by feature within a tile: position s's feature j is
 * xt[(s / DB_TILE * d + j) * DB_TILE + s % DB_TILE], so a tile's values of one feature are
 * DB_TILE consecutive floats (one vector on the CPU; one broadcast read for a GPU warp, whose
 * threads mostly test the same candidates). */
static inline float db_tile_coord(const float *xt, size_t d, size_t s, size_t j) {
  return xt[(s / DB_TILE * d + j) * DB_TILE + s % DB_TILE];
}

/* The bits of tile t's positions that lie in [first, last). */
static inline unsigned db_range_mask(size_t t, size_t first, size_t last) {
  unsigned m = 0;
  PC_UNROLL
  for (int c = 0; c < DB_TILE; c++) {
    const size_t q = t * DB_TILE + (size_t)c;
    m |= (unsigned)(q >= first && q < last) << c;
  }
  return m;
}

/* Which of `width` (at most 32) candidates from position q0 on, those named by `wanted`, lie
 * within eps of position i: exactly db_within's answer, found cheaply. Feature j of candidate k is
 * cand[j * width + k] (a tile of xt, or a block walk's staged round); i's features come from its
 * tile (a GPU warp's points: contiguous reads). The squared distances are summed in float in
 * registers; one below inside2 or above outside2 is decided by it, since those bounds keep a margin
 * wider than the float sum's rounding error (db_float_bounds); the rare one in between is tested
 * again by db_within, in double. Both callers pass a constant width, so acc stays in registers. */
static inline unsigned db_candidates_within(const float *cand, int width, const float *xt, const float *xs, size_t d,
                                            size_t i, size_t q0, unsigned wanted, float inside2, float outside2,
                                            double eps2) {
  float acc[32];
  PC_UNROLL
  for (int k = 0; k < width; k++) acc[k] = 0.0f;
  for (size_t j = 0; j < d; j++) {
    const float p = db_tile_coord(xt, d, i, j);
    PC_UNROLL
    for (int k = 0; k < width; k++) {
      const float diff = p - cand[j * (size_t)width + (size_t)k];
      acc[k] += diff * diff;
    }
  }
  unsigned within = 0, near_eps = 0;
  PC_UNROLL
  for (int k = 0; k < width; k++) {
    within |= (unsigned)(acc[k] <= inside2) << k;
    near_eps |= (unsigned)(acc[k] <= outside2) << k;
  }
  within &= wanted;
  for (near_eps &= wanted & ~within; near_eps; near_eps &= near_eps - 1) {
    const int k = __builtin_ctz(near_eps);
    if (db_within(xs, d, i, q0 + (size_t)k, eps2)) within |= 1u << k;
  }
  return within;
}

/* Which of tile t's positions named by `mask` lie within eps of position s. */
static inline unsigned db_tile_within(const db_view *v, size_t s, size_t t, unsigned mask, double eps2) {
  if (!mask) return 0;
  return db_candidates_within(v->xt + t * v->d * DB_TILE, DB_TILE, v->xt, v->xs, v->d, s, t * DB_TILE, mask,
                              v->inside2, v->outside2, eps2);
}

/* The root of a's set. Every link points to a smaller index, so a root is the smallest member
 * of its tree. Path halving: each visited node is hung under its grandparent, which is still one
 * of its ancestors whatever other threads do (only roots change through db_union's CAS), so it is
 * safe without locks. Loads are atomic so that no thread spins on a stale cached parent. */
static inline int db_find(int *parent, int a) {
  for (;;) {
    const int p = __atomic_load_n(&parent[a], __ATOMIC_RELAXED);
    if (p == a) return a;
    const int g = __atomic_load_n(&parent[p], __ATOMIC_RELAXED);
    if (g != p) __atomic_store_n(&parent[a], g, __ATOMIC_RELAXED);
    a = g;
  }
}

/* Joins the sets of a and b: the larger root is hung under the smaller with compare-and-swap
 * (the compiler's atomic builtin, the same in every variant), retried if another thread moved it.
 * Returns the root it hung the other under (a root when it returned; other threads may hang it
 * later, so a caller keeping it treats it as a hint). */
static inline int db_union(int *parent, int a, int b) {
  for (;;) {
    a = db_find(parent, a);
    b = db_find(parent, b);
    if (a == b) return a;
    if (a < b) {
      const int t = a;
      a = b;
      b = t;
    }
    int expected = a;
    if (__atomic_compare_exchange_n(&parent[a], &expected, b, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return b;
  }
}

static inline void db_atomic_min(int *a, int v) {
  int cur = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (v < cur && !__atomic_compare_exchange_n(a, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

enum { DB_UNCLAIMED = -1, DB_NOISE = -2 };

/* A chain's state, as one team sees it. */
typedef struct {
  int *owner;                /* the chain that claimed each point (DB_UNCLAIMED, DB_NOISE) */
  int *core;                 /* 1 once a point is known to be core (pc_load_sc / pc_store_sc) */
  int *cparent;              /* union-find over chain ids: the collisions, resolved */
  int *list, *count;         /* this chain's seed list and its length */
  unsigned char *pending;    /* claimed points that did not fit in their chain's seed list */
  long *pending_count;       /* how many points are put aside in all */
  int capacity, uid;
} db_chain;

/* CUDA-DClust's marking of a neighbour q of core point p by chain c: claim q if unclaimed
 * (compare-and-swap) and queue it as a seed, or put it aside for the refill when the seed list
 * is full; take over a noise point as a border point; and when q belongs to another chain and is
 * known to be core, record the collision (both chains are one cluster). The core flags are
 * written and read sequentially consistent, so of two core points marking each other at once at
 * least one sees the other as core. */
static inline void db_mark(const db_chain *c, int q) {
  int seen = DB_UNCLAIMED;
  if (__atomic_compare_exchange_n(&c->owner[q], &seen, c->uid, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    int slot;
    PAR_ATOMIC_CAPTURE
    slot = (*c->count)++;
    if (slot < c->capacity) {
      c->list[slot] = q;
    } else {
      c->pending[q] = 1;
      PAR_ATOMIC
      *c->pending_count += 1;
    }
    return;
  }
  if (seen == DB_NOISE) {
    __atomic_compare_exchange_n(&c->owner[q], &seen, c->uid, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return;
  }
  if (seen != c->uid) {
    if (pc_load_sc(&c->core[q])) db_union(c->cparent, c->uid, seen);
  }
}

/* The scalars of the candidate search, copied into every parallel loop with the pointers. */
typedef struct {
  size_t n, d;
  double eps, inv_eps;
  float inside2, outside2;
  int region_shift, region_bits;
  unsigned char rank[DB_NEAR_CELLS]; /* grid, gd <= DB_NEAR_MAX_DIM: neighbouring cell a is entry rank[a] of a
                                      * cell's list (db_rank_nearest_first) */
  int tiled; /* the distances are tested a tile at a time (xt) */
  int kind, gd, gdim[DB_GRID_MAX_DIM], cells_around, levels, fanout;
} db_geometry;

static inline db_view db_make_view(db_geometry g, const float *xs, const float *xt, const double *lo,
                                   const int *region, const int *start, const float *node_lo,
                                   const float *node_hi, const int *cell_of, const int *near) {
  db_view v = {.xs = xs, .xt = g.tiled ? xt : NULL, .lo = lo, .region = region, .start = start, .node_lo = node_lo,
               .node_hi = node_hi, .cell_of = cell_of, .near = near, .n = g.n, .d = g.d, .eps = g.eps,
               .inv_eps = g.inv_eps, .inside2 = g.inside2, .outside2 = g.outside2, .region_shift = g.region_shift,
               .region_bits = g.region_bits, .kind = g.kind, .gd = g.gd, .cells_around = g.cells_around,
               .levels = g.levels, .fanout = g.fanout};
  for (int j = 0; j < DB_GRID_MAX_DIM; j++) v.gdim[j] = g.gdim[j];
  return v;
}

/* The three neighbourhood walks of the union-find method over one range [first, last) of
 * candidates, a candidate at a time (db_within). The walks below take them over the candidate
 * ranges of a cursor (any index), the list walks (db_list_*) over a cell's neighbour list. */

/* `count` plus position i's neighbours in the range, counted up to `limit`. */
static inline long db_range_count(const float *xs, size_t d, size_t i, size_t first, size_t last, long count,
                                  long limit, double eps2) {
  for (size_t q = first; q < last && count < limit; q++) count += db_within(xs, d, i, q, eps2);
  return count;
}

/* Core position i joins the set of each core neighbour in the range at a smaller position.
 * `root` is i's root as this thread last saw it (a neighbour already under it costs one find);
 * returns it as last seen. */
static inline int db_range_link(const float *xs, size_t d, size_t i, size_t first, size_t last, const int *core,
                                int *parent, int root, double eps2) {
  if (last > i) last = i;
  for (size_t q = first; q < last; q++)
    if (core[q] && db_within(xs, d, i, q, eps2)) {
      if (__atomic_load_n(&parent[q], __ATOMIC_RELAXED) == root) continue; /* under the root already: one read */
      const int other = db_find(parent, (int)q);
      if (other != root) root = db_union(parent, root, other);
    }
  return root;
}

/* The smaller of `best` and the smallest cluster id (slabel) among position s's core neighbours
 * in the range. */
static inline int db_range_label(const float *xs, size_t d, size_t s, size_t first, size_t last, const int *core,
                                 const int *slabel, int best, double eps2) {
  for (size_t q = first; q < last; q++)
    if (core[q] && slabel[q] < best && db_within(xs, d, s, q, eps2)) best = slabel[q];
  return best;
}

/* The walks over a cursor's ranges, with tiles (v->xt) a tile at a time. */

/* Position i's neighbours (itself included), counted up to `limit`. */
static inline long db_count_neighbours(const db_view *v, size_t i, long limit, double eps2) {
  db_cursor c;
  long count = 0;
  size_t first, last;
  db_cursor_init(v, i, &c);
  if (!v->xt) {
    while (count < limit && db_next_range(v, &c, &first, &last))
      count = db_range_count(v->xs, v->d, i, first, last, count, limit, eps2);
    return count;
  }
  while (count < limit && db_next_range(v, &c, &first, &last))
    for (size_t t = first / DB_TILE; t * DB_TILE < last && count < limit; t++)
      count += __builtin_popcount(db_tile_within(v, i, t, db_range_mask(t, first, last), eps2));
  return count;
}

/* Core position i joins the set of each core neighbour at a smaller position. `root` is i's root
 * as this thread last saw it: a neighbour already under it costs one find. */
static inline void db_link_core_neighbours(const db_view *v, size_t i, const int *core, int *parent, double eps2) {
  db_cursor c;
  size_t first, last;
  int root = (int)i;
  db_cursor_init(v, i, &c);
  while (db_next_range(v, &c, &first, &last)) {
    if (!v->xt) {
      root = db_range_link(v->xs, v->d, i, first, last, core, parent, root, eps2);
      continue;
    }
    /* Tiles: every tile of the range is walked, those at or after i with an empty mask (no
     * distance computed), so that the threads of a GPU warp, whose candidate ranges are the same,
     * walk the same tiles in step and share each tile's reads. */
    for (size_t t = first / DB_TILE; t * DB_TILE < last; t++) {
      unsigned cores = db_range_mask(t, first, last < i ? last : i);
      for (int b = 0; b < DB_TILE; b++)
        if (cores >> b & 1u) cores &= ~((unsigned)!core[t * DB_TILE + (size_t)b] << b);
      for (unsigned m = db_tile_within(v, i, t, cores, eps2); m; m &= m - 1) {
        const int other = db_find(parent, (int)(t * DB_TILE) + __builtin_ctz(m));
        if (other != root) root = db_union(parent, root, other);
      }
    }
  }
}

/* A non-core position's label: the smallest cluster id among its core neighbours (slabel of a
 * core position), or -1 (noise). */
static inline int db_border_label(const db_view *v, size_t s, const int *core, const int *slabel, double eps2) {
  db_cursor c;
  int best = INT_MAX;
  size_t first, last;
  db_cursor_init(v, s, &c);
  if (!v->xt) {
    while (db_next_range(v, &c, &first, &last))
      best = db_range_label(v->xs, v->d, s, first, last, core, slabel, best, eps2);
  } else {
    while (db_next_range(v, &c, &first, &last))
      for (size_t t = first / DB_TILE; t * DB_TILE < last; t++) {
        unsigned better = db_range_mask(t, first, last);
        for (int b = 0; b < DB_TILE; b++) {
          const size_t q = t * DB_TILE + (size_t)b;
          if (better >> b & 1u) better &= ~((unsigned)!(core[q] && slabel[q] < best) << b);
        }
        for (unsigned m = db_tile_within(v, s, t, better, eps2); m; m &= m - 1) {
          const int label = slabel[t * DB_TILE + (size_t)__builtin_ctz(m)];
          best = label < best ? label : best;
        }
      }
  }
  return best == INT_MAX ? -1 : best;
}

/* The same walks, untiled, over the neighbour list of a grid cell (`list`: `around` ranges, entry
 * rank[a] for neighbouring cell a, empty for a cell without points). Written for the list
 * alone, without a cursor for every index, so that their GPU loops keep few registers: with the
 * cursor walks the core count held 148 registers a thread and the links 120, which left 12.5%
 * and 25% of an H100's warps resident to hide the latency of their reads. */
static inline long db_list_count(const float *xs, size_t d, const int *list, int around, size_t i, long limit,
                                 double eps2) {
  long count = 0;
  for (int r = 0; r < around && count < limit; r++)
    count = db_range_count(xs, d, i, (size_t)list[2 * r], (size_t)list[2 * r + 1], count, limit, eps2);
  return count;
}

static inline void db_list_link(const float *xs, size_t d, const int *list, int around, size_t i, const int *core,
                                int *parent, double eps2) {
  int root = (int)i;
  for (int r = 0; r < around; r++) /* the root a range leaves is the next one's hint */
    root = db_range_link(xs, d, i, (size_t)list[2 * r], (size_t)list[2 * r + 1], core, parent, root, eps2);
}

static inline int db_list_label(const float *xs, size_t d, const int *list, int around, size_t s, const int *core,
                                const int *slabel, double eps2) {
  int best = INT_MAX;
  for (int r = 0; r < around; r++)
    best = db_range_label(xs, d, s, (size_t)list[2 * r], (size_t)list[2 * r + 1], core, slabel, best, eps2);
  return best == INT_MAX ? -1 : best;
}

DEV_FUNCS_END

/* The schedule of the loops that walk neighbourhoods, of `iterations` iterations. Positions
 * follow space, so the dense parts of the data are contiguous: on the host, small dynamic chunks
 * keep the threads evenly loaded; on the GPU, consecutive positions in a warp read the same
 * cells, and each team walks one block of `threads` positions (pc_block_teams): a team that
 * looped over blocks would wait at the end of each for its slowest thread, where a team that
 * ends frees its room on the GPU at once for the next. */
#define DB_NEIGHBOUR_LOOP_OF(threads, iterations) \
  HOST_ONLY(schedule(dynamic, 256)) GPU_TEAMS(pc_block_teams(iterations, threads), threads)
#define DB_NEIGHBOUR_LOOP(iterations) DB_NEIGHBOUR_LOOP_OF(PC_GPU_THREADS, iterations)

/* The index as the functions below receive it: scalars, and the device arrays one by one (so that
 * each is translated to its device address when a target region captures it). */
#define DB_INDEX_PARAMS                                                                                      \
  db_geometry geo, const float *xs, const float *xt, const double *lo, const int *region, const int *start, \
      const float *node_lo, const float *node_hi, const int *cell_of, const int *near
#define DB_INDEX_ARGS geo, xs, xt, lo, region, start, node_lo, node_hi, cell_of, near
#define DB_VIEW db_make_view(geo, xs, xt, lo, region, start, node_lo, node_hi, cell_of, near)

/* The block walks (tiles with the grid's neighbour lists, d <= DB_JOIN_MAX_DIM): one team per
 * block of at most DB_JOIN_THREADS positions of one cell (block b is [block_first[b],
 * block_first[b + 1]), n after the last), whose points share the cell's candidate ranges. The
 * team takes them DB_JOIN_ROUND candidates a round: its threads stage the round's coordinates in
 * team memory (feature by feature), then each thread tests its point against all of them from
 * there (db_candidates_within). The end of each parallel loop is a barrier: the team's threads start
 * every round together, whatever the round before did. Two walks:
 *  - DB_WALK_LINK: each core point unites with each core neighbour at a smaller position (the
 *    union-find's links); rounds with no candidate before the block's last position are skipped.
 *  - DB_WALK_LABEL: each non-core point's smallest cluster id among its core neighbours, kept in
 *    slabel between rounds (INT_MAX before; only its own thread writes it, and the rounds read
 *    slabel of core positions only); a block of core points only is skipped (a test every
 *    thread makes alike, from global memory). */
enum { DB_WALK_LINK, DB_WALK_LABEL };
static void db_walk_blocks(DB_INDEX_PARAMS, double eps2, const int *block_first, long blocks, int walk,
                           const int *core, int *parent, int *slabel) {
  const size_t n = geo.n, d = geo.d, around = (size_t)geo.cells_around;
  const float inside2 = geo.inside2, outside2 = geo.outside2;
  (void)lo, (void)region, (void)start, (void)node_lo, (void)node_hi;
  PAR_TEAMS_FOR(GPU_TEAMS(blocks < INT_MAX ? (int)blocks : INT_MAX, DB_JOIN_THREADS))
  for (long b = 0; b < blocks; b++) {
    float stage[DB_JOIN_ROUND * DB_JOIN_MAX_DIM];
    TEAM_LOCAL(stage)
    const size_t first = (size_t)block_first[b], end = b + 1 < blocks ? (size_t)block_first[b + 1] : n;
    int needed = walk == DB_WALK_LINK;
    for (size_t i = first; i < end && !needed; i++) needed = !core[i];
    /* the rounds' bounds, from global memory: every thread the same rounds */
    const int *list = near + (size_t)cell_of[first] * around * 2;
    for (size_t r = 0; needed && r < around; r++) { /* an empty range has no rounds */
      for (size_t q0 = (size_t)list[2 * r]; q0 < (size_t)list[2 * r + 1]; q0 += DB_JOIN_ROUND) {
        if (walk == DB_WALK_LINK && q0 + 1 >= end) break;
        const size_t left = (size_t)list[2 * r + 1] - q0, count = left < DB_JOIN_ROUND ? left : DB_JOIN_ROUND;
        TEAM_PAR_FOR(default(firstprivate) shared(stage))
        for (size_t e = 0; e < DB_JOIN_ROUND * d; e++) { /* feature j of candidate k at stage[j * ROUND + k] */
          const size_t j = e / DB_JOIN_ROUND, k = e % DB_JOIN_ROUND;
          stage[e] = k < count ? xs[(q0 + k) * d + j] : 0.0f;
        }
        TEAM_PAR_FOR(default(firstprivate) shared(stage))
        for (size_t i = first; i < end; i++) {
          if (walk == DB_WALK_LINK ? !core[i] || q0 >= i : core[i]) continue;
          const int best = walk == DB_WALK_LABEL ? slabel[i] : 0;
          /* A loop per walk: with one test for both, the host compiler read slabel (NULL in the links)
           * under a vector mask, and a masked read of an unmapped page costs a microcode assist. */
          unsigned wanted = 0;
          if (walk == DB_WALK_LINK) {
            for (int k = 0; k < DB_JOIN_ROUND; k++)
              if ((size_t)k < count && core[q0 + (size_t)k] && q0 + (size_t)k < i) wanted |= 1u << k;
          } else {
            for (int k = 0; k < DB_JOIN_ROUND; k++)
              if ((size_t)k < count && core[q0 + (size_t)k] && slabel[q0 + (size_t)k] < best) wanted |= 1u << k;
          }
          if (!wanted) continue;
          unsigned within =
              db_candidates_within(stage, DB_JOIN_ROUND, xt, xs, d, i, q0, wanted, inside2, outside2, eps2);
          if (walk == DB_WALK_LINK) {
            for (; within; within &= within - 1) db_union(parent, (int)i, (int)(q0 + (size_t)__builtin_ctz(within)));
          } else {
            int label = best;
            for (; within; within &= within - 1) {
              const int other = slabel[q0 + (size_t)__builtin_ctz(within)];
              label = other < label ? other : label;
            }
            slabel[i] = label;
          }
        }
      }
    }
  }
}

/* Blocks for db_walk_blocks: each cell's positions cut into runs of at most DB_JOIN_THREADS,
 * in position order (cells are contiguous runs of positions, numbered in position order).
 * cell_first (cells entries) and is_first (n) are scratch; block_first (n) receives the blocks'
 * first positions. Returns the number of blocks, or -1 with a pc_fail message (prefix sum). */
static long db_build_blocks(size_t n, const int *cell_of, int *cell_first, int *is_first, int *block_first) {
  PAR_FOR()
  for (size_t s = 0; s < n; s++)
    if (s == 0 || cell_of[s] != cell_of[s - 1]) cell_first[cell_of[s]] = (int)s;
  PAR_FOR()
  for (size_t s = 0; s < n; s++) is_first[s] = (s - (size_t)cell_first[cell_of[s]]) % DB_JOIN_THREADS == 0;
  const long blocks = pc_exclusive_scan_int(is_first, n);
  if (blocks < 0) return -1;
  PAR_FOR()
  for (size_t s = 0; s < n; s++)
    if ((s - (size_t)cell_first[cell_of[s]]) % DB_JOIN_THREADS == 0) block_first[is_first[s]] = (int)s;
  return blocks;
}

/* The positions s with core[s] set (is_core 1) or not (0), in order, into at[0 .. count): a
 * prefix sum over rank (n ints of scratch). Returns the count, or -1 with a pc_fail message. A GPU
 * loop over such a list keeps its warps full, where a loop over all positions leaves idle the
 * threads of the positions it skips. */
static long db_list_positions(size_t n, const int *core, int is_core, int *rank, int *at) {
  PAR_FOR()
  for (size_t s = 0; s < n; s++) rank[s] = (core[s] != 0) == is_core;
  const long count = pc_exclusive_scan_int(rank, n);
  if (count < 0) return -1;
  PAR_FOR()
  for (size_t s = 0; s < n; s++)
    if ((core[s] != 0) == is_core) at[rank[s]] = (int)s;
  return count;
}

/* The default method: core flags (the count stops at min_pts; or the caller's core_in, in input
 * order, through order[]), then, where link is set, every core point links to each core neighbour
 * at a smaller position. Leaves parent[] (over positions) a forest whose trees are the components
 * of core points. rank and at (n each) are scratch for the list of core positions. 0, or -1 with
 * a pc_fail message (the prefix sum's memory). */
static int db_connect_union_find(DB_INDEX_PARAMS, double eps2, long min_pts, const int *block_first, long blocks,
                                 int *rank, int *at, const unsigned char *core_in, const int *order, int link,
                                 int *core, int *parent, db_result *result) {
  const size_t n = geo.n, d = geo.d;
  const int around = geo.cells_around, by_list = near && !geo.tiled; /* the list walks (db_list_*) */
  double t0 = pc_now();
  if (core_in) { /* the caller's flags (input order), no counts */
    PAR_FOR()
    for (size_t i = 0; i < n; i++) {
      core[i] = core_in[order[i]];
      parent[i] = (int)i;
    }
  } else if (by_list) {
    PAR_FOR(DB_NEIGHBOUR_LOOP_OF(DB_CORE_THREADS, n))
    for (size_t i = 0; i < n; i++) {
      const int *list = near + (size_t)cell_of[i] * (size_t)around * 2;
      core[i] = db_list_count(xs, d, list, around, i, min_pts, eps2) >= min_pts;
      parent[i] = (int)i;
    }
  } else {
    PAR_FOR(DB_NEIGHBOUR_LOOP(n))
    for (size_t i = 0; i < n; i++) {
      const db_view v = DB_VIEW;
      core[i] = db_count_neighbours(&v, i, min_pts, eps2) >= min_pts;
      parent[i] = (int)i;
    }
  }
  double t1 = pc_now();
  result->phase_s[DB_PHASE_CORE] = t1 - t0;
  if (!link) return 0; /* the caller gives the cluster ids */

  if (blocks > 0) {
    db_walk_blocks(DB_INDEX_ARGS, eps2, block_first, blocks, DB_WALK_LINK, core, parent, NULL);
  } else if (by_list) { /* the core positions listed first (db_list_positions) */
    const long cores = db_list_positions(n, core, 1, rank, at);
    if (cores < 0) return -1;
    PAR_FOR(DB_NEIGHBOUR_LOOP_OF(DB_LINK_THREADS, (size_t)cores))
    for (long k = 0; k < cores; k++) {
      const size_t i = (size_t)at[k];
      db_list_link(xs, d, near + (size_t)cell_of[i] * (size_t)around * 2, around, i, core, parent, eps2);
    }
  } else {
    PAR_FOR(DB_NEIGHBOUR_LOOP(n))
    for (size_t i = 0; i < n; i++) {
      if (!core[i]) continue;
      const db_view v = DB_VIEW;
      db_link_core_neighbours(&v, i, core, parent, eps2);
    }
  }
  result->phase_s[DB_PHASE_CONNECT] = pc_now() - t1;
  return 0;
}


/*
 * CUDA-DClust (section 5): `chains` cluster expansions run at once, one team per chain, the
 * team's threads over the candidate neighbours of the chain's current seed. A seed's neighbours
 * wait in a quarantine until min_pts of them prove it core; then they are marked (db_mark).
 * Between launches, finished chains are replaced by new ones started from unclaimed points, then
 * by splitting running chains' seed lists; points put aside by a full seed list are refilled into
 * their chain's list. This bookkeeping is parallel loops and prefix sums over the slots and a
 * window of points (one GPU thread walking the points would cost more than the expansion
 * itself). Collisions are kept as a
 * union-find over chain ids (a chain's id is its first seed), the resolved form of the paper's
 * collision matrix: chain slots are reused, so a p x p matrix could not name finished chains.
 * Leaves core[] and parent[] as db_connect_union_find does. Returns 0, or -1 with a pc_fail
 * message (allocation).
 */
static int db_connect_chains(DB_INDEX_PARAMS, double eps2, const db_params *params, int *core, int *parent,
                             db_result *result) {
  const size_t n = geo.n, d = geo.d;
  const int min_pts = params->min_pts, capacity = params->seed_list;
  /* at most 2^26 quarantine entries in all */
  int chains = (size_t)params->chains < n ? params->chains : (int)n; /* no more chains than points */
  const size_t qcap = min_pts > 1 ? (size_t)min_pts - 1 : 1;
  while (chains > 1 && (size_t)chains * qcap > ((size_t)1 << 26)) chains /= 2;
  int *owner = pc_try_alloc(n, sizeof *owner, "chain owners");
  int *chain_of = pc_try_alloc(n, sizeof *chain_of, "chain of each core point");
  int *cparent = pc_try_alloc(n, sizeof *cparent, "chain collisions");
  int *lowest = pc_try_alloc(n, sizeof *lowest, "lowest core index per cluster");
  unsigned char *pending = pc_try_alloc(n, sizeof *pending, "put-aside seeds");
  int *slot_uid = pc_try_alloc((size_t)chains, sizeof *slot_uid, "chain slots");
  int *slot_count = pc_try_alloc((size_t)chains, sizeof *slot_count, "seed list lengths");
  int *slot_of = pc_try_alloc(n, sizeof *slot_of, "slot of each chain");
  int *seeds = pc_try_alloc((size_t)chains * (size_t)capacity, sizeof *seeds, "seed lists");
  int *quarantine = pc_try_alloc((size_t)chains * qcap, sizeof *quarantine, "quarantine");
  int *start_rank = pc_try_alloc(n, sizeof *start_rank, "new chain starts");
  int *slot_rank = pc_try_alloc((size_t)chains, sizeof *slot_rank, "free chain slots");
  int *split_rank = pc_try_alloc((size_t)chains, sizeof *split_rank, "chains to split");
  int *free_list = pc_try_alloc((size_t)chains, sizeof *free_list, "free chain slots");
  long pending_count[1] = {0};
  if (!owner || !chain_of || !cparent || !lowest || !pending || !slot_uid || !slot_count || !slot_of || !seeds ||
      !quarantine || !start_rank || !slot_rank || !split_rank || !free_list) {
    free(owner), free(chain_of), free(cparent), free(lowest), free(pending), free(slot_uid), free(slot_count);
    free(slot_of), free(seeds), free(quarantine), free(start_rank), free(slot_rank), free(split_rank), free(free_list);
    return -1;
  }
  const size_t nseeds = (size_t)chains * (size_t)capacity, nquar = (size_t)chains * qcap;
  result->working_bytes += n * (7 * sizeof(int) + sizeof(char)) + (nseeds + nquar) * sizeof(int) +
                           (size_t)chains * 5 * sizeof(int);
  /* device: per point (n): owner chain, chain_of, cparent (chain collisions), lowest core index,
   * pending (put-aside seeds), slot_of, start_rank (new chain starts); seeds[chains * capacity]
   * seed lists, quarantine[chains * qcap]; per chain slot (chains): slot_uid, slot_count,
   * slot_rank, split_rank, free_list; pending_count[1]. */
  DEV_ENTER(map(alloc : owner[0 : n], chain_of[0 : n], cparent[0 : n], lowest[0 : n], pending[0 : n], slot_of[0 : n],
                seeds[0 : nseeds], quarantine[0 : nquar], start_rank[0 : n]) map(to : pending_count[0 : 1])
            map(alloc : slot_uid[0 : chains], slot_count[0 : chains], slot_rank[0 : chains], split_rank[0 : chains],
                free_list[0 : chains]))
  PAR_FOR()
  for (size_t i = 0; i < n; i++) {
    owner[i] = DB_UNCLAIMED;
    chain_of[i] = -1;
    cparent[i] = (int)i;
    lowest[i] = INT_MAX;
    pending[i] = 0;
    slot_of[i] = -1;
    core[i] = 0;
  }
  PAR_FOR()
  for (int c = 0; c < chains; c++) {
    slot_uid[c] = -1;
    slot_count[c] = 0;
  }

  size_t scan_from = 0; /* every position below is claimed */
  int rc = 0;             /* -1: a prefix sum found no memory */
  for (;;) {
    /* New chains for the free slots, each step a parallel loop (ranks by prefix sums, so the
     * choice is the same in every variant): the lowest unclaimed positions, found in a window
     * from scan_from; once no unclaimed point is left, free slots take the upper half of the
     * seed list of a running chain (a split). */
    PAR_FOR()
    for (int c = 0; c < chains; c++) {
      if (slot_uid[c] >= 0 && slot_count[c] == 0) slot_uid[c] = -1; /* finished */
      slot_rank[c] = slot_uid[c] < 0;
    }
    const long free_slots = pc_exclusive_scan_int(slot_rank, (size_t)chains);
    if (free_slots < 0) {
      rc = -1;
      break;
    }
    long starts = 0;
    if (free_slots > 0) {
      PAR_FOR()
      for (int c = 0; c < chains; c++)
        if (slot_uid[c] < 0) free_list[slot_rank[c]] = c;
    }
    if (free_slots > 0 && scan_from < n) {
      size_t window = DB_START_WINDOW > 8 * (size_t)free_slots ? DB_START_WINDOW : 8 * (size_t)free_slots;
      if (window > n - scan_from) window = n - scan_from;
      const size_t base = scan_from;
      PAR_FOR()
      for (size_t t = 0; t < window; t++) start_rank[t] = owner[base + t] == DB_UNCLAIMED;
      const long found = pc_exclusive_scan_int(start_rank, window);
      if (found < 0) {
        rc = -1;
        break;
      }
      size_t untaken = window; /* the first unclaimed point left for a later round */
      PAR_FOR(reduction(min : untaken) GPU_REDUCTION(window))
      for (size_t t = 0; t < window; t++) {
        const long rank = start_rank[t], next = t + 1 < window ? start_rank[t + 1] : found;
        if (next == rank) continue; /* claimed */
        if (rank >= free_slots) {
          untaken = t < untaken ? t : untaken;
          continue;
        }
        const int q = (int)(base + t), c = free_list[rank];
        seeds[(size_t)c * capacity] = q;
        slot_count[c] = 1;
        slot_uid[c] = q;
        slot_of[q] = c;
        owner[q] = q;
      }
      starts = found < free_slots ? found : free_slots;
      scan_from = base + untaken;
    }
    if (starts < free_slots && scan_from >= n) {
      PAR_FOR()
      for (int c = 0; c < chains; c++) split_rank[c] = slot_uid[c] >= 0 && slot_count[c] >= 2;
      const long splittable = pc_exclusive_scan_int(split_rank, (size_t)chains);
      if (splittable < 0) {
        rc = -1;
        break;
      }
      PAR_FOR()
      for (int c = 0; c < chains; c++) {
        const long rank = split_rank[c], next = c + 1 < chains ? split_rank[c + 1] : splittable;
        if (next == rank || rank >= free_slots - starts) continue;
        const int f = free_list[starts + rank];
        const int keep = slot_count[c] / 2, moved = slot_count[c] - keep;
        for (int s = 0; s < moved; s++) seeds[(size_t)f * capacity + s] = seeds[(size_t)c * capacity + keep + s];
        slot_count[c] = keep;
        slot_count[f] = moved;
        const int first = seeds[(size_t)f * capacity + moved - 1]; /* the first seed it will process */
        slot_uid[f] = first;
        slot_of[first] = f;
      }
    }
    long active = 0;
    PAR_FOR(reduction(+ : active) GPU_REDUCTION((size_t)chains))
    for (int c = 0; c < chains; c++) active += slot_uid[c] >= 0;
    if (active == 0 && scan_from >= n) break;
    if (active == 0) continue; /* the window held no unclaimed point: scan on */
    result->rounds++;

    /* Cluster expansion: one team per chain. */
    PAR_TEAMS_FOR(GPU_TEAMS(chains, DB_CHAIN_THREADS))
    for (int c = 0; c < chains; c++) {
      const int uid = slot_uid[c];
      if (uid < 0) continue;
      const db_chain chain = {owner, core, cparent, seeds + (size_t)c * capacity, &slot_count[c], pending, pending_count,
                              capacity, uid};
      int *quar = quarantine + (size_t)c * qcap;
      const db_view v = DB_VIEW;
      for (int step = 0; step < DB_SEEDS_PER_LAUNCH && slot_count[c] > 0; step++) {
        const int p = chain.list[--slot_count[c]];
        long count = 0;
        db_cursor walk;
        size_t first, last, range_first[DB_RANGE_BATCH], range_offset[DB_RANGE_BATCH + 1];
        db_cursor_init(&v, (size_t)p, &walk);
        for (int more = 1; more;) {
          /* A batch of candidate ranges, then one parallel loop over all their points: one
           * fork-join of the team per batch instead of one per range. */
          int ranges = 0;
          range_offset[0] = 0;
          while (ranges < DB_RANGE_BATCH && (more = db_next_range(&v, &walk, &first, &last))) {
            range_first[ranges] = first;
            range_offset[ranges + 1] = range_offset[ranges] + (last - first);
            ranges++;
          }
          const size_t batch = range_offset[ranges];
          TEAM_PAR_FOR()
          for (size_t t = 0; t < batch; t++) {
            int r = 0;
            while (range_offset[r + 1] <= t) r++;
            const size_t q = range_first[r] + (t - range_offset[r]);
            if (!db_within(xs, d, (size_t)p, q, eps2)) continue;
            long k;
            PAR_ATOMIC_CAPTURE
            k = count++;
            if (k < min_pts - 1) {
              quar[k] = (int)q; /* quarantine: p is not known to be core yet */
            } else {
              pc_store_sc(&core[p], 1);
              if ((int)q != p) db_mark(&chain, (int)q);
            }
          }
        }
        if (count >= min_pts) {
          for (long k = 0; k < min_pts - 1; k++)
            if (quar[k] != p) db_mark(&chain, quar[k]);
          chain_of[p] = uid;
          const int o = pc_load_sc(&owner[p]);
          if (o != uid && o >= 0) db_union(cparent, uid, o); /* p was claimed by another chain */
        } else if (p == uid && pc_load_sc(&owner[p]) == uid) {
          pc_store_sc(&owner[p], DB_NOISE); /* a start point that is not core: noise unless a core point claims it later */
        }
        if (*chain.count > capacity) *chain.count = capacity; /* the overflow went to `pending` */
      }
    }

    DEV_UPDATE(from(pending_count[0 : 1]))
    if (pending_count[0] > 0) {
      /* refill: put-aside points back into their chain's list. A chain with put-aside points
       * is never finished: this runs before the slots are checked and gives it seeds. */
      PAR_FOR()
      for (size_t q = 0; q < n; q++) {
        if (!pending[q]) continue;
        const int c = slot_of[owner[q]];
        int slot;
        PAR_ATOMIC_CAPTURE
        slot = slot_count[c]++;
        if (slot < capacity) {
          seeds[(size_t)c * capacity + slot] = (int)q;
          pending[q] = 0;
          PAR_ATOMIC
          pending_count[0] -= 1;
        }
      }
      PAR_FOR()
      for (int c = 0; c < chains; c++)
        if (slot_count[c] > capacity) slot_count[c] = capacity;
    }
  }

  /* Resolve: each core point's cluster is its chain's union-find root; hang every core point
   * under the cluster's lowest core position, so that parent[] is a forest of the components. */
  PAR_FOR()
  for (size_t i = 0; i < n; i++)
    if (core[i]) db_atomic_min(&lowest[db_find(cparent, chain_of[i])], (int)i);
  PAR_FOR()
  for (size_t i = 0; i < n; i++) parent[i] = core[i] ? lowest[db_find(cparent, chain_of[i])] : (int)i;

  DEV_EXIT(map(delete : owner[0 : n], chain_of[0 : n], cparent[0 : n], lowest[0 : n], pending[0 : n], slot_of[0 : n],
               seeds[0 : nseeds], quarantine[0 : nquar], start_rank[0 : n], pending_count[0 : 1], slot_uid[0 : chains],
               slot_count[0 : chains], slot_rank[0 : chains], split_rank[0 : chains], free_list[0 : chains]))
  free(owner), free(chain_of), free(cparent), free(lowest), free(pending), free(slot_uid), free(slot_count);
  free(slot_of), free(seeds), free(quarantine), free(start_rank), free(slot_rank), free(split_rank), free(free_list);
  return rc;
}

static int cmp_float(const void *a, const void *b) {
  const float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* CUDA-DClust*'s directory, built on the host as in the paper (section 6): the points are sorted
 * by dimension 0 and cut into `fanout` quantile partitions, each of those sorted by dimension 1
 * and cut again, and so on for `levels` levels; the last level's partitions are the data pages.
 * Fills order (points in page order), start (page starts, fanout^levels + 1 entries) and each
 * node's range in its dimension (empty nodes get an empty range). Returns 0, or -1 with a
 * pc_fail message when its sort buffer cannot be allocated. */
static int db_build_directory(const float *x, size_t n, size_t d, int levels, int fanout, int *order, int *start,
                               float *node_lo, float *node_hi) {
  typedef struct {
    float key;
    int index;
  } keyed;
  keyed *buf = pc_try_alloc(n ? n : 1, sizeof *buf, "directory sort");
  if (!buf) return -1;
  for (size_t i = 0; i < n; i++) order[i] = (int)i;
  long parts = 1; /* partitions of the level above */
  for (int l = 0; l < levels; l++, parts *= fanout) {
    const long off = db_level_offset(fanout, l);
    for (long part = 0; part < parts; part++) {
      /* the partition's points: the equal-count split of the level above, recomputed */
      size_t lo_i = 0, hi_i = n;
      for (int k = 0, rest = (int)part; k < l; k++) {
        long div = 1;
        for (int m = k + 1; m < l; m++) div *= fanout;
        const long c = rest / div;
        rest = (int)(rest % div);
        const size_t len = hi_i - lo_i;
        hi_i = lo_i + len * (size_t)(c + 1) / (size_t)fanout;
        lo_i = lo_i + len * (size_t)c / (size_t)fanout;
      }
      for (size_t s = lo_i; s < hi_i; s++) buf[s - lo_i] = (keyed){x[(size_t)order[s] * d + (size_t)l], order[s]};
      qsort(buf, hi_i - lo_i, sizeof *buf, cmp_float);
      for (size_t s = lo_i; s < hi_i; s++) order[s] = buf[s - lo_i].index;
      const size_t len = hi_i - lo_i;
      for (int c = 0; c < fanout; c++) {
        const size_t b = lo_i + len * (size_t)c / (size_t)fanout, e = lo_i + len * (size_t)(c + 1) / (size_t)fanout;
        const long node = off + part * fanout + c;
        node_lo[node] = b < e ? x[(size_t)order[b] * d + (size_t)l] : INFINITY;
        node_hi[node] = b < e ? x[(size_t)order[e - 1] * d + (size_t)l] : -INFINITY;
        if (l == levels - 1) start[part * fanout + c] = (int)b;
      }
    }
  }
  start[parts] = (int)n;
  free(buf);
  return 0;
}

/* Grid index: the cell table (a slot per occupied cell, found by linear probing within its
 * region from the cell's hash, db_cell_range; `claim` holds the point that claimed each slot)
 * and `order`, the points grouped by cell (counting sort by slot). Fills region (regions + 1
 * entries: each region's first position, then n), start (2n + 1 entries: slot h's points are
 * order[start[h] .. start[h + 1])) and cell_slot (each point's slot). Each point takes its rank
 * in its slot (in_cell, n of scratch) from the count it increments, so the sort's scatter needs
 * no second atomic pass. The view reads x, not yet xs. 0, or -1 with a pc_fail message (memory
 * for the prefix sums). */
static int db_build_grid(db_geometry geo, const float *x, const double *lo, int *region, int *start, int *claim,
                         unsigned *cell_slot, int *in_cell, int *order) {
  const size_t n = geo.n, d = geo.d, nslots = 2 * n, nregions = (size_t)1 << (geo.gd * geo.region_bits);
  PAR_FOR()
  for (size_t r = 0; r <= nregions; r++) region[r] = 0;
  PAR_FOR()
  for (size_t i = 0; i < n; i++) { /* the regions' sizes: every point lies in one (db_grid_regions) */
    const db_view v = db_make_view(geo, x, NULL, lo, region, start, NULL, NULL, NULL, NULL);
    long cell[DB_GRID_MAX_DIM];
    unsigned long r = 0;
    db_cell_of(&v, x + i * d, cell);
    db_region_of(&v, cell, &r);
    PAR_ATOMIC
    region[r] += 1;
  }
  if (pc_exclusive_scan_int(region, nregions + 1) < 0) return -1;
  PAR_FOR()
  for (size_t h = 0; h <= nslots; h++) {
    start[h] = 0;
    if (h < nslots) claim[h] = -1;
  }
  PAR_FOR()
  for (size_t i = 0; i < n; i++) {
    const db_view v = db_make_view(geo, x, NULL, lo, region, start, NULL, NULL, NULL, NULL);
    long cell[DB_GRID_MAX_DIM];
    unsigned long r = 0;
    db_cell_of(&v, x + i * d, cell);
    db_region_of(&v, cell, &r);
    const unsigned long base = 2 * (unsigned long)region[r], end = 2 * (unsigned long)region[r + 1];
    unsigned long h = base + db_slot_hash(&v, cell, end - base);
    for (;; h = h + 1 < end ? h + 1 : base) { /* a claimed slot is read, not written: most points find theirs so */
      int seen = __atomic_load_n(&claim[h], __ATOMIC_RELAXED); /* the points are read-only: no order needed */
      if (seen < 0 &&
          __atomic_compare_exchange_n(&claim[h], &seen, (int)i, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        break;
      if (db_same_cell(&v, x + (size_t)seen * d, cell)) break;
    }
    cell_slot[i] = (unsigned)h; /* 2n slots, n < 2^31 points */
    int rank;
    PAR_ATOMIC_CAPTURE
    rank = start[h]++;
    in_cell[i] = rank;
  }
  if (pc_exclusive_scan_int(start, nslots + 1) < 0) return -1;
  PAR_FOR()
  for (size_t i = 0; i < n; i++) order[start[cell_slot[i]] + in_cell[i]] = (int)i;
  return 0;
}

/* Grid, d <= DB_NEAR_MAX_DIM: each cell's neighbouring cells as ranges of positions (empty for
 * a cell without points), found by probing the cell table once per cell instead of once per
 * point and phase. Neighbouring cell a is entry geo.rank[a]: nearest first, so that the core
 * count, which stops at min_pts, mostly stops in the first few ranges. Cells are numbered in
 * position order (cell_rank: a prefix sum over the positions that begin a cell); cell_of[s] is
 * the cell of position s, cell_first[c] (scratch) the first position of cell c; the lists go to
 * *near_out, allocated here and mapped to the device (the caller releases both), *cells_out
 * cells. cell_slot[i]: input point i's slot (db_build_grid). Each (cell, neighbouring cell) pair
 * is a loop iteration of its own: an iteration per cell left six GPU threads in seven idle at
 * 10M x 3 (the positions that do not begin a cell). 0, or -1 with a pc_fail message (memory). */
static int db_build_neighbour_lists(db_geometry geo, const float *xs, const double *lo, const int *region,
                                    const int *start, const int *order, const unsigned *cell_slot, int *cell_rank,
                                    int *cell_of, int *cell_first, int **near_out, size_t *cells_out) {
  const size_t n = geo.n, d = geo.d, around = (size_t)geo.cells_around;
  PAR_FOR()
  for (size_t s = 0; s < n; s++) cell_rank[s] = (size_t)start[cell_slot[order[s]]] == s;
  const long cells = pc_exclusive_scan_int(cell_rank, n);
  if (cells < 0) return -1;
  PAR_FOR()
  for (size_t s = 0; s < n; s++) {
    const int begin = start[cell_slot[order[s]]];
    cell_of[s] = cell_rank[begin];
    if ((size_t)begin == s) cell_first[cell_of[s]] = (int)s;
  }
  size_t entries = 0;
  if (pc_mul_size((size_t)cells, 2 * around, &entries, "grid neighbour lists") != 0) return -1;
  int *near = pc_try_alloc(entries, sizeof *near, "grid neighbour lists");
  if (!near) return -1;
  /* device: near[cells * 3^d * 2] each cell's neighbouring ranges, made there. */
  DEV_ENTER(map(alloc : near[0 : entries]))
  PAR_FOR()
  for (size_t e = 0; e < entries; e++) near[e] = 0; /* every range empty until a cell is found there */
  /* Cell c finds its neighbours at offsets past the middle one (a > around / 2) and enters each
   * pair in both lists: c's neighbour at offset a has c at the mirrored offset around - 1 - a.
   * Half the probes, and each cell's own range (the middle offset) needs none. */
  const size_t half = around / 2;
  PAR_FOR()
  for (size_t e = 0; e < (size_t)cells * (half + 1); e++) {
    const size_t c = e / (half + 1), a = half + e % (half + 1);
    const size_t c_first = (size_t)cell_first[c], c_end = c + 1 < (size_t)cells ? (size_t)cell_first[c + 1] : n;
    if (a == half) { /* the cell itself */
      near[2 * (c * around + geo.rank[a])] = (int)c_first;
      near[2 * (c * around + geo.rank[a]) + 1] = (int)c_end;
      continue;
    }
    const db_view v = db_make_view(geo, xs, NULL, lo, region, start, NULL, NULL, NULL, NULL);
    long home[DB_GRID_MAX_DIM], cell[DB_GRID_MAX_DIM];
    size_t first, last;
    db_cell_of(&v, xs + c_first * d, home);
    db_neighbour_cell(home, geo.gd, a, cell);
    if (!db_cell_range(&v, cell, &first, &last)) continue;
    const size_t b = (size_t)cell_of[first];
    near[2 * (c * around + geo.rank[a])] = (int)first;
    near[2 * (c * around + geo.rank[a]) + 1] = (int)last;
    near[2 * (b * around + geo.rank[around - 1 - a])] = (int)c_first;
    near[2 * (b * around + geo.rank[around - 1 - a]) + 1] = (int)c_end;
  }
  *near_out = near;
  *cells_out = (size_t)cells;
  return 0;
}

/* How many of the offsets of neighbouring cell a are not 0: 0 for the cell itself, 1 for those
 * sharing a face with it, and so on. */
static int db_offsets_away(size_t a, int gd) {
  int away = 0;
  for (int j = 0; j < gd; j++, a /= 3) away += a % 3 != 1;
  return away;
}

/* The order in which a cell lists its neighbouring cells (db_build_neighbour_lists): the cell
 * itself, then those sharing a face with it, an edge, a corner. */
static void db_rank_nearest_first(db_geometry *geo) {
  int k = 0;
  for (int away = 0; away <= geo->gd; away++)
    for (int a = 0; a < geo->cells_around; a++)
      if (db_offsets_away((size_t)a, geo->gd) == away) geo->rank[a] = (unsigned char)k++;
}

/* The clusters' ids, step 1 of the labels: each component of core points is named by its
 * smallest input index (atomic minimum at its root), and those points, numbered in input order
 * (a prefix sum), give the ids. Fills slabel[s] for core positions s. Returns the clusters.
 *
 * Why the roots go to slabel and never back into parent[]: while one thread finds the root of s,
 * others find roots through s and halve their paths, writing into parent[s] a grandparent they
 * read a moment before. Every such write names an ancestor, so every find still ends at the
 * root, but parent[s] is not "the root" after the loop: a late halving may replace the root
 * stored there with an older grandparent (whose lowest[] entry is unset). So the root of s is
 * kept in slabel[s], which only the iteration of s writes, and parent[] is only ever read
 * through db_find. */
long db_number_clusters(size_t n, const int *core, const int *order, int *parent, int *lowest, int *root_rank,
                        int *slabel) {
  PAR_FOR()
  for (size_t i = 0; i < n; i++) {
    lowest[i] = INT_MAX;
    root_rank[i] = 0;
  }
  PAR_FOR()
  for (size_t s = 0; s < n; s++) {
    if (!core[s]) continue;
    const int root = db_find(parent, (int)s);
    slabel[s] = root;
    db_atomic_min(&lowest[root], order[s]);
  }
  PAR_FOR()
  for (size_t s = 0; s < n; s++)
    if (core[s] && lowest[slabel[s]] == order[s]) root_rank[order[s]] = 1;
  const long clusters = pc_exclusive_scan_int(root_rank, n);
  if (clusters < 0) return -1;
  PAR_FOR()
  for (size_t s = 0; s < n; s++)
    if (core[s]) slabel[s] = root_rank[lowest[slabel[s]]];
  return clusters;
}

/* The tiles' float bounds (db_tile_within): a float sum of d squared differences is within
 * (d + 2) 2^-24 of the exact sum, relatively (plus underflow, below 2^-126 a term), and
 * db_within's double sum within (d + 2) 2^-53; bounds (d + 4) 2^-21 away from eps^2, rounded
 * outwards, leave room for both. Outside 2^-100 < eps^2 < 2^100 nothing is decided in float. */
static void db_float_bounds(double eps2, size_t d, float *inside2, float *outside2) {
  *inside2 = -1.0f;
  *outside2 = INFINITY;
  if (!(eps2 > 0x1p-100 && eps2 < 0x1p100)) return;
  const double margin = ((double)d + 4.0) * 0x1p-21, in = eps2 * (1.0 - margin), out = eps2 * (1.0 + margin);
  if (margin >= 0.5) return;
  *inside2 = (float)in;
  if ((double)*inside2 > in) *inside2 = nextafterf(*inside2, 0.0f);
  *outside2 = (float)out;
  if ((double)*outside2 < out) *outside2 = nextafterf(*outside2, INFINITY);
}

/* Each dimension's smallest value (lo, on the host) and span (largest minus smallest): a
 * reduction over the points a dimension at a time, where the points are (the device in the gpu
 * variant). */
static void db_bounds(const float *x, size_t n, size_t d, double *lo, double *span) {
  for (size_t j = 0; j < d; j++) {
    float least = INFINITY, most = -INFINITY;
    PAR_FOR(reduction(min : least) reduction(max : most) GPU_REDUCTION(n))
    for (size_t i = 0; i < n; i++) {
      least = fminf(least, x[i * d + j]);
      most = fmaxf(most, x[i * d + j]);
    }
    lo[j] = least;
    span[j] = (double)most - (double)least;
  }
}

/* The grid's dimensions: all d in order, or for the projected grid the gd of widest span (ties
 * to the lower dimension), in increasing order. */
static void db_grid_dimensions(const double *span, size_t d, int projected, int gd, int *gdim) {
  int taken = 0;
  for (size_t j = 0; j < d && taken < gd; j++) {
    if (projected) { /* j is taken when fewer than gd dimensions are wider (ties to the lower) */
      int wider = 0;
      for (size_t k = 0; k < d; k++) wider += span[k] > span[j] || (span[k] == span[j] && k < j);
      if (wider >= gd) continue;
    }
    gdim[taken++] = (int)j;
  }
}

/* The grid's regions (db_region_of): the smallest coarse cells whose Z-order numbers, bits a
 * dimension, fit in floor(log2 n) bits, so that there are at most n regions (their starts cost at
 * most a long a point) and most hold a few cells. The cells span (span * inv_eps) + 1 along each
 * grid dimension, one more counted so that no rounding can put a point beyond the last. */
static void db_grid_regions(const double *span, size_t n, db_geometry *geo) {
  unsigned long widest = 0; /* the largest cell number along any grid dimension, plus one */
  for (int j = 0; j < geo->gd; j++) {
    const unsigned long last = (unsigned long)floor(span[geo->gdim[j]] * geo->inv_eps) + 1;
    widest = last > widest ? last : widest;
  }
  int budget = 0; /* floor(log2 n) */
  while (((size_t)2 << budget) <= n) budget++;
  for (geo->region_shift = 0;; geo->region_shift++) {
    geo->region_bits = 0;
    while ((widest >> geo->region_shift) >> geo->region_bits) geo->region_bits++;
    if (geo->gd * geo->region_bits <= budget) return;
  }
}

int dbscan_run(const float *x, size_t n, size_t d, const db_params *params, int *labels, unsigned char *is_core,
               db_result *result) {
  return dbscan_run_given(x, n, d, params, NULL, labels, is_core, result);
}

int dbscan_run_given(const float *x, size_t n, size_t d, const db_params *params, const db_given *given, int *labels,
                     unsigned char *is_core, db_result *result) {
  memset(result, 0, sizeof *result);
  const unsigned char *core_in = given ? given->core_in : NULL;
  const int *label_in = core_in ? given->label_in : NULL;
  db_index_kind used = params->index;
  if (used == DB_INDEX_AUTO) used = d <= DB_PROJECTED_DIMS ? DB_INDEX_GRID : DB_INDEX_PROJECTED;
  if (used == DB_INDEX_PROJECTED && d <= DB_PROJECTED_DIMS) used = DB_INDEX_GRID; /* the same grid */
  result->index = used;
  /* the projected grid is a grid over some of the dimensions: the phases below see a grid */
  const int kind = used == DB_INDEX_PROJECTED ? DB_INDEX_GRID : (int)used;
  if (used == DB_INDEX_GRID && d > DB_GRID_MAX_DIM)
    return pc_fail("dbscan: the grid index supports d <= %d (this data has d = %zu); use --index projected",
                   DB_GRID_MAX_DIM, d);
  /* Grid cells are a little wider than eps (by 2^-20), so that rounding in the cell of a point
   * (relative error about 2^-52 times its cell number, below DB_GRID_MAX_CELLS) can never put two
   * points at distance <= eps two cells apart. */
  db_geometry geo = {.n = n, .d = d, .eps = params->eps, .inv_eps = 1.0 / (params->eps * (1.0 + 0x1p-20)),
                     .inside2 = -1.0f, .outside2 = INFINITY, .kind = kind};
  const double eps2 = params->eps * params->eps;
  const long min_pts = params->min_pts;
  /* with given core flags the union-find links them: no chains */
  const int chains = params->method == DB_METHOD_CHAINS && !core_in;
  const int tiled = d >= DB_TILED_MIN_DIM && !chains; /* chains: a point at a time */
  geo.tiled = tiled;
  if (tiled) db_float_bounds(eps2, d, &geo.inside2, &geo.outside2);
  size_t nstart = 1, nnodes = 1, nslots = 1; /* entries of start[], of the node ranges, of the cell table */
  size_t nregion = 1;                          /* grid: the regions' starts (db_grid_regions), then n */
  if (kind == DB_INDEX_GRID) {
    geo.gd = used == DB_INDEX_PROJECTED ? DB_PROJECTED_DIMS : (int)d; /* its dimensions: below, with the spans */
    geo.cells_around = 1;
    for (int j = 0; j < geo.gd; j++) geo.cells_around *= 3;
    if (geo.gd <= DB_NEAR_MAX_DIM) db_rank_nearest_first(&geo);
    nslots = n > 0 ? 2 * n : 1; /* two a point: probes stay short, a region always has a free slot */
    nstart = nslots + 1;
    nregion = n + 1; /* at most n regions; the exact count comes with the spans */
  } else if (kind == DB_INDEX_DIRECTORY) {
    geo.levels = params->levels < (int)d ? params->levels : (int)d;
    geo.fanout = params->fanout;
    double pages = 1.0;
    for (int l = 0; l < geo.levels; l++) pages *= geo.fanout;
    if (pages > (double)DB_DIR_MAX_PAGES)
      return pc_fail("dbscan: a directory of fanout %d and %d levels has %.0f pages, more than %d", geo.fanout,
                     geo.levels, pages, DB_DIR_MAX_PAGES);
    nnodes = (size_t)db_level_offset(geo.fanout, geo.levels);
    nstart = nnodes - (size_t)db_level_offset(geo.fanout, geo.levels - 1) + 1; /* pages + 1 */
  }
  const size_t nlo = d > 0 ? d : 1, nx = n * d;
  const int listed = kind == DB_INDEX_GRID && geo.gd <= DB_NEAR_MAX_DIM; /* db_build_neighbour_lists */
  const size_t ncell_of = listed ? n : 1;
  const size_t nxt = tiled ? (n + DB_TILE - 1) / DB_TILE * DB_TILE * d : 1; /* whole tiles */
  /* The int arrays in one allocation and the float ones in another, each mapped once: every
   * device allocation costs a call to the driver and its release a synchronising one, 14 of them
   * at the end of a run before (tens of microseconds each). Target regions find each array by its
   * address inside its block. */
  const size_t nints = nregion + nstart + nslots + 6 * n + ncell_of, nfloats = nx + 2 * nnodes + (tiled ? nxt : 0);
  double *lo = pc_try_alloc(nlo, sizeof *lo, "grid origin");
  int *ints = pc_try_alloc(nints, sizeof *ints, "grid index and per-point arrays");
  float *floats = pc_try_alloc(nfloats, sizeof *floats, "points in index order");
  double *span = pc_try_alloc(nlo, sizeof *span, "spans of the dimensions");
  int *near = NULL;
  size_t cells = 0;
  int rc = 0;
  if (!lo || !ints || !floats || !span) {
    free(lo), free(ints), free(floats), free(span);
    return -1;
  }
  int *region = ints, *start = region + nregion, *claim = start + nstart, *order = claim + nslots;
  int *parent = order + n, *lowest = parent + n, *scratch = lowest + n, *root_rank = scratch + n, *core = root_rank + n;
  int *cell_of = core + n;
  float *xs = floats, *node_lo = xs + nx, *node_hi = node_lo + nnodes;
  float *xt = tiled ? node_hi + nnodes : xs; /* not read without tiles */
  /* the input's copy, the grid origin, the two blocks and the labels */
  result->working_bytes = nx * sizeof(float) + nlo * sizeof(double) + nints * sizeof(int) + nfloats * sizeof(float) +
                          n * sizeof(int);

  const double t_start = pc_now();
  double t0 = t_start;
  /* on the host, as the paper does: timed as the index phase */
  if (kind == DB_INDEX_DIRECTORY &&
      (rc = db_build_directory(x, n, d, geo.levels, geo.fanout, order, start, node_lo, node_hi)) != 0)
    goto done;
  const double t_dir = pc_now() - t0;
  t0 = pc_now();
  /* device: in, x[n * d] points; lo[d] grid origin (db_bounds, then copied in); in for the
   * directory (built on the host), else made there: start[nstart] cell/page starts, order[n]
   * index order, node_lo/node_hi[nnodes] directory ranges; made there, region[nregion] the grid's
   * region starts, xs[n * d] points in index order, claim[nslots] cell table, per point (n) parent
   * (union-find), lowest, scratch, root_rank, core flags, labels; xt[nxt] the points in tiles
   * (d >= DB_TILED_MIN_DIM). All but x, lo and labels in the blocks ints and floats. */
  DEV_ENTER(map(to : x[0 : nx]) map(alloc : lo[0 : nlo], ints[0 : nints], floats[0 : nfloats], labels[0 : n]))
  if (kind == DB_INDEX_DIRECTORY) {
    DEV_UPDATE(to(start[0 : nstart], order[0 : n], node_lo[0 : nnodes], node_hi[0 : nnodes]))
  }
  double t1 = pc_now();
  result->phase_s[DB_PHASE_H2D] = t1 - t0;

  db_bounds(x, n, d, lo, span);
  DEV_UPDATE(to(lo[0 : nlo]))
  if (kind == DB_INDEX_GRID) {
    db_grid_dimensions(span, d, used == DB_INDEX_PROJECTED, geo.gd, geo.gdim);
    for (int j = 0; !rc && j < geo.gd; j++)
      if (span[geo.gdim[j]] * geo.inv_eps >= DB_GRID_MAX_CELLS)
        rc = pc_fail("dbscan: the grid index needs fewer than %.0f cells of side eps along each dimension (dimension "
                     "%d spans %g); use --index directory",
                     DB_GRID_MAX_CELLS, geo.gdim[j], span[geo.gdim[j]]);
  }
  if (!rc && kind == DB_INDEX_GRID) {
    db_grid_regions(span, n, &geo);
    rc = db_build_grid(geo, x, lo, region, start, claim, (unsigned *)scratch, parent, order); /* parent: free */
  }
  if (kind == DB_INDEX_NONE) {
    PAR_FOR()
    for (size_t i = 0; i < n; i++) order[i] = (int)i;
  }
  if (!rc) {
    PAR_FOR()
    for (size_t s = 0; s < n; s++)
      for (size_t j = 0; j < d; j++) xs[s * d + j] = x[(size_t)order[s] * d + j];
  }
  if (!rc && tiled) { /* the last tile's padding is zeros, never tested (the tests' masks stop at n) */
    PAR_FOR()
    for (size_t e = 0; e < nxt; e++) {
      const size_t t = e / (d * DB_TILE), j = e / DB_TILE % d, s = t * DB_TILE + e % DB_TILE;
      xt[e] = s < n ? xs[s * d + j] : 0.0f;
    }
  }
  if (!rc && listed &&
      (rc = db_build_neighbour_lists(geo, xs, lo, region, start, order, (unsigned *)scratch, root_rank, cell_of,
                                     lowest, &near, &cells)) == 0)
    result->working_bytes += cells * (size_t)geo.cells_around * 2 * sizeof(int);
  /* tiles with neighbour lists: the union-find links a block at a time; scratch holds the blocks'
   * starts until the labels (lowest and root_rank are free until then too) */
  long blocks = 0;
  if (!rc && tiled && listed && d <= DB_JOIN_MAX_DIM &&
      (blocks = db_build_blocks(n, cell_of, lowest, root_rank, scratch)) < 0)
    rc = -1;
  t0 = pc_now();
  result->phase_s[DB_PHASE_INDEX] = t_dir + (t0 - t1);
  if (!rc && pc_stop_requested()) rc = pc_fail_stopped("dbscan: interrupted after the index phase");

  if (core_in) { /* device: in, the caller's core flags and cluster ids (input order) */
    DEV_ENTER(map(to : core_in[0 : n]))
    if (label_in) {
      DEV_ENTER(map(to : label_in[0 : n]))
    }
  }
  if (!rc && chains) {
    rc = db_connect_chains(DB_INDEX_ARGS, eps2, params, core, parent, result);
    result->phase_s[DB_PHASE_CONNECT] = pc_now() - t0;
  } else if (!rc) {
    rc = db_connect_union_find(DB_INDEX_ARGS, eps2, min_pts, scratch, blocks, root_rank, lowest, core_in, order,
                               !label_in, core, parent, result);
  }
  if (!rc && pc_stop_requested()) rc = pc_fail_stopped("dbscan: interrupted after the connect phase");
  t0 = pc_now();

  /* Cluster ids: each component is named by its smallest input index; those points, numbered in
   * input order, give the ids (db_number_clusters); border points take the smallest id among
   * their core neighbours. scratch[s] is the label of position s. */
  long clusters = 0, n_core = 0, n_noise = 0;
  int *slabel = scratch;
  if (!rc && label_in) { /* the caller's ids; the non-core positions' labels come below */
    PAR_FOR()
    for (size_t s = 0; s < n; s++) slabel[s] = core[s] ? label_in[order[s]] : -1;
  } else if (!rc && (clusters = db_number_clusters(n, core, order, parent, lowest, root_rank, slabel)) < 0) {
    rc = -1;
  }
  /* with blocks: their starts again (scratch now holds the ids), into arrays the ids have freed */
  if (!rc && blocks > 0 && (blocks = db_build_blocks(n, cell_of, parent, root_rank, lowest)) < 0) rc = -1;
  if (!rc && blocks > 0) {
    PAR_FOR()
    for (size_t s = 0; s < n; s++)
      if (!core[s]) slabel[s] = INT_MAX;
    db_walk_blocks(DB_INDEX_ARGS, eps2, lowest, blocks, DB_WALK_LABEL, core, NULL, slabel);
    PAR_FOR(reduction(+ : n_core, n_noise) GPU_REDUCTION(n))
    for (size_t s = 0; s < n; s++) {
      n_core += core[s] != 0;
      if (!core[s] && slabel[s] == INT_MAX) {
        slabel[s] = -1;
        n_noise++;
      }
    }
  } else if (!rc) {
    /* The non-core positions listed first (db_list_positions, into root_rank and lowest: both free
     * once the ids are made), so that a GPU warp walks 32 of them, not the one or two among core
     * points that a warp over all positions would find. */
    int *non_core_at = lowest;
    const long non_core = db_list_positions(n, core, 0, root_rank, non_core_at);
    if (non_core < 0) rc = -1;
    if (!rc) {
      if (near && !tiled) { /* the list walk (db_list_label) */
        const int around = geo.cells_around;
        PAR_FOR(DB_NEIGHBOUR_LOOP((size_t)non_core))
        for (long k = 0; k < non_core; k++) {
          const size_t s = (size_t)non_core_at[k];
          const int *list = near + (size_t)cell_of[s] * (size_t)around * 2;
          slabel[s] = db_list_label(xs, d, list, around, s, core, slabel, eps2);
        }
      } else {
        PAR_FOR(DB_NEIGHBOUR_LOOP((size_t)non_core))
        for (long k = 0; k < non_core; k++) {
          const size_t s = (size_t)non_core_at[k];
          const db_view v = DB_VIEW;
          slabel[s] = db_border_label(&v, s, core, slabel, eps2);
        }
      }
      /* counted apart: a reduction would cap the walk's teams (pc_reduction_teams) */
      PAR_FOR(reduction(+ : n_noise) GPU_REDUCTION((size_t)non_core))
      for (long k = 0; k < non_core; k++) n_noise += slabel[non_core_at[k]] < 0;
      n_core = (long)n - non_core;
    }
  }
  if (!rc) {
    PAR_FOR()
    for (size_t s = 0; s < n; s++) labels[order[s]] = slabel[s];
  }
  t1 = pc_now();
  result->phase_s[DB_PHASE_LABEL] = t1 - t0;

  DEV_UPDATE(from(labels[0 : n]))
  if (is_core && !rc) { /* scattered where the flags are (in index order, a random walk over input order) */
    /* device: out, is_core[n] a byte per point. */
    DEV_ENTER(map(alloc : is_core[0 : n]))
    PAR_FOR()
    for (size_t s = 0; s < n; s++) is_core[order[s]] = (unsigned char)core[s];
    DEV_EXIT(map(from : is_core[0 : n]))
  }
  /* the input released, not deleted: a caller that mapped it (dbscan_ranks.c) keeps it there */
  DEV_EXIT(map(release : x[0 : nx]))
  DEV_EXIT(map(delete : lo[0 : nlo], ints[0 : nints], floats[0 : nfloats], labels[0 : n]))
  if (core_in) {
    DEV_EXIT(map(delete : core_in[0 : n]))
    if (label_in) {
      DEV_EXIT(map(delete : label_in[0 : n]))
    }
  }
  if (near) {
    const size_t nnear = cells * (size_t)geo.cells_around * 2;
    (void)nnear; /* used by the gpu variant's data directive */
    DEV_EXIT(map(delete : near[0 : nnear]))
  }
  result->phase_s[DB_PHASE_D2H] = pc_now() - t1;
  result->total_s = pc_now() - t_start;
  result->clusters = clusters;
  result->core = n_core;
  result->noise = n_noise;
  result->border = (long)n - n_core - n_noise;
done:
  free(lo), free(ints), free(floats), free(near), free(span);
  return rc;
}

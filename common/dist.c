/*
 * dist.c - MPI for the MPI=1 builds, the one-process answers otherwise (see dist.h).
 */
#include "dist.h"

#include "util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pc_dist_gather's one-process answer: a copy of the `count` items. */
static void *dist_copy(const void *mine, size_t count, size_t size, size_t *total) {
  void *copy = pc_try_alloc(count ? count : 1, size, "gathered items");
  if (copy) memcpy(copy, mine, count * size);
  *total = count;
  return copy;
}

#if defined(PC_MPI)
#include <mpi.h>

static int dist_rank, dist_size = 1, dist_local_rank, dist_local_size = 1;

static void dist_end(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void pc_dist_init(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &dist_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &dist_size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &dist_local_rank);
  MPI_Comm_size(node, &dist_local_size);
  MPI_Comm_free(&node);
  pc_at_end(dist_end);
}

int pc_dist_rank(void) { return dist_rank; }
int pc_dist_size(void) { return dist_size; }
int pc_dist_local_rank(void) { return dist_local_rank; }
int pc_dist_local_size(void) { return dist_local_size; }

/* MPI counts are ints: large arrays go in pieces of at most INT_MAX / 2 elements. */
#define DIST_PIECE ((size_t)INT_MAX / 2)

/* In place over all ranks, `count` values of `size` bytes, in pieces. */
static void dist_allreduce(void *values, size_t count, size_t size, MPI_Datatype type, MPI_Op op) {
  for (size_t at = 0; dist_size > 1 && at < count; at += DIST_PIECE) {
    const size_t len = count - at < DIST_PIECE ? count - at : DIST_PIECE;
    MPI_Allreduce(MPI_IN_PLACE, (char *)values + at * size, (int)len, type, op, MPI_COMM_WORLD);
  }
}

void pc_dist_sum_ll(long long *values, size_t count) {
  dist_allreduce(values, count, sizeof *values, MPI_LONG_LONG, MPI_SUM);
}
void pc_dist_max_float(float *values, size_t count) {
  dist_allreduce(values, count, sizeof *values, MPI_FLOAT, MPI_MAX);
}
void pc_dist_or_u32(uint32_t *values, size_t count) {
  dist_allreduce(values, count, sizeof *values, MPI_UINT32_T, MPI_BOR);
}

long pc_dist_sum_long(long value) {
  if (dist_size > 1) MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return value;
}

long pc_dist_max_long(long value) {
  if (dist_size > 1) MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  return value;
}

double pc_dist_sum_double(double value) {
  if (dist_size > 1) MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return value;
}

int pc_dist_any_failed(int failed) {
  if (dist_size == 1) return failed != 0;
  int lowest = failed ? dist_rank : dist_size;
  MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (lowest == dist_size) return 0;
  char message[1024];
  snprintf(message, sizeof message, "%s", dist_rank == lowest ? pc_last_error() : "");
  MPI_Bcast(message, (int)sizeof message, MPI_CHAR, lowest, MPI_COMM_WORLD);
  if (dist_rank != lowest) pc_fail("%s", message);
  return 1;
}

void pc_dist_gather_ints(const int *mine, size_t count, int *all) {
  if (dist_size == 1) {
    if (all != mine) memcpy(all, mine, count * sizeof *all);
    return;
  }
  /* rank r's count is known to every rank from the global count (pc_dist_slice), but only the
   * local one is passed here: the counts are gathered first */
  long long own = (long long)count;
  long long *counts = dist_rank == 0 ? pc_xalloc((size_t)dist_size, sizeof *counts, "gather counts") : NULL;
  MPI_Gather(&own, 1, MPI_LONG_LONG, counts, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (dist_rank != 0) {
    for (size_t at = 0; at < count; at += DIST_PIECE) {
      const size_t len = count - at < DIST_PIECE ? count - at : DIST_PIECE;
      MPI_Send(mine + at, (int)len, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    return;
  }
  memcpy(all, mine, count * sizeof *all);
  size_t offset = count;
  for (int r = 1; r < dist_size; r++) {
    const size_t theirs = (size_t)counts[r];
    for (size_t at = 0; at < theirs; at += DIST_PIECE) {
      const size_t len = theirs - at < DIST_PIECE ? theirs - at : DIST_PIECE;
      MPI_Recv(all + offset + at, (int)len, MPI_INT, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    offset += theirs;
  }
  free(counts);
}

void *pc_dist_gather(const void *mine, size_t count, size_t size, size_t *total) {
  if (dist_size == 1) return dist_copy(mine, count, size, total);
  MPI_Datatype item; /* counts of items, not bytes, must fit an int */
  MPI_Type_contiguous((int)size, MPI_BYTE, &item);
  MPI_Type_commit(&item);
  int own = (int)count, *counts = NULL, *offsets = NULL;
  if ((size_t)own != count) pc_die(PC_EXIT_USAGE, "MPI: %zu items are too many to gather", count);
  if (dist_rank == 0) {
    counts = pc_xalloc((size_t)dist_size, sizeof *counts, "gather counts");
    offsets = pc_xalloc((size_t)dist_size, sizeof *offsets, "gather offsets");
  }
  MPI_Gather(&own, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  size_t all = 0;
  for (int r = 0; dist_rank == 0 && r < dist_size; all += (size_t)counts[r], r++) {
    if (all > INT_MAX) pc_die(PC_EXIT_USAGE, "MPI: more than %d items to gather", INT_MAX);
    offsets[r] = (int)all;
  }
  void *gathered = dist_rank == 0 ? pc_try_alloc(all ? all : 1, size, "gathered items") : NULL;
  MPI_Gatherv(mine, own, item, gathered, counts, offsets, item, 0, MPI_COMM_WORLD);
  MPI_Type_free(&item);
  free(counts), free(offsets);
  *total = all;
  return gathered;
}

void pc_dist_bcast(void *data, size_t bytes) {
  for (size_t at = 0; dist_size > 1 && at < bytes; at += DIST_PIECE) {
    const size_t len = bytes - at < DIST_PIECE ? bytes - at : DIST_PIECE;
    MPI_Bcast((char *)data + at, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
  }
}

/* The counts of items each rank has (its own `count`, which must fit an int), on every rank,
 * and their offsets in rank order; the global number in *total. */
static void dist_counts(size_t count, int *counts, int *offsets, size_t *total) {
  const int own = (int)count;
  if ((size_t)own != count) pc_die(PC_EXIT_USAGE, "MPI: %zu items are too many to send at once", count);
  MPI_Allgather(&own, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
  size_t all = 0;
  for (int r = 0; r < dist_size; all += (size_t)counts[r], r++) {
    if (all > INT_MAX) pc_die(PC_EXIT_USAGE, "MPI: more than %d items to gather", INT_MAX);
    offsets[r] = (int)all;
  }
  *total = all;
}

void *pc_dist_allgather(const void *mine, size_t count, size_t size, size_t *total) {
  if (dist_size == 1) return dist_copy(mine, count, size, total);
  MPI_Datatype item;
  MPI_Type_contiguous((int)size, MPI_BYTE, &item);
  MPI_Type_commit(&item);
  int *counts = pc_xalloc((size_t)dist_size, sizeof *counts, "gather counts");
  int *offsets = pc_xalloc((size_t)dist_size, sizeof *offsets, "gather offsets");
  dist_counts(count, counts, offsets, total);
  void *all = pc_xalloc(*total ? *total : 1, size, "gathered items");
  MPI_Allgatherv(mine, (int)count, item, all, counts, offsets, item, MPI_COMM_WORLD);
  MPI_Type_free(&item);
  free(counts), free(offsets);
  return all;
}

void *pc_dist_exchange(const void *send, const size_t *counts, size_t size, size_t *total) {
  if (dist_size == 1) return dist_copy(send, counts[0], size, total);
  MPI_Datatype item;
  MPI_Type_contiguous((int)size, MPI_BYTE, &item);
  MPI_Type_commit(&item);
  int *scount = pc_xalloc((size_t)dist_size * 4, sizeof *scount, "exchange counts");
  int *soffset = scount + dist_size, *rcount = scount + 2 * dist_size, *roffset = scount + 3 * dist_size;
  size_t at = 0, all = 0;
  for (int r = 0; r < dist_size; at += counts[r], r++) {
    if (counts[r] > INT_MAX || at > INT_MAX) pc_die(PC_EXIT_USAGE, "MPI: more than %d items to send at once", INT_MAX);
    scount[r] = (int)counts[r], soffset[r] = (int)at;
  }
  MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < dist_size; all += (size_t)rcount[r], r++) {
    if (all > INT_MAX) pc_die(PC_EXIT_USAGE, "MPI: more than %d items to receive at once", INT_MAX);
    roffset[r] = (int)all;
  }
  void *got = pc_try_alloc(all ? all : 1, size, "exchanged items");
  const int failed = pc_dist_any_failed(got == NULL);
  if (!failed) MPI_Alltoallv(send, scount, soffset, item, got, rcount, roffset, item, MPI_COMM_WORLD);
  MPI_Type_free(&item);
  free(scount);
  *total = all;
  if (failed) free(got);
  return failed ? NULL : got;
}

#else /* one process */

void pc_dist_init(int *argc, char ***argv) { (void)argc, (void)argv; }
int pc_dist_rank(void) { return 0; }
int pc_dist_size(void) { return 1; }
int pc_dist_local_rank(void) { return 0; }
int pc_dist_local_size(void) { return 1; }
void pc_dist_sum_ll(long long *values, size_t count) { (void)values, (void)count; }
void pc_dist_max_float(float *values, size_t count) { (void)values, (void)count; }
void pc_dist_or_u32(uint32_t *values, size_t count) { (void)values, (void)count; }
long pc_dist_sum_long(long value) { return value; }
long pc_dist_max_long(long value) { return value; }
double pc_dist_sum_double(double value) { return value; }
int pc_dist_any_failed(int failed) { return failed != 0; }
void pc_dist_gather_ints(const int *mine, size_t count, int *all) {
  if (all != mine) memcpy(all, mine, count * sizeof *all);
}
void *pc_dist_allgather(const void *mine, size_t count, size_t size, size_t *total) {
  return dist_copy(mine, count, size, total);
}
void *pc_dist_exchange(const void *send, const size_t *counts, size_t size, size_t *total) {
  return dist_copy(send, counts[0], size, total);
}
void *pc_dist_gather(const void *mine, size_t count, size_t size, size_t *total) {
  return dist_copy(mine, count, size, total);
}
void pc_dist_bcast(void *data, size_t bytes) { (void)data, (void)bytes; }

#endif

static int errors_alike = 1;
void pc_dist_errors_alike(int alike) { errors_alike = alike; }
int pc_dist_errors_are_alike(void) { return errors_alike; }

void pc_dist_share(size_t items, size_t *first, size_t *count) {
  const size_t r = (size_t)pc_dist_rank(), p = (size_t)pc_dist_size();
  /* items r / p without overflow for any items < 2^64 / p */
  *first = items / p * r + items % p * r / p;
  *count = items / p * (r + 1) + items % p * (r + 1) / p - *first;
}

int pc_dist_slice_owner(size_t n, size_t row) {
  const size_t p = (size_t)pc_dist_size(), groups = n / PC_DIST_ROW_GROUP + (n % PC_DIST_ROW_GROUP != 0);
  const size_t group = row / PC_DIST_ROW_GROUP;
  size_t r = (size_t)((double)group * (double)p / (double)groups); /* pc_dist_share's inverse, give or take one */
  if (r >= p) r = p - 1;
  while (r + 1 < p && groups / p * (r + 1) + groups % p * (r + 1) / p <= group) r++;
  while (r > 0 && groups / p * r + groups % p * r / p > group) r--;
  return (int)r;
}

void pc_dist_slice(size_t n, size_t *first, size_t *count) {
  size_t group, groups;
  pc_dist_share(n / PC_DIST_ROW_GROUP + (n % PC_DIST_ROW_GROUP != 0), &group, &groups);
  *first = group * PC_DIST_ROW_GROUP < n ? group * PC_DIST_ROW_GROUP : n;
  *count = ((group + groups) * PC_DIST_ROW_GROUP < n ? (group + groups) * PC_DIST_ROW_GROUP : n) - *first;
}

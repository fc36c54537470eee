/*
 * dist.c - MPI for the MPI=1 builds, the one-process answers otherwise (see dist.h).
 */
#include "dist.h"

#include "util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
double pc_dist_sum_double(double value) { return value; }
int pc_dist_any_failed(int failed) { return failed != 0; }
void pc_dist_gather_ints(const int *mine, size_t count, int *all) {
  if (all != mine) memcpy(all, mine, count * sizeof *all);
}

#endif

static int errors_alike = 1;
void pc_dist_errors_alike(int alike) { errors_alike = alike; }
int pc_dist_errors_are_alike(void) { return errors_alike; }

void pc_dist_slice(size_t n, size_t *first, size_t *count) {
  const size_t r = (size_t)pc_dist_rank(), p = (size_t)pc_dist_size();
  /* n r / p without overflow for any n < 2^64 / p */
  const size_t lo = n / p * r + n % p * r / p, hi = n / p * (r + 1) + n % p * (r + 1) / p;
  *first = lo;
  *count = hi - lo;
}

/*
 * dist.h - the one layer between pragmaclust and MPI (issue 22): a program built with MPI=1
 * (PC_MPI defined, bin/pragmaclust-<variant>-mpi) runs as several ranks, each holding a slice of
 * the points; without MPI every function here is the one-process answer (rank 0 of 1, and the
 * reductions leave their arguments as they are), so the algorithms call them unconditionally.
 *
 * The reductions the algorithms need are exact, so that a run on any number of ranks gives the
 * one-process result bit for bit: sums of 64-bit integers (k-means' fixed-point sums and counts),
 * maxima, and a bitwise or of values that one rank owns (a row that only its holder fills in);
 * float sums that must be the one process's are gathered and added in its order (k-means++'s
 * wheel, streaming k-means' costs). The one floating-point sum left to MPI (pc_dist_sum_double,
 * for k-means' SSE) depends on the number of ranks in its last bits, as any split of a float sum
 * does. Gathers and the all-to-all exchange move items of any size (DBSCAN's points).
 */
#ifndef PC_DIST_H
#define PC_DIST_H

#include <stddef.h>
#include <stdint.h>

/* Starts MPI (MPI=1 builds; nothing otherwise) and registers its end with pc_at_end. */
void pc_dist_init(int *argc, char ***argv);
int pc_dist_rank(void);
int pc_dist_size(void);
/* This rank's number among the ranks of its machine: the gpu variant's rank takes device
 * local_rank % devices, so several ranks may share one GPU. */
int pc_dist_local_rank(void);
/* The number of ranks on this rank's machine (1 without MPI). */
int pc_dist_local_size(void);
/* Rank r's share of `items` things taken in order (streaming k-means' chunks):
 * [items r / size, items (r + 1) / size). */
void pc_dist_share(size_t items, size_t *first, size_t *count);
/* Rows come in slices of whole groups of PC_DIST_ROW_GROUP rows (the last group may be short):
 * k-means++ sums its wheel in blocks of that many rows (common/scan.h's PC_SCAN_BLOCK, which
 * algorithms/kmeanspp.c checks equal), and a block on one rank sums as in one process. */
#define PC_DIST_ROW_GROUP 256
/* Rank r's share of n rows: groups [g r / size, g (r + 1) / size) of the g groups, contiguous and
 * in rank order, so that the ranks' slices put together are the rows in their global order. A
 * rank may get none (fewer groups than ranks). */
void pc_dist_slice(size_t n, size_t *first, size_t *count);
/* The rank whose pc_dist_slice of n rows holds row `row` (< n). */
int pc_dist_slice_owner(size_t n, size_t row);
/* In place, over all ranks: sums of 64-bit integers, maxima of floats, bitwise or of uint32. */
void pc_dist_sum_ll(long long *values, size_t count);
void pc_dist_max_float(float *values, size_t count);
void pc_dist_or_u32(uint32_t *values, size_t count);
long pc_dist_sum_long(long value);
long pc_dist_max_long(long value);
double pc_dist_sum_double(double value);
/* Whether the errors a rank may meet now are met alike by every rank (1, the start: options,
 * inputs and parameters are the same everywhere), so that pc_die leaves the message to rank 0; or
 * may be its own (0: during the computation, an allocation, a device), so that every rank that
 * fails says so, naming itself. */
void pc_dist_errors_alike(int alike);
int pc_dist_errors_are_alike(void);
/* Whether any rank failed (`failed` non-zero on it): a step that only some ranks may fail (a read
 * of their own rows) ends on every rank, and rank 0, which reports errors (pc_die), takes the
 * pc_fail message of the lowest failing rank. One process: failed != 0. */
int pc_dist_any_failed(int failed);
/* Rank 0 gets every rank's `count` ints (its own first) in `all` (size: the global count);
 * the other ranks' `all` is not touched (may be NULL). */
void pc_dist_gather_ints(const int *mine, size_t count, int *all);
/* Rank 0 gets every rank's `count` items of `size` bytes, in rank order, in a new array (free
 * it), and their number in *total; the others get NULL. NULL on rank 0 too when memory fails (a
 * pc_fail message). One process: a copy. */
void *pc_dist_gather(const void *mine, size_t count, size_t size, size_t *total);
/* Rank 0's `bytes` at data, to every rank. */
void pc_dist_bcast(void *data, size_t bytes);
/* pc_dist_gather's items, on every rank. */
void *pc_dist_allgather(const void *mine, size_t count, size_t size, size_t *total);
/* All to all: send holds items of `size` bytes for rank 0 first, then rank 1, ... (counts[r] of
 * them for rank r); returns a new array of the items every rank sent to this one, in the order of
 * the senders' ranks (their number in *total), or NULL with a pc_fail message (memory). */
void *pc_dist_exchange(const void *send, const size_t *counts, size_t size, size_t *total);

#endif

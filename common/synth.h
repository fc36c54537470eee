/*
 * synth.h - deterministic synthetic data, identical in every variant and thread count.
 *
 * Every value is a pure function of (seed, row, column): a counter-based generator
 * (SplitMix64 finaliser over the element's index) instead of a sequential stream, so any
 * range of rows can be generated independently, in parallel or chunk by chunk, and gives
 * the same bits everywhere.
 *
 * Specs (the command line's "gen:" inputs):
 *   uniform:n=N,d=D[,seed=S]                       values uniform in [0, 1)
 *   blobs:n=N,d=D[,centers=C,std=S,box=B,noise=F,seed=S]   C isotropic Gaussian clusters
 *        (default 8, std 1.0) whose centres are uniform in [-B, B]^d (default B = 10); point i
 *        belongs to cluster i mod C, so clusters have equal sizes (as sklearn's make_blobs).
 *        With noise=F (default 0), each point is with probability F instead uniform in
 *        [-B, B]^d (background noise, as in DBSCAN benchmarks).
 */
#ifndef PC_SYNTH_H
#define PC_SYNTH_H

#include <stddef.h>
#include <stdint.h>
#include "par.h"

typedef enum { PC_GEN_UNIFORM, PC_GEN_BLOBS } pc_gen_kind;

typedef struct {
  pc_gen_kind kind;
  size_t n, d;
  uint64_t seed;
  size_t centers; /* blobs */
  double std, box, noise;
} pc_gen_spec;

/* pc_gen_blob_of's answer for a point of the uniform background noise. */
#define PC_GEN_NOISE ((size_t)-1)

/* Parses "uniform:..." or "blobs:..." (without the "gen:" prefix); 0 or -1 with a message. A
 * spec whose values could leave the float range (pc_gen_max_abs beyond FLT_MAX) is refused, so
 * generated data is always finite, as data read from files must be. */
int pc_gen_parse(const char *text, pc_gen_spec *spec);

/* The largest |value| the spec can produce: 1 for uniform; box + PC_GEN_GAUSS_MAX * std for
 * blobs, since a Box-Muller normal from 53-bit uniforms is at most sqrt(-2 ln 2^-53) in size. */
#define PC_GEN_GAUSS_MAX 8.5704
double pc_gen_max_abs(const pc_gen_spec *spec);

/* Fills out[0 .. rows*d) with rows [row_begin, row_begin + rows) of the data set. */
void pc_gen_rows(const pc_gen_spec *spec, size_t row_begin, size_t rows, float *out);

/* Ground-truth cluster of row i of a blobs spec, or PC_GEN_NOISE. */
size_t pc_gen_blob_of(const pc_gen_spec *spec, size_t i);

/* Streams of pc_hash_uniform that algorithms draw from (the generators use 1..15). */
enum { PC_STREAM_KMEANSPP = 16, PC_STREAM_KMEANS_SHARP = 17, PC_STREAM_STREAM = 18, PC_STREAM_DPC = 19 };

/* The SplitMix64 finaliser, and a uniform double in [0, 1) that depends only on (seed, stream,
 * index). Inline and device-callable: kernels draw their own random numbers. */
DEV_FUNCS_BEGIN
static inline uint64_t pc_mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static inline double pc_hash_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t h = pc_mix64(pc_mix64(seed ^ (stream * 0xd1b54a32d192ed03ULL)) + index);
  return (double)(h >> 11) * 0x1.0p-53;
}
DEV_FUNCS_END

/* k distinct indices in [0, n), a pure function of (seed, n, k), written to idx in the order
 * drawn (Floyd's algorithm over the counter generator). Needs k <= n. Returns 0, or -1 with a
 * pc_fail message when its scratch set cannot be allocated. */
int pc_sample_distinct(uint64_t seed, size_t n, size_t k, size_t *idx);

#endif

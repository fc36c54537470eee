/*
 * device.h - where the parallel loops of this build run, and proof of it.
 *
 * pc_device_init() is called once, before any timing. In the gpu variant it runs a probe
 * target region and checks that it executed on a GPU: with no usable GPU (none found, or a
 * device image the OpenMP runtime rejected) it stops the program with PC_EXIT_NO_DEVICE and a
 * message (pc_device_try_init: returns -1 with it), unless allow_host is set, in which case every target region runs on the host and
 * every report says "host (no GPU)". In the seq and omp variants it records the host.
 */
#ifndef PC_DEVICE_H
#define PC_DEVICE_H

#include <stddef.h>

typedef struct {
  int offloading;      /* 1 when target regions run on a GPU */
  int host_fallback;   /* gpu variant running on the host by --allow-host */
  char name[128];      /* GPU name, or "none" */
  char where[160];     /* one phrase for reports: "GPU NVIDIA H100 ...", "host (no GPU)" */
  int threads;         /* host threads the OpenMP runtime will use (1 for seq) */
  int multiprocessors; /* the GPU's streaming multiprocessors, as its driver tells; 0: no GPU, or unknown */
  double init_s;       /* time spent bringing the device up */
} pc_device_info;

/* pc_device_try_init returns 0, or -1 with a pc_fail message when the gpu variant finds no
 * usable GPU and allow_host is 0 (the library's way: nothing ends the program); it may be called
 * again, with allow_host set, after such a failure. pc_device_init is the program's: the same,
 * but the failure ends the program with PC_EXIT_NO_DEVICE and the message. */
int pc_device_try_init(int allow_host, int threads, pc_device_info *info);
void pc_device_init(int allow_host, int threads, pc_device_info *info);

/* Which kernels an algorithm runs where it has two (--kernels): the tuned ones of this build
 * (the seams algorithms/kmeans_tuned.h and kmeanspp_tuned.h: vendor extensions, kept in files of their own) where they exist and
 * apply, or the portable loops of the algorithm's main file, standard OpenMP in every variant.
 * Both give the same results. */
typedef enum { PC_KERNELS_TUNED, PC_KERNELS_PORTABLE } pc_kernels;
extern const char *const pc_kernels_names[2]; /* "tuned", "portable" */

/* Teams for a GPU loop of n iterations that carries a reduction: enough for n threads of
 * PC_GPU_THREADS, at most PC_GPU_REDUCTION_TEAMS; 1 when target regions run on the host. */
int pc_reduction_teams(size_t n);

/* `want` teams when target regions run on a GPU, 1 when they run on the host. */
int pc_device_teams(int want);

/* Teams of `threads` for a GPU loop of n iterations, a block of `threads` iterations each (LLVM's
 * runtime launches at most 3200 teams of its own choice, each then looping over blocks): the
 * count for GPU_TEAMS. */
int pc_block_teams(size_t n, int threads);

/* The streaming multiprocessors of the GPU in use, which team counts tuned per multiprocessor
 * scale by: the CUDA driver's count (pc_device_info.multiprocessors), or
 * PC_DEFAULT_MULTIPROCESSORS where the driver cannot tell (no GPU, host fallback, another
 * vendor's). Valid after pc_device_init. */
int pc_device_multiprocessors(void);
#define PC_DEFAULT_MULTIPROCESSORS 132 /* an H100 SXM, the GPU the per-multiprocessor counts were tuned on */

/* 1 when target regions run on a GPU (pc_device_init found one), else 0. */
int pc_offloading(void);

/* Host memory for data copied to the device again and again (a stream's chunks): page-locked,
 * from the CUDA driver, when target regions run on a GPU and the driver has a context current on
 * this thread, so that copies go by DMA at the link's speed; else ordinary memory (as
 * pc_try_alloc), which the runtime copies through staging buffers of its own. Released by
 * pc_free_staging; both must be called after pc_device_init. */
void *pc_try_alloc_staging(size_t count, size_t size, const char *what);
void pc_free_staging(void *p);

/* A few doubles that a target region hands back to the host each time it runs (an iteration's
 * counts): the region writes them through `device` (is_device_ptr), pc_results_take returns them
 * on the host. Where target regions run on a GPU, `device` is page-locked host memory mapped into
 * the device's address space, which the region writes directly: no copy back follows the region
 * (what that saves: docs/performance.md, 2026-11-29); where the driver gives none,
 * a device buffer that pc_results_take copies back; elsewhere host memory. pc_results_open returns
 * 0, or -1 with a pc_fail message; after pc_device_init, and with the device data of the run that
 * uses it entered (the driver's context current on this thread). */
typedef struct {
  double *device, *host;
  int copy; /* device is a device buffer, copied back by pc_results_take */
} pc_results;
int pc_results_open(pc_results *r, size_t count);
const double *pc_results_take(const pc_results *r, size_t count);
void pc_results_close(pc_results *r);

/* The device memory this process may take, in bytes: the free memory of its GPU as the CUDA driver
 * tells, divided among the MPI ranks of this machine that share that GPU (dist.h). 0 where there
 * is no such limit to tell: no GPU runs the kernels (seq, omp, the gpu variant's host fallback), or
 * the driver cannot say. After pc_device_init. */
size_t pc_device_memory_share(void);

/* Number of OpenMP offload devices visible (0 outside the gpu variant). */
int pc_device_count(void);

/* What the offload operations an iteration is made of cost on this machine (`info --offload-costs`):
 * the median wall time, in microseconds, of each of `count` operations, timed one at a time
 * after a warm-up. Fills at most `most` entries and returns how many (0 outside the gpu variant). */
typedef struct {
  const char *what;
  double median_us;
} pc_offload_cost;
int pc_offload_costs(pc_offload_cost *costs, int most, int count);

#if defined(PC_VARIANT_GPU)
/* The CUDA driver library (dlopen handle, cuInit done), opened once at run time so that the
 * program has no link-time dependency on CUDA; NULL without a usable driver. */
void *pc_cuda_driver(void);
#endif

#endif

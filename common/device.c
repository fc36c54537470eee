/* device.c - see device.h. */
#include "device.h"
#include "dist.h"
#include "knobs.h"
#include "par.h"
#include "util.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>

#if !defined(PC_VARIANT_SEQ)
#include <omp.h>
#endif
#if defined(PC_VARIANT_GPU)
#include <dlfcn.h>

void *pc_cuda_driver(void) {
  static void *lib;
  static int tried;
  if (tried) return lib;
  tried = 1;
  lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
  int (*cu_init)(unsigned) = lib ? (int (*)(unsigned))dlsym(lib, "cuInit") : NULL;
  if (lib && (!cu_init || cu_init(0) != 0)) dlclose(lib), lib = NULL;
  return lib;
}

/* Asks the CUDA driver for the name of device `ordinal`. */
static void cuda_device_name(int ordinal, char *name, size_t len) {
  snprintf(name, len, "unknown GPU");
  void *lib = pc_cuda_driver();
  if (!lib) return;
  int (*cu_get)(int *, int) = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
  int (*cu_name)(char *, int, int) = (int (*)(char *, int, int))dlsym(lib, "cuDeviceGetName");
  int dev;
  if (cu_get && cu_name && cu_get(&dev, ordinal) == 0) cu_name(name, (int)len, dev);
}

/* Asks the CUDA driver for the streaming multiprocessors of device `ordinal`; 0 when it cannot. */
static int cuda_multiprocessors(int ordinal) {
  void *lib = pc_cuda_driver();
  if (!lib) return 0;
  int (*cu_get)(int *, int) = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
  int (*cu_attribute)(int *, int, int) = (int (*)(int *, int, int))dlsym(lib, "cuDeviceGetAttribute");
  int dev, count = 0;
  if (!cu_get || !cu_attribute || cu_get(&dev, ordinal) != 0) return 0;
  if (cu_attribute(&count, 16 /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */, dev) != 0) return 0;
  return count > 0 ? count : 0;
}

/* The free memory of device `ordinal` as the CUDA driver tells, asked in the device's primary
 * context (made current for the question: an MPI rank's device need not be the context current on
 * this thread). 0, or -1 when the driver cannot tell. */
static int cuda_free_memory(int ordinal, size_t *free_bytes) {
  void *lib = pc_cuda_driver();
  if (!lib) return -1;
  int (*cu_get)(int *, int) = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
  int (*cu_retain)(void **, int) = (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
  int (*cu_release)(int) = (int (*)(int))dlsym(lib, "cuDevicePrimaryCtxRelease_v2");
  int (*cu_push)(void *) = (int (*)(void *))dlsym(lib, "cuCtxPushCurrent_v2");
  int (*cu_pop)(void **) = (int (*)(void **))dlsym(lib, "cuCtxPopCurrent_v2");
  int (*cu_mem_info)(size_t *, size_t *) = (int (*)(size_t *, size_t *))dlsym(lib, "cuMemGetInfo_v2");
  int dev, rc = -1;
  void *ctx;
  size_t total;
  if (!cu_get || !cu_retain || !cu_release || !cu_push || !cu_pop || !cu_mem_info || cu_get(&dev, ordinal) != 0 ||
      cu_retain(&ctx, dev) != 0)
    return -1;
  if (cu_push(ctx) == 0) {
    rc = cu_mem_info(free_bytes, &total) == 0 ? 0 : -1;
    (void)cu_pop(&ctx);
  }
  (void)cu_release(dev);
  return rc;
}

/* Every device's primary context, active before the OpenMP runtime opens a device, and the
 * default device's current on this thread. Two reasons:
 *  - Host waits for the GPU spin instead of sleeping. LLVM 19's CUDA plugin gives the primary
 *    context CU_CTX_SCHED_BLOCKING_SYNC when it is the one to activate it, so the end of every
 *    synchronous target region puts the host thread to sleep and wakes it again, which can take
 *    longer than the kernel did. It leaves the flags of a context that is already active alone,
 *    so this activates them first, with CU_CTX_SCHED_SPIN (kept until exit);
 *    PRAGMACLUST_GPU_WAIT=blocking gives them CU_CTX_SCHED_BLOCKING_SYNC, the plugin's choice.
 *  - One context for OpenMP and cuBLAS (kmeans_gemm.c, which works in the primary context).
 *    LLVM's plugin always uses the primary context; GCC's libgomp adopts the context current on
 *    the thread that opens the device and creates a context of its own only when none is. */
static void cuda_prepare_contexts(void) {
  const char *wait = getenv("PRAGMACLUST_GPU_WAIT");
  const unsigned flags = wait && !strcmp(wait, "blocking") ? 0x04 /* CU_CTX_SCHED_BLOCKING_SYNC */
                                                            : 0x01 /* CU_CTX_SCHED_SPIN */;
  void *lib = pc_cuda_driver();
  if (!lib) return;
  int (*cu_count)(int *) = (int (*)(int *))dlsym(lib, "cuDeviceGetCount");
  int (*cu_get)(int *, int) = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
  int (*cu_flags)(int, unsigned) = (int (*)(int, unsigned))dlsym(lib, "cuDevicePrimaryCtxSetFlags_v2");
  int (*cu_retain)(void **, int) = (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
  int (*cu_set_current)(void *) = (int (*)(void *))dlsym(lib, "cuCtxSetCurrent");
  int count = 0;
  if (!cu_count || !cu_get || !cu_flags || !cu_retain || !cu_set_current || cu_count(&count) != 0) return;
  const int default_device = omp_get_default_device();
  for (int ordinal = 0; ordinal < count; ordinal++) {
    int dev;
    void *ctx;
    if (cu_get(&dev, ordinal) != 0) continue;
    (void)cu_flags(dev, flags);
    if (cu_retain(&ctx, dev) == 0 && ordinal == default_device) (void)cu_set_current(ctx);
  }
}

/* What pc_device_init's messages tell to check, in the terms of the offload runtime this build
 * links: LLVM's libomptarget (clang) or GCC's libgomp, which loads its plugin by name through
 * the loader's search path (the program's rpath included). */
#if defined(__clang__)
#define OFFLOAD_NO_DEVICE_CAUSES "no NVIDIA driver/libcuda"
#define OFFLOAD_REJECTED_CAUSES                                                                                        \
  "built with ptxas >= 12.8 for LLVM < 21? rebuild with `make toolchain`; LIBOMPTARGET_INFO=16 shows why"
#else
#define OFFLOAD_NO_DEVICE_CAUSES "no NVIDIA driver/libcuda, or libgomp-plugin-nvptx.so.1 not on the loader's path"
#define OFFLOAD_REJECTED_CAUSES "GOMP_DEBUG=1 shows why"
#endif
#endif

/* par.h's tuning knobs. */
PC_KNOB(PC_GPU_THREADS)
PC_KNOB(PC_GPU_REDUCTION_TEAMS)

const char *const pc_kernels_names[2] = {"tuned", "portable"};

static int offloading;

#if defined(PC_VARIANT_GPU)
/* Page-locked staging memory from the CUDA driver (cuMemHostAlloc, portable to every context), so
 * that copies go by DMA at the link's speed. Neither runtime serves it through OpenMP: LLVM 19's
 * CUDA plugin accepts the pinned allocator trait but does not lock the pages, and GCC 12's libgomp
 * has no pinned memory (docs/performance.md, 2026-11-25). NULL where the driver cannot (no
 * context current on this thread, or no page-locked memory left). */
static void *cuda_alloc_pinned(size_t bytes) {
  void *lib = pc_cuda_driver();
  int (*cu_host_alloc)(void **, size_t, unsigned) =
      lib ? (int (*)(void **, size_t, unsigned))dlsym(lib, "cuMemHostAlloc") : NULL;
  void *p = NULL;
  if (!cu_host_alloc || cu_host_alloc(&p, bytes, 0x01 /* CU_MEMHOSTALLOC_PORTABLE */) != 0) return NULL;
  return p;
}

/* The device's address of page-locked memory that cuda_alloc_pinned gave (CUDA maps such memory
 * into every device's address space where addressing is unified, as on every 64-bit system it
 * supports); NULL where the driver cannot tell. */
static void *cuda_device_address(void *p) {
  void *lib = pc_cuda_driver();
  int (*cu_device_pointer)(unsigned long long *, void *, unsigned) =
      lib ? (int (*)(unsigned long long *, void *, unsigned))dlsym(lib, "cuMemHostGetDevicePointer_v2") : NULL;
  unsigned long long address = 0;
  if (!cu_device_pointer || cu_device_pointer(&address, p, 0) != 0) return NULL;
  return (void *)(uintptr_t)address;
}

/* Frees p when the driver allocated it; 0 when it did not (p is then ordinary memory). */
static int cuda_free_pinned(void *p) {
  void *lib = pc_cuda_driver();
  int (*cu_host_flags)(unsigned *, void *) = lib ? (int (*)(unsigned *, void *))dlsym(lib, "cuMemHostGetFlags") : NULL;
  int (*cu_free_host)(void *) = lib ? (int (*)(void *))dlsym(lib, "cuMemFreeHost") : NULL;
  unsigned flags;
  if (!cu_host_flags || !cu_free_host || cu_host_flags(&flags, p) != 0) return 0;
  return cu_free_host(p) == 0;
}
#endif

int pc_block_teams(size_t n, int threads) {
  const size_t teams = (n + (size_t)threads - 1) / (size_t)threads;
  return teams > INT_MAX ? INT_MAX : teams > 0 ? (int)teams : 1;
}

int pc_reduction_teams(size_t n) {
  if (!offloading) return 1;
  const int teams = pc_block_teams(n, PC_GPU_THREADS);
  return teams < PC_GPU_REDUCTION_TEAMS ? teams : PC_GPU_REDUCTION_TEAMS;
}

int pc_device_teams(int want) { return offloading ? want : 1; }

static int multiprocessors = PC_DEFAULT_MULTIPROCESSORS;

int pc_device_multiprocessors(void) { return multiprocessors; }

int pc_offloading(void) { return offloading; }

void *pc_try_alloc_staging(size_t count, size_t size, const char *what) {
#if defined(PC_VARIANT_GPU)
  size_t bytes = 0;
  if (offloading && pc_mul_size(count, size, &bytes, what) == 0) {
    void *p = cuda_alloc_pinned(bytes ? bytes : 1);
    if (p) return p;
  }
#endif
  return pc_try_alloc(count, size, what);
}

void pc_free_staging(void *p) {
#if defined(PC_VARIANT_GPU)
  if (p && offloading && cuda_free_pinned(p)) return;
#endif
  free(p);
}

int pc_results_open(pc_results *r, size_t count) {
  *r = (pc_results){NULL, NULL, 0};
#if defined(PC_VARIANT_GPU)
  if (offloading) {
    void *pinned = cuda_alloc_pinned(count * sizeof(double));
    void *address = pinned ? cuda_device_address(pinned) : NULL;
    if (address) {
      r->host = pinned, r->device = address;
      return 0;
    }
    if (pinned) cuda_free_pinned(pinned);
    r->host = pc_try_alloc(count, sizeof(double), "a region's results");
    r->device = omp_target_alloc(count * sizeof(double), omp_get_default_device());
    r->copy = 1;
    if (r->host && r->device) return 0;
    pc_results_close(r);
    return pc_fail("cannot allocate %zu bytes of device memory for a region's results", count * sizeof(double));
  }
#endif
  r->host = r->device = pc_try_alloc(count, sizeof(double), "a region's results");
  return r->host ? 0 : -1;
}

const double *pc_results_take(const pc_results *r, size_t count) {
#if defined(PC_VARIANT_GPU)
  if (r->copy)
    omp_target_memcpy(r->host, r->device, count * sizeof(double), 0, 0, omp_get_initial_device(),
                      omp_get_default_device());
#else
  (void)count;
#endif
  return r->host;
}

void pc_results_close(pc_results *r) {
#if defined(PC_VARIANT_GPU)
  if (r->copy) {
    if (r->device) omp_target_free(r->device, omp_get_default_device());
    free(r->host);
  } else if (r->host && (!offloading || !cuda_free_pinned(r->host))) {
    free(r->host);
  }
#else
  free(r->host);
#endif
  *r = (pc_results){NULL, NULL, 0};
}

size_t pc_device_memory_share(void) {
#if defined(PC_VARIANT_GPU)
  size_t free_bytes;
  if (!offloading || cuda_free_memory(omp_get_default_device(), &free_bytes) != 0) return 0;
  /* the ranks of this machine on this device: local ranks r with r % devices alike (pc_device_try_init) */
  const int devices = omp_get_num_devices(), local = pc_dist_local_size();
  int sharing = 1;
  if (pc_dist_size() > 1 && devices > 0) sharing = local / devices + (pc_dist_local_rank() % devices < local % devices);
  return free_bytes / (size_t)(sharing > 1 ? sharing : 1);
#else
  return 0;
#endif
}

int pc_device_count(void) {
#if defined(PC_VARIANT_GPU)
  return omp_get_num_devices();
#else
  return 0;
#endif
}

#if defined(PC_VARIANT_GPU)
/* The operations pc_offload_costs times; `scalar` is mapped by the caller where they need it. */
static void cost_empty_region(int *scalar) {
  (void)scalar;
#pragma omp target
  {
  }
}
static void cost_nowait_region(int *scalar) {
  (void)scalar;
#pragma omp target nowait
  {
  }
#pragma omp taskwait
}
static void cost_eight_nowait_regions(int *scalar) {
  (void)scalar;
  for (int r = 0; r < 8; r++) {
#pragma omp target nowait
    {
    }
  }
#pragma omp taskwait
}
static void cost_region_mapping_a_scalar(int *scalar) {
#pragma omp target map(tofrom : scalar[0 : 1])
  scalar[0]++;
}
static void cost_update_of_a_scalar(int *scalar) {
  (void)scalar; /* GCC does not count the directive's use */
#pragma omp target update from(scalar[0 : 1])
}
static void cost_region_mapping_two_doubles_from(int *scalar) {
  double out[2] = {0.0, 0.0};
#pragma omp target map(from : out[0 : 2])
  out[0] = out[1] = 1.0;
  scalar[0] += out[0] != 1.0;
}
static pc_results cost_results; /* for cost_region_writing_host_memory */
static void cost_region_writing_host_memory(int *scalar) {
  double *out = cost_results.device;
#pragma omp target is_device_ptr(out)
  out[0] = out[1] = 1.0;
  scalar[0] += pc_results_take(&cost_results, 2)[0] != 1.0;
}
static void cost_counting_loop(int *scalar) {
  long count = 0;
#pragma omp target teams distribute parallel for reduction(+ : count) map(tofrom : count)
  for (int i = 0; i < 1024; i++) count += scalar[0] != i;
  scalar[0] += (int)(count & 1);
}

static int cost_compare(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
#endif

int pc_offload_costs(pc_offload_cost *costs, int most, int count) {
#if defined(PC_VARIANT_GPU)
  static const struct {
    const char *what;
    void (*op)(int *);
    int regions;
  } ops[] = {
      {"empty target region", cost_empty_region, 1},
      {"empty target nowait region + taskwait", cost_nowait_region, 1},
      {"8 empty target nowait regions + one taskwait, per region", cost_eight_nowait_regions, 8},
      {"target region mapping one int tofrom", cost_region_mapping_a_scalar, 1},
      {"target update from of one mapped int", cost_update_of_a_scalar, 1},
      {"target region mapping two doubles from", cost_region_mapping_two_doubles_from, 1},
      {"target region writing two doubles to host memory (pc_results)", cost_region_writing_host_memory, 1},
      {"teams loop of 1024 with a reduction read back", cost_counting_loop, 1},
  };
  double *t = pc_try_alloc((size_t)count, sizeof *t, "offload cost times");
  if (!t || count < 1) {
    free(t);
    return 0;
  }
  int scalar = 0, filled = 0;
  if (pc_results_open(&cost_results, 2) != 0) {
    free(t);
    return 0;
  }
#pragma omp target enter data map(to : scalar)
  for (size_t o = 0; o < sizeof ops / sizeof ops[0] && filled < most; o++) {
    for (int r = -count / 10 - 1; r < count; r++) { /* a tenth more as warm-up */
      const double t0 = pc_now();
      ops[o].op(&scalar);
      if (r >= 0) t[r] = pc_now() - t0;
    }
    qsort(t, (size_t)count, sizeof *t, cost_compare);
    costs[filled++] = (pc_offload_cost){ops[o].what, t[count / 2] * 1e6 / ops[o].regions};
  }
#pragma omp target exit data map(delete : scalar)
  pc_results_close(&cost_results);
  free(t);
  return filled;
#else
  (void)costs, (void)most, (void)count;
  return 0;
#endif
}

int pc_device_try_init(int allow_host, int threads, pc_device_info *info) {
  memset(info, 0, sizeof *info);
  snprintf(info->name, sizeof info->name, "none");
#if defined(PC_VARIANT_SEQ)
  (void)allow_host;
  (void)threads;
  info->threads = 1;
  snprintf(info->where, sizeof info->where, "host, sequential");
#else
  if (threads > 0) omp_set_num_threads(threads);
  info->threads = omp_get_max_threads();
#if defined(PC_VARIANT_OMP)
  (void)allow_host;
  snprintf(info->where, sizeof info->where, "host, %d OpenMP threads", info->threads);
#else
  double t0 = pc_now();
  cuda_prepare_contexts(); /* before the OpenMP runtime opens a device */
  int on_host = 1, devices = omp_get_num_devices();
  if (devices > 1 && pc_dist_size() > 1) omp_set_default_device(pc_dist_local_rank() % devices); /* dist.h */
  if (devices > 0) {
    /* The probe: where the device image was rejected, the runtime runs this on the host. */
#pragma omp target map(from : on_host)
    on_host = omp_is_initial_device();
  }
  info->init_s = pc_now() - t0;
  if (!on_host) {
    info->offloading = offloading = 1;
    cuda_device_name(omp_get_default_device(), info->name, sizeof info->name);
    info->multiprocessors = cuda_multiprocessors(omp_get_default_device());
    if (info->multiprocessors) multiprocessors = info->multiprocessors;
    snprintf(info->where, sizeof info->where, "GPU %s", info->name);
    return 0;
  }
  if (!allow_host) {
    const char *policy = getenv("OMP_TARGET_OFFLOAD");
    if (policy && !strcasecmp(policy, "DISABLED"))
      return pc_fail("gpu variant: OMP_TARGET_OFFLOAD=DISABLED keeps the kernels on the host; unset it, or pass "
                     "--allow-host to run this build on the host");
    if (devices == 0)
      return pc_fail("gpu variant: no GPU is visible to the OpenMP runtime (%s); pass --allow-host to run this build "
                     "on the host",
                     OFFLOAD_NO_DEVICE_CAUSES);
    return pc_fail("gpu variant: %d device(s) found but the kernels ran on the host: the device image was rejected "
                   "(%s), or pass --allow-host to run on the host",
                   devices, OFFLOAD_REJECTED_CAUSES);
  }
  info->host_fallback = 1;
  omp_set_default_device(omp_get_initial_device());
  snprintf(info->where, sizeof info->where, "host (no GPU; gpu build run with --allow-host), %d threads", info->threads);
#endif
#endif
  return 0;
}

void pc_device_init(int allow_host, int threads, pc_device_info *info) {
  if (pc_device_try_init(allow_host, threads, info) != 0) pc_die(PC_EXIT_NO_DEVICE, "%s", pc_last_error());
}

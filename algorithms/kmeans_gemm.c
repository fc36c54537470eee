/*
 * kmeans_gemm.c - k-means' assign step through cuBLAS (see kmeans_gemm.h): the one place where
 * pragmaclust calls a vendor library, and so the one file whose body exists in the gpu variant
 * only (the seq and omp builds compile the stubs at the end, which fail with a message).
 *
 * Per block of B points (B * k floats of scratch, at most KM_GEMM_SCRATCH_BYTES):
 *  1. GEMM (cuBLAS, column-major): dots (B x k, leading dimension B) = X (B x d) * CS^T, where
 *     X is the block of the dimension-major points (xt + i0, leading dimension n: column j is
 *     feature j of the block's points) and CS is the shifted centroids (cs: kpad x d, leading
 *     dimension kpad, of which the first k rows are used). The device addresses of xt and cs
 *     come from `target data use_device_ptr`: they are the copies km_run put on the device.
 *  2. argmin (an OpenMP kernel, one thread per point): the centroid with the least
 *     cn[c] - 2 dots[i + c B], ties to the lowest index; counts changed labels.
 *
 * Synchronisation. libomptarget (LLVM 19) runs each target region on a stream from its own pool
 * (created non-blocking, so they do not order with the default stream) and waits for that stream
 * before a region without `nowait` returns: when the host reaches the GEMM, km_prepare's cs and
 * the previous block's reads of dots are done. cuBLAS calls return before the GEMM ends (it runs
 * on the handle's stream, the default one), so cuCtxSynchronize waits for it before the argmin
 * region reads dots. libomptarget works in the device's primary context; cuBLAS (through the CUDA
 * runtime) uses the context current on the calling thread, which km_gemm_load makes that same
 * primary context, so both see the same device memory.
 *
 * The CUDA and cuBLAS declarations below are written out by hand (the build has no CUDA headers;
 * both libraries are opened with dlopen). OpenMP device i is CUDA device i (LLVM's CUDA plugin
 * numbers the devices the driver lists, in order).
 */
#include "kmeans_gemm.h"
#include "util.h"

#if defined(PC_VARIANT_GPU)
#include "device.h"
#include "knobs.h"
#include "par.h"

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tuning knobs: settings of speed, not of results; -DNAME=value (make KNOBS='-DNAME=value')
 * overrides one, `info` lists them and a report names those changed (knobs.h). */
/* Scratch for one block's dot products. 256 MiB: 67108 points at k = 1000, so that n = 10^6
 * takes 15 GEMMs of m = 67108 (large enough for cuBLAS to reach its rate). */
#define KM_GEMM_SCRATCH_BYTES_DEFAULT ((size_t)256 << 20)
#ifndef KM_GEMM_SCRATCH_BYTES
#define KM_GEMM_SCRATCH_BYTES KM_GEMM_SCRATCH_BYTES_DEFAULT
#endif
PC_KNOB(KM_GEMM_SCRATCH_BYTES)

/* ---- the CUDA driver and cuBLAS API we use (values from CUDA 13.0's cuda.h and cublas_api.h,
 * unchanged since CUDA 11) -------------------------------------------------------------------- */
typedef int km_cu_result;              /* CUresult: 0 = CUDA_SUCCESS */
typedef void *km_cu_context;           /* CUcontext (struct CUctx_st *) */
typedef int km_cu_device;              /* CUdevice (an ordinal) */
typedef int km_cublas_status;          /* cublasStatus_t: 0 = CUBLAS_STATUS_SUCCESS */
typedef void *km_cublas_handle;        /* cublasHandle_t (struct cublasContext *) */
enum { KM_CUBLAS_OP_N = 0, KM_CUBLAS_OP_T = 1 };                             /* cublasOperation_t */
enum { KM_CUBLAS_DEFAULT_MATH = 0, KM_CUBLAS_TF32_TENSOR_OP_MATH = 3 };      /* cublasMath_t */

static struct {
  int loaded;
  char library[256]; /* the cuBLAS file that was opened */
  int version;       /* cublasGetVersion: major * 10000 + minor * 100 + patch */
  km_cublas_handle handle;
  km_cu_context ctx;
  /* libcuda (driver API) */
  km_cu_result (*cu_init)(unsigned flags);
  km_cu_result (*cu_device_get)(km_cu_device *dev, int ordinal);
  km_cu_result (*cu_primary_ctx_retain)(km_cu_context *ctx, km_cu_device dev);
  km_cu_result (*cu_ctx_set_current)(km_cu_context ctx);
  km_cu_result (*cu_ctx_synchronize)(void);
  km_cu_result (*cu_get_error_string)(km_cu_result error, const char **text); /* optional */
  /* libcublas */
  km_cublas_status (*create)(km_cublas_handle *handle);                       /* cublasCreate_v2 */
  km_cublas_status (*get_version)(km_cublas_handle handle, int *version);     /* cublasGetVersion_v2 */
  km_cublas_status (*set_math_mode)(km_cublas_handle handle, int mode);       /* cublasSetMathMode */
  km_cublas_status (*sgemm)(km_cublas_handle handle, int transa, int transb, int m, int n, int k, const float *alpha,
                            const float *a, int lda, const float *b, int ldb, const float *beta, float *c,
                            int ldc);                                          /* cublasSgemm_v2 */
  const char *(*status_string)(km_cublas_status status); /* cublasGetStatusString (11.4.2+), optional */
} km_cublas;

static const char *km_cu_error(km_cu_result r) {
  const char *text = NULL;
  if (km_cublas.cu_get_error_string) km_cublas.cu_get_error_string(r, &text);
  return text ? text : "unknown CUDA error";
}

static const char *km_cublas_error(km_cublas_status s) {
  const char *text = km_cublas.status_string ? km_cublas.status_string(s) : NULL;
  return text ? text : "unknown cuBLAS status";
}

/* dlsym into *slot; returns 0, or -1 with a message naming the symbol and library. */
static int km_sym(void *lib, const char *name, const char *from, void *slot) {
  void *p = dlsym(lib, name);
  if (!p) return pc_fail("--distance gemm: %s has no symbol %s", from, name);
  memcpy(slot, &p, sizeof p); /* an object pointer into a function pointer, without a cast ISO C forbids */
  return 0;
}

static void *km_open_cublas(char *opened, size_t len) {
  const char *env = getenv("PRAGMACLUST_CUBLAS");
  if (env && *env) {
    void *lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (lib) snprintf(opened, len, "%s", env);
    else pc_fail("--distance gemm: PRAGMACLUST_CUBLAS=%s cannot be opened: %s", env, dlerror());
    return lib;
  }
  static const char *const names[] = {"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      snprintf(opened, len, "%s", names[i]);
      return lib;
    }
  }
  pc_fail("--distance gemm: cuBLAS not found (tried libcublas.so, .so.13, .so.12, .so.11 on the loader's path); "
          "set PRAGMACLUST_CUBLAS=/path/to/libcublas.so.N or LD_LIBRARY_PATH");
  return NULL;
}

static int km_load_libraries(void) {
  void *cuda = pc_cuda_driver();
  if (!cuda) return pc_fail("--distance gemm: the CUDA driver (libcuda.so.1) cannot be opened or initialised");
  const char *c = "libcuda";
  if (km_sym(cuda, "cuInit", c, &km_cublas.cu_init) || km_sym(cuda, "cuDeviceGet", c, &km_cublas.cu_device_get) ||
      km_sym(cuda, "cuDevicePrimaryCtxRetain", c, &km_cublas.cu_primary_ctx_retain) ||
      km_sym(cuda, "cuCtxSetCurrent", c, &km_cublas.cu_ctx_set_current) ||
      km_sym(cuda, "cuCtxSynchronize", c, &km_cublas.cu_ctx_synchronize))
    return -1;
  (void)km_sym(cuda, "cuGetErrorString", c, &km_cublas.cu_get_error_string); /* optional */

  void *lib = km_open_cublas(km_cublas.library, sizeof km_cublas.library);
  if (!lib) return -1;
  const char *b = km_cublas.library;
  if (km_sym(lib, "cublasCreate_v2", b, &km_cublas.create) ||
      km_sym(lib, "cublasGetVersion_v2", b, &km_cublas.get_version) ||
      km_sym(lib, "cublasSetMathMode", b, &km_cublas.set_math_mode) || km_sym(lib, "cublasSgemm_v2", b, &km_cublas.sgemm))
    return -1;
  (void)km_sym(lib, "cublasGetStatusString", b, &km_cublas.status_string); /* optional */
  return 0;
}

int km_gemm_built(void) { return 1; }

int km_gemm_load(int tf32) {
  if (omp_get_num_devices() == 0 || omp_get_default_device() == omp_get_initial_device())
    return pc_fail("--distance gemm%s runs cuBLAS on the GPU, but this run's kernels run on the host "
                   "(--allow-host without a usable GPU); use --distance dot or direct",
                   tf32 ? "-tf32" : "");
  if (!km_cublas.loaded) {
    if (km_load_libraries() != 0) return -1;
    km_cu_device dev;
    km_cu_result r = km_cublas.cu_init(0);
    if (r == 0) r = km_cublas.cu_device_get(&dev, omp_get_default_device());
    if (r == 0) r = km_cublas.cu_primary_ctx_retain(&km_cublas.ctx, dev);
    if (r == 0) r = km_cublas.cu_ctx_set_current(km_cublas.ctx);
    if (r != 0) return pc_fail("--distance gemm: CUDA error %d (%s) on the primary context of device %d", r, km_cu_error(r),
                               omp_get_default_device());
    km_cublas_status s = km_cublas.create(&km_cublas.handle);
    if (s != 0) return pc_fail("--distance gemm: cublasCreate failed: %s (%d)", km_cublas_error(s), s);
    if (km_cublas.get_version(km_cublas.handle, &km_cublas.version) != 0) km_cublas.version = 0;
    km_cublas.loaded = 1;
  }
  /* Plain float32 unless TF32 is asked for. (NVIDIA_TF32_OVERRIDE=1 in the environment would
   * still let cuBLAS use TF32 under CUBLAS_DEFAULT_MATH.) */
  km_cublas_status s =
      km_cublas.set_math_mode(km_cublas.handle, tf32 ? KM_CUBLAS_TF32_TENSOR_OP_MATH : KM_CUBLAS_DEFAULT_MATH);
  if (s != 0) return pc_fail("--distance gemm: cublasSetMathMode failed: %s (%d)", km_cublas_error(s), s);
  return 0;
}

const char *km_gemm_library(int *version) {
  if (version) *version = km_cublas.version;
  return km_cublas.loaded ? km_cublas.library : "";
}

/* Points per GEMM for n points and k centroids: as many as KM_GEMM_SCRATCH_BYTES of dot products hold. */
static size_t km_gemm_block(size_t n, int k) {
  size_t block = KM_GEMM_SCRATCH_BYTES / ((size_t)k * sizeof(float));
  if (block >= n) block = n;
  else if (block > 128) block = block / 128 * 128; /* whole 512-byte columns */
  return block == 0 ? 1 : block;
}

size_t km_gemm_scratch_bytes(size_t n, int k) { return km_gemm_block(n, k) * (size_t)k * sizeof(float); }

int km_gemm_begin(size_t n, size_t d, int k, int tf32, km_gemm_scratch *s) {
  memset(s, 0, sizeof *s);
  if (km_gemm_load(tf32) != 0) return -1;
  if (n > INT_MAX || d > INT_MAX)
    return pc_fail("--distance gemm: n = %zu, d = %zu: cuBLAS takes sizes below 2^31", n, d);
  const size_t block = km_gemm_block(n, k);
  s->device = omp_get_default_device();
  s->block = block;
  s->dots = omp_target_alloc(block * (size_t)k * sizeof(float), s->device);
  if (!s->dots) {
    s->block = 0;
    return pc_fail("--distance gemm: cannot allocate %zu MiB of device scratch", block * (size_t)k * sizeof(float) >> 20);
  }
  return 0;
}

void km_gemm_end(km_gemm_scratch *s) {
  if (s->dots) omp_target_free(s->dots, s->device);
  s->dots = NULL;
  s->block = 0;
}

long km_gemm_assign(const km_gemm_scratch *s, const float *xt, const float *cs, const float *cn, int *labels,
                    size_t n, size_t d, int k, int kpad) {
  if (!omp_target_is_present(xt, s->device) || !omp_target_is_present(cs, s->device))
    return pc_fail("--distance gemm: the points or centroids are not on the device");
  float *dots = s->dots;
  const float one = 1.0f, zero = 0.0f;
  long changed = 0;
  for (size_t i0 = 0; i0 < n; i0 += s->block) {
    const size_t m = n - i0 < s->block ? n - i0 : s->block;
    km_cu_result r = km_cublas.cu_ctx_set_current(km_cublas.ctx);
    if (r != 0) return pc_fail("--distance gemm: cuCtxSetCurrent: %s (%d)", km_cu_error(r), r);
    km_cublas_status status;
    /* Inside, xt and cs are the device addresses of the copies km_run mapped (DEV_ENTER). */
#pragma omp target data use_device_ptr(xt, cs)
    status = km_cublas.sgemm(km_cublas.handle, KM_CUBLAS_OP_N, KM_CUBLAS_OP_T, (int)m, k, (int)d, &one, xt + i0, (int)n,
                             cs, kpad, &zero, dots, (int)m);
    if (status != 0) return pc_fail("--distance gemm: cublasSgemm failed: %s (%d)", km_cublas_error(status), status);
    r = km_cublas.cu_ctx_synchronize(); /* the GEMM is done before the kernel below reads dots */
    if (r != 0) return pc_fail("--distance gemm: the GEMM failed: %s (%d)", km_cu_error(r), r);

    PAR_FOR(reduction(+ : changed) GPU_ONLY(is_device_ptr(dots)) GPU_REDUCTION(m))
    for (size_t i = 0; i < m; i++) {
      float best = INFINITY;
      int best_c = 0;
      for (int c = 0; c < k; c++) { /* a warp reads 32 consecutive dots of centroid c: coalesced */
        const float dist = cn[c] - 2.0f * dots[i + (size_t)c * m];
        if (dist < best) {
          best = dist;
          best_c = c;
        }
      }
      changed += labels[i0 + i] != best_c;
      labels[i0 + i] = best_c;
    }
  }
  return changed;
}

#else /* seq and omp: no device, no cuBLAS */

int km_gemm_built(void) { return 0; }

int km_gemm_load(int tf32) {
  return pc_fail("--distance gemm%s needs the gpu variant (cuBLAS on the GPU)", tf32 ? "-tf32" : "");
}

const char *km_gemm_library(int *version) {
  if (version) *version = 0;
  return "";
}

size_t km_gemm_scratch_bytes(size_t n, int k) {
  (void)n, (void)k;
  return 0;
}

int km_gemm_begin(size_t n, size_t d, int k, int tf32, km_gemm_scratch *s) {
  (void)n, (void)d, (void)k;
  s->dots = NULL;
  s->block = 0;
  s->device = 0;
  return km_gemm_load(tf32);
}

void km_gemm_end(km_gemm_scratch *s) { (void)s; }

long km_gemm_assign(const km_gemm_scratch *s, const float *xt, const float *cs, const float *cn, int *labels,
                    size_t n, size_t d, int k, int kpad) {
  (void)s, (void)xt, (void)cs, (void)cn, (void)labels, (void)n, (void)d, (void)k, (void)kpad;
  return pc_fail("--distance gemm needs the gpu variant (cuBLAS on the GPU)");
}

#endif

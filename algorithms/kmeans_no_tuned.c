/*
 * kmeans_no_tuned.c - the seam of kmeans_tuned.h for builds that have no tuned assign kernels
 * (GCC's gpu variant: the tuned GPU kernels use LLVM's extensions): the portable loop of kmeans.c
 * runs.
 */
#include "kmeans_tuned.h"

#include <stddef.h>

const km_tuned_kernels *km_tuned(void) { return NULL; }

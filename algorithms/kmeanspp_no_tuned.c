/*
 * kmeanspp_no_tuned.c - the seam of kmeanspp_tuned.h for builds without tuned distance passes:
 * the portable passes of kmeanspp.c run.
 */
#include "kmeanspp_tuned.h"

const kmpp_tuned_kernels *kmpp_tuned(void) { return NULL; }

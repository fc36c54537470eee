/* 08-team-histogram: the contract between exercise.c (yours) and harness.c. */
#ifndef EX_EXERCISE_H
#define EX_EXERCISE_H

#include <stddef.h>

#define EX_MAX_BINS 1024        /* bins a team can count in its own memory (4 KiB of unsigned) */
#define EX_POINTS_PER_TEAM 8192 /* points one team counts */

/* The weights of streaming k-means (algorithms/streamkm.c, skm_count_served): counts[b] = the
 * number of points i < n with bin[i] == b, for b < bins <= EX_MAX_BINS; every bin[i] is in
 * [0, bins). counts arrives zeroed. In the gpu build bin and counts are present on the device
 * (the harness's DEV_ENTER), where the counting must happen. */
void ex_histogram(const int *bin, size_t n, int bins, long *counts);

#endif

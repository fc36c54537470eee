/*
 * knobs.h - the tuning knobs of a build, and their record for `info` and the reports.
 *
 * A knob is a compile-time constant that speed depends on and results do not (a team count, a
 * tile size). Each file keeps its knobs in one block at its top, each in this form:
 *
 *   #define KM_ROWS_DEFAULT 6          the default, named so that the record can show it
 *   #ifndef KM_ROWS
 *   #define KM_ROWS KM_ROWS_DEFAULT     -DKM_ROWS=4 (make KNOBS='-DKM_ROWS=4') overrides it
 *   #endif
 *   PC_KNOB(KM_ROWS)                   records its name, value and default
 *
 * PC_KNOB puts a pointer to the knob's record in the linker section `pc_knobs`, so that the
 * program lists the knobs of exactly the files it links without a central table (the GNU
 * linkers define __start_pc_knobs and __stop_pc_knobs around it). Values and defaults are
 * recorded as the preprocessor spells them after expansion: a knob differs from its default when
 * the two texts differ. Nothing is recorded in the device pass of the gpu variant.
 */
#ifndef PC_KNOBS_H
#define PC_KNOBS_H

#include <stddef.h>

typedef struct {
  const char *name, *value, *default_value;
} pc_knob;

#define PC_KNOB_TEXT_OF(...) #__VA_ARGS__
#define PC_KNOB_TEXT(macro) PC_KNOB_TEXT_OF(macro)
#if defined(__NVPTX__) || defined(__AMDGPU__)
#define PC_KNOB(name)
#else
#define PC_KNOB(name)                                                                                             \
  static const pc_knob pc_knob_##name = {#name, PC_KNOB_TEXT(name), PC_KNOB_TEXT(name##_DEFAULT)};              \
  static const pc_knob *const pc_knob_entry_##name __attribute__((used, section("pc_knobs"))) = &pc_knob_##name;
#endif

/* The knobs this program was built with, in link order: *count of them. */
const pc_knob *const *pc_knobs(size_t *count);

/* 1 when the knob's value is not its default. */
int pc_knob_changed(const pc_knob *knob);

#endif

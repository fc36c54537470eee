/* knobs.c - see knobs.h. */
#include "knobs.h"

#include <string.h>

/* Weak: a program that links no knob has no section, and the linker then defines neither. */
extern const pc_knob *const __start_pc_knobs[] __attribute__((weak));
extern const pc_knob *const __stop_pc_knobs[] __attribute__((weak));

const pc_knob *const *pc_knobs(size_t *count) {
  *count = __start_pc_knobs ? (size_t)(__stop_pc_knobs - __start_pc_knobs) : 0;
  return __start_pc_knobs;
}

int pc_knob_changed(const pc_knob *knob) { return strcmp(knob->value, knob->default_value) != 0; }

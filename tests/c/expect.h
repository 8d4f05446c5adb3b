/* EXPECT(cond) for the C99 tests: reports the failed condition with the library's last error
 * and counts it in `failures` (each test returns nonzero when any failed). */
#ifndef GPTOSS_TESTS_C_EXPECT_H
#define GPTOSS_TESTS_C_EXPECT_H

#include <stdio.h>

#include "gptoss.h"

static int failures = 0;

#define EXPECT(cond)                                                        \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: expected %s (last error: %s)\n", __FILE__,  \
              __LINE__, #cond, gptoss_get_last_error_message());            \
      failures++;                                                           \
    }                                                                       \
  } while (0)

#endif

/* The checks the C API's tests count (tests/c_api_test.c,
 * tests/c_api_damage_test.c), in C99: CHECK counts a condition as passed or
 * failed and prints a failure; CHECK_REPORT prints the closing line that
 * CI reads, "N passed, M failed". Include it in one file of a program. */
#ifndef CAIRN_TESTS_C_API_CHECK_H_
#define CAIRN_TESTS_C_API_CHECK_H_

#include <stdio.h>

static int g_passed = 0, g_failed = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      ++g_passed;                                                              \
    } else {                                                                   \
      ++g_failed;                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

/* Prints the closing line; the exit status for main. */
static int check_report(void) {
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}

#endif /* CAIRN_TESTS_C_API_CHECK_H_ */

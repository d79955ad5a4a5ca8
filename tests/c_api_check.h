/* The checks the C API's tests count (tests/c_api_test.c,
 * tests/c_api_damage_test.c), in C99: CHECK counts a condition as passed or
 * failed and prints a failure; CHECK_REPORT prints the closing line that
 * CI reads, "N passed, M failed". Include it in one file of a program. */
#ifndef CAIRN_TESTS_C_API_CHECK_H_
#define CAIRN_TESTS_C_API_CHECK_H_

#include <stdio.h>
#include <stdlib.h>

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

/* Makes the program's scratch directory, $TMPDIR/<name>XXXXXX (or under
 * /tmp), into root; 0 when it cannot (printed). The includer defines
 * _POSIX_C_SOURCE 200809L first, for mkdtemp. */
static int make_test_root(char* root, size_t n, const char* name) {
  const char* tmp = getenv("TMPDIR");
  snprintf(root, n, "%s/%sXXXXXX", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", name);
  if (mkdtemp(root) == NULL) {
    perror("mkdtemp");
    return 0;
  }
  return 1;
}

/* Removes root when every check passed (a failure's files stay, to look
 * at) and prints the closing line; the exit status for main. */
static int finish_test_root(const char* root) {
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
  if (g_failed == 0 && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
  return check_report();
}

#endif /* CAIRN_TESTS_C_API_CHECK_H_ */

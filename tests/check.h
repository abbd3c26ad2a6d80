/* check.h — the check macro and counters the C unit tests share.
 *   CHECK(cond)                  counts a pass, or a failure printed as
 *                                "file:line: check failed: cond" on stderr;
 *   CHECK(cond, fmt, ...)        the same, with ": <message>" after the condition
 *                                (fmt must be a string literal);
 *   return check_summary();      prints "N passed, N failed" on stdout (CI reads this
 *                                line) and gives the exit status: 1 on any failure. */
#ifndef LMX_TESTS_CHECK_H
#define LMX_TESTS_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int g_pass, g_fail;

static inline void check_failed(const char *file, int line, const char *cond, const char *fmt,
                                ...) {
  g_fail++;
  fprintf(stderr, "%s:%d: check failed: %s", file, line, cond);
  if (fmt[0]) {
    va_list ap;
    va_start(ap, fmt);
    fputs(": ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
  }
  fputc('\n', stderr);
}

#define CHECK(cond, ...)                                                                  \
  do {                                                                                   \
    if (cond) g_pass++;                                                                  \
    else check_failed(__FILE__, __LINE__, #cond, "" __VA_ARGS__);                        \
  } while (0)

static inline int check_summary(void) {
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}

#endif

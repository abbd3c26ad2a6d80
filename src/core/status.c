/* status.c — thread-local error messages and status names (see status.h). */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char g_msg[LMX_ERRMSG_CAP];

int lmx_fail(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_msg, sizeof g_msg, fmt, ap);
  va_end(ap);
  return status;
}

int lmx_fail_prefix(int status, const char *fmt, ...) {
  char prefix[LMX_ERRMSG_CAP];
  char old[LMX_ERRMSG_CAP];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, g_msg, sizeof old);
  size_t n = strlen(prefix);
  memcpy(g_msg, prefix, n + 1);
  size_t rest = strlen(old);
  if (rest > sizeof g_msg - 1 - n) rest = sizeof g_msg - 1 - n;
  memcpy(g_msg + n, old, rest);
  g_msg[n + rest] = '\0';
  return status;
}

int lmx_fail_nomem(const char *what, size_t bytes) {
  return lmx_fail(LMX_ERR_NOMEM, "out of memory allocating %s (%zu bytes)", what, bytes);
}

const char *lmx_errmsg(void) { return g_msg; }

void lmx_clear_error(void) { g_msg[0] = '\0'; }

const char *lmx_status_name(int status) {
#define LMX_STATUS_NAME_(name, value, desc)                                              \
  if (status == value) return #name;
  LMX_STATUS_LIST(LMX_STATUS_NAME_)
#undef LMX_STATUS_NAME_
  return "unknown status";
}

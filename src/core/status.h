/* status.h — status codes and the thread-local last-error message.
 *
 * Every engine function that can fail returns an int status (LMX_OK = 0) and, on
 * failure, leaves a message in a thread-local buffer read by lmx_last_error().
 * The codes themselves are declared once, in src/luamx.h (LMX_STATUS_LIST is the
 * X-macro that gives both the enum and the short names).
 *
 * Invariants: lmx_fail() never allocates (the message buffer is static per thread),
 * so it is safe to call when allocation itself failed. Messages are truncated, never
 * overflowed. lmx_fail_prefix() prepends context ("Convolution 'conv1': ") to the
 * message an inner call set, so errors gain context as they climb the layers.
 */
#ifndef LMX_CORE_STATUS_H
#define LMX_CORE_STATUS_H

#include "../luamx.h"

#define LMX_ERRMSG_CAP 1024

/* Sets the thread's message (printf-style) and returns `status`. */
int lmx_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepends printf-style context to the current message; returns `status`. */
int lmx_fail_prefix(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Out-of-memory failure: names what was being allocated and how many bytes. */
int lmx_fail_nomem(const char *what, size_t bytes);

/* The current message (never NULL; "" when none). */
const char *lmx_errmsg(void);

/* Clears the message (at the start of each API call). */
void lmx_clear_error(void);

/* Short name of a status code ("LMX_ERR_SHAPE"), or "unknown status". */
const char *lmx_status_name(int status);

/* Propagate a failing status from an expression. */
#define LMX_TRY(expr)                                                                   \
  do {                                                                                 \
    int lmx_try_rc_ = (expr);                                                          \
    if (lmx_try_rc_ != LMX_OK) return lmx_try_rc_;                                     \
  } while (0)

#endif

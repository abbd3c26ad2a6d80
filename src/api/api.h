/* api.h — helpers shared by the entry points in src/api.
 *
 * Entry points only check arguments, translate handles and call the layers below; they
 * hold no logic of their own. Every entry point starts with LMX_ENTER() (clears the
 * thread's message) and checks each pointer argument with LMX_NEED, which fails with
 * LMX_ERR_ARG naming the function and the argument.
 */
#ifndef LMX_API_API_H
#define LMX_API_API_H

#include "../core/status.h"
#include "../luamx.h"

#define LMX_ENTER() lmx_clear_error()
#define LMX_NEED(ptr, fn, argname)                                                          \
  do {                                                                                     \
    if (!(ptr)) return lmx_fail(LMX_ERR_ARG, "%s: argument '%s' must not be NULL", fn, argname); \
  } while (0)

#endif

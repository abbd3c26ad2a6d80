/* api_custom.c — entry points of the Custom operator's host interface (luamx.h
 * "Custom operators"). The operator itself is src/ops/custom.c. */
#include <stdio.h>

#include "../ops/custom.h"
#include "api.h"

LMX_API int lmx_custom_set_callbacks(const lmx_custom_callbacks *cb) {
  LMX_ENTER();
  if (cb && (!cb->create || !cb->infer_shape || !cb->infer_type || !cb->forward || !cb->backward))
    return lmx_fail(LMX_ERR_ARG, "lmx_custom_set_callbacks: every callback must be set");
  lmx_custom_install(cb);
  return LMX_OK;
}

LMX_API int lmx_custom_fail(int status, const char *msg) {
  return lmx_fail(status ? status : LMX_ERR_ARG, "%s", msg ? msg : "(no message)");
}

LMX_API int lmx_custom_released(int64_t *ids, int cap, int *n) {
  LMX_ENTER();
  LMX_NEED(ids, "lmx_custom_released", "ids");
  LMX_NEED(n, "lmx_custom_released", "n");
  if (cap < 1) return lmx_fail(LMX_ERR_ARG, "lmx_custom_released: cap must be >= 1, got %d", cap);
  *n = lmx_custom_take_released(ids, cap);
  return LMX_OK;
}

/* fuzz_json.c — libFuzzer target for the symbol JSON loader (lmx_symbol_from_json).
 *
 * Any input must either fail cleanly (a status and a message, no crash, no leak) or
 * load into a symbol on which the read-only operations work. For a loaded symbol we
 * check the writer/reader round trip: writing, reloading and writing again gives the
 * same bytes. We also list, print and run partial shape/type inference, which drives
 * the operators' inference rules with whatever __shape__ / __dtype__ the input carries.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "luamx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(lmx_symbol *s) {
  int n;
  const char *const *items;
  const char *text;
  for (int kind = LMX_SYM_ARGUMENTS; kind <= LMX_SYM_ATTR_ALL; kind++)
    lmx_symbol_list(s, kind, &n, &items);
  lmx_symbol_debug_str(s, &text);
  enum { CAP = 4096 };
  static int ndim[CAP], dts[CAP];
  static int64_t dims[(size_t)CAP * LMX_MAX_NDIM];
  int complete;
  lmx_symbol_infer_shape(s, 0, NULL, NULL, NULL, 1, CAP, ndim, dims, &complete);
  lmx_symbol_infer_type(s, 0, NULL, NULL, 1, CAP, dts, &complete);
  lmx_symbol *in = NULL;
  if (lmx_symbol_get_internals(s, &in) == LMX_OK) lmx_symbol_list(in, LMX_SYM_OUTPUTS, &n, &items);
  lmx_symbol_free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lmx_symbol *s = NULL, *s2 = NULL;
  if (lmx_symbol_from_json((const char *)data, size, &s) != LMX_OK) return 0;
  const char *j1, *j2;
  if (lmx_symbol_tojson(s, &j1) != LMX_OK) abort();
  if (lmx_symbol_from_json(j1, strlen(j1), &s2) != LMX_OK) {
    fprintf(stderr, "reload of our own JSON failed: %s\n", lmx_last_error());
    abort();
  }
  if (lmx_symbol_tojson(s2, &j2) != LMX_OK || strcmp(j1, j2) != 0) {
    fprintf(stderr, "round trip changed the JSON\n");
    abort();
  }
  exercise(s);
  lmx_symbol_free(s2);
  lmx_symbol_free(s);
  return 0;
}

/* api_core.c — version, the embedded cdef text, errors, allocator debugging. */
#include "api.h"

extern const char lmx_cdef_text[]; /* generated at build time from luamx.h */

int lmx_version(void) { return LMX_VERSION; }

const char *lmx_cdef(void) { return lmx_cdef_text; }

const char *lmx_last_error(void) { return lmx_errmsg(); }

const char *lmx_status_string(int status) { return lmx_status_name(status); }

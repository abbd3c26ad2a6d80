/* ndfile.h — MXNet NDArray-list files (mx.nd.save / mx.nd.load), engine side.
 *
 * The format is MXNET-SEMANTICS §4; ndfile.c documents which record versions are read
 * and written. A loaded file becomes an lmx_ndlist: a reference-counted list of arrays
 * (each holding one reference, all on the CPU) with optional names.
 *
 * Invariants of lmx_ndlist: arrays[0..n) and, when has_names, names[0..n) are non-NULL
 * once a load succeeded; a list being built may hold NULL entries (release skips them).
 * The list owns its names (NUL-terminated, engine allocator) and one reference to each
 * array; lmx_ndlist_get hands out extra references, so arrays outlive the list.
 */
#ifndef LMX_TENSOR_NDFILE_H
#define LMX_TENSOR_NDFILE_H

#include <stddef.h>

#include "../core/refcount.h"
#include "../luamx.h"
#include "ndarray.h"

struct lmx_ndlist {
  lmx_refcount rc;
  int n;          /* number of arrays */
  int has_names;  /* 1: the file carried K = N names */
  lmx_ndarray **arrays;
  char **names;   /* NULL when !has_names */
};

/* Writes n arrays (names NULL or n non-NULL names) to path atomically (temporary file in
 * the same directory, fsync, rename). Arguments are assumed checked by the API layer. */
int lmx_ndfile_save(const char *path, lmx_ndarray *const *arrays, const char *const *names,
                    int n);

/* Reads and parses the whole file; messages name path. */
int lmx_ndfile_load(const char *path, lmx_ndlist **out);

/* Parses an in-memory file; messages name `name`. */
int lmx_ndfile_load_buffer(const void *data, size_t size, const char *name, lmx_ndlist **out);

/* Drops one reference; frees the list (and its references) at zero. NULL is a no-op. */
void lmx_ndlist_release(lmx_ndlist *list);

#endif

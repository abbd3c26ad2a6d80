/* vec.h — small containers: a growable array of any element type and a string builder.
 *
 * lmx_vec is untyped storage plus an element size; the LMX_VEC_AT macro gives typed
 * access. Growth doubles the capacity through lmx_realloc, so a push can fail only for
 * lack of memory (LMX_ERR_NOMEM, with a message naming the container's purpose).
 * lmx_sbuf keeps a NUL-terminated string; appends that fail leave it unchanged and set
 * sb->failed so a long series of appends can be checked once at the end.
 */
#ifndef LMX_CORE_VEC_H
#define LMX_CORE_VEC_H

#include <stddef.h>

typedef struct {
  void *data;
  size_t len, cap, elem;
} lmx_vec;

#define LMX_VEC_INIT(type) {NULL, 0, 0, sizeof(type)}
#define LMX_VEC_AT(v, type, i) (((type *)(v)->data)[i])

/* Appends one element copied from elem; LMX_OK or LMX_ERR_NOMEM. */
int lmx_vec_push(lmx_vec *v, const void *elem);
/* Makes room for at least n elements in total. */
int lmx_vec_reserve(lmx_vec *v, size_t n);
void lmx_vec_clear(lmx_vec *v); /* length 0, keeps memory */
void lmx_vec_release(lmx_vec *v); /* frees memory */

typedef struct {
  char *s;
  size_t len, cap;
  int failed;
} lmx_sbuf;

#define LMX_SBUF_INIT {NULL, 0, 0, 0}

void lmx_sbuf_add(lmx_sbuf *sb, const char *text);
void lmx_sbuf_addn(lmx_sbuf *sb, const char *text, size_t n);
void lmx_sbuf_addf(lmx_sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text so far ("" when empty); valid until the next append or release. */
const char *lmx_sbuf_str(const lmx_sbuf *sb);
void lmx_sbuf_release(lmx_sbuf *sb);

#endif

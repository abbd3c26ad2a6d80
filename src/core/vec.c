/* vec.c — growable arrays and string builders (see vec.h). */
#include "vec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../luamx.h"
#include "alloc.h"
#include "status.h"

int lmx_vec_reserve(lmx_vec *v, size_t n) {
  if (n <= v->cap) return LMX_OK;
  size_t cap = v->cap ? v->cap : 8;
  while (cap < n) cap *= 2;
  size_t bytes;
  if (lmx_mul_size(cap, v->elem, &bytes)) return lmx_fail(LMX_ERR_NOMEM, "container too large");
  void *p = lmx_realloc(v->data, bytes);
  if (!p) return lmx_fail_nomem("a container", bytes);
  v->data = p;
  v->cap = cap;
  return LMX_OK;
}

int lmx_vec_push(lmx_vec *v, const void *elem) {
  LMX_TRY(lmx_vec_reserve(v, v->len + 1));
  memcpy((char *)v->data + v->len * v->elem, elem, v->elem);
  v->len++;
  return LMX_OK;
}

void lmx_vec_clear(lmx_vec *v) { v->len = 0; }

void lmx_vec_release(lmx_vec *v) {
  lmx_free(v->data);
  v->data = NULL;
  v->len = v->cap = 0;
}

static int sbuf_grow(lmx_sbuf *sb, size_t extra) {
  if (sb->failed) return -1;
  size_t need = sb->len + extra + 1;
  if (need <= sb->cap) return 0;
  size_t cap = sb->cap ? sb->cap : 64;
  while (cap < need) cap *= 2;
  char *p = lmx_realloc(sb->s, cap);
  if (!p) {
    sb->failed = 1;
    return -1;
  }
  sb->s = p;
  sb->cap = cap;
  return 0;
}

void lmx_sbuf_addn(lmx_sbuf *sb, const char *text, size_t n) {
  if (sbuf_grow(sb, n)) return;
  memcpy(sb->s + sb->len, text, n);
  sb->len += n;
  sb->s[sb->len] = '\0';
}

void lmx_sbuf_add(lmx_sbuf *sb, const char *text) { lmx_sbuf_addn(sb, text, strlen(text)); }

void lmx_sbuf_addf(lmx_sbuf *sb, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    lmx_sbuf_addn(sb, small, (size_t)n);
    return;
  }
  if (sbuf_grow(sb, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(sb->s + sb->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb->len += (size_t)n;
}

const char *lmx_sbuf_str(const lmx_sbuf *sb) { return sb->s ? sb->s : ""; }

void lmx_sbuf_release(lmx_sbuf *sb) {
  lmx_free(sb->s);
  sb->s = NULL;
  sb->len = sb->cap = 0;
  sb->failed = 0;
}

/* cudnn_cache.c — the per-device cuDNN descriptor cache (cudnn_cache.h). Plain C,
 * compiled in every build and tested on the CPU with a fake create / destroy. */
#include "cudnn_cache.h"

#include <string.h>

void lmx_dnn_cache_init(lmx_dnn_cache *c, lmx_dnn_cache_create create,
                        lmx_dnn_cache_destroy destroy, void *user) {
  memset(c, 0, sizeof *c);
  c->create = create, c->destroy = destroy, c->user = user;
}

static void drop(lmx_dnn_cache *c, lmx_dnn_cache_slot *s) {
  if (!s->used) return;
  c->destroy(c->user, s->kind, &s->d);
  s->used = 0;
}

int lmx_dnn_cache_get(lmx_dnn_cache *c, int kind, const void *key, size_t len,
                      lmx_dnn_descs **out) {
  *out = NULL;
  if (len > LMX_DNN_CACHE_KEY) return -1;
  lmx_dnn_cache_slot *victim = NULL;
  for (int i = 0; i < LMX_DNN_CACHE_SLOTS; i++) {
    lmx_dnn_cache_slot *s = &c->slot[i];
    if (s->used && s->kind == kind && s->key_len == len && !memcmp(s->key, key, len)) {
      s->last = ++c->clock;
      c->hits++;
      *out = &s->d;
      return 0;
    }
    if (!victim || (victim->used && (!s->used || s->last < victim->last))) victim = s;
  }
  c->misses++;
  if (victim->used) {
    drop(c, victim);
    c->evictions++;
  }
  lmx_dnn_descs d;
  memset(&d, 0, sizeof d);
  int rc = c->create(c->user, kind, key, &d);
  if (rc) return rc;
  victim->used = 1, victim->kind = kind, victim->key_len = len, victim->last = ++c->clock;
  memset(victim->key, 0, sizeof victim->key);
  memcpy(victim->key, key, len);
  victim->d = d;
  *out = &victim->d;
  return 0;
}

int lmx_dnn_cache_size(const lmx_dnn_cache *c) {
  int n = 0;
  for (int i = 0; i < LMX_DNN_CACHE_SLOTS; i++) n += c->slot[i].used != 0;
  return n;
}

void lmx_dnn_cache_clear(lmx_dnn_cache *c) {
  for (int i = 0; i < LMX_DNN_CACHE_SLOTS; i++) drop(c, &c->slot[i]);
}

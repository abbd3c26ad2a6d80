/* dfs.c — post-order depth-first traversal and a pointer map for node numbering.
 *
 * Order (nnvm's DFSVisit): for each head in turn, a node comes after all its inputs
 * (in input order) and then its control dependencies; each node appears once, at its
 * first completed visit. The traversal keeps an explicit stack, so graph depth is bounded
 * by memory, not by the C stack.
 */
#include <stdint.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/status.h"
#include "graph.h"

static size_t ptr_hash(const void *p, size_t mask) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x & mask;
}

static int ptrmap_grow(lmx_ptrmap *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  const void **keys = lmx_calloc(cap, sizeof *keys);
  int *vals = lmx_calloc(cap, sizeof *vals);
  if (!keys || !vals) {
    lmx_free(keys);
    lmx_free(vals);
    return lmx_fail_nomem("a node map", cap * (sizeof *keys + sizeof *vals));
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = ptr_hash(m->keys[i], cap - 1);
    while (keys[j]) j = (j + 1) & (cap - 1);
    keys[j] = m->keys[i];
    vals[j] = m->vals[i];
  }
  lmx_free(m->keys);
  lmx_free(m->vals);
  m->keys = keys;
  m->vals = vals;
  m->cap = cap;
  return LMX_OK;
}

int lmx_ptrmap_put(lmx_ptrmap *m, const void *key, int val) {
  if ((m->len + 1) * 2 > m->cap) LMX_TRY(ptrmap_grow(m));
  size_t j = ptr_hash(key, m->cap - 1);
  while (m->keys[j] && m->keys[j] != key) j = (j + 1) & (m->cap - 1);
  if (!m->keys[j]) m->len++;
  m->keys[j] = key;
  m->vals[j] = val;
  return LMX_OK;
}

int lmx_ptrmap_get(const lmx_ptrmap *m, const void *key) {
  if (!m->cap) return -1;
  size_t j = ptr_hash(key, m->cap - 1);
  while (m->keys[j]) {
    if (m->keys[j] == key) return m->vals[j];
    j = (j + 1) & (m->cap - 1);
  }
  return -1;
}

void lmx_ptrmap_release(lmx_ptrmap *m) {
  lmx_free(m->keys);
  lmx_free(m->vals);
  memset(m, 0, sizeof *m);
}

typedef struct {
  lmx_node *n;
  int next; /* next dependency to visit */
} frame;

static lmx_node *dep(const lmx_node *n, int i) {
  return i < n->ninputs ? n->inputs[i].node : n->cdeps[i - n->ninputs];
}

int lmx_dfs(const lmx_entry *heads, int nheads, lmx_node ***order, int *n) {
  lmx_ptrmap seen = {0};
  lmx_vec out = LMX_VEC_INIT(lmx_node *), stack = LMX_VEC_INIT(frame);
  int rc = LMX_OK;
  for (int h = 0; h < nheads && rc == LMX_OK; h++) {
    if (!heads[h].node || lmx_ptrmap_get(&seen, heads[h].node) >= 0) continue; /* NULL: hole */
    frame f = {heads[h].node, 0};
    if ((rc = lmx_ptrmap_put(&seen, f.n, 0)) || (rc = lmx_vec_push(&stack, &f))) break;
    while (stack.len > 0 && rc == LMX_OK) {
      frame *top = &LMX_VEC_AT(&stack, frame, stack.len - 1);
      if (top->next < top->n->ninputs + top->n->ncdeps) {
        lmx_node *c = dep(top->n, top->next++);
        if (lmx_ptrmap_get(&seen, c) >= 0) continue;
        frame g = {c, 0};
        if ((rc = lmx_ptrmap_put(&seen, c, 0)) == LMX_OK) rc = lmx_vec_push(&stack, &g);
      } else {
        rc = lmx_vec_push(&out, &top->n);
        stack.len--;
      }
    }
  }
  lmx_vec_release(&stack);
  lmx_ptrmap_release(&seen);
  if (rc != LMX_OK) {
    lmx_vec_release(&out);
    return rc;
  }
  *order = out.data;
  *n = (int)out.len;
  return LMX_OK;
}

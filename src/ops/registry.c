/* registry.c — the operator table built from ops.def, lookup, and the list helpers.
 *
 * The table is a static array of descriptor pointers in ops.def order, so an op's index
 * is stable for one build (the C API exposes it). Lookup is a linear scan over names
 * then aliases: ~150 entries, called when a node is created, never per forward.
 * The list helpers apply op.h's defaults: no inputs list -> one input "data"; no
 * outputs list -> one output "output"; no aux list -> none.
 */
#include <ctype.h>
#include <string.h>

#include "op.h"

#define LMX_OP(id) extern const lmx_op lmx_op_##id;
#include "ops.def"

static const lmx_op *const g_ops[] = {
#define LMX_OP(id) &lmx_op_##id,
#include "ops.def"
};

typedef struct {
  const char *alias, *canonical;
} alias_row;

static const alias_row g_aliases[] = {
#define LMX_OP_ALIAS(a, c) {a, c},
#include "ops.def"
    {NULL, NULL}};

enum { NUM_OPS = (int)(sizeof(g_ops) / sizeof(g_ops[0])) };
enum { NUM_ALIASES = (int)(sizeof(g_aliases) / sizeof(g_aliases[0])) - 1 };

int lmx_op_count(void) { return NUM_OPS; }

const lmx_op *lmx_op_at(int i) { return i >= 0 && i < NUM_OPS ? g_ops[i] : NULL; }

int lmx_op_index(const lmx_op *op) {
  for (int i = 0; i < NUM_OPS; i++)
    if (g_ops[i] == op) return i;
  return -1;
}

static const lmx_op *find_canonical(const char *name) {
  for (int i = 0; i < NUM_OPS; i++)
    if (strcmp(g_ops[i]->name, name) == 0) return g_ops[i];
  return NULL;
}

const lmx_op *lmx_op_find(const char *name) {
  if (!name) return NULL;
  const lmx_op *op = find_canonical(name);
  if (op) return op;
  for (int i = 0; i < NUM_ALIASES; i++)
    if (strcmp(g_aliases[i].alias, name) == 0) return find_canonical(g_aliases[i].canonical);
  return NULL;
}

int lmx_op_alias_count(void) { return NUM_ALIASES; }

const char *lmx_op_alias_at(int i, const lmx_op **target) {
  if (i < 0 || i >= NUM_ALIASES) return NULL;
  if (target) *target = find_canonical(g_aliases[i].canonical);
  return g_aliases[i].alias;
}

const char *lmx_op_hint_of(const lmx_op *op, const char *called, char *buf, size_t cap) {
  if (!buf || cap == 0) return buf;
  const char *src = called ? called : (op && op->hint ? op->hint : (op ? op->name : ""));
  size_t n = 0;
  for (; src[n] && n + 1 < cap; n++) buf[n] = (char)tolower((unsigned char)src[n]);
  buf[n] = '\0';
  return buf;
}

/* ---- inputs / outputs / aux ------------------------------------------------------- */

static int count_list(const char *const *list) {
  int n = 0;
  while (list[n]) n++;
  return n;
}

static void copy_name(char *buf, size_t cap, const char *s) {
  if (!buf || cap == 0) return;
  size_t n = strlen(s);
  if (n >= cap) n = cap - 1;
  memcpy(buf, s, n);
  buf[n] = '\0';
}

int lmx_op_num_inputs(const lmx_op *op, const void *param) {
  if (op->num_inputs) return op->num_inputs(param);
  return op->inputs ? count_list(op->inputs) : 1;
}

int lmx_op_num_outputs(const lmx_op *op, const void *param) {
  if (op->num_outputs) return op->num_outputs(param);
  return op->outputs ? count_list(op->outputs) : 1;
}

int lmx_op_num_visible_outputs(const lmx_op *op, const void *param) {
  if (op->num_visible_outputs) return op->num_visible_outputs(param);
  return lmx_op_num_outputs(op, param);
}

int lmx_op_num_aux(const lmx_op *op, const void *param) {
  if (op->num_aux) return op->num_aux(param);
  return op->aux ? count_list(op->aux) : 0;
}

void lmx_op_input_name(const lmx_op *op, const void *param, int i, char *buf, size_t cap) {
  if (op->input_name) {
    op->input_name(param, i, buf, cap);
  } else if (op->inputs) {
    copy_name(buf, cap, i >= 0 && i < count_list(op->inputs) ? op->inputs[i] : "?");
  } else {
    copy_name(buf, cap, i == 0 ? "data" : "?");
  }
}

void lmx_op_output_name(const lmx_op *op, const void *param, int i, char *buf, size_t cap) {
  if (op->output_name) {
    op->output_name(param, i, buf, cap);
  } else if (op->outputs) {
    copy_name(buf, cap, i >= 0 && i < count_list(op->outputs) ? op->outputs[i] : "?");
  } else {
    copy_name(buf, cap, i == 0 ? "output" : "?");
  }
}

void lmx_op_aux_name(const lmx_op *op, const void *param, int i, char *buf, size_t cap) {
  if (op->aux_name)
    op->aux_name(param, i, buf, cap);
  else if (op->aux && i >= 0 && i < count_list(op->aux))
    copy_name(buf, cap, op->aux[i]);
  else
    copy_name(buf, cap, "?");
}

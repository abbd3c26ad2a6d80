/* test_exec_plan.c — the executor's C surface and plan invariants, without Lua:
 * argument checks of the binder/executor entry points, the plan of y = a * b + a
 * (one backward node per op, the two contributions to a's gradient accumulated into
 * the gradient array: the first writes, the second adds), storage of every planned entry
 * on a block, and a bind through the C API that checks the numbers; common-subexpression
 * elimination of y = a*b + a*b: the copies it makes are listed with their originals,
 * and a bound executor's plan points only at nodes of the symbol it was bound with (it
 * keeps no merged copy of the graph), with the right numbers.
 * Prints "N passed, N failed" and exits non-zero on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "exec/exec.h"
#include "luamx.h"

#include "check.h"

/* y = a * b + a */
static lmx_symbol *make_symbol(void) {
  lmx_symbol *a = NULL, *b = NULL, *mul = NULL, *add = NULL;
  lmx_symbol_variable("a", &a);
  lmx_symbol_variable("b", &b);
  lmx_symbol_new_op("elemwise_mul", "mul", 0, NULL, NULL, &mul);
  lmx_symbol *in1[2] = {a, b};
  lmx_symbol_compose(mul, 2, NULL, in1);
  lmx_symbol_new_op("elemwise_add", "add", 0, NULL, NULL, &add);
  lmx_symbol *in2[2] = {mul, a};
  lmx_symbol_compose(add, 2, NULL, in2);
  lmx_symbol_free(a);
  lmx_symbol_free(b);
  lmx_symbol_free(mul);
  return add;
}

static void test_api_checks(lmx_symbol *sym) {
  lmx_binder *b = NULL;
  lmx_executor *x = NULL;
  CHECK(lmx_binder_new(NULL, LMX_CPU, 0, &b) == LMX_ERR_ARG);
  CHECK(strstr(lmx_last_error(), "'sym'") != NULL);
  CHECK(lmx_binder_new(sym, 99, 0, &b) == LMX_ERR_DEVICE);
  CHECK(lmx_binder_new(sym, LMX_CPU, 0, &b) == LMX_OK);
  CHECK(lmx_binder_set_arg(b, "zz", -1, NULL, NULL, LMX_GRAD_WRITE) == LMX_ERR_NOTFOUND);
  CHECK(strstr(lmx_last_error(), "unknown argument 'zz'") != NULL);
  CHECK(lmx_binder_set_arg(b, NULL, 5, NULL, NULL, LMX_GRAD_WRITE) == LMX_ERR_ARG);
  CHECK(lmx_binder_set_grad_req(b, NULL, -1, 2) == LMX_ERR_ARG);
  CHECK(lmx_binder_set_option(b, 77, 1) == LMX_ERR_ARG);
  CHECK(lmx_binder_bind(b, &x) == LMX_ERR_ARG); /* no arrays */
  CHECK(strstr(lmx_last_error(), "argument 'a' is missing") != NULL);
  CHECK(x == NULL);
  CHECK(lmx_executor_forward(NULL, 0) == LMX_ERR_ARG);
  CHECK(lmx_binder_free(b) == LMX_OK);
  CHECK(lmx_binder_free(NULL) == LMX_OK);
  CHECK(lmx_executor_free(NULL) == LMX_OK);
}

static void test_plan(lmx_executor *x) {
  const lmx_plan *p = &x->plan;
  int nbwd = 0, nfwd = 0;
  for (int n = 0; n < p->num_nodes; n++) {
    nbwd += p->nodes[n].kind == LMX_PN_BWD;
    nfwd += p->nodes[n].kind == LMX_PN_OP;
  }
  CHECK(nfwd == 2 && nbwd == 2);
  int writes_a = 0, adds_a = 0;
  for (int e = 0; e < p->num_entries; e++) {
    if (p->grad_arg[e] == 0) {
      writes_a += p->req[e] == LMX_REQ_WRITE;
      adds_a += p->req[e] == LMX_REQ_ADD;
    }
    const lmx_pnode *n = &p->nodes[p->entry_node[e]];
    if (n->kind == LMX_PN_OP) CHECK(p->sid[e] >= 0 && p->sid[e] < p->nblocks);
  }
  CHECK(writes_a == 1 && adds_a == 1);
  CHECK(p->num_fwd_order == 2 && p->num_order == 4);
  CHECK(p->planned_bytes <= p->naive_bytes);
}

/* keep = 1: bound with LUAMX_EXEC_KEEP_PLAN=1, so the plan's bind-time tables can be
 * inspected; 0: they are freed at bind (a bound executor keeps only what it runs with),
 * and forward / backward give the same results. */
static void test_run(lmx_symbol *sym, int keep) {
  int64_t two = 2;
  lmx_ndarray *a, *b, *ga, *gb, *hg, *out;
  lmx_ndarray_new(&two, 1, LMX_FLOAT32, LMX_CPU, 0, &a);
  lmx_ndarray_new(&two, 1, LMX_FLOAT32, LMX_CPU, 0, &b);
  lmx_ndarray_new(&two, 1, LMX_FLOAT32, LMX_CPU, 0, &ga);
  lmx_ndarray_new(&two, 1, LMX_FLOAT32, LMX_CPU, 0, &gb);
  lmx_ndarray_new(&two, 1, LMX_FLOAT32, LMX_CPU, 0, &hg);
  double va[2] = {1, 2}, vb[2] = {3, 4}, ones[2] = {1, 1}, r[2];
  lmx_ndarray_set_f64(a, va, 2);
  lmx_ndarray_set_f64(b, vb, 2);
  lmx_ndarray_set_f64(hg, ones, 2);
  lmx_binder *bd;
  lmx_executor *x = NULL;
  CHECK(lmx_binder_new(sym, LMX_CPU, 0, &bd) == LMX_OK);
  CHECK(lmx_binder_set_arg(bd, "a", -1, a, ga, LMX_GRAD_WRITE) == LMX_OK);
  CHECK(lmx_binder_set_arg(bd, NULL, 1, b, gb, LMX_GRAD_WRITE) == LMX_OK);
  if (keep) setenv("LUAMX_EXEC_KEEP_PLAN", "1", 1);
  CHECK(lmx_binder_bind(bd, &x) == LMX_OK);
  unsetenv("LUAMX_EXEC_KEEP_PLAN");
  lmx_binder_free(bd);
  if (!x) return;
  if (keep) test_plan(x);
  else {
    CHECK(!x->plan.sid && !x->plan.shape && !x->plan.req && !x->plan.alias && !x->plan.node_ws);
    /* what stays is at its size (tables grown by doubling had up to half spare) */
    CHECK(x->plan.cap_nodes == x->plan.num_nodes && x->plan.cap_in == x->plan.num_in);
  }
  CHECK(x->plan.nodes && x->plan.in_entry && x->plan.order && x->plan.grad_arg);
  CHECK(lmx_executor_backward(x, &hg, 1, 1) == LMX_ERR_STATE);
  CHECK(lmx_executor_forward(x, 1) == LMX_OK);
  CHECK(lmx_executor_array(x, LMX_EXEC_OUTPUTS, 0, &out) == LMX_OK);
  lmx_ndarray_get_f64(out, r, 2);
  CHECK(r[0] == 4 && r[1] == 10);
  CHECK(lmx_executor_backward(x, &hg, 1, 1) == LMX_OK);
  lmx_ndarray_get_f64(ga, r, 2);
  CHECK(r[0] == 4 && r[1] == 5); /* b + 1 */
  lmx_ndarray_get_f64(gb, r, 2);
  CHECK(r[0] == 1 && r[1] == 2);
  const char *name;
  CHECK(lmx_executor_name(x, LMX_EXEC_OUTPUTS, 0, &name) == LMX_OK && strcmp(name, "add_output") == 0);
  CHECK(lmx_executor_name(x, LMX_EXEC_ARGS, 2, &name) == LMX_ERR_ARG);
  lmx_ndarray_free(out);
  lmx_executor_free(x);
  lmx_ndarray *all[5] = {a, b, ga, gb, hg};
  for (int i = 0; i < 5; i++) lmx_ndarray_free(all[i]);
}

/* y = (a * b) + (a * b) under the names m1, m2, s: m2 merges into m1, so s is copied. */
static lmx_symbol *make_cse_symbol(void) {
  lmx_symbol *a = NULL, *b = NULL, *m1 = NULL, *m2 = NULL, *s = NULL;
  lmx_symbol_variable("a", &a);
  lmx_symbol_variable("b", &b);
  lmx_symbol *ab[2] = {a, b};
  lmx_symbol_new_op("elemwise_mul", "m1", 0, NULL, NULL, &m1);
  lmx_symbol_compose(m1, 2, NULL, ab);
  lmx_symbol_new_op("elemwise_mul", "m2", 0, NULL, NULL, &m2);
  lmx_symbol_compose(m2, 2, NULL, ab);
  lmx_symbol_new_op("elemwise_add", "s", 0, NULL, NULL, &s);
  lmx_symbol *mm[2] = {m1, m2};
  lmx_symbol_compose(s, 2, NULL, mm);
  lmx_symbol_free(a), lmx_symbol_free(b), lmx_symbol_free(m1), lmx_symbol_free(m2);
  return s;
}

static int in_graph(const lmx_symbol *sym, const lmx_node *n) {
  lmx_node **order;
  int k, found = 0;
  if (lmx_dfs(sym->out, sym->nout, &order, &k) != LMX_OK) return 0;
  for (int i = 0; i < k; i++) found |= order[i] == n;
  lmx_free(order);
  return found;
}

static void test_cse(void) {
  lmx_symbol *sym = make_cse_symbol(), *opt = NULL;
  lmx_cse_origins o;
  CHECK(lmx_pass_cse(sym, &opt, &o) == LMX_OK, "%s", lmx_last_error());
  /* s is the one copy: same name and operator, its own inputs (m1 twice) */
  CHECK(o.n == 1, "%d copies", o.n);
  if (o.n == 1) {
    CHECK(o.orig[0] == sym->out[0].node && o.copy[0] == opt->out[0].node);
    CHECK(strcmp(o.copy[0]->name, "s") == 0 && o.copy[0]->op == o.orig[0]->op);
    CHECK(o.copy[0]->inputs[0].node == o.copy[0]->inputs[1].node);
    CHECK(lmx_cse_origin(&o, o.copy[0]) == o.orig[0]);
  }
  const lmx_node *m1 = opt->out[0].node->inputs[0].node;
  CHECK(lmx_cse_origin(&o, m1) == m1); /* shared with sym: its own origin */
  CHECK(lmx_cse_origin(NULL, m1) == m1);
  lmx_cse_origins_release(&o);
  lmx_symbol_free(opt);

  int64_t two = 2;
  lmx_ndarray *a, *b, *ga, *gb, *hg, *out;
  lmx_ndarray_new(&two, 1, LMX_FLOAT32, LMX_CPU, 0, &a);
  lmx_ndarray_new(&two, 1, LMX_FLOAT32, LMX_CPU, 0, &b);
  lmx_ndarray_new(&two, 1, LMX_FLOAT32, LMX_CPU, 0, &ga);
  lmx_ndarray_new(&two, 1, LMX_FLOAT32, LMX_CPU, 0, &gb);
  lmx_ndarray_new(&two, 1, LMX_FLOAT32, LMX_CPU, 0, &hg);
  double va[2] = {1, 2}, vb[2] = {3, 4}, ones[2] = {1, 1}, r[2];
  lmx_ndarray_set_f64(a, va, 2);
  lmx_ndarray_set_f64(b, vb, 2);
  lmx_ndarray_set_f64(hg, ones, 2);
  lmx_binder *bd;
  lmx_executor *x = NULL;
  CHECK(lmx_binder_new(sym, LMX_CPU, 0, &bd) == LMX_OK);
  CHECK(lmx_binder_set_arg(bd, "a", -1, a, ga, LMX_GRAD_WRITE) == LMX_OK);
  CHECK(lmx_binder_set_arg(bd, "b", -1, b, gb, LMX_GRAD_WRITE) == LMX_OK);
  CHECK(lmx_binder_bind(bd, &x) == LMX_OK, "%s", lmx_last_error());
  lmx_binder_free(bd);
  lmx_symbol_free(sym); /* the executor holds it */
  if (x) {
    const lmx_plan *p = &x->plan;
    int ops = 0;
    for (int n = 0; n < p->num_fwd_nodes; n++) {
      ops += p->nodes[n].kind == LMX_PN_OP;
      CHECK(in_graph(x->sym, p->nodes[n].src), "plan node '%s' points outside the bound symbol",
            p->nodes[n].name);
    }
    CHECK(ops == 2, "%d op nodes run", ops);
    CHECK(lmx_executor_forward(x, 1) == LMX_OK);
    CHECK(lmx_executor_array(x, LMX_EXEC_OUTPUTS, 0, &out) == LMX_OK);
    lmx_ndarray_get_f64(out, r, 2);
    CHECK(r[0] == 6 && r[1] == 16, "%g %g", r[0], r[1]);
    lmx_ndarray_free(out);
    CHECK(lmx_executor_backward(x, &hg, 1, 1) == LMX_OK);
    lmx_ndarray_get_f64(ga, r, 2);
    CHECK(r[0] == 6 && r[1] == 8, "%g %g", r[0], r[1]); /* 2b */
    lmx_ndarray_get_f64(gb, r, 2);
    CHECK(r[0] == 2 && r[1] == 4, "%g %g", r[0], r[1]); /* 2a */
    /* the merged graph, made again on request */
    lmx_symbol *o2 = NULL;
    int n = 0;
    const char *const *items;
    CHECK(lmx_executor_optimized_symbol(x, &o2) == LMX_OK);
    lmx_symbol *in = NULL;
    CHECK(o2 && lmx_symbol_get_internals(o2, &in) == LMX_OK);
    CHECK(in && lmx_symbol_list(in, LMX_SYM_OUTPUTS, &n, &items) == LMX_OK && n == 4,
          "%d internals (a, b, m1, s)", n);
    lmx_symbol_free(in);
    lmx_symbol_free(o2);
    lmx_executor_free(x);
  }
  lmx_ndarray *all[5] = {a, b, ga, gb, hg};
  for (int i = 0; i < 5; i++) lmx_ndarray_free(all[i]);
}

int main(void) {
  int64_t live0, live1;
  lmx_debug_alloc_stats(&live0, NULL, NULL);
  lmx_symbol *sym = make_symbol();
  CHECK(sym != NULL);
  if (sym) {
    test_api_checks(sym);
    test_run(sym, 1);
    test_run(sym, 0);
    lmx_symbol_free(sym);
  }
  test_cse();
  lmx_debug_alloc_stats(&live1, NULL, NULL);
  CHECK(live1 == live0);
  return check_summary();
}

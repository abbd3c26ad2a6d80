/* fuse.c — backward steps that run as one kernel (a step-level pass after the steps are
 * made; the symbol, its JSON, the plan and the memory figures stay as they are).
 *
 * FullyConnected → SoftmaxOutput (a language model's or classifier's output layer): the
 * SoftmaxOutput backward step writes G, the gradient of FC's output, and a later step,
 * FC's backward, reads it three times. When both run on the CPU, no other step and no
 * head reads G, and no step between the two touches storage that FC's gradients use
 * (they are written early), the pair is marked: the SoftmaxOutput step runs lmx_cpu_fc_smo_backward (src/ops/cpu/fc_smo.c), which makes G
 * a block of columns at a time and gives FC's gradients from each block while it is in
 * cache, and the FC step is skipped. Its debug_str block says "Kernel: fused with the
 * FullyConnected backward". At run time the pair runs as two steps while a monitor is
 * installed (it reads every entry, G included) and when the glue declines (dtypes,
 * layout, overlapping arrays); the note then says so ("not fused ... this time: <why>")
 * and the executor counts the fallback (fuse_runs / fuse_fallbacks). LUAMX_FUSE=0 in the
 * environment at bind time marks no pairs (comparisons, benchmarks).
 */
#include <stdlib.h>
#include <string.h>

#include "../core/status.h"
#include "../tensor/dtype.h"
#include "../ops/cpu/cpu_ops.h"
#include "exec.h"

static const char NOTE_FUSED[] = "fused with the FullyConnected backward (its gradients "
                                 "from G in blocks of columns, G never stored whole)";

static int step_is(const lmx_executor *x, const lmx_xstep *s, const char *op) {
  const lmx_plan *p = &x->plan;
  return s->kind == LMX_STEP_BWD && s->c.op && strcmp(s->c.op->name, op) == 0 &&
         p->ctx_type[p->nodes[s->node].ctx] == LMX_CPU && s->bwd;
}

/* How many slots of every step but a and b name entry e. */
static int readers(const lmx_executor *x, int e, const lmx_xstep *a, const lmx_xstep *b) {
  int n = 0;
  for (int i = 0; i < x->nsteps; i++) {
    const lmx_xstep *s = &x->steps[i];
    if (s == a || s == b) continue;
    if (s->kind == LMX_STEP_COPY) {
      const lmx_pnode *nd = &x->plan.nodes[s->node];
      n += x->plan.in_entry[nd->in0] == e || nd->out0 == e;
      continue;
    }
    for (int k = 0; k < s->nt; k++) n += s->slot[k] == e;
  }
  for (int h = 0; h < x->plan.nheads; h++) n += x->plan.head_entry[h] == e;
  return n;
}

static int overlap(const void *a, size_t na, const void *b, size_t nb) {
  const char *pa = a, *pb = b;
  return pa && pb && na && nb && pa < pb + nb && pb < pa + na;
}

static size_t bytes_of(const lmx_tensor *t) {
  size_t n = (size_t)lmx_dtype_size(t->dtype);
  for (int d = 0; d < t->shape.ndim; d++) n *= (size_t)t->shape.dim[d];
  return n;
}

/* Does any array of step s share storage with the gradients step f writes? Running f
 * before s (the pair runs at the first step's place) is safe only if not. */
static int touches_outputs(const lmx_executor *x, const lmx_xstep *s, const lmx_xstep *f) {
  const lmx_tensor *ig = NULL;
  int first_ig = f->nout + f->nargs + f->nout;
  for (int k = 0; k < f->nargs; k++) {
    if (!f->req[k]) continue;
    ig = &x->tens[f->slot[first_ig + k]];
    if (s->kind == LMX_STEP_COPY) {
      const lmx_ndarray *arr[] = {s->src, s->dst};
      for (int a = 0; a < 2; a++)
        if (arr[a] && overlap(lmx_nd_ptr(arr[a]), lmx_nd_size(arr[a]) *
                              (size_t)lmx_dtype_size(arr[a]->dtype), ig->data, bytes_of(ig)))
          return 1;
      continue;
    }
    for (int j = 0; j < s->nt; j++) {
      const lmx_tensor *t = &x->tens[s->slot[j]];
      if (overlap(t->data, bytes_of(t), ig->data, bytes_of(ig))) return 1;
    }
  }
  return 0;
}

void lmx_exec_fuse(lmx_executor *x) {
  const char *env = getenv("LUAMX_FUSE");
  if (env && strcmp(env, "0") == 0) return;
  for (int i = x->nfwd_steps; i < x->nsteps; i++) {
    lmx_xstep *s = &x->steps[i];
    if (!step_is(x, s, "SoftmaxOutput")) continue;
    /* SMO: og[1] in[2] out[1] ig[2]; G = ig[0]. Its reader: FC's backward, og[0]. */
    int g = s->slot[s->nout + s->nargs + s->nout], j = i + 1;
    while (j < x->nsteps && !(x->steps[j].kind != LMX_STEP_COPY && x->steps[j].nt > 0 &&
                              x->steps[j].slot[0] == g))
      j++;
    if (j >= x->nsteps) continue;
    lmx_xstep *f = &x->steps[j];
    if (!step_is(x, f, "FullyConnected") || f->fuse || readers(x, g, s, f)) continue;
    int ok = 1;
    for (int k = i + 1; k < j && ok; k++) ok = !touches_outputs(x, &x->steps[k], f);
    if (!ok) continue;
    s->fuse = LMX_FUSE_FIRST, f->fuse = LMX_FUSE_SECOND;
    s->pair = j, f->pair = i;
    s->cpu_note = NOTE_FUSED;
  }
}

/* The two steps' tensors, gathered as run_step does (at most 16 each). */
static int gather2(const lmx_executor *x, const lmx_xstep *s, lmx_tensor *t) {
  if (s->nt > 16) return 0;
  for (int k = 0; k < s->nt; k++) t[k] = x->tens[s->slot[k]];
  return 1;
}

int lmx_exec_run_fused(lmx_executor *x, lmx_xstep *s) {
  if (s->fuse == LMX_FUSE_SECOND) return x->steps[s->pair].fused_ran;
  s->fused_ran = 0;
  lmx_xstep *f = &x->steps[s->pair];
  lmx_tensor ts[16], tf[16];
  if (x->mon || !gather2(x, s, ts) || !gather2(x, f, tf)) {
    s->cpu_note = "not fused with the FullyConnected backward this time: a monitor is "
                  "installed";
    x->fuse_fallbacks++;
    return 0;
  }
  f->c.is_train = s->c.is_train;
  const lmx_tensor *s_in = ts + s->nout, *s_out = s_in + s->nargs, *s_ig = s_out + s->nout;
  const lmx_tensor *f_in = tf + f->nout, *f_ig = f_in + f->nargs + f->nout;
  if (!lmx_cpu_fc_smo_backward(&s->c, s_in, s_out, s_ig, s->req, &f->c, tf, f_in, f_ig,
                               f->req)) {
    s->cpu_note = "not fused with the FullyConnected backward this time: dtypes, layout or "
                  "overlapping arrays are not the fused kernel's case";
    x->fuse_fallbacks++;
    return 0;
  }
  s->cpu_note = NOTE_FUSED;
  s->fused_ran = 1;
  x->fuse_runs++;
  return 1;
}

/* fuse.c — pairs of steps that run as one kernel (a step-level pass after the steps are
 * made; the symbol, its JSON, the plan and the memory figures stay as they are).
 *
 * FullyConnected → SoftmaxOutput (a language model's or classifier's output layer): the
 * SoftmaxOutput backward step writes G, the gradient of FC's output, and a later step,
 * FC's backward, reads it three times. When both run on the CPU, no other step and no
 * head reads G, and no step between the two touches storage that FC's gradients use
 * (they are written early), the pair is marked: the SoftmaxOutput step runs
 * lmx_cpu_fc_smo_backward (src/ops/cpu/fc_smo.c), which makes G a block of columns at a
 * time and gives FC's gradients from each block while it is in cache, and the FC step is
 * skipped. Its debug_str block says "Kernel: fused with the
 * FullyConnected backward". At run time the pair runs as two steps while a monitor is
 * installed (it reads every entry, G included) and when the glue declines (dtypes,
 * layout, overlapping arrays); the note then says so ("not fused ... this time: <why>")
 * and the executor counts the fallback (fuse_runs / fuse_fallbacks).
 *
 * FullyConnected → Activation (an MLP's hidden layers), forward: when both run on the CPU
 * and nothing but the Activation's forward reads FC's output Y (its backward reads its own
 * output, FC's backward its inputs; no head, no copy), the FC step writes the Activation's
 * output z = f(x · wᵀ + b) itself (lmx_cpu_fc_act_forward, src/ops/cpu/nn_fc.c): on
 * oneDNN, bias and f are the product's epilogue, applied while each element is in
 * registers, instead of a bias copy before the product and a pass of f after it. Y is
 * then never written. z is written at FC's place, so no step between the two may touch
 * z's storage. The same fallbacks (monitor, kernel declines) run the two steps.
 *
 * Convolution → BatchNorm → Activation or clip (ReLU6), forward; BatchNorm or the
 * activation may be absent. Marked when each link's entry is read by the next step alone
 * (no head), BatchNorm's mean and var outputs are unread, and no step between touches
 * the chain's output z. In a training executor BatchNorm's backward reads its input and
 * output, so there only Convolution → Activation (not clip, whose gradient reads its
 * input) fuses. The Convolution step writes z = f(conv(x)·s + t) through a per-channel
 * epilogue (lmx_cpu_conv_chain_forward, src/ops/cpu/conv_chain.c), s and t being
 * BatchNorm's moving statistics, gamma and beta folded with the bias. At run time it
 * falls back to the steps under a monitor, and when BatchNorm normalises with batch
 * statistics (forward with is_train on a grad_req null executor). The memory plan
 * keeps the Convolution's inputs alive until the chain's last step
 * (src/passes/plan_memory.c, chain_head), so z never takes their storage; a chain whose
 * output still overlaps an input is shortened at bind time.
 *
 * BatchNorm → Activation or clip, forward, in training and inference: BatchNorm's
 * backward reads its inputs and its mean and var outputs, not its normalised output
 * (LMX_NEEDS_NOT_OUT0), so when the activation's forward alone reads that output, the
 * BatchNorm step writes the activation's output z (lmx_cpu_bn_act_forward,
 * src/ops/cpu/norm.c: the activation over each block right after it is normalised).
 * In training clip's backward reads its input, so there only Activation fuses. A
 * BatchNorm already in a Convolution chain is not paired again.
 *
 * LUAMX_FUSE=0 in the environment at bind time marks no pairs or chains (comparisons,
 * benchmarks), and the memory plan then holds nothing for them.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/status.h"
#include "../tensor/dtype.h"
#include "../ops/cpu/cpu_ops.h"
#include "exec.h"

static const char NOTE_FUSED[] = "fused with the FullyConnected backward (its gradients "
                                 "from G in blocks of columns, G never stored whole)";
static const char NOTE_FC_ACT[] = "fused with the Activation after it (writes its output: "
                                  "bias and activation in oneDNN's epilogue)";
static const char NOTE_FC_ACT2[] = "fused with the Activation after it (writes its output: "
                                   "the product, then the activation over it)";
static const char NOTE_ACT_FC[] = "fused into the FullyConnected before it (which writes "
                                  "this output)";
static const char NOTE_CONV[] = "fused with the BatchNorm (inference) and/or activation after "
                                "it (writes the last one's output through a per-channel "
                                "epilogue)";
static const char NOTE_INTO_CONV[] = "fused into the Convolution before it";
static const char NOTE_BN_ACT[] = "fused with the activation after it (writes its output, "
                                  "the activation over each block while it is in cache)";
static const char NOTE_INTO_BN[] = "fused into the BatchNorm before it";

static int step_of(const lmx_executor *x, const lmx_xstep *s, int kind, const char *op) {
  const lmx_plan *p = &x->plan;
  return s->kind == kind && s->c.op && strcmp(s->c.op->name, op) == 0 &&
         p->ctx_type[p->nodes[s->node].ctx] == LMX_CPU &&
         (kind == LMX_STEP_BWD ? s->bwd != NULL : s->fwd != NULL);
}

static int step_is(const lmx_executor *x, const lmx_xstep *s, const char *op) {
  return step_of(x, s, LMX_STEP_BWD, op);
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

/* Does step s read entry e? A backward step reads only what its op's backward needs. */
static int step_reads(const lmx_executor *x, const lmx_xstep *s, int e) {
  if (s->kind == LMX_STEP_COPY) {
    const lmx_pnode *nd = &x->plan.nodes[s->node];
    return x->plan.in_entry[nd->in0] == e || nd->out0 == e;
  }
  unsigned needs = LMX_NEEDS_OUT_GRADS | LMX_NEEDS_INPUTS | LMX_NEEDS_OUTPUTS;
  if (s->kind == LMX_STEP_BWD) needs = lmx_plan_bwd_needs(s->c.op, x->plan.nodes[s->node].src);
  int no = s->nout, na = s->nargs;
  for (int k = 0; k < s->nt; k++) {
    if (s->slot[k] != e) continue;
    if (s->kind == LMX_STEP_OP) return 1;
    /* og[no] in[na] out[no] ig[na] aux */
    unsigned need = k < no ? LMX_NEEDS_OUT_GRADS
                    : k < no + na ? LMX_NEEDS_INPUTS
                    : k < 2 * no + na ? LMX_NEEDS_OUTPUTS
                    : k < 2 * no + 2 * na ? 0u
                    : LMX_NEEDS_INPUTS;
    if (need == LMX_NEEDS_OUTPUTS && k == no + na && (needs & LMX_NEEDS_NOT_OUT0)) continue;
    if (needs & need) return 1;
  }
  return 0;
}

/* Does any array of step s share storage with tensor t? */
static int touches(const lmx_executor *x, const lmx_xstep *s, const lmx_tensor *t) {
  if (s->kind == LMX_STEP_COPY) {
    const lmx_ndarray *arr[] = {s->src, s->dst};
    for (int a = 0; a < 2; a++)
      if (arr[a] && overlap(lmx_nd_ptr(arr[a]), lmx_nd_size(arr[a]) *
                            (size_t)lmx_dtype_size(arr[a]->dtype), t->data, bytes_of(t)))
        return 1;
    return 0;
  }
  for (int j = 0; j < s->nt; j++) {
    const lmx_tensor *u = &x->tens[s->slot[j]];
    if (overlap(u->data, bytes_of(u), t->data, bytes_of(t))) return 1;
  }
  return 0;
}

/* Does any array of step s share storage with the gradients step f writes? Running f
 * before s (the pair runs at the first step's place) is safe only if not. */
static int touches_outputs(const lmx_executor *x, const lmx_xstep *s, const lmx_xstep *f) {
  int first_ig = f->nout + f->nargs + f->nout;
  for (int k = 0; k < f->nargs; k++)
    if (f->req[k] && touches(x, s, &x->tens[f->slot[first_ig + k]])) return 1;
  return 0;
}

/* The first forward step after step i that reads entry e (nfwd_steps when none). */
static int next_reader(const lmx_executor *x, int i, int e) {
  int j = i + 1;
  while (j < x->nfwd_steps && !(x->steps[j].kind == LMX_STEP_OP && x->steps[j].nt > 0 &&
                                step_reads(x, &x->steps[j], e)))
    j++;
  return j;
}

/* Do steps i and j read entry e alone (no other step, no head)? */
static int only_readers(const lmx_executor *x, int e, int i, int j) {
  for (int h = 0; h < x->plan.nheads; h++)
    if (x->plan.head_entry[h] == e) return 0;
  for (int k = 0; k < x->nsteps; k++)
    if (k != i && k != j && step_reads(x, &x->steps[k], e)) return 0;
  return 1;
}

/* Does a step strictly between i and j, other than step m, touch the storage of t? */
static int touched_between(const lmx_executor *x, int i, int j, int m, const lmx_tensor *t) {
  for (int k = i + 1; k < j; k++)
    if (k != m && touches(x, &x->steps[k], t)) return 1;
  return 0;
}

/* The forward step reading entry e after step i, when it is op `op`'s with e as its
 * first input and the only reader of e besides step i; -1 otherwise. */
static int sole_next(const lmx_executor *x, int i, int e, const char *op) {
  int j = next_reader(x, i, e);
  if (j >= x->nfwd_steps) return -1;
  const lmx_xstep *a = &x->steps[j];
  if (!step_of(x, a, LMX_STEP_OP, op) || a->fuse || a->slot[0] != e || !only_readers(x, e, i, j))
    return -1;
  return j;
}

/* FullyConnected → Activation forward pairs (see the top). */
static void fuse_fc_act(lmx_executor *x) {
  for (int i = 0; i < x->nfwd_steps; i++) {
    lmx_xstep *f = &x->steps[i];
    if (!step_of(x, f, LMX_STEP_OP, "FullyConnected") || f->fuse) continue;
    int j = sole_next(x, i, f->slot[f->nargs], "Activation"); /* FC: in[nargs] out[1] */
    if (j < 0) continue;
    lmx_xstep *a = &x->steps[j];
    if (touched_between(x, i, j, -1, &x->tens[a->slot[a->nargs]])) continue;
    f->fuse = LMX_FUSE_FIRST, a->fuse = LMX_FUSE_SECOND;
    f->pair = j, a->pair = i, f->mid = -1;
    f->cpu_note = "fused with the Activation after it (writes its output)";
    a->cpu_note = NOTE_ACT_FC;
  }
}

/* Does step f read storage that step s's output shares (which the fused step would then
 * overwrite while reading it)? */
static int reads_into(const lmx_executor *x, const lmx_xstep *f, int s) {
  const lmx_xstep *z = &x->steps[s];
  const lmx_tensor *t = &x->tens[z->slot[z->nargs]];
  for (int k = 0; k < f->nargs; k++) {
    const lmx_tensor *u = &x->tens[f->slot[k]];
    if (overlap(u->data, bytes_of(u), t->data, bytes_of(t))) return 1;
  }
  return 0;
}

/* Convolution → BatchNorm → Activation or clip chains, forward (see the top). */
static void fuse_conv_chain(lmx_executor *x) {
  for (int i = 0; i < x->nfwd_steps; i++) {
    lmx_xstep *f = &x->steps[i];
    if (!step_of(x, f, LMX_STEP_OP, "Convolution") || f->fuse) continue;
    int e = f->slot[f->nargs], last = i, bn = sole_next(x, i, e, "BatchNorm"), act;
    if (bn >= 0) { /* BN: in[3] out[3] aux[2]; its mean and var outputs unread */
      const lmx_xstep *b = &x->steps[bn];
      if (b->nargs == 3 && b->nout == 3 && b->naux == 2 && only_readers(x, b->slot[4], bn, bn) &&
          only_readers(x, b->slot[5], bn, bn))
        e = b->slot[3], last = bn;
      else
        bn = -1;
    }
    act = sole_next(x, last, e, "Activation");
    if (act < 0) act = sole_next(x, last, e, "clip");
    if (act >= 0 && !reads_into(x, f, act)) last = act;
    else act = -1; /* the memory plan put the activation's output over an input */
    if (last == bn && reads_into(x, f, bn)) last = i, bn = -1;
    lmx_xstep *z = &x->steps[last];
    if (last == i || touched_between(x, i, last, bn, &x->tens[z->slot[z->nargs]])) continue;
    f->fuse = LMX_FUSE_FIRST, f->pair = last, f->mid = bn;
    f->cpu_note = NOTE_CONV;
    for (int k = 0; k < 2; k++) {
      int s = k ? act : bn;
      if (s < 0) continue;
      x->steps[s].fuse = LMX_FUSE_SECOND, x->steps[s].pair = i;
      x->steps[s].cpu_note = NOTE_INTO_CONV;
    }
  }
}

/* BatchNorm → Activation or clip forward pairs (see the top). */
static void fuse_bn_act(lmx_executor *x) {
  for (int i = 0; i < x->nfwd_steps; i++) {
    lmx_xstep *f = &x->steps[i];
    if (!step_of(x, f, LMX_STEP_OP, "BatchNorm") || f->fuse || f->nargs != 3 ||
        f->nout != 3 || f->naux != 2)
      continue;
    int j = sole_next(x, i, f->slot[3], "Activation");
    if (j < 0) j = sole_next(x, i, f->slot[3], "clip");
    if (j < 0) continue;
    lmx_xstep *a = &x->steps[j];
    if (touched_between(x, i, j, -1, &x->tens[a->slot[a->nargs]])) continue;
    f->fuse = LMX_FUSE_FIRST, a->fuse = LMX_FUSE_SECOND;
    f->pair = j, a->pair = i, f->mid = -1;
    f->cpu_note = NOTE_BN_ACT;
    a->cpu_note = NOTE_INTO_BN;
  }
}

void lmx_exec_fuse(lmx_executor *x) {
  const char *env = getenv("LUAMX_FUSE");
  if (env && strcmp(env, "0") == 0) return;
  fuse_fc_act(x);
  fuse_conv_chain(x);
  fuse_bn_act(x);
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

/* A fused step's run booked: its note (why it fell back, or what ran) and the counters;
 * 1 when it ran fused (why NULL). */
static int settle(lmx_executor *x, lmx_xstep *f, const char *why, const char *note) {
  f->cpu_note = why ? why : note;
  if (why) {
    x->fuse_fallbacks++;
    return 0;
  }
  f->fused_ran = 1;
  x->fuse_runs++;
  return 1;
}

/* The FullyConnected → Activation pair at the FC step. */
static int run_fc_act(lmx_executor *x, lmx_xstep *f) {
  lmx_xstep *a = &x->steps[f->pair];
  lmx_tensor tf[16];
  const char *why = NULL;
  int how = 0;
  if (x->mon)
    why = "not fused with the Activation after it this time: a monitor is installed";
  else if (!gather2(x, f, tf) ||
           !(how = lmx_cpu_fc_act_forward(&f->c, tf, f->req, &a->c,
                                          &x->tens[a->slot[a->nargs]], a->req)))
    why = "not fused with the Activation after it this time: dtypes, shapes or "
          "overlapping arrays are not the fused kernel's case";
  a->cpu_note = why ? NULL : NOTE_ACT_FC;
  return settle(x, f, why, how == 1 ? NOTE_FC_ACT : NOTE_FC_ACT2);
}

/* A Convolution chain at the Convolution step (see the top). */
static int run_conv_chain(lmx_executor *x, lmx_xstep *f) {
  lmx_xstep *z = &x->steps[f->pair];
  lmx_xstep *bn = f->mid >= 0 ? &x->steps[f->mid] : NULL;
  lmx_xstep *act = f->pair != f->mid ? z : NULL;
  lmx_tensor tf[16], tb[16];
  const char *why = NULL;
  if (x->mon) {
    why = "not fused with the steps after it this time: a monitor is installed";
  } else if (!gather2(x, f, tf) || (bn && !gather2(x, bn, tb))) {
    why = "not fused with the steps after it this time: too many arrays";
  } else {
    if (bn) bn->c.is_train = f->c.is_train;
    if (!lmx_cpu_conv_chain_forward(&f->c, tf, bn ? &bn->c : NULL, bn ? tb : NULL,
                                    bn ? tb + 6 : NULL,
                                    act ? &act->c : NULL, &x->tens[z->slot[z->nargs]], z->req))
      why = "not fused with the steps after it this time: BatchNorm in training mode, or "
            "dtypes, shapes or overlapping arrays are not the fused kernel's case";
  }
  const char *into = why ? NULL : NOTE_INTO_CONV;
  if (bn) bn->cpu_note = into;
  if (act) act->cpu_note = into;
  return settle(x, f, why, NOTE_CONV);
}

/* A BatchNorm → activation pair at the BatchNorm step (see the top). */
static int run_bn_act(lmx_executor *x, lmx_xstep *f) {
  lmx_xstep *a = &x->steps[f->pair];
  lmx_tensor tf[16];
  const char *why = NULL;
  if (x->mon)
    why = "not fused with the activation after it this time: a monitor is installed";
  else if (!gather2(x, f, tf) ||
           !lmx_cpu_bn_act_forward(&f->c, tf, tf + 3, f->req, tf + 6, &a->c,
                                   &x->tens[a->slot[a->nargs]], a->req))
    why = "not fused with the activation after it this time: dtypes, shapes or "
          "overlapping arrays are not the fused kernel's case";
  a->cpu_note = why ? NULL : NOTE_INTO_BN;
  return settle(x, f, why, NOTE_BN_ACT);
}

int lmx_exec_run_fused(lmx_executor *x, lmx_xstep *s) {
  if (s->fuse == LMX_FUSE_SECOND) return x->steps[s->pair].fused_ran;
  s->fused_ran = 0;
  if (s->kind == LMX_STEP_OP) {
    const char *op = s->c.op->name;
    return strcmp(op, "Convolution") == 0 ? run_conv_chain(x, s)
           : strcmp(op, "BatchNorm") == 0 ? run_bn_act(x, s)
                                          : run_fc_act(x, s);
  }
  lmx_xstep *f = &x->steps[s->pair];
  lmx_tensor ts[16], tf[16];
  if (x->mon || !gather2(x, s, ts) || !gather2(x, f, tf))
    return settle(x, s, "not fused with the FullyConnected backward this time: a monitor is "
                        "installed", NULL);
  f->c.is_train = s->c.is_train;
  const lmx_tensor *s_in = ts + s->nout, *s_out = s_in + s->nargs, *s_ig = s_out + s->nout;
  const lmx_tensor *f_in = tf + f->nout, *f_ig = f_in + f->nargs + f->nout;
  int ok = lmx_cpu_fc_smo_backward(&s->c, s_in, s_out, s_ig, s->req, &f->c, tf, f_in, f_ig,
                                   f->req);
  return settle(x, s, ok ? NULL : "not fused with the FullyConnected backward this time: "
                                  "dtypes, layout or overlapping arrays are not the fused "
                                  "kernel's case", NOTE_FUSED);
}

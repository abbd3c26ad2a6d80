/* exec.h — the executor's internals, shared by the files of src/exec.
 *
 *   bind.c      binder (step-by-step configuration) and the bind pipeline
 *   steps.c     materialization: arrays for every entry, the flat step list
 *   executor.c  forward / backward / accessors / copy_params / free
 *   arena.c     the memory pool shared by executors (reshape, shared_exec, bucketing)
 *   monitor.c   monitor callbacks
 *   debug_str.c debug_str()
 *   reshape.c   reshape()
 *
 * Invariants of a bound executor:
 *  - every plan entry that some step touches has an array in ent[] (one reference),
 *    except planned intermediates that only steps read, which get theirs when a
 *    monitor is installed (steps.c, lmx_exec_entry_views): planned entries are views
 *    into pool slabs, external ones are the bound arrays,
 *    head-gradient / zeros arrays the executor owns, accumulating entries the array of
 *    the entry they accumulate into;
 *  - tens[] holds every entry's kernel argument (lmx_tensor with raw pointers), once,
 *    and each step the entry ids of its arguments in the kernel's order; forward and
 *    backward gather a step's arguments into args_buf and call its kernel, allocating
 *    nothing;
 *  - the executor holds references to its symbol, its arrays and its pool; the pool
 *    holds its slabs' storage: handles may be freed in any order.
 */
#ifndef LMX_EXEC_EXEC_H
#define LMX_EXEC_EXEC_H

#include "../core/refcount.h"
#include "../core/vec.h"
#include "../passes/plan.h"
#include "../tensor/ndarray.h"

/* ---- arena.c ---------------------------------------------------------------------- */
typedef struct {
  lmx_ndarray *base; /* one arena (a 1-D uint8 array), one reference per slab */
  size_t off, bytes;
  int dev_type, dev_id;
} lmx_slab;

enum { LMX_POOL_MAX_ZEROS = 8 };

typedef struct lmx_pool {
  lmx_refcount rc;
  lmx_slab *slab;
  int n, cap;
  size_t bytes; /* sum of the arenas */
  /* read-only zero-filled arrays, one per device, the largest asked for so far */
  lmx_ndarray *zeros[LMX_POOL_MAX_ZEROS];
  int nzeros;
} lmx_pool;

int lmx_pool_new(lmx_pool **out);
void lmx_pool_retain(lmx_pool *p);
void lmx_pool_release(lmx_pool *p);
/* Finds a slab for each of the n blocks: an unused slab on the block's device with
 * enough bytes (the smallest; largest blocks first), else a new one carved from one
 * fresh arena per device, appended to the pool. slab_of[b] gets the slab index. */
int lmx_pool_take(lmx_pool *p, int n, const size_t *bytes, const int *dev_type,
                  const int *dev_id, int *slab_of);
/* A zero-filled array of at least `bytes` bytes on the device, shared by every entry of
 * every executor of the pool that reads constant zeros (output gradients nothing flows
 * into): they only read it. A larger request replaces the pool's array with a new one;
 * the old one lives on in the views already made of it. *out is not retained. */
int lmx_pool_zeros(lmx_pool *p, size_t bytes, int dev_type, int dev_id, lmx_ndarray **out);

/* ---- steps ------------------------------------------------------------------------- */
enum { LMX_STEP_OP = 0, LMX_STEP_BWD = 1, LMX_STEP_COPY = 2, LMX_STEP_NOTE_CAP = 192 };

typedef struct {
  int node;                 /* plan node id */
  int kind;                 /* LMX_STEP_* */
  lmx_op_ctx c;
  lmx_forward_fn fwd;       /* the node device's kernel (lmx_op_kernel, at bind) */
  lmx_backward_fn bwd;
  /* entry ids of the kernel's tensors (x->tens), nt of them:
   * OP:  in[nargs] out[nout] aux[naux];  req[nout]
   * BWD: og[nout] in[nargs] out[nout] ig[nargs] aux[naux];  req[nargs] */
  int *slot;
  int *req;
  int nt, nargs, nout, naux;
  lmx_ndarray *src, *dst;   /* COPY */
  char *note; /* c.note: which implementation ran, and why (LMX_STEP_NOTE_CAP bytes in
              * the executor's notes; NULL on the CPU, whose kernels have no choice) */
  /* fuse.c: FIRST runs itself and step `pair` as one kernel, SECOND (whose pair is the
   * FIRST) is then skipped; a Convolution chain's FIRST also runs step `mid` (its
   * BatchNorm, -1 for none; `pair` is the chain's last step); cpu_note is the step's note
   * on the CPU (debug_str), fused_ran the last run's way */
  int fuse, pair, mid, fused_ran;
  const char *cpu_note;
} lmx_xstep;
enum { LMX_FUSE_NONE = 0, LMX_FUSE_FIRST = 1, LMX_FUSE_SECOND = 2 };

typedef void (*lmx_monitor_cb)(const char *name, lmx_ndarray *arr, void *user);

/* Called after backward step `step` (0-based among the backward steps; -1: before the
 * first one) with the n arguments whose gradients no later step of this pass writes.
 * A non-zero return fails the backward (the hook sets the message). */
typedef int (*lmx_grad_hook)(int step, const int *args, int n, void *user);

struct lmx_executor {
  lmx_refcount rc;
  lmx_symbol *sym; /* as bound; the plan's nodes point at its nodes (bind.c) */
  lmx_plan plan;
  lmx_pool *pool;
  lmx_ndarray **ent;          /* per entry */
  lmx_ndarray **args, **grads, **aux, **head_grads;
  int *grad_req;              /* per argument, final */
  char **arg_names, **aux_names, **out_names;
  lmx_xstep *steps;
  char *notes;                /* the GPU steps' notes, LMX_STEP_NOTE_CAP bytes each */
  int nsteps, nfwd_steps;
  lmx_tensor *tens;     /* per entry: its array as a kernel argument (steps.c) */
  lmx_tensor *args_buf; /* one step's arguments, gathered from tens (the widest step) */
  int *slots, *reqs;
  lmx_ndarray *ws[LMX_PLAN_MAX_CTX];
  int forward_done;
  int no_share;
  /* gradient finality (steps.c): grad_final[a] is the backward step after which the
   * gradient of argument a is final in a backward pass (-1: before the first, because
   * no step writes it; -2: no gradient). The same as lists per step: the arguments
   * final after backward step s are final_args[final_at[s + 1] .. final_at[s + 2]). */
  int *grad_final, *final_at, *final_args;
  int nbwd_steps;
  long fuse_runs, fuse_fallbacks; /* fuse.c: fused pairs run / run as two steps */
  lmx_grad_hook hook;
  void *hook_user;
  /* monitor.c */
  lmx_monitor_cb mon;
  void *mon_user;
  int mon_all;
  char **mon_out;             /* per entry: "<node>_output", ... (NULL until monitored) */
  char **mon_in;              /* per node input slot: "<node>_<input>" (likewise) */
  /* kept for reshape */
  int dev_type, dev_id;
  int ngroups;
  char **groups;
  int *group_type, *group_id;
  lmx_sbuf text;
};
typedef struct lmx_executor lmx_executor;

/* ---- binder (bind.c) ------------------------------------------------------------- */
struct lmx_binder {
  lmx_symbol *sym;
  lmx_igraph g; /* of sym, for names */
  int dev_type, dev_id;
  lmx_ndarray **args, **grads, **aux;
  int *req, *req_set;
  lmx_shape *shape; /* args then aux (simple_bind) */
  int *dtype;       /* args then aux */
  int ngroups;
  char **groups;
  int *group_type, *group_id;
  lmx_executor *shared;
  lmx_pool *pool; /* reshape: the pool to draw from */
  int no_share;
};
typedef struct lmx_binder lmx_binder;

int lmx_binder_create(lmx_symbol *sym, int dev_type, int dev_id, lmx_binder **out);
void lmx_binder_destroy(lmx_binder *b);
int lmx_binder_find(const lmx_binder *b, const char *name, int index, int aux, int *out);
int lmx_binder_group(lmx_binder *b, const char *group, int dev_type, int dev_id);
/* simple = 1: allocate every array not given (simple_bind); 0: all must be given. */
int lmx_exec_bind(lmx_binder *b, int simple, lmx_executor **out);

/* ---- steps.c ---------------------------------------------------------------------- */
/* Materializes (see steps.c); afterwards ent[e] of an intermediate that only steps read
 * is NULL until lmx_exec_entry_views makes it (a monitor needs it). */
int lmx_exec_materialize(lmx_executor *x);
int lmx_exec_entry_views(lmx_executor *x);

/* ---- executor.c -------------------------------------------------------------------- */
void lmx_exec_retain(lmx_executor *x);
void lmx_exec_release(lmx_executor *x);
int lmx_exec_forward(lmx_executor *x, int is_train);
int lmx_exec_backward(lmx_executor *x, lmx_ndarray *const *head_grads, int n, int is_train);
int lmx_exec_copy_params(lmx_executor *x, const char *const *names,
                         lmx_ndarray *const *arrays, int n, int aux, int allow_extra);

/* ---- monitor.c ---------------------------------------------------------------------- */
/* Installs (fn != NULL) or removes a monitor; the first install builds the names
 * (fails only for memory, leaving the executor unmonitored). */
int lmx_exec_set_monitor(lmx_executor *x, lmx_monitor_cb fn, void *user, int all);
void lmx_monitor_before(const lmx_executor *x, const lmx_xstep *s);
void lmx_monitor_after(const lmx_executor *x, const lmx_xstep *s);

/* ---- fuse.c: backward step pairs run as one kernel ------------------------------- */
/* Marks the pairs (after the steps are made; bind tables still present). */
void lmx_exec_fuse(lmx_executor *x);
/* For a step with fuse set: 1 when the pair ran fused (skip the step), 0 to run the step
 * as usual (the fused kernel cannot fail). */
int lmx_exec_run_fused(lmx_executor *x, lmx_xstep *s);

/* ---- debug_str.c / reshape.c ------------------------------------------------------- */
int lmx_exec_debug_str(lmx_executor *x, const char **text);
int lmx_exec_reshape(lmx_executor *x, int partial, int allow_up, int n,
                     const char *const *names, const lmx_shape *shapes, lmx_executor **out);

#endif

/* gradcheck_device.h — the gradient checker's devices (part of test_gradcheck.c).
 *
 * dev_call runs one forward or backward of a case's op on a device over host tensors:
 * on the CPU directly; on another device (gpu(n), real or simulated) every distinct
 * host buffer is copied to a device buffer (aliases stay aliases, so in-place checks
 * keep their meaning), the kernel of that device's table runs with the device's stream
 * in the call context and a workspace on the device, and what the call writes comes
 * back (forward: outputs and aux states; backward: input gradients).
 *
 *  --device gpu:N   the finite-difference checks run gpu(N)'s kernels on float64 data;
 *                   cases whose op has no kernel there, or whose kernel refuses float64,
 *                   are skipped and counted.
 *  --agree          backends agree (ggml's test-backend-ops, MXNet's check_consistency):
 *                   for every case (and the forward-only cases) whose op has a kernel on
 *                   gpu(N) (N from --device, default 0), forward and backward run on
 *                   cpu(0) and on gpu(N) with the same inputs, in float32 and in float16
 *                   (the GPU in float16, the CPU in float32 on the same rounded inputs,
 *                   dtypes of the other tensors from the op's type inference). Visible
 *                   outputs, mutated aux states and input gradients must agree within
 *                   |cpu - gpu| <= atol + rtol max(|cpu|, |gpu|): float32 rtol 1e-4 atol
 *                   1e-5, float16 rtol 1e-2 atol 1e-3. Every disagreement is reported
 *                   naming op, case, dtype and tensor. Cases that draw random numbers
 *                   (two CPU forwards under different seeds differ) are skipped: the
 *                   devices' generators differ. A GPU kernel refusing float16 is noted,
 *                   not failed. Without a GPU context the mode says so and passes.
 *  --agree-self     the same machinery with cpu(1) in the GPU's place, its calls going
 *                   through device buffers: checks the checker in every build (all
 *                   cases must agree exactly; float16 is refused by the CPU kernels).
 */

enum { MAXM = 5 * MAXT + 1 };

typedef struct {
  const void *host[MAXM];
  void *dptr[MAXM];
  int n;
} gc_mirror;

static size_t tbytes(const lmx_tensor *t) {
  return (size_t)lmx_shape_size(&t->shape) * (size_t)lmx_dtype_size(t->dtype);
}

/* o: h with its data on device d (copied there once per distinct host buffer). */
static int mirror_in(gc_mirror *m, const gc_dev *d, const lmx_tensor *h, lmx_tensor *o) {
  *o = *h;
  if (!h->data) return LMX_OK;
  for (int i = 0; i < m->n; i++)
    if (m->host[i] == h->data) return o->data = m->dptr[i], LMX_OK;
  if (m->n >= MAXM) return lmx_fail(LMX_ERR_ARG, "gradcheck: too many tensors to mirror");
  size_t b = tbytes(h);
  void *p;
  LMX_TRY(d->dev->alloc(d->id, b, &p));
  m->host[m->n] = h->data, m->dptr[m->n] = p, m->n++;
  o->data = p;
  return d->dev->copy(d->id, p, h->data, b, LMX_COPY_H2D);
}

/* Copies the device copy of host tensor h back into h. */
static int mirror_out(const gc_mirror *m, const gc_dev *d, const lmx_tensor *h) {
  for (int i = 0; h->data && i < m->n; i++)
    if (m->host[i] == h->data)
      return d->dev->copy(d->id, (void *)h->data, m->dptr[i], tbytes(h), LMX_COPY_D2H);
  return LMX_OK;
}

static void mirror_free(gc_mirror *m, const gc_dev *d) {
  for (int i = 0; i < m->n; i++) d->dev->release(d->id, m->dptr[i]);
  m->n = 0;
}

/* Forward (og NULL) or backward of r's op on device d with kernel row k; see the top. */
static int dev_call(const gc_run *r, const gc_dev *d, const lmx_kernel *k, const lmx_tensor *og,
                    const lmx_tensor *in, const lmx_tensor *out, const lmx_tensor *ig,
                    const lmx_tensor *aux, const int *req) {
  int bwd = og != NULL;
  if (!k || (bwd ? !k->backward : !k->forward))
    return lmx_fail(LMX_ERR_UNSUPPORTED, "no %s kernel on %s(%d)", bwd ? "backward" : "forward",
                    d->dev->name, d->id);
  lmx_op_ctx c = r->c;
  c.dev_type = d->type, c.dev_id = d->id, c.dev = d->dev;
  c.stream = lmx_device_stream(d->dev, d->id);
  c.workspace = NULL, c.workspace_bytes = 0;
  lmx_shape is[MAXT], os[MAXT];
  int dts[2 * MAXT]; /* the query's dtypes: inputs, then outputs (float16 staging) */
  for (int i = 0; i < r->nin; i++) is[i] = in[i].shape, dts[i] = in[i].dtype;
  for (int i = 0; i < r->nout; i++) os[i] = out[i].shape, dts[r->nin + i] = out[i].dtype;
  c.dtypes = dts;
  size_t ws = k->workspace ? k->workspace(&c, is, os) : 0;
  c.dtypes = NULL;
  gc_mirror m = {.n = 0};
  lmx_tensor t[5][MAXT];
  int rc = LMX_OK;
  if (ws) rc = d->dev->alloc(d->id, ws, &c.workspace), c.workspace_bytes = ws;
  if (d->type == LMX_CPU && !d->mirror) { /* host memory is the device's */
    if (rc == LMX_OK)
      rc = bwd ? k->backward(&c, og, in, out, ig, req, aux) : k->forward(&c, in, out, req, aux);
    if (c.workspace) d->dev->release(d->id, c.workspace);
    return rc;
  }
  for (int i = 0; i < r->nin && rc == LMX_OK; i++) {
    rc = mirror_in(&m, d, &in[i], &t[0][i]);
    if (rc == LMX_OK && bwd) rc = mirror_in(&m, d, &ig[i], &t[1][i]);
  }
  for (int i = 0; i < r->nout && rc == LMX_OK; i++) {
    rc = mirror_in(&m, d, &out[i], &t[2][i]);
    if (rc == LMX_OK && bwd) rc = mirror_in(&m, d, &og[i], &t[3][i]);
  }
  for (int i = 0; i < r->naux && rc == LMX_OK; i++) rc = mirror_in(&m, d, &aux[i], &t[4][i]);
  if (rc == LMX_OK)
    rc = bwd ? k->backward(&c, t[3], t[0], t[2], t[1], req, t[4])
             : k->forward(&c, t[0], t[2], req, t[4]);
  if (rc == LMX_OK) rc = d->dev->sync(d->id); /* asynchronous faults surface here */
  for (int i = 0; i < (bwd ? r->nin : r->nout) && rc == LMX_OK; i++)
    rc = mirror_out(&m, d, bwd ? &ig[i] : &out[i]);
  for (int i = 0; !bwd && i < r->naux && rc == LMX_OK; i++) rc = mirror_out(&m, d, &aux[i]);
  if (!bwd) /* in-place outputs live in input buffers */
    for (int i = 0; i < r->nin && rc == LMX_OK; i++) rc = mirror_out(&m, d, &in[i]);
  mirror_free(&m, d);
  if (c.workspace) d->dev->release(d->id, c.workspace);
  return rc;
}

/* "--device gpu:1" / "cpu" -> *d; 0 when the context exists. */
static int parse_device(const char *s, gc_dev *d) {
  int type = strncmp(s, "gpu", 3) == 0 ? LMX_GPU : strncmp(s, "cpu", 3) == 0 ? LMX_CPU : 0;
  int id = s[3] == ':' ? atoi(s + 4) : 0;
  if (!type) return fprintf(stderr, "--device: expected cpu or gpu[:N], got '%s'\n", s), -1;
  const lmx_device_ops *ops;
  if (lmx_device_lookup(type, id, &ops) != LMX_OK) return -1;
  d->type = type, d->id = id, d->dev = ops;
  return 0;
}

/* ---- backends agree ----------------------------------------------------------------- */

static int g_agree_cases, g_agree_f16, g_agree_random, g_agree_nof16, g_agree_bwd_missing;

typedef struct {
  lmx_tensor in[MAXT], out[MAXT], aux[MAXT], og[MAXT], ig[MAXT];
} gc_set;

/* A host tensor of dtype dt holding src's values (float64 source, or int32 as is). When
 * via >= 0, values are rounded through dtype `via` first (float16 inputs of the CPU). */
static void host_like(lmx_tensor *t, const lmx_tensor *src, int dt, int via) {
  int64_t n = lmx_shape_size(&src->shape);
  t->shape = src->shape;
  t->dtype = src->dtype == LMX_INT32 ? LMX_INT32 : dt;
  t->data = calloc((size_t)(n > 0 ? n : 1), 8);
  if (!src->data) return;
  if (t->dtype == LMX_INT32) {
    memcpy(t->data, src->data, (size_t)n * 4);
  } else if (via >= 0 && via != dt) {
    void *tmp = calloc((size_t)(n > 0 ? n : 1), 8);
    lmx_device_convert(&lmx_cpu_device, 0, tmp, via, src->data, src->dtype, n);
    lmx_device_convert(&lmx_cpu_device, 0, t->data, dt, tmp, via, n);
    free(tmp);
  } else {
    lmx_device_convert(&lmx_cpu_device, 0, t->data, dt, src->data, src->dtype, n);
  }
}

static void set_free(gc_set *s) {
  for (int i = 0; i < MAXT; i++) {
    free(s->in[i].data), free(s->out[i].data), free(s->aux[i].data);
    free(s->og[i].data), free(s->ig[i].data);
  }
}

/* The host tensors of one device's run: r's values in the dtypes gdt[] (GPU) or, on
 * the CPU (cpu != 0), float16 replaced by float32 with the values rounded through
 * float16. gdt: in[nin], out[nout], aux[naux]. */
static void make_set(const gc_run *r, const int *gdt, int cpu, gc_set *s) {
  memset(s, 0, sizeof *s);
  const int *it = gdt, *ot = gdt + r->nin, *at = ot + r->nout;
#define DT(x) (cpu && (x) == LMX_FLOAT16 ? LMX_FLOAT32 : (x))
#define VIA(x) (cpu && (x) == LMX_FLOAT16 ? LMX_FLOAT16 : -1)
  for (int i = 0; i < r->nin; i++) {
    host_like(&s->in[i], &r->in[i], DT(it[i]), VIA(it[i]));
    host_like(&s->ig[i], &r->ig[i], DT(it[i]), -1);
  }
  for (int i = 0; i < r->nout; i++) {
    host_like(&s->out[i], &r->out[i], DT(ot[i]), -1);
    host_like(&s->og[i], &r->og[i], DT(ot[i]), VIA(ot[i]));
  }
  for (int i = 0; i < r->naux; i++) host_like(&s->aux[i], &r->aux[i], DT(at[i]), VIA(at[i]));
#undef DT
#undef VIA
}

/* Compares tensor a (CPU) and b (GPU); reports the first disagreement and the count. */
static int agree_tensor(const gc_run *r, const char *dtn, const char *what, int idx,
                        const lmx_tensor *a, const lmx_tensor *b, double rtol, double atol) {
  int64_t n = lmx_shape_size(&a->shape), bad = 0, first = -1;
  double *x = calloc((size_t)(n > 0 ? n : 1), 8), *y = calloc((size_t)(n > 0 ? n : 1), 8);
  lmx_device_convert(&lmx_cpu_device, 0, x, LMX_FLOAT64, a->data, a->dtype, n);
  lmx_device_convert(&lmx_cpu_device, 0, y, LMX_FLOAT64, b->data, b->dtype, n);
  for (int64_t j = 0; j < n; j++) {
    int ok = fabs(x[j] - y[j]) <= atol + rtol * fmax(fabs(x[j]), fabs(y[j]));
    if (!ok && !bad++) first = j;
  }
  if (bad) {
    g_fail++;
    fprintf(stderr, "DISAGREE %s {%s} %s %s %d: %lld of %lld elements, first %lld: cpu %.9g "
            "gpu(%d) %.9g (rtol %g, atol %g)\n", r->k->op, r->k->params, dtn, what, idx,
            (long long)bad, (long long)n, (long long)first, x[first], g_dev.id, y[first], rtol,
            atol);
  } else {
    g_pass++;
  }
  free(x), free(y);
  return bad == 0;
}

/* The dtypes of every tensor when input 0 (or every float input) is dt. */
static int agree_dtypes(gc_run *r, int dt, int *gdt) {
  int *it = gdt, *ot = gdt + r->nin, *at = ot + r->nout;
  for (int i = 0; i < r->nin; i++) it[i] = r->in[i].dtype == LMX_INT32 ? LMX_INT32 : -1;
  for (int i = 0; i < r->nout; i++) ot[i] = -1;
  for (int i = 0; i < r->naux; i++) at[i] = -1;
  if (r->nin > 0 && it[0] < 0) it[0] = dt;
  if (lmx_op_infer_type(&r->c, it, r->nin, ot, r->nout, at, r->naux) != LMX_OK) return -1;
  for (int i = 0; i < r->nin + r->nout + r->naux; i++)
    if (gdt[i] < 0) gdt[i] = dt;
  return 0;
}

/* Forward with all outputs written; 0, or the kernel's status. */
static int agree_fwd(const gc_run *r, const gc_dev *d, const lmx_kernel *k, gc_set *s) {
  int req[MAXT];
  for (int i = 0; i < MAXT; i++) req[i] = LMX_REQ_WRITE;
  lmx_rng_seed(1234);
  return dev_call(r, d, k, NULL, s->in, s->out, NULL, s->aux, req);
}

static int agree_bwd(const gc_run *r, const gc_dev *d, const lmx_kernel *k, gc_set *s) {
  int req[MAXT];
  lmx_tensor in[MAXT], out[MAXT], og[MAXT];
  unsigned needs = r->op->backward_needs;
  int loss = (r->op->flags & LMX_OPF_LOSS) != 0;
  for (int i = 0; i < MAXT; i++) req[i] = LMX_REQ_WRITE;
  for (int i = 0; i < r->nin; i++) {
    in[i] = s->in[i];
    if (!(needs & LMX_NEEDS_INPUTS)) in[i].data = NULL;
  }
  for (int i = 0; i < r->nout; i++) {
    out[i] = s->out[i], og[i] = s->og[i];
    if (!(needs & LMX_NEEDS_OUTPUTS)) out[i].data = NULL;
    if (!(needs & LMX_NEEDS_OUT_GRADS) && !loss) og[i].data = NULL;
  }
  return dev_call(r, d, k, og, in, out, s->ig, s->aux, req);
}

/* Does a CPU forward depend on the generator's seed? (then devices cannot agree) */
static int draws_random(const gc_run *r, const lmx_kernel *kc, gc_set *s) {
  int req[MAXT];
  for (int i = 0; i < MAXT; i++) req[i] = LMX_REQ_WRITE;
  if (!(r->op->flags & LMX_OPF_RANDOM)) return 0;
  gc_set t;
  int gdt[3 * MAXT];
  for (int i = 0; i < r->nin; i++) gdt[i] = s->in[i].dtype;
  for (int i = 0; i < r->nout; i++) gdt[r->nin + i] = s->out[i].dtype;
  for (int i = 0; i < r->naux; i++) gdt[r->nin + r->nout + i] = s->aux[i].dtype;
  make_set(r, gdt, 1, &t);
  lmx_rng_seed(1), dev_call(r, &g_cpu_dev, kc, NULL, s->in, s->out, NULL, s->aux, req);
  lmx_rng_seed(2), dev_call(r, &g_cpu_dev, kc, NULL, t.in, t.out, NULL, t.aux, req);
  int differ = 0;
  for (int i = 0; i < r->nout; i++)
    differ |= memcmp(s->out[i].data, t.out[i].data, tbytes(&s->out[i])) != 0;
  set_free(&t);
  return differ;
}

/* The device's kernel refuses float16: noted (with the message on a GPU), not failed. */
static void refuses_f16(const gc_run *r, const char *dir) {
  g_agree_nof16++;
  if (!g_dev.mirror)
    fprintf(stderr, "note: %s {%s}: %s on gpu(%d) refuses float16: %s\n", r->k->op,
            r->k->params, dir, g_dev.id, lmx_errmsg());
}

/* One case in one dtype: 1 compared, 0 skipped. */
static int agree_case_dt(gc_run *r, const lmx_kernel *kc, const lmx_kernel *kg, int dt) {
  const char *dtn = lmx_dtype_name(dt);
  double rtol = dt == LMX_FLOAT16 ? 1e-2 : 1e-4, atol = dt == LMX_FLOAT16 ? 1e-3 : 1e-5;
  int gdt[3 * MAXT];
  if (agree_dtypes(r, dt, gdt) != 0) return 0;
  gc_set sc, sg;
  make_set(r, gdt, 1, &sc);
  make_set(r, gdt, 0, &sg);
  int compared = 0;
  if (draws_random(r, kc, &sc)) {
    g_agree_random++;
    goto done;
  }
  int rc = agree_fwd(r, &g_cpu_dev, kc, &sc);
  if (rc != LMX_OK) goto done; /* the CPU has no such dtype combination: nothing to compare */
  rc = agree_fwd(r, &g_dev, kg, &sg);
  if (rc == LMX_ERR_DTYPE && dt == LMX_FLOAT16) {
    refuses_f16(r, "forward");
    goto done;
  }
  compared = 1;
  if (rc != LMX_OK) {
    g_fail++;
    fprintf(stderr, "FAIL %s {%s} %s forward on gpu(%d): %s\n", r->k->op, r->k->params, dtn,
            g_dev.id, lmx_errmsg());
    goto done;
  }
  for (int i = 0; i < r->nvis; i++)
    agree_tensor(r, dtn, "output", i, &sc.out[i], &sg.out[i], rtol, atol);
  if (r->op->flags & LMX_OPF_MUTATES_AUX)
    for (int i = 0; i < r->naux; i++)
      agree_tensor(r, dtn, "aux state", i, &sc.aux[i], &sg.aux[i], rtol, atol);
  if (!kc->backward || (r->op->flags & LMX_OPF_NO_GRAD)) goto done;
  if (!kg->backward) {
    g_agree_bwd_missing++;
    goto done;
  }
  if (agree_bwd(r, &g_cpu_dev, kc, &sc) != LMX_OK) goto done;
  if ((rc = agree_bwd(r, &g_dev, kg, &sg)) == LMX_ERR_DTYPE && dt == LMX_FLOAT16) {
    refuses_f16(r, "backward");
    goto done;
  }
  if (rc != LMX_OK) {
    g_fail++;
    fprintf(stderr, "FAIL %s {%s} %s backward on gpu(%d): %s\n", r->k->op, r->k->params, dtn,
            g_dev.id, lmx_errmsg());
    goto done;
  }
  for (int i = 0; i < r->nin; i++)
    if (grad_input(r, i))
      agree_tensor(r, dtn, "input gradient", i, &sc.ig[i], &sg.ig[i], rtol, atol);
done:
  set_free(&sc);
  set_free(&sg);
  return compared;
}

static void agree_case(const gc_case *k, char *seen) {
  gc_run r;
  if (setup(&r, k) != 0) return teardown(&r);
  const lmx_kernel *kc = lmx_op_kernel(r.op, LMX_CPU), *kg = lmx_op_kernel(r.op, g_dev.type);
  if (kc && kg) {
    seen[lmx_op_index(r.op)] = 1;
    g_agree_cases += agree_case_dt(&r, kc, kg, LMX_FLOAT32);
    g_agree_f16 += agree_case_dt(&r, kc, kg, LMX_FLOAT16);
  }
  teardown(&r);
}

/* Runs every case on cpu(0) and g_dev; prints the summary. */
static void run_agree(const gc_case *cases, int n, const gc_case *fwd_cases, int nf) {
  char seen[LMX_NUM_OPS] = {0};
  for (int i = 0; i < n; i++) agree_case(&cases[i], seen);
  for (int i = 0; i < nf; i++) agree_case(&fwd_cases[i], seen);
  int nops = 0, ngpu = 0;
  for (int i = 0; i < LMX_NUM_OPS; i++) {
    nops += seen[i];
    ngpu += lmx_op_kernel_at(i, g_dev.type) != NULL;
  }
  printf("backends agree, cpu(0) vs %s(%d): %d ops with kernels there (%d with cases), %d "
         "float32 and %d float16 cases compared, %d random cases skipped, %d float16 "
         "refusals, %d cases without a backward there\n", g_dev.dev->name, g_dev.id, ngpu, nops,
         g_agree_cases, g_agree_f16, g_agree_random, g_agree_nof16, g_agree_bwd_missing);
}

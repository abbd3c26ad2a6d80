/* ctc_glue.c — CTCLoss's checks and messages shared by the CPU and CUDA glue
 * (ctc_glue.h). */
#include "ctc_glue.h"

#include "glue.h"
#include "op_impl.h"

static int index_dtype_ok(int dt) {
  return dt == LMX_FLOAT32 || dt == LMX_FLOAT64 || dt == LMX_INT32 || dt == LMX_INT64;
}

size_t lmx_ctc_ws_bytes(const lmx_op_ctx *c, const lmx_shape *in, int nin) {
  lmx_ctc_plan p;
  for (int i = 0; i < nin; i++)
    if (!lmx_shape_known(&in[i])) return 0;
  if (lmx_ctc_plan_make(c, in, nin, &p) != LMX_OK) return 0;
  return (size_t)(p.N * lmx_ctc_ws_seq(p.T, p.C, p.L)) * sizeof(double);
}

int lmx_ctc_setup(const lmx_op_ctx *c, const lmx_tensor *in, int nin, const lmx_tensor *loss,
                  const lmx_tensor *grad_out, lmx_ctc_args *a, lmx_ctc_plan *p) {
  lmx_shape s[4];
  for (int i = 0; i < nin && i < 4; i++) s[i] = in[i].shape;
  LMX_TRY(lmx_ctc_plan_make(c, s, nin, p));
  int dt = in[0].dtype;
  LMX_TRY(lmx_glue_check_like(c, &in[0], &in[0].shape, dt, "input 'data'"));
  static const char *const what[4] = {"input 'data'", "input 'label'", NULL, NULL};
  for (int i = 1; i < nin; i++) {
    const char *w = what[i] ? what[i]
                    : i == p->data_len_in ? "input 'data_lengths'" : "input 'label_lengths'";
    if (!index_dtype_ok(in[i].dtype))
      return lmx_op_fail(c, LMX_ERR_DTYPE, "%s: expected float32, float64, int32 or int64, "
                         "got %s", w, lmx_dtype_str(in[i].dtype));
    LMX_TRY(lmx_glue_check_like(c, &in[i], &in[i].shape, in[i].dtype, w));
  }
  lmx_shape ls = LMX_SHP(p->N);
  LMX_TRY(lmx_glue_check_like(c, loss, &ls, dt, "output"));
  if (grad_out) LMX_TRY(lmx_glue_check_like(c, grad_out, &in[0].shape, dt, "output 'grad'"));
  size_t ws = (size_t)(p->N * lmx_ctc_ws_seq(p->T, p->C, p->L)) * sizeof(double);
  LMX_TRY(lmx_glue_check_ws(c, ws));
  const lmx_ctc_param *q = c->param;
  *a = (lmx_ctc_args){
      .T = p->T, .N = p->N, .C = p->C, .L = p->L,
      .blank = q->blank_label ? p->C - 1 : 0, .pad = q->blank_label ? -1 : 0,
      .dt = dt, .ldt = in[1].dtype,
      .dldt = p->data_len_in >= 0 ? in[p->data_len_in].dtype : LMX_FLOAT32,
      .lldt = p->label_len_in >= 0 ? in[p->label_len_in].dtype : LMX_FLOAT32,
      .data = in[0].data, .label = in[1].data,
      .dlen = p->data_len_in >= 0 ? in[p->data_len_in].data : NULL,
      .llen = p->label_len_in >= 0 ? in[p->label_len_in].data : NULL,
      .loss = loss->data, .grad = grad_out ? grad_out->data : NULL,
      .ws = (double *)c->workspace,
  };
  return LMX_OK;
}

static void bad_words(char *buf, size_t cap, long long T, long long L, long long C,
                      long long blank, int kind, long long pos, double val) {
  if (kind == LMX_CTC_BAD_DATA_LEN)
    snprintf(buf, cap, "input 'data_lengths': expected whole numbers in [0, %lld], got %g at "
             "element %lld", T, val, pos);
  else if (kind == LMX_CTC_BAD_LABEL_LEN)
    snprintf(buf, cap, "input 'label_lengths': expected whole numbers in [0, %lld], got %g "
             "at element %lld", L, val, pos);
  else
    snprintf(buf, cap, "input 'label': expected class indices in [0, %lld) other than the "
             "blank %lld, got %g at element %lld", C, blank, val, pos);
}

int lmx_ctc_fail_bad(const lmx_op_ctx *c, const lmx_ctc_plan *p, int kind, long long pos,
                     double val) {
  const lmx_ctc_param *q = c->param;
  char msg[256];
  bad_words(msg, sizeof msg, (long long)p->T, (long long)p->L, (long long)p->C,
            q->blank_label ? (long long)p->C - 1 : 0, kind, pos, val);
  return lmx_op_fail(c, LMX_ERR_ARG, "%s", msg);
}

int64_t lmx_ctc_bad_range(const lmx_op_ctx *c, const lmx_ctc_plan *p) {
  const lmx_ctc_param *q = c->param;
  int64_t m = (1 << 20) - 1;
  return (p->C & m) | (p->L & m) << 20 | (p->T & m) << 40 | (int64_t)(q->blank_label != 0) << 60;
}

void lmx_ctc_bad_text(char *buf, size_t cap, long long pos, long long value, int64_t range) {
  int kind = (int)(pos >> 40);
  long long at = pos & ((1LL << 40) - 1), m = (1 << 20) - 1;
  long long C = range & m, L = (range >> 20) & m, T = (range >> 40) & m;
  long long blank = (range >> 60) ? C - 1 : 0;
  bad_words(buf, cap, T, L, C, blank, kind, at, (double)value);
}

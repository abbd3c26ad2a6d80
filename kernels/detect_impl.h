/* detect_impl.h — the typed half of detect_core.h, included by it once per element type
 * with DET_T (float / double), DET_SFX (the name suffix), DET_EXP defined;
 * it undefines them at the end. No include guard on purpose. Every rule follows MXNet
 * 1.9's CPU code (src/operator/contrib/bounding_box*.h, multibox_*.cc); where MXNet
 * computes in float whatever the element type, so does this.
 */
#define DET_CAT2(a, b) a##b
#define DET_CAT(a, b) DET_CAT2(a, b)
#define DET_FN(x) DET_CAT(x, DET_SFX)

/* Stable sort of idx[0, n) by key[idx * stride]: descending, or ascending with asc. */
LMX_DET_HD static inline void DET_FN(lmx_det_msort)(int32_t *idx, int32_t *tmp, int64_t n,
                                                    const DET_T *key, int64_t stride, int asc) {
  int32_t *a = idx, *b = tmp;
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        DET_T ki = key[(int64_t)a[i] * stride], kj = key[(int64_t)a[j] * stride];
        int take_j = asc ? kj < ki : kj > ki;
        b[k++] = take_j ? a[j++] : a[i++];
      }
      while (i < mid) b[k++] = a[i++];
      while (j < hi) b[k++] = a[j++];
    }
    int32_t *t = a;
    a = b, b = t;
  }
  if (a != idx)
    for (int64_t i = 0; i < n; i++) idx[i] = a[i];
}

/* Overlap of two boxes along one axis (a[0], a[2] are that axis' pair), MXNet's Intersect. */
LMX_DET_HD static inline DET_T DET_FN(lmx_det_isect)(const DET_T *a, const DET_T *b, int fmt) {
  DET_T w;
  if (fmt == LMX_DET_CORNER) {
    DET_T left = a[0] > b[0] ? a[0] : b[0], right = a[2] < b[2] ? a[2] : b[2];
    w = right - left;
  } else {
    DET_T aw = a[2] / 2, bw = b[2] / 2, al = a[0] - aw, ar = a[0] + aw, bl = b[0] - bw,
          br = b[0] + bw;
    DET_T left = bl > al ? bl : al, right = br < ar ? br : ar;
    w = right - left;
  }
  return w > 0 ? w : (DET_T)0;
}

/* MXNet's BoxArea: 0 for a negative width or height */
LMX_DET_HD static inline DET_T DET_FN(lmx_det_area)(const DET_T *b, int fmt) {
  DET_T w = fmt == LMX_DET_CORNER ? b[2] - b[0] : b[2];
  DET_T h = fmt == LMX_DET_CORNER ? b[3] - b[1] : b[3];
  return w < 0 || h < 0 ? (DET_T)0 : w * h;
}

/* box_iou of two boxes (0 when they do not meet) */
LMX_DET_HD static inline DET_T DET_FN(lmx_det_iou)(const DET_T *l, const DET_T *r, int fmt) {
  DET_T i = DET_FN(lmx_det_isect)(l, r, fmt) * DET_FN(lmx_det_isect)(l + 1, r + 1, fmt);
  if (i <= 0) return 0;
  return i / (DET_FN(lmx_det_area)(l, fmt) + DET_FN(lmx_det_area)(r, fmt) - i);
}

/* Corner <-> center conversion in place; a box whose first value is negative (the -1
 * rows) is left alone, as MXNet does. */
LMX_DET_HD static inline void DET_FN(lmx_det_convert)(DET_T *b, int to_center) {
  if (b[0] < 0) return;
  if (to_center) {
    DET_T l = b[0], t = b[1], r = b[2], bo = b[3];
    b[0] = (l + r) / 2, b[1] = (t + bo) / 2, b[2] = r - l, b[3] = bo - t;
  } else {
    DET_T x = b[0], y = b[1], w = b[2] / 2, h = b[3] / 2;
    b[0] = x - w, b[1] = y - h, b[2] = x + w, b[3] = y + h;
  }
}

/* box_nms of batch item b: out rows sorted by score, the kept ones first, -1 after;
 * rec[i] = the flat input row (b n + j) of out row i, or -1. idx/tmp: n int32 each. */
LMX_DET_HD static inline void DET_FN(lmx_det_nms_item)(const lmx_det_nms *p, int64_t b,
                                                       const DET_T *x, DET_T *out, DET_T *rec,
                                                       int32_t *idx, int32_t *tmp) {
  int64_t n = p->n, w = p->w;
  const DET_T *xb = x + b * n * w;
  DET_T *ob = out + b * n * w, *rb = rec + b * n;
  if (p->topk < 1) { /* MXNet: copied through, the record the identity, no conversion */
    for (int64_t i = 0; i < n * w; i++) ob[i] = xb[i];
    for (int64_t i = 0; i < n; i++) rb[i] = (DET_T)(b * n + i);
    return;
  }
  for (int64_t i = 0; i < n * w; i++) ob[i] = -1;
  for (int64_t i = 0; i < n; i++) rb[i] = -1;
  int64_t nv = 0;
  for (int64_t i = 0; i < n; i++) {
    const DET_T *r = xb + i * w;
    if (r[p->score] > (DET_T)p->valid && (p->id < 0 || r[p->id] != (DET_T)p->background))
      idx[nv++] = (int32_t)i;
  }
  DET_FN(lmx_det_msort)(idx, tmp, nv, xb + p->score, w, 0);
  int64_t k = nv < p->topk ? nv : p->topk;
  for (int64_t r = 0; r < k; r++) {
    if (idx[r] < 0) continue;
    const DET_T *br = xb + (int64_t)idx[r] * w;
    DET_T ar = DET_FN(lmx_det_area)(br + p->coord, p->in_fmt);
    for (int64_t q = r + 1; q < k; q++) {
      if (idx[q] < 0) continue;
      const DET_T *bq = xb + (int64_t)idx[q] * w;
      if (!p->force && p->id >= 0 && (int)br[p->id] != (int)bq[p->id]) continue;
      DET_T i = DET_FN(lmx_det_isect)(br + p->coord, bq + p->coord, p->in_fmt) *
                DET_FN(lmx_det_isect)(br + p->coord + 1, bq + p->coord + 1, p->in_fmt);
      DET_T iou = i / (ar + DET_FN(lmx_det_area)(bq + p->coord, p->in_fmt) - i);
      if (iou > (DET_T)p->overlap) idx[q] = -1;
    }
  }
  int64_t cnt = 0;
  for (int64_t r = 0; r < k; r++) {
    if (idx[r] < 0) continue;
    const DET_T *src = xb + (int64_t)idx[r] * w;
    DET_T *dst = ob + cnt * w;
    for (int64_t j = 0; j < w; j++) dst[j] = src[j];
    if (p->in_fmt != p->out_fmt) DET_FN(lmx_det_convert)(dst + p->coord, p->out_fmt);
    rb[cnt++] = (DET_T)(b * n + idx[r]);
  }
}

/* bipartite_matching of item b: greedy over the scores in order (stable), rows and
 * columns matched once; stops at the first free pair that fails the threshold, and after
 * topk + 1 matches (MXNet's count check comes after the increment). idx/tmp: n m int32. */
LMX_DET_HD static inline void DET_FN(lmx_det_match_item)(const lmx_det_match *p, int64_t b,
                                                         const DET_T *x, DET_T *rowm, DET_T *colm,
                                                         int32_t *idx, int32_t *tmp) {
  int64_t n = p->n, m = p->m, nm = n * m;
  const DET_T *s = x + b * nm;
  DET_T *rm = rowm + b * n, *cm = colm + b * m;
  for (int64_t i = 0; i < n; i++) rm[i] = -1;
  for (int64_t i = 0; i < m; i++) cm[i] = -1;
  for (int64_t i = 0; i < nm; i++) idx[i] = (int32_t)i;
  DET_FN(lmx_det_msort)(idx, tmp, nm, s, 1, p->asc);
  int count = 0;
  for (int64_t j = 0; j < nm; j++) {
    int64_t e = idx[j], r = e / m, c = e % m;
    if (rm[r] != -1 || cm[c] != -1) continue;
    DET_T v = s[e];
    if (!((!p->asc && v > (DET_T)p->threshold) || (p->asc && v < (DET_T)p->threshold))) break;
    rm[r] = (DET_T)c, cm[c] = (DET_T)r;
    ++count;
    if (p->topk > 0 && count > p->topk) break;
  }
}

/* MultiBoxTarget's anchor-label overlap (MXNet's safe divide: 0 when the union is 0) */
LMX_DET_HD static inline float DET_FN(lmx_det_tiou)(const DET_T *a, const DET_T *g) {
  DET_T w = (a[2] < g[2] ? a[2] : g[2]) - (a[0] > g[0] ? a[0] : g[0]);
  DET_T h = (a[3] < g[3] ? a[3] : g[3]) - (a[1] > g[1] ? a[1] : g[1]);
  DET_T i = (w > 0 ? w : (DET_T)0) * (h > 0 ? h : (DET_T)0);
  DET_T u = (a[2] - a[0]) * (a[3] - a[1]) + (g[2] - g[0]) * (g[3] - g[1]) - i;
  return u == 0 ? 0.f : (float)(i / u);
}

/* the best label of anchor j among the first nv (iou > -1 first wins) */
LMX_DET_HD static inline int32_t DET_FN(lmx_det_best_gt)(const DET_T *anc, const DET_T *lab,
                                                         int64_t lw, int64_t nv, float *best) {
  int32_t g = -1;
  float mx = -1.0f;
  for (int64_t k = 0; k < nv; k++) {
    float iou = DET_FN(lmx_det_tiou)(anc, lab + k * lw + 1);
    if (iou > mx) g = (int32_t)k, mx = iou;
  }
  *best = mx;
  return g;
}

/* MultiBoxTarget of item b (MXNet's MultiBoxTargetForward). ws: lmx_det_ws_target bytes. */
LMX_DET_HD static inline void DET_FN(lmx_det_target_item)(const lmx_det_target *p, int64_t b,
                                                          const DET_T *anchor, const DET_T *label,
                                                          const DET_T *cls_pred, DET_T *loc_t,
                                                          DET_T *loc_m, DET_T *cls_t,
                                                          unsigned char *ws) {
  int64_t na = p->na, nl = p->nl, lw = p->lw, nc = p->nc;
  const DET_T *lab = label + b * nl * lw, *cp = cls_pred + b * nc * na;
  DET_T *lt = loc_t + b * na * 4, *lm = loc_m + b * na * 4, *ct = cls_t + b * na;
  for (int64_t i = 0; i < na * 4; i++) lt[i] = 0, lm[i] = 0;
  for (int64_t i = 0; i < na; i++) ct[i] = (DET_T)p->ignore;
  int64_t nv = 0;
  while (nv < nl && (float)lab[nv * lw] != -1.0f) nv++;
  if (nv == 0) return;
  DET_T *prob = (DET_T *)ws;
  float *best = (float *)(ws + lmx_det_r8(na * (int64_t)sizeof(DET_T)));
  int32_t *flags = (int32_t *)((unsigned char *)best + lmx_det_r8(4 * na));
  int32_t *match = flags + na, *idx = match + na, *tmp = idx + na, *gtf = tmp + na;
  for (int64_t j = 0; j < na; j++) flags[j] = -1, match[j] = -1, best[j] = -1.0f;
  for (int64_t k = 0; k < nv; k++) gtf[k] = 0;
  int64_t npos = 0, left = nv;
  while (left > 0) { /* greedy: the best remaining (anchor, label) pair, each used once */
    int64_t ba = -1, bg = -1;
    float mx = 1e-6f;
    for (int64_t j = 0; j < na; j++) {
      if (flags[j] == 1) continue;
      for (int64_t k = 0; k < nv; k++) {
        if (gtf[k]) continue;
        float iou = DET_FN(lmx_det_tiou)(anchor + j * 4, lab + k * lw + 1);
        if (iou > mx) ba = j, bg = k, mx = iou;
      }
    }
    if (ba < 0) break;
    best[ba] = mx, match[ba] = (int32_t)bg, flags[ba] = 1, gtf[bg] = 1;
    npos++, left--;
  }
  if (p->overlap > 0) {
    for (int64_t j = 0; j < na; j++) {
      if (flags[j] == 1) continue;
      match[j] = DET_FN(lmx_det_best_gt)(anchor + j * 4, lab, lw, nv, &best[j]);
      if (match[j] >= 0 && best[j] > p->overlap) flags[j] = 1, npos++;
    }
  }
  if (p->ratio > 0) {
    int64_t nneg = (int64_t)((float)npos * p->ratio);
    if (nneg > na - npos) nneg = na - npos;
    if (nneg > 0) {
      int64_t cnt = 0;
      for (int64_t j = 0; j < na; j++) {
        if (flags[j] == 1) continue;
        if (best[j] < 0) match[j] = DET_FN(lmx_det_best_gt)(anchor + j * 4, lab, lw, nv, &best[j]);
        if (!(best[j] < p->neg_thresh && flags[j] == -1)) continue;
        DET_T mx = cp[j];
        for (int64_t k = 1; k < nc; k++) mx = cp[j + na * k] > mx ? cp[j + na * k] : mx;
        DET_T sum = 0;
        for (int64_t k = 0; k < nc; k++) sum += DET_EXP(cp[j + na * k] - mx);
        prob[j] = DET_EXP(cp[j] - mx) / sum; /* background probability: hardest first */
        idx[cnt++] = (int32_t)j;
      }
      DET_FN(lmx_det_msort)(idx, tmp, cnt, prob, 1, 1);
      for (int64_t i = 0; i < nneg && i < cnt; i++) flags[idx[i]] = 0;
    }
  } else {
    for (int64_t j = 0; j < na; j++)
      if (flags[j] != 1) flags[j] = 0;
  }
  for (int64_t j = 0; j < na; j++) {
    if (flags[j] == 1) {
      const DET_T *g = lab + (int64_t)match[j] * lw;
      const DET_T *a = anchor + j * 4;
      ct[j] = g[0] + 1; /* 0 is the background */
      float al = (float)a[0], at = (float)a[1], ar = (float)a[2], ab = (float)a[3];
      float aw = ar - al, ah = ab - at, ax = (al + ar) * 0.5f, ay = (at + ab) * 0.5f;
      float gl = (float)g[1], gt = (float)g[2], gr = (float)g[3], gb = (float)g[4];
      float gw = gr - gl, gh = gb - gt, gx = (gl + gr) * 0.5f, gy = (gt + gb) * 0.5f;
      lt[j * 4] = (DET_T)((gx - ax) / aw / p->var[0]);
      lt[j * 4 + 1] = (DET_T)((gy - ay) / ah / p->var[1]);
      lt[j * 4 + 2] = (DET_T)(logf(gw / aw) / p->var[2]);
      lt[j * 4 + 3] = (DET_T)(logf(gh / ah) / p->var[3]);
      for (int i = 0; i < 4; i++) lm[j * 4 + i] = 1;
    } else if (flags[j] == 0) {
      ct[j] = 0;
    }
  }
}

/* MultiBoxDetection's overlap of two corner boxes (0 when the union is not positive) */
LMX_DET_HD static inline DET_T DET_FN(lmx_det_doverlap)(const DET_T *a, const DET_T *b) {
  DET_T w = (a[2] < b[2] ? a[2] : b[2]) - (a[0] > b[0] ? a[0] : b[0]);
  DET_T h = (a[3] < b[3] ? a[3] : b[3]) - (a[1] > b[1] ? a[1] : b[1]);
  DET_T i = (w > 0 ? w : (DET_T)0) * (h > 0 ? h : (DET_T)0);
  DET_T u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - i;
  return u <= 0 ? (DET_T)0 : i / u;
}

LMX_DET_HD static inline DET_T DET_FN(lmx_det_clip01)(DET_T v, int clip) {
  return !clip ? v : v < 0 ? (DET_T)0 : v > 1 ? (DET_T)1 : v;
}

/* MultiBoxDetection of item b (MXNet 1.9's MultiBoxDetectionForward): rows [id, score,
 * xmin, ymin, xmax, ymax], -1 rows after the detections. ws: lmx_det_ws_detect bytes. */
LMX_DET_HD static inline void DET_FN(lmx_det_detect_item)(const lmx_det_detect *p, int64_t b,
                                                          const DET_T *cls_prob,
                                                          const DET_T *loc_pred,
                                                          const DET_T *anchor, DET_T *out,
                                                          unsigned char *ws) {
  int64_t na = p->na, nc = p->nc;
  const DET_T *cp = cls_prob + b * nc * na, *lp = loc_pred + b * na * 4;
  DET_T *ob = out + b * na * 6;
  for (int64_t i = 0; i < na * 6; i++) ob[i] = -1;
  int64_t nv = 0;
  for (int64_t i = 0; i < na; i++) {
    DET_T score = -1;
    int64_t id = 0;
    for (int64_t j = 1; j < nc; j++)
      if (cp[j * na + i] > score) score = cp[j * na + i], id = j;
    if (id > 0 && score < (DET_T)p->threshold) id = 0;
    if (id == 0) continue;
    DET_T *o = ob + nv * 6;
    const DET_T *a = anchor + i * 4, *l = lp + i * 4;
    DET_T aw = a[2] - a[0], ah = a[3] - a[1], ax = (a[0] + a[2]) / 2, ay = (a[1] + a[3]) / 2;
    DET_T ox = l[0] * p->var[0] * aw + ax, oy = l[1] * p->var[1] * ah + ay;
    DET_T ow = DET_EXP(l[2] * p->var[2]) * aw / 2, oh = DET_EXP(l[3] * p->var[3]) * ah / 2;
    o[0] = (DET_T)(id - 1), o[1] = score;
    o[2] = DET_FN(lmx_det_clip01)(ox - ow, p->clip),
    o[3] = DET_FN(lmx_det_clip01)(oy - oh, p->clip);
    o[4] = DET_FN(lmx_det_clip01)(ox + ow, p->clip),
    o[5] = DET_FN(lmx_det_clip01)(oy + oh, p->clip);
    nv++;
  }
  if (nv < 1 || p->nms_threshold <= 0 || p->nms_threshold > 1) return;
  DET_T *rows = (DET_T *)ws;
  int32_t *idx = (int32_t *)(ws + lmx_det_r8(6 * na * (int64_t)sizeof(DET_T))), *tmp = idx + na;
  for (int64_t i = 0; i < nv * 6; i++) rows[i] = ob[i];
  for (int64_t i = 0; i < nv; i++) idx[i] = (int32_t)i;
  DET_FN(lmx_det_msort)(idx, tmp, nv, rows + 1, 6, 0);
  int64_t keep = nv;
  if (p->nms_topk > 0 && p->nms_topk < keep) {
    keep = p->nms_topk; /* MXNet marks the rest with id -1 and leaves their other values */
    for (int64_t i = keep; i < nv; i++) ob[i * 6] = -1;
  }
  for (int64_t i = 0; i < keep; i++)
    for (int j = 0; j < 6; j++) ob[i * 6 + j] = rows[(int64_t)idx[i] * 6 + j];
  for (int64_t i = 0; i < keep; i++) {
    if (ob[i * 6] < 0) continue;
    for (int64_t j = i + 1; j < keep; j++) {
      if (ob[j * 6] < 0) continue;
      if (!p->force && ob[i * 6] != ob[j * 6]) continue;
      if (DET_FN(lmx_det_doverlap)(ob + i * 6 + 2, ob + j * 6 + 2) >= (DET_T)p->nms_threshold)
        ob[j * 6] = -1;
    }
  }
}

#undef DET_FN
#undef DET_CAT
#undef DET_CAT2
#undef DET_T
#undef DET_SFX
#undef DET_EXP

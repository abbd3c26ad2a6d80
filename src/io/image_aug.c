/* image_aug.c — resize, crop, mirror and normalize (see image_aug.h). */
#include "image_aug.h"

#include <math.h>

void lmx_aug_resize_dims(int h, int w, int edge, int *nh, int *nw) {
  if (h > w) {
    *nw = edge;
    *nh = (int)((long long)edge * h / w);
  } else {
    *nh = edge;
    *nw = (int)((long long)edge * w / h);
  }
}

/* Source coordinate of destination index d along an axis of n -> m samples. */
static void src_coord(int d, int n, int m, int *i0, int *i1, float *f) {
  float s = ((float)d + 0.5f) * (float)n / (float)m - 0.5f;
  if (s <= 0) {
    *i0 = *i1 = 0, *f = 0;
    return;
  }
  int i = (int)s;
  if (i >= n - 1) {
    *i0 = *i1 = n - 1, *f = 0;
    return;
  }
  *i0 = i, *i1 = i + 1, *f = s - (float)i;
}

void lmx_aug_resize(const unsigned char *src, int sh, int sw, int c, unsigned char *dst, int dh,
                    int dw) {
  for (int y = 0; y < dh; y++) {
    int y0, y1;
    float fy;
    src_coord(y, sh, dh, &y0, &y1, &fy);
    const unsigned char *r0 = src + (size_t)y0 * (size_t)sw * (size_t)c;
    const unsigned char *r1 = src + (size_t)y1 * (size_t)sw * (size_t)c;
    unsigned char *out = dst + (size_t)y * (size_t)dw * (size_t)c;
    for (int x = 0; x < dw; x++) {
      int x0, x1;
      float fx;
      src_coord(x, sw, dw, &x0, &x1, &fx);
      for (int k = 0; k < c; k++) {
        float top = (float)r0[x0 * c + k] * (1 - fx) + (float)r0[x1 * c + k] * fx;
        float bot = (float)r1[x0 * c + k] * (1 - fx) + (float)r1[x1 * c + k] * fx;
        float v = floorf(top * (1 - fy) + bot * fy + 0.5f);
        out[x * c + k] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
    }
  }
}

void lmx_aug_crop_normalize(const unsigned char *src, int sw, int c, int y0, int x0, int oh,
                            int ow, int mirror, const float *mean, const float *std, float scale,
                            float *dst) {
  size_t plane = (size_t)oh * (size_t)ow;
  for (int k = 0; k < c; k++) {
    int sk = c == 3 ? 2 - k : k; /* BGR -> RGB */
    float mult = scale / std[k], m = mean[k];
    float *out = dst + plane * (size_t)k;
    for (int y = 0; y < oh; y++) {
      const unsigned char *row = src + ((size_t)(y0 + y) * (size_t)sw + (size_t)x0) * (size_t)c;
      float *o = out + (size_t)y * (size_t)ow;
      for (int x = 0; x < ow; x++) {
        float v = ((float)row[x * c + sk] - m) * mult;
        o[mirror ? ow - 1 - x : x] = v;
      }
    }
  }
}

/* image_aug.h — MXNet's default image augmentation on 8-bit interleaved BGR/gray
 * pixels: shorter-edge resize (bilinear), crop, mirror and per-channel normalization
 * into planar float32 RGB. Pure functions of their arguments (the random choices are
 * made by the caller), so they are shared by the iterator's worker threads. */
#ifndef LMX_IO_IMAGE_AUG_H
#define LMX_IO_IMAGE_AUG_H

#include <stddef.h>

/* MXNet's resize rule: the shorter edge becomes `edge`, the other scales with integer
 * truncation (edge * long / short). */
void lmx_aug_resize_dims(int h, int w, int edge, int *nh, int *nw);

/* Bilinear resize (pixel centres aligned, edges clamped, rounded to nearest) of src
 * (sh x sw x c) into dst (dh x dw x c). */
void lmx_aug_resize(const unsigned char *src, int sh, int sw, int c, unsigned char *dst, int dh,
                    int dw);

/* Writes the (oh x ow) window at (y0, x0) of src (sh x sw x c, BGR or gray) into dst
 * (c x oh x ow planar, RGB order): (pixel - mean[k]) * scale / std[k], mirrored
 * left-right when mirror is set. */
void lmx_aug_crop_normalize(const unsigned char *src, int sw, int c, int y0, int x0, int oh,
                            int ow, int mirror, const float *mean, const float *std, float scale,
                            float *dst);

#endif

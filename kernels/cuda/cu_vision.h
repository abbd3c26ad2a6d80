/* cu_vision.h — CUDA launchers of LRN, the row normalisations (InstanceNorm, GroupNorm,
 * L2Normalization), Pad, nearest UpSampling, depth_to_space / space_to_depth and Crop
 * (kernels/cuda/vision.cu), the twins of kernels/cpu/norm_more.c and spatial.c with the
 * same arguments (see cpu_kernels.h's "normalisation and vision" block). Stream first;
 * every pointer is device memory.
 * Dtypes float32, float64, float16 (statistics and sums in double). Return 0, a
 * cudaError_t code from the launch, or -1 for an unsupported dtype / rank.
 */
#ifndef LMX_KERNELS_CU_VISION_H
#define LMX_KERNELS_CU_VISION_H

#include "cu_base.h"

LMX_CU_BEGIN

int lmx_cu_lrn_fwd(lmx_cu_stream s, int dt, int64_t N, int64_t C, int64_t SP, int64_t nsize,
                   double alpha, double beta, double knorm, const void *x, void *y, void *tmp);
int lmx_cu_lrn_bwd(lmx_cu_stream s, int dt, int64_t N, int64_t C, int64_t SP, int64_t nsize,
                   double alpha, double beta, const void *x, const void *y, const void *tmp,
                   const void *gy, void *gx, int acc);

/* kind: 0 L2 (s1 norm), 1 instance (s1 mean, s2 var), 2 group (s1 mean, s2 std); rows
 * (o, i) of len elements at ((o len + l) inner + i); gamma/beta[o % na] */
typedef struct {
  int64_t outer, len, inner, na;
} lmx_cu_rownorm;
int lmx_cu_rownorm_fwd(lmx_cu_stream s, int dt, int kind, lmx_cu_rownorm rn, double eps,
                       const void *x, const void *gamma, const void *beta, void *y, void *s1,
                       void *s2);
/* gx, ggamma, gbeta may be NULL; acc0..2 add instead of writing */
int lmx_cu_rownorm_bwd(lmx_cu_stream s, int dt, int kind, lmx_cu_rownorm rn, double eps,
                       const void *x, const void *y, const void *gamma, const void *s1,
                       const void *s2, const void *gy, void *gx, void *ggamma, void *gbeta,
                       int acc0, int acc1, int acc2);

/* Pad of nd-D data (nd <= 5), shapes and (before, after) pairs by value */
typedef struct {
  int nd;
  int64_t ish[5], osh[5], pw[10];
} lmx_cu_pad;
int lmx_cu_pad_fwd(lmx_cu_stream s, int dt, int mode, lmx_cu_pad g, double cval, const void *x,
                   void *y);
int lmx_cu_pad_bwd(lmx_cu_stream s, int dt, int mode, lmx_cu_pad g, const void *gy, void *gx,
                   int acc);

/* nearest UpSampling of x[N, C, H, W] by sc into channels [coff, coff + C) of
 * y[N, Cout, H sc, W sc] (acc: added); backward sums each block into gx */
typedef struct {
  int64_t N, C, H, W, sc, Cout, coff;
} lmx_cu_ups;
int lmx_cu_ups_fwd(lmx_cu_stream s, int dt, lmx_cu_ups u, const void *x, void *y, int acc);
int lmx_cu_ups_bwd(lmx_cu_stream s, int dt, lmx_cu_ups u, const void *gy, void *gx, int acc);

/* depth_to_space's permutation and Crop, as lmx_cpu_d2s / lmx_cpu_crop */
typedef struct {
  int64_t N, C, H, W, b;
} lmx_cu_d2s_geom;
typedef struct {
  int64_t planes, H, W, h, w, oy, ox;
} lmx_cu_crop_geom;
int lmx_cu_d2s(lmx_cu_stream s, int dt, lmx_cu_d2s_geom g, int to_small, const void *src, void *dst,
               int acc);
int lmx_cu_crop(lmx_cu_stream s, int dt, lmx_cu_crop_geom g, int to_big, const void *src, void *dst,
                int acc);

LMX_CU_END

#endif

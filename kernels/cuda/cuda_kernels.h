/* cuda_kernels.h — every CUDA kernel family's launchers (kernels/cuda/cu_<family>.h),
 * the C interface the CUDA glue (src/ops/cuda) and the device table use. Launchers are
 * lmx_cu_<name>(lmx_cu_stream s, ...) mirroring the lmx_cpu_* primitive of the same
 * name; they enqueue on s, never synchronise and never allocate; they return 0, a
 * cudaError_t code, or -1 for an unsupported dtype / op. Each family adds its line. */
#ifndef LMX_KERNELS_CUDA_KERNELS_H
#define LMX_KERNELS_CUDA_KERNELS_H

#include "cu_base.h"
#include "cu_conv.h"
#include "cu_convert.h"
#include "cu_elementwise.h"
#include "cu_indexing.h"
#include "cu_nn.h"
#include "cu_gemm.h"
#include "cu_norm.h"
#include "cu_optim.h"
#include "cu_random.h"
#include "cu_rnn.h"
#include "cu_strided.h"
/* ops14a: math family */
#include "cu_math.h"
/* tensor manipulation (issue 14, ops14b) */
#include "cu_manip.h"
/* normalisation and vision (issue 14, ops14c) */
#include "cu_vision.h"
/* issue 14: losses and small linear algebra (ops14d) */
#include "cu_loss_more.h"
#include "cu_khatri_rao.h"
/* ordering: topk / sort / argsort (issue 14, ops14e) */
#include "cu_sort.h"
/* LAMB's fused update (issue 17, lamb17) */
#include "cu_optim_lamb.h"

/* linalg diagonals and triangles (issue 14: linalg, CTC, attention; ops14g) */
#include "cu_la_blas.h"
#include "cu_la_tri.h"
/* CTCLoss (ops14g) */
#include "cu_ctc.h"

#endif

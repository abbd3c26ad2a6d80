/* la_tri.h — where a diagonal or a triangle of a square matrix lives in MXNet's packed
 * vectors (_linalg_extractdiag / makediag / extracttrian / maketrian, issue 14), shared
 * by the CPU kernels (kernels/cpu/la_tri.c) and the CUDA kernels (kernels/cuda/la_tri.cu).
 *
 * Diagonal `offset` k of an n x n matrix: element (r, r + k) for k >= 0, (r - k, r) for
 * k < 0, packed in order of the row (k >= 0) or column (k < 0): n - |k| entries.
 * Triangle: with m = n - |k|, the lower triangle (k < 0, or k = 0 and lower) holds the
 * elements (r + |k|, c), c <= r < m, row by row: index r(r+1)/2 + c; the upper triangle
 * (k > 0, or k = 0 and not lower) the elements (c, r + |k|), column by column with the
 * same index. m(m+1)/2 entries. (MXNet 1.9 la_op-inl.h CopyDiag, CopyTrian.)
 */
#ifndef LMX_KERNELS_LA_TRI_H
#define LMX_KERNELS_LA_TRI_H

#include <stdint.h>

#ifdef __host__
#define LMX_LA_HD __host__ __device__
#else
#define LMX_LA_HD
#endif

/* what a packed vector holds */
typedef struct {
  int trian;      /* 0: a diagonal, 1: a triangle */
  int lower;      /* the triangle's side when offset is 0 */
  int64_t offset; /* k */
  int64_t n;      /* the square matrices' size */
} lmx_la_tri;

/* entries of the packed vector */
LMX_LA_HD static inline int64_t lmx_la_tri_len(const lmx_la_tri *t) {
  int64_t m = t->n - (t->offset < 0 ? -t->offset : t->offset);
  if (m < 0) m = 0;
  return t->trian ? m * (m + 1) / 2 : m;
}

/* the packed index of matrix element (row, col), -1 when it is not packed */
LMX_LA_HD static inline int64_t lmx_la_tri_index(const lmx_la_tri *t, int64_t row, int64_t col) {
  int64_t k = t->offset, ak = k < 0 ? -k : k;
  if (!t->trian) {
    if (col - row != k) return -1;
    return k >= 0 ? row : col;
  }
  if (k > 0 || (k == 0 && !t->lower)) {
    int64_t tmp = row;
    row = col;
    col = tmp;
  }
  row -= ak;
  if (row < col) return -1;
  return row * (row + 1) / 2 + col;
}

#endif

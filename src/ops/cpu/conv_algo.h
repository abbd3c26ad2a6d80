/* conv_algo.h — the process's CPU convolution algorithm mode (conv_wino.c keeps it):
 * which convolutions take the Winograd path. No engine types: the API layer includes it
 * next to cblas.h. */
#ifndef LMX_OPS_CPU_CONV_ALGO_H
#define LMX_OPS_CPU_CONV_ALGO_H

#include <stdint.h>

/* modes (LUAMX_CONV): Winograd with the tile chosen by plane size, or forced to F(2x2, 3x3)
 * / F(4x4, 3x3) */
enum { LMX_CONV_AUTO, LMX_CONV_GEMM, LMX_CONV_WINOGRAD, LMX_CONV_WINO2, LMX_CONV_WINO4 };

/* "auto", "gemm", "winograd", "winograd2", "winograd4" -> the mode; -1 for anything else. */
int lmx_conv_algo_parse(const char *name);
/* Sets the mode for convolutions that start afterwards (thread-safe). */
void lmx_conv_algo_set(int algo);
/* The mode in force (from LUAMX_CONV at first use, auto when unset) and where it came
 * from. Static strings. */
const char *lmx_conv_algo_name(void);
const char *lmx_conv_algo_source(void);
/* Auto's fewest tiles of 2x2 outputs a chunk of images for Winograd, on a CPU with (avx512
 * = 1) or without (0) AVX-512, or on this CPU (-1). Pure for 0 and 1. */
int64_t lmx_conv_wino_min_tiles(int avx512);

#endif

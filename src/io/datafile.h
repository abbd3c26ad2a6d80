/* datafile.h — IDX (MNIST) and CSV parsers over bytes in memory (see datafile.c).
 * Arguments are assumed checked by the API layer (src/api/api_files.c). */
#ifndef LMX_IO_DATAFILE_H
#define LMX_IO_DATAFILE_H

#include <stddef.h>
#include <stdint.h>

#include "../luamx.h"

int lmx_idx_parse_buffer(const unsigned char *p, size_t size, int want_ndim, const char *name,
                         int64_t *dims, int64_t *offset);

int lmx_csv_parse_buffer(const char *p, size_t size, int64_t width, const char *name,
                         lmx_ndarray **out);

#endif

/* image_abi.h — the boundary between libluamx (src/io/image.c) and the image codec
 * plugin (src/imgcodec/codec_plugin.c, built as libluamx_image.so when CMake finds
 * libjpeg and libpng).
 *
 * libluamx never links an image library: image.c dlopen()s the plugin next to
 * libluamx on the first image call and asks lmx_image_plugin() for this table, so
 * luamx loads and runs without libjpeg/libpng and only the image functions fail
 * (naming the Debian packages). Pixels are 8-bit, interleaved (height, width,
 * channels), in OpenCV's order as MXNet's recordio.unpack_img returns them: 1 channel
 * gray, 3 BGR, 4 BGRA. Buffers the plugin returns are malloc()ed and given back with
 * release(). Functions return 0, or -1 with a message in err[cap]. Every function is
 * thread safe (no shared state).
 */
#ifndef LMX_IO_IMAGE_ABI_H
#define LMX_IO_IMAGE_ABI_H

#include <stddef.h>

enum { LMX_IMAGE_ABI_VERSION = 1 };
enum { LMX_IMAGE_JPEG = 0, LMX_IMAGE_PNG = 1 };
/* Decoded images larger than this many bytes are refused (untrusted headers). */
enum { LMX_IMAGE_MAX_BYTES = 1 << 30 };

typedef struct lmx_image_ops {
  int abi;
  /* Decodes a JPEG or PNG (told apart by their signatures). flag: -1 keeps the stored
   * channels (gray, BGR or BGRA), 0 converts to gray, 1 to BGR (OpenCV's imdecode
   * flags). *pix: h*w*c bytes. */
  int (*decode)(const unsigned char *buf, size_t len, int flag, unsigned char **pix, int *h,
                int *w, int *c, char *err, int cap);
  /* Encodes h*w*c pixels (c = 1, 3 or 4) as LMX_IMAGE_JPEG (quality 1..100; the alpha
   * channel of BGRA is dropped) or LMX_IMAGE_PNG (quality = zlib level 0..9). */
  int (*encode)(const unsigned char *pix, int h, int w, int c, int fmt, int quality,
                unsigned char **out, size_t *len, char *err, int cap);
  void (*release)(void *p);
} lmx_image_ops;

typedef int (*lmx_image_plugin_fn)(lmx_image_ops *ops);

#endif

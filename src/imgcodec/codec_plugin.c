/* codec_plugin.c — libluamx_image.so: JPEG (libjpeg-turbo) and PNG (libpng) behind the
 * table of src/io/image_abi.h. Built only when CMake finds both libraries; libluamx
 * opens it at run time, so neither library is a load-time dependency of luamx.
 *
 * Inputs are untrusted: libjpeg's fatal errors come back through a longjmp inside this
 * file only (never across the table), libpng's through its own; image sizes are
 * checked against LMX_IMAGE_MAX_BYTES before any pixel buffer is allocated.
 * PNG decoding uses libpng's simplified API (every bit depth, palette and tRNS case is
 * converted to 8-bit gray/BGR/BGRA by libpng); encoding uses the full API for the
 * compression level. No state is shared between calls: every function is thread safe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

#include "../io/image_abi.h"

#define LMX_IMAGE_EXPORT __attribute__((visibility("default")))
LMX_IMAGE_EXPORT int lmx_image_plugin(lmx_image_ops *ops);

static int fail(char *err, int cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, int cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, (size_t)cap, fmt, ap);
  va_end(ap);
  return -1;
}

static int too_big(int h, int w, int c) {
  return h <= 0 || w <= 0 || (uint64_t)h * (uint64_t)w * (uint64_t)c > LMX_IMAGE_MAX_BYTES;
}

/* ---------------------------------------------------------------- JPEG ---- */

typedef struct jerr {
  struct jpeg_error_mgr mgr;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
  unsigned char *pix; /* owned here until success (freed after a longjmp) */
  unsigned char *out; /* jpeg_mem_dest buffer */
} jerr;

static void jpeg_fatal(j_common_ptr cinfo) {
  jerr *e = (jerr *)cinfo->err;
  (*cinfo->err->format_message)(cinfo, e->msg);
  longjmp(e->jump, 1);
}

static void jpeg_quiet(j_common_ptr cinfo, int level) { (void)cinfo, (void)level; }

static int jpeg_decode(const unsigned char *buf, size_t len, int flag, unsigned char **pix,
                       int *h, int *w, int *c, char *err, int cap) {
  struct jpeg_decompress_struct cinfo;
  jerr e;
  memset(&e, 0, sizeof e);
  cinfo.err = jpeg_std_error(&e.mgr);
  e.mgr.error_exit = jpeg_fatal;
  e.mgr.emit_message = jpeg_quiet;
  if (setjmp(e.jump)) {
    jpeg_destroy_decompress(&cinfo);
    free(e.pix);
    return fail(err, cap, "JPEG: %s", e.msg);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, buf, (unsigned long)len);
  jpeg_read_header(&cinfo, TRUE);
  int gray = flag == 0 || (flag < 0 && cinfo.jpeg_color_space == JCS_GRAYSCALE);
  cinfo.out_color_space = gray ? JCS_GRAYSCALE : JCS_EXT_BGR;
  int ch = gray ? 1 : 3;
  if (too_big((int)cinfo.image_height, (int)cinfo.image_width, ch)) {
    jpeg_destroy_decompress(&cinfo);
    return fail(err, cap, "JPEG: image of %ux%u pixels is larger than %d bytes",
                cinfo.image_width, cinfo.image_height, (int)LMX_IMAGE_MAX_BYTES);
  }
  jpeg_start_decompress(&cinfo);
  size_t stride = (size_t)cinfo.output_width * (size_t)ch;
  e.pix = malloc(stride * cinfo.output_height);
  if (!e.pix) {
    jpeg_destroy_decompress(&cinfo);
    return fail(err, cap, "JPEG: out of memory for %zu bytes", stride * cinfo.output_height);
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = e.pix + stride * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  *h = (int)cinfo.output_height, *w = (int)cinfo.output_width, *c = ch;
  jpeg_destroy_decompress(&cinfo);
  *pix = e.pix;
  return 0;
}

static int jpeg_encode(const unsigned char *pix, int h, int w, int c, int quality,
                       unsigned char **out, size_t *len, char *err, int cap) {
  struct jpeg_compress_struct cinfo;
  jerr e;
  memset(&e, 0, sizeof e);
  unsigned long size = 0;
  cinfo.err = jpeg_std_error(&e.mgr);
  e.mgr.error_exit = jpeg_fatal;
  e.mgr.emit_message = jpeg_quiet;
  if (setjmp(e.jump)) {
    jpeg_destroy_compress(&cinfo);
    free(e.out);
    return fail(err, cap, "JPEG: %s", e.msg);
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &e.out, &size);
  cinfo.image_width = (JDIMENSION)w;
  cinfo.image_height = (JDIMENSION)h;
  cinfo.input_components = c;
  cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : c == 3 ? JCS_EXT_BGR : JCS_EXT_BGRX;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  size_t stride = (size_t)w * (size_t)c;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = (JSAMPROW)(pix + stride * cinfo.next_scanline);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  *out = e.out;
  *len = size;
  return 0;
}

/* ---------------------------------------------------------------- PNG ---- */

static int png_decode(const unsigned char *buf, size_t len, int flag, unsigned char **pix,
                      int *h, int *w, int *c, char *err, int cap) {
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, buf, len))
    return fail(err, cap, "PNG: %s", img.message);
  int color = flag == 1 || (flag < 0 && (img.format & PNG_FORMAT_FLAG_COLOR));
  int alpha = flag < 0 && (img.format & PNG_FORMAT_FLAG_ALPHA);
  int ch = color ? (alpha ? 4 : 3) : (alpha ? 4 : 1);
  img.format = ch == 1 ? PNG_FORMAT_GRAY : ch == 3 ? PNG_FORMAT_BGR : PNG_FORMAT_BGRA;
  if (too_big((int)img.height, (int)img.width, ch)) {
    png_image_free(&img);
    return fail(err, cap, "PNG: image of %ux%u pixels is larger than %d bytes", img.width,
                img.height, (int)LMX_IMAGE_MAX_BYTES);
  }
  unsigned char *p = malloc(PNG_IMAGE_SIZE(img));
  if (!p) {
    png_image_free(&img);
    return fail(err, cap, "PNG: out of memory for %zu bytes", (size_t)PNG_IMAGE_SIZE(img));
  }
  if (!png_image_finish_read(&img, NULL, p, 0, NULL)) {
    free(p);
    int rc = fail(err, cap, "PNG: %s", img.message);
    png_image_free(&img);
    return rc;
  }
  *pix = p, *h = (int)img.height, *w = (int)img.width, *c = ch;
  return 0;
}

typedef struct membuf {
  unsigned char *p;
  size_t len, cap;
  int oom;
} membuf;

static void png_put(png_structp png, png_bytep data, png_size_t n) {
  membuf *m = png_get_io_ptr(png);
  if (m->oom) return;
  if (m->len + n > m->cap) {
    size_t ncap = m->cap ? m->cap * 2 : 4096;
    while (ncap < m->len + n) ncap *= 2;
    unsigned char *q = realloc(m->p, ncap);
    if (!q) {
      m->oom = 1;
      png_error(png, "out of memory");
    }
    m->p = q, m->cap = ncap;
  }
  memcpy(m->p + m->len, data, n);
  m->len += n;
}

static void png_flush_nop(png_structp png) { (void)png; }

static int png_encode(const unsigned char *pix, int h, int w, int c, int level,
                      unsigned char **out, size_t *len, char *err, int cap) {
  membuf m = {0};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!info) {
    png_destroy_write_struct(&png, NULL);
    return fail(err, cap, "PNG: out of memory");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    free(m.p);
    return fail(err, cap, "PNG: encoding failed%s", m.oom ? " (out of memory)" : "");
  }
  png_set_write_fn(png, &m, png_put, png_flush_nop);
  int type = c == 1 ? PNG_COLOR_TYPE_GRAY : c == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGBA;
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, type, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, level);
  png_write_info(png, info);
  if (c >= 3) png_set_bgr(png);
  size_t stride = (size_t)w * (size_t)c;
  for (int y = 0; y < h; y++) png_write_row(png, (png_const_bytep)(pix + stride * (size_t)y));
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  *out = m.p, *len = m.len;
  return 0;
}

/* ---------------------------------------------------------------- table ---- */

static int decode(const unsigned char *buf, size_t len, int flag, unsigned char **pix, int *h,
                  int *w, int *c, char *err, int cap) {
  if (len >= 3 && buf[0] == 0xFF && buf[1] == 0xD8 && buf[2] == 0xFF)
    return jpeg_decode(buf, len, flag, pix, h, w, c, err, cap);
  if (len >= 8 && !png_sig_cmp(buf, 0, 8)) return png_decode(buf, len, flag, pix, h, w, c, err, cap);
  return fail(err, cap, "not a JPEG or PNG image (%zu bytes, first bytes %02x %02x %02x %02x)",
              len, len > 0 ? buf[0] : 0, len > 1 ? buf[1] : 0, len > 2 ? buf[2] : 0,
              len > 3 ? buf[3] : 0);
}

static int encode(const unsigned char *pix, int h, int w, int c, int fmt, int quality,
                  unsigned char **out, size_t *len, char *err, int cap) {
  if (c != 1 && c != 3 && c != 4)
    return fail(err, cap, "images have 1, 3 or 4 channels, got %d", c);
  if (too_big(h, w, c) || h > 65500 || w > 65500)
    return fail(err, cap, "image size %dx%d is out of range", w, h);
  if (fmt == LMX_IMAGE_JPEG) return jpeg_encode(pix, h, w, c, quality, out, len, err, cap);
  return png_encode(pix, h, w, c, quality, out, len, err, cap);
}

int lmx_image_plugin(lmx_image_ops *ops) {
  ops->abi = LMX_IMAGE_ABI_VERSION;
  ops->decode = decode;
  ops->encode = encode;
  ops->release = free;
  return 0;
}

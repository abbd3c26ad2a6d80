/* image.c — loading the image codec plugin, and the lmx_image handle of the public
 * API (decoded pixels or encoded bytes, owned by the handle).
 *
 * The plugin libluamx_image.so sits next to libluamx (LUAMX_IMAGE_PLUGIN overrides the
 * path) and links libjpeg and libpng; it is opened with dlopen on the first image call,
 * once per process (a mutex), and never closed. A failure is remembered and reported
 * again on every later call, with the dlerror text, which names the missing library.
 */
#define _GNU_SOURCE /* dladdr */
#include "image.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/api.h"
#include "../core/alloc.h"
#include "../core/refcount.h"
#include "../core/status.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static lmx_image_ops g_ops;
static int g_state; /* 0 not tried, 1 loaded, -1 failed */
static char g_why[8192]; /* holds the path (< 4096) and the message */

static void load(void) {
  char path[4096];
  const char *env = getenv("LUAMX_IMAGE_PLUGIN");
  Dl_info info;
  if (env && *env) snprintf(path, sizeof path, "%s", env);
  else if (dladdr((void *)&load, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
    snprintf(path, sizeof path, "%s", info.dli_fname);
    *strrchr(path, '/') = 0;
    size_t len = strlen(path);
    snprintf(path + len, sizeof path - len, "/libluamx_image.so");
  } else
    snprintf(path, sizeof path, "libluamx_image.so");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h && !env) h = dlopen("libluamx_image.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    snprintf(g_why, sizeof g_why,
             "the image codec plugin %s cannot be loaded (%s). Images need libjpeg and "
             "libpng: install them (Debian: apt-get install libjpeg62-turbo-dev libpng-dev), "
             "then rebuild luamx so that libluamx_image.so is built next to libluamx (or set "
             "LUAMX_IMAGE_PLUGIN to its path)",
             path, why ? why : "not found");
    g_state = -1;
    return;
  }
  lmx_image_plugin_fn fn;
  *(void **)&fn = dlsym(h, "lmx_image_plugin");
  if (!fn || fn(&g_ops) != 0 || g_ops.abi != LMX_IMAGE_ABI_VERSION) {
    snprintf(g_why, sizeof g_why,
             "%s is not a luamx image plugin of this version (rebuild luamx)", path);
    g_state = -1;
    return;
  }
  g_state = 1;
}

int lmx_image_codec(const char *who, const lmx_image_ops **ops) {
  pthread_mutex_lock(&g_mu);
  if (g_state == 0) load();
  int ok = g_state == 1;
  pthread_mutex_unlock(&g_mu);
  if (!ok) return lmx_fail(LMX_ERR_UNSUPPORTED, "%s: %s", who, g_why);
  *ops = &g_ops;
  return LMX_OK;
}

/* ------------------------------------------------------------ the handle ---- */

struct lmx_image {
  lmx_refcount rc;
  int h, w, c;
  unsigned char *data;
  size_t size;
};

/* Takes a plugin buffer: copies it into an lmx_alloc'ed handle and releases it. */
static int wrap(const lmx_image_ops *ops, unsigned char *buf, size_t size, int h, int w, int c,
                const char *who, lmx_image **out) {
  lmx_image *img = lmx_calloc(1, sizeof *img);
  unsigned char *data = img ? lmx_alloc(size ? size : 1) : NULL;
  if (!data) {
    lmx_free(img);
    ops->release(buf);
    return lmx_fail_prefix(lmx_fail_nomem("image", size), "%s: ", who);
  }
  memcpy(data, buf, size);
  ops->release(buf);
  lmx_ref_init(&img->rc);
  img->h = h, img->w = w, img->c = c, img->data = data, img->size = size;
  *out = img;
  return LMX_OK;
}

int lmx_image_decode(const void *data, size_t size, int flag, lmx_image **out) {
  LMX_ENTER();
  LMX_NEED(out, "lmx_image_decode", "out");
  if (size) LMX_NEED(data, "lmx_image_decode", "data");
  if (flag < -1 || flag > 1)
    return lmx_fail(LMX_ERR_ARG, "lmx_image_decode: flag must be -1, 0 or 1, got %d", flag);
  const lmx_image_ops *ops;
  LMX_TRY(lmx_image_codec("lmx_image_decode", &ops));
  char err[512];
  unsigned char *pix;
  int h, w, c;
  if (ops->decode(size ? data : (const void *)"", size, flag, &pix, &h, &w, &c, err, sizeof err))
    return lmx_fail(LMX_ERR_FORMAT, "lmx_image_decode: %s", err);
  return wrap(ops, pix, (size_t)h * (size_t)w * (size_t)c, h, w, c, "lmx_image_decode", out);
}

int lmx_image_encode(const uint8_t *pixels, int height, int width, int channels,
                     const char *fmt, int quality, lmx_image **out) {
  LMX_ENTER();
  LMX_NEED(pixels, "lmx_image_encode", "pixels");
  LMX_NEED(fmt, "lmx_image_encode", "fmt");
  LMX_NEED(out, "lmx_image_encode", "out");
  int kind = !strcmp(fmt, ".jpg") || !strcmp(fmt, ".jpeg") ? LMX_IMAGE_JPEG
             : !strcmp(fmt, ".png")                        ? LMX_IMAGE_PNG
                                                           : -1;
  if (kind < 0)
    return lmx_fail(LMX_ERR_ARG, "lmx_image_encode: fmt must be '.jpg', '.jpeg' or '.png', got '%s'",
                    fmt);
  if (kind == LMX_IMAGE_JPEG && (quality < 1 || quality > 100))
    return lmx_fail(LMX_ERR_ARG, "lmx_image_encode: JPEG quality must be in 1..100, got %d",
                    quality);
  if (kind == LMX_IMAGE_PNG && (quality < 0 || quality > 9))
    return lmx_fail(LMX_ERR_ARG,
                    "lmx_image_encode: PNG quality is the compression level 0..9, got %d", quality);
  if (height < 1 || width < 1 || (channels != 1 && channels != 3 && channels != 4))
    return lmx_fail(LMX_ERR_ARG,
                    "lmx_image_encode: expected height, width >= 1 and 1, 3 or 4 channels, got "
                    "%dx%dx%d",
                    height, width, channels);
  const lmx_image_ops *ops;
  LMX_TRY(lmx_image_codec("lmx_image_encode", &ops));
  char err[512];
  unsigned char *buf;
  size_t len;
  if (ops->encode(pixels, height, width, channels, kind, quality, &buf, &len, err, sizeof err))
    return lmx_fail(LMX_ERR_FORMAT, "lmx_image_encode: %s", err);
  return wrap(ops, buf, len, height, width, channels, "lmx_image_encode", out);
}

int lmx_image_info(const lmx_image *img, int *height, int *width, int *channels,
                   const void **data, size_t *size) {
  LMX_ENTER();
  LMX_NEED(img, "lmx_image_info", "img");
  if (height) *height = img->h;
  if (width) *width = img->w;
  if (channels) *channels = img->c;
  if (data) *data = img->data;
  if (size) *size = img->size;
  return LMX_OK;
}

int lmx_image_free(lmx_image *img) {
  if (img && lmx_ref_dec(&img->rc)) {
    lmx_free(img->data);
    lmx_free(img);
  }
  return LMX_OK;
}

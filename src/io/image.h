/* image.h — the image codec as libluamx sees it: the plugin table of image_abi.h,
 * loaded once per process on first use. */
#ifndef LMX_IO_IMAGE_H
#define LMX_IO_IMAGE_H

#include "image_abi.h"

/* The codec table; LMX_ERR_UNSUPPORTED with a message naming the plugin and the Debian
 * packages when libluamx_image.so (or libjpeg / libpng under it) cannot be loaded.
 * `who` prefixes the message. Thread safe. */
int lmx_image_codec(const char *who, const lmx_image_ops **ops);

#endif

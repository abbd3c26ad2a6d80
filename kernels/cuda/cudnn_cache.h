/* cudnn_cache.h — a small cache of cuDNN descriptors per device, keyed by the derived
 * arguments (cudnn_args.h), so a training step creates none.
 *
 * cudnnCreate*Descriptor / cudnnSet*Descriptor allocate host memory; making them on every
 * call would break the rule that a steady training step allocates nothing. So the
 * executing file (cudnn_exec.cu) keeps one lmx_dnn_cache per device: the first call with
 * a configuration (a Convolution of one geometry, a Pooling, a BatchNorm's tensors, an
 * RNN) creates its descriptors through the cache's `create` callback and stores them
 * under the key; later calls with equal key bytes get the same descriptors back. A
 * reshape to new shapes is a new key (a miss); when every slot is taken, the least
 * recently used entry is destroyed (`destroy`) and its slot reused. lmx_dnn_cache_clear
 * destroys everything (the device's teardown, and tests).
 *
 * Plain C with no cuDNN types, so it is tested on the CPU with a fake create / destroy
 * (tests/test_cudnn_args.c). No allocation: the slots live in the struct. Not
 * thread-safe: the owner serialises calls (cudnn_exec.cu holds the device's lock).
 * Keys are compared bytewise: build them from zeroed memory (the derive functions memset
 * their results, so padding bytes are 0).
 */
#ifndef LMX_KERNELS_CUDA_CUDNN_CACHE_H
#define LMX_KERNELS_CUDA_CUDNN_CACHE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  LMX_DNN_CACHE_SLOTS = 128, /* entries per device (a ResNet-50 step uses about 50) */
  LMX_DNN_CACHE_KEY = 320,   /* bytes of a key at most */
  LMX_DNN_CACHE_PTRS = 8,    /* descriptors per entry */
  LMX_DNN_CACHE_INTS = 8     /* small values per entry (algorithm choices, sizes) */
};

/* What one entry holds: the descriptors (opaque pointers) and a few integers. */
typedef struct {
  void *p[LMX_DNN_CACHE_PTRS];
  long long i[LMX_DNN_CACHE_INTS];
} lmx_dnn_descs;

typedef struct {
  int used, kind;
  unsigned long long last; /* the cache clock at its last use (least recently used goes) */
  size_t key_len;
  unsigned char key[LMX_DNN_CACHE_KEY];
  lmx_dnn_descs d;
} lmx_dnn_cache_slot;

/* create: fills *d (zeroed on entry) for (kind, key); 0 on success, else a non-zero code
 * that lmx_dnn_cache_get returns (the slot stays free; create must have released what it
 * made). destroy: releases what create made (NULL pointers in d are skipped by it). */
typedef int (*lmx_dnn_cache_create)(void *user, int kind, const void *key, lmx_dnn_descs *d);
typedef void (*lmx_dnn_cache_destroy)(void *user, int kind, lmx_dnn_descs *d);

typedef struct {
  lmx_dnn_cache_create create;
  lmx_dnn_cache_destroy destroy;
  void *user;
  unsigned long long clock;
  long long hits, misses, evictions; /* figures, for tests and debugging */
  lmx_dnn_cache_slot slot[LMX_DNN_CACHE_SLOTS];
} lmx_dnn_cache;

/* An empty cache using create / destroy with `user`. */
void lmx_dnn_cache_init(lmx_dnn_cache *c, lmx_dnn_cache_create create,
                        lmx_dnn_cache_destroy destroy, void *user);

/* The descriptors of (kind, key[0 .. len)) into *out: 0 (a hit, or a miss that create
 * filled, evicting the least recently used entry when the cache is full), create's
 * non-zero code, or -1 for a key longer than LMX_DNN_CACHE_KEY. *out stays valid until
 * the entry is evicted: the next lmx_dnn_cache_get may do that, so callers use one entry
 * per call at a time (or look up the one they keep last). */
int lmx_dnn_cache_get(lmx_dnn_cache *c, int kind, const void *key, size_t len,
                      lmx_dnn_descs **out);

/* Number of entries in use. */
int lmx_dnn_cache_size(const lmx_dnn_cache *c);

/* Destroys every entry; the cache stays usable. */
void lmx_dnn_cache_clear(lmx_dnn_cache *c);

#ifdef __cplusplus
}
#endif

#endif

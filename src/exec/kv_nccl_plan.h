/* kv_nccl_plan.h — the argument derivation of the `nccl` kvstore (kv_nccl.c), as plain
 * functions built and tested in every build (tests/test_nccl_plan.c): which NCCL data
 * type a luamx dtype travels as, which devices a key's values sit on, and how the keys
 * of one push are cut into all-reduce buckets.
 *
 * Buckets. A push hands the store every parameter at once. Keys up to `cap` bytes are
 * small: they fuse, in the order given, into buckets of one dtype each, at most `cap`
 * bytes long; key k sits at slot[k].offset elements from its bucket's start, offsets
 * rounded up to `align` bytes (so every key starts on an aligned address inside the flat
 * buffer; align must be a multiple of every element size: 256 does). The store packs a
 * fused bucket into a per-device flat buffer, all-reduces it once and unpacks it. A key
 * over `cap` bytes is a bucket of its own, all-reduced straight from the value (fused
 * 0), as is a small key that ends up alone in its bucket (no copy for nothing).
 * The plan allocates nothing: outputs go to caller arrays of n entries.
 *
 * Several contexts on one GPU (e.g. {gpu(0), gpu(0), gpu(1)}): NCCL takes each device
 * once, so the communicator has one rank per distinct GPU (lmx_nccl_distinct,
 * lmx_nccl_ranks) and each rank first sums its own values on its GPU
 * (lmx_nccl_local_groups says which values those are).
 */
#ifndef LMX_EXEC_KV_NCCL_PLAN_H
#define LMX_EXEC_KV_NCCL_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "../device/nccl_types.h"

enum {
  LMX_NCCL_BUCKET_BYTES = 1 << 20, /* default cap: keys up to 1 MiB fuse */
  LMX_NCCL_ALIGN = 256,            /* bytes; every key in a bucket starts aligned */
  LMX_NCCL_MAX_RANKS = 16          /* GPUs in one communicator (the simulator's bound too) */
};

/* The NCCL data type (LMX_NCCL_*) of a luamx dtype; -1 for an unknown dtype. */
int lmx_nccl_dtype(int dtype);

/* devs[0..n): the device ids of one key's values. Writes the distinct ids in ascending
 * order into uniq[0..) (room for n) and returns how many there are; *dup is 1 when some
 * id appears more than once (several contexts on one GPU), else 0. */
int lmx_nccl_distinct(const int *devs, int n, int *uniq, int *dup);

/* rank[i] = the index of devs[i] in uniq[0..nu) (the communicator rank of value i), for
 * i < n; returns 0, or -1 when some devs[i] is not in uniq. */
int lmx_nccl_ranks(const int *devs, int n, const int *uniq, int nu, int *rank);

/* Several contexts on one GPU: the values of a key are first summed on each GPU (rank),
 * then all-reduced across ranks. Given rank[0..n) of the values (lmx_nccl_ranks) and nu
 * ranks, writes order[0..n), the value indices rank by rank (ranks ascending, values in
 * the order given within a rank), and start[0..nu], so that rank r's values are
 * order[start[r] .. start[r+1]) and the first of them, order[start[r]], is the one whose
 * buffer a rank with a single value sends as it is. Returns the largest number of values
 * on one rank (1: every value on its own GPU), or -1 when n < 1, nu < 1,
 * nu > LMX_NCCL_MAX_RANKS, a rank is
 * outside [0, nu), or some rank has no value (a communicator rank that would send
 * nothing). */
int lmx_nccl_local_groups(const int *rank, int n, int nu, int *order, int *start);

typedef struct {
  int bucket;    /* index into the bucket list */
  int64_t offset; /* elements from the bucket's start */
} lmx_nccl_slot;

typedef struct {
  int dtype;     /* luamx dtype of every key in it */
  int fused;     /* 1: packed into the flat buffer; 0: one key, reduced in place */
  int nkeys;
  int64_t count; /* elements: the last key's offset + its count */
} lmx_nccl_bucket;

/* Plans the n keys (dtype[k], count[k] >= 1 elements) into buckets; writes slot[0..n)
 * and bucket[0..nb) and returns nb (<= n), or -1 for bad arguments (an unknown dtype, a
 * count < 1, align not a positive multiple of every element size). cap 0 means
 * LMX_NCCL_BUCKET_BYTES. */
int lmx_nccl_plan(int n, const int *dtype, const int64_t *count, size_t cap, size_t align,
                  lmx_nccl_slot *slot, lmx_nccl_bucket *bucket);

/* Bytes of bucket b (count times the element size). */
size_t lmx_nccl_bucket_bytes(const lmx_nccl_bucket *b);

#endif

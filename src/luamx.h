/* luamx.h — the public C API of the luamx engine, and the only public header.
 *
 * This header is the contract. It is also the source of the Lua binding: the build
 * preprocesses it with LMX_CDEF defined and embeds the result in the library, and the
 * Lua module hands that text to ffi.cdef. So it must stay inside what LuaJIT's FFI
 * parses: enum constants (never #define constants), int status returns, distinct
 * opaque handle types, no structs by value, no varargs.
 *
 * Conventions (every function below follows them unless its comment says otherwise):
 *  - Return an int status: LMX_OK (0) or one of the LMX_ERR_* codes. On failure the
 *    calling thread's message (lmx_last_error) names the operator, node, argument,
 *    and the expected and actual values; out-parameters are left untouched and every
 *    handle passed in stays valid and unchanged.
 *  - Handles are reference counted. A function that returns a handle through `**out`
 *    gives the caller one reference, released with the matching *_free. Objects that
 *    depend on others hold references to them, so handles may be freed in any order
 *    (garbage-collected hosts finalize in arbitrary order). *_free(NULL) is a no-op.
 *  - Strings returned as `const char **` are borrowed from the handle named in the
 *    comment and live as long as it does. Lists are written to caller buffers.
 *  - Thread safety: distinct handles may be used from distinct threads at once. One
 *    handle must not be used from two threads at once unless its comment says so.
 *    The error message is per thread. Reference counts are atomic.
 *  - Indices are 0-based; shapes are int64 dims, row-major (C order).
 */
#ifndef LUAMX_H
#define LUAMX_H

#ifndef LMX_CDEF
#include <stddef.h>
#include <stdint.h>
#define LMX_API __attribute__((visibility("default")))
#else
#define LMX_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ===================================================================== version === */

/* Header version, checked against lmx_version() by the binding. */
enum { LMX_VERSION_MAJOR = 0, LMX_VERSION_MINOR = 1, LMX_VERSION_PATCH = 0 };
enum { LMX_VERSION = 100 }; /* MAJOR*10000 + MINOR*100 + PATCH */

/* Returns LMX_VERSION as compiled into the library. Never fails. */
LMX_API int lmx_version(void);

/* The ffi.cdef text of this header as compiled into the library (preprocessed with
 * LMX_CDEF, NUL-terminated, static storage). Never fails, never NULL. */
LMX_API const char *lmx_cdef(void);

/* ================================================================ status codes === */

/* X-macro: name, value, short description. The binding and messages use all three. */
#define LMX_STATUS_LIST(X)                                                              \
  X(LMX_OK, 0, "ok")                                                                   \
  X(LMX_ERR_ARG, 1, "invalid argument")                                                \
  X(LMX_ERR_SHAPE, 2, "shape mismatch")                                                \
  X(LMX_ERR_DTYPE, 3, "dtype mismatch")                                                \
  X(LMX_ERR_NOMEM, 4, "out of memory")                                                 \
  X(LMX_ERR_IO, 5, "input/output error")                                               \
  X(LMX_ERR_FORMAT, 6, "malformed file or text")                                       \
  X(LMX_ERR_DEVICE, 7, "device unavailable")                                           \
  X(LMX_ERR_STATE, 8, "invalid state")                                                 \
  X(LMX_ERR_NOTFOUND, 9, "not found")                                                  \
  X(LMX_ERR_UNSUPPORTED, 10, "unsupported")                                            \
  X(LMX_ERR_INTERNAL, 11, "internal error")

#define LMX_STATUS_ENUM_(name, value, desc) name = value,
enum { LMX_STATUS_LIST(LMX_STATUS_ENUM_) LMX_STATUS_COUNT_ };
#undef LMX_STATUS_ENUM_

/* The calling thread's message for its last failed call ("" if none). The pointer is
 * valid until the next failing call on the same thread. Never NULL. */
LMX_API const char *lmx_last_error(void);

/* Short name of a status code ("LMX_ERR_SHAPE"); "unknown status" otherwise. */
LMX_API const char *lmx_status_string(int status);

/* =================================================== allocator (tests, debugging) === */

/* Counters of the engine's host allocator, for leak checks in tests.
 * out: live_blocks, live_bytes (allocated and not yet freed), total_allocs (calls that
 * succeeded since start). Any out pointer may be NULL. Thread-safe. Never fails. */
LMX_API int lmx_debug_alloc_stats(int64_t *live_blocks, int64_t *live_bytes,
                                  int64_t *total_allocs);

/* Fault injection: make the Nth host allocation from now fail (n >= 1), then succeed
 * again; n = 0 disables. Thread-safe. LMX_ERR_ARG for n < 0. */
LMX_API int lmx_debug_alloc_fail_at(int64_t n);

/* Poison fresh blocks with 0xA5 and freed blocks with 0xDD (on = 1) or not (on = 0).
 * On by default when the library was built with LUAMX_DEBUG_ALLOC. */
LMX_API int lmx_debug_alloc_set_poison(int on);

/* ==================================================== dtypes and devices === */

/* dtype codes are MXNet's (mshadow type flags), as stored in .params files. */
enum {
  LMX_FLOAT32 = 0,
  LMX_FLOAT64 = 1,
  LMX_FLOAT16 = 2,
  LMX_UINT8 = 3,
  LMX_INT32 = 4,
  LMX_INT8 = 5,
  LMX_INT64 = 6,
  LMX_NUM_DTYPES = 7
};

/* Device types are MXNet's codes. */
enum { LMX_CPU = 1, LMX_GPU = 2 };

/* The largest number of dimensions of an array. */
enum { LMX_MAX_NDIM = 8 };

/* dtype name ("float32") of a code; NULL for an unknown code. Never fails. */
LMX_API const char *lmx_dtype_name(int dtype);

/* dtype code of a name ("float32", "float16", "int64", ...). LMX_ERR_ARG (message lists
 * the known names) for an unknown name. */
LMX_API int lmx_dtype_from_name(const char *name, int *dtype);

/* Size in bytes of one element; 0 for an unknown code. Never fails. */
LMX_API int lmx_dtype_size(int dtype);

/* Number of usable GPUs (0 when the library was built without CUDA or none is
 * present). Never fails. */
LMX_API int lmx_num_gpus(void);

/* Checks that a context exists: LMX_ERR_DEVICE with a message otherwise
 * (gpu(0) with no GPU, negative ids, unknown device types). */
LMX_API int lmx_context_check(int dev_type, int dev_id);

/* ================================================================== NDArray === */

/* An n-dimensional array: a shape, a dtype, a context, and a view (byte offset) into
 * reference-counted storage. Views share storage with their source. */
typedef struct lmx_ndarray lmx_ndarray;

/* New array of the given shape (ndim 0..LMX_MAX_NDIM, every dim >= 0), dtype and
 * context, filled with zeros. out: one reference.
 * Errors: LMX_ERR_ARG (bad ndim, negative dim, unknown dtype), LMX_ERR_SHAPE (size
 * overflows), LMX_ERR_DEVICE (no such context), LMX_ERR_NOMEM. */
LMX_API int lmx_ndarray_new(const int64_t *dims, int ndim, int dtype, int dev_type,
                            int dev_id, lmx_ndarray **out);

/* Releases one reference; the storage goes when its last array goes. NULL is a no-op.
 * Always LMX_OK. */
LMX_API int lmx_ndarray_free(lmx_ndarray *arr);

/* Adds one reference (to hand the same handle to another owner). */
LMX_API int lmx_ndarray_retain(lmx_ndarray *arr);

/* Shape: writes min(ndim, cap) dims and the real ndim. */
LMX_API int lmx_ndarray_shape(const lmx_ndarray *arr, int64_t *dims, int cap, int *ndim);

/* Number of elements. */
LMX_API int lmx_ndarray_size(const lmx_ndarray *arr, int64_t *size);

/* dtype code. */
LMX_API int lmx_ndarray_dtype(const lmx_ndarray *arr, int *dtype);

/* Context. */
LMX_API int lmx_ndarray_context(const lmx_ndarray *arr, int *dev_type, int *dev_id);

/* Zero-copy pointer to the first element of a CPU array (valid while the array, or
 * any array sharing its storage, lives). LMX_ERR_DEVICE for a GPU array. */
LMX_API int lmx_ndarray_data(const lmx_ndarray *arr, void **data);

/* Human-readable summary "2x3 float32 @cpu(0)" into buf (NUL-terminated, truncated
 * to cap). */
LMX_API int lmx_ndarray_describe(const lmx_ndarray *arr, char *buf, int cap);

/* A view with a new shape and the same number of elements. One dim may be -1 (inferred)
 * and 0 copies the source's dim at that position (MXNet's rules). out: one reference.
 * LMX_ERR_SHAPE names both shapes when the sizes differ. */
LMX_API int lmx_ndarray_reshape(lmx_ndarray *arr, const int64_t *dims, int ndim,
                                lmx_ndarray **out);

/* A view of rows [begin, end) along the first axis (0 <= begin <= end <= dim 0).
 * out: one reference. LMX_ERR_ARG names the range and the dim. */
LMX_API int lmx_ndarray_slice(lmx_ndarray *arr, int64_t begin, int64_t end,
                              lmx_ndarray **out);

/* Copies src into dst: same shape; any dtypes (converted) and contexts. src == dst or
 * overlapping views are allowed only when they are the same view. */
LMX_API int lmx_ndarray_copyto(const lmx_ndarray *src, lmx_ndarray *dst);

/* Sets every element to value (converted to the dtype; integers truncate toward 0). */
LMX_API int lmx_ndarray_fill(lmx_ndarray *arr, double value);

/* Writes n values (C order, converted from double) into the array: n must equal the
 * size. Used by the binding to set arrays from Lua tables. */
LMX_API int lmx_ndarray_set_f64(lmx_ndarray *arr, const double *values, int64_t n);

/* Reads the array (C order, converted to double) into values[0..n): n must equal the
 * size. */
LMX_API int lmx_ndarray_get_f64(const lmx_ndarray *arr, double *values, int64_t n);

/* Waits until pending writes to the array are done (a no-op on the CPU). */
LMX_API int lmx_ndarray_wait_to_read(const lmx_ndarray *arr);

/* Waits for all pending work on every device. */
LMX_API int lmx_waitall(void);

/* ============================================================ random numbers === */

/* Seeds the global generator: the same seed gives the same draws in the same order.
 * Thread-safe (draws are serialized). */
LMX_API int lmx_random_seed(uint64_t seed);

/* Fills a floating-point array with draws from U[low, high). LMX_ERR_ARG if low > high. */
LMX_API int lmx_random_uniform(lmx_ndarray *arr, double low, double high);

/* Fills a floating-point array with draws from N(mean, std^2). LMX_ERR_ARG if std < 0. */
LMX_API int lmx_random_normal(lmx_ndarray *arr, double mean, double std);

/* ====================================================== imperative arithmetic === */

/* Elementwise binary operations, with NumPy/MXNet broadcasting. */
enum {
  LMX_BIN_ADD = 0,
  LMX_BIN_SUB = 1,
  LMX_BIN_MUL = 2,
  LMX_BIN_DIV = 3,
  LMX_BIN_POW = 4,
  LMX_BIN_MAX = 5,
  LMX_BIN_MIN = 6,
  LMX_NUM_BINOPS = 7
};

/* out = a <op> b with broadcasting; a and b must share dtype and context. out: a new
 * array (one reference). LMX_ERR_SHAPE names both shapes when they do not broadcast. */
LMX_API int lmx_ndarray_binary(int op, const lmx_ndarray *a, const lmx_ndarray *b,
                               lmx_ndarray **out);

/* out = a <op> s (reverse = 0) or s <op> a (reverse = 1). out: a new array. */
LMX_API int lmx_ndarray_scalar(int op, const lmx_ndarray *a, double s, int reverse,
                               lmx_ndarray **out);

/* Matrix product: a (..., k) x b (k, ...) -> a.shape[:-1] ++ b.shape[1:]; 1-D x 1-D is
 * the inner product with shape (1). float32/float64 only; same dtype and context.
 * out: a new array. */
LMX_API int lmx_ndarray_dot(const lmx_ndarray *a, const lmx_ndarray *b, lmx_ndarray **out);

/* ============================================ NDArray files (MXNet's format) === */

/* A list of arrays with optional names, as read from a file. */
typedef struct lmx_ndlist lmx_ndlist;

/* Saves n arrays to path in MXNet's NDArray-list format (V2 arrays, 0x112 header; a
 * 0-dim array is written in the V3 layout, because V2 reads ndim 0 as "no array").
 * names may be NULL (a list) or hold n non-NULL names (a name->array table). The file
 * is written to a temporary in the same directory and renamed over path, so a crash
 * never leaves a half-written file at path. Errors name the file. */
LMX_API int lmx_ndarray_save(const char *path, lmx_ndarray *const *arrays,
                             const char *const *names, int n);

/* Loads an NDArray-list file (V0, V1, V2 and V3 arrays). The file is untrusted: every
 * count, length and offset is checked, and a truncated or corrupt file gives
 * LMX_ERR_FORMAT (or LMX_ERR_IO) with a message naming the file, the array index and
 * what was wrong. Arrays are placed on the CPU. out: one reference to the list. */
LMX_API int lmx_ndarray_load(const char *path, lmx_ndlist **out);

/* Loads the same format from a memory buffer (name is used in messages only). */
LMX_API int lmx_ndarray_load_buffer(const void *data, size_t size, const char *name,
                                    lmx_ndlist **out);

/* Releases a list (the arrays it handed out keep their own references). */
LMX_API int lmx_ndlist_free(lmx_ndlist *list);

/* Number of arrays, and whether the file carried names (1) or not (0). */
LMX_API int lmx_ndlist_size(const lmx_ndlist *list, int *n, int *has_names);

/* Array i (one new reference) and its name (borrowed from the list; NULL when the
 * file had no names). LMX_ERR_ARG for i out of range. */
LMX_API int lmx_ndlist_get(const lmx_ndlist *list, int i, lmx_ndarray **arr,
                           const char **name);

/* ================================================================= operators === */

/* The operator registry (MXNet's names: "FullyConnected", "_plus_scalar", ...). Ops are
 * numbered 0..count-1 in registry order (stable within one library build). Strings
 * returned here are static and live as long as the library. Thread-safe (read-only). */

/* Parameter types (lmx_op_param_info). The string forms are MXNet's: ints "3", floats
 * "0.5", bools "True"/"False", enums by name, tuples "(2, 2)", dtypes "float32", "None"
 * for an optional value. */
enum {
  LMX_PARAM_INT = 0,
  LMX_PARAM_FLOAT = 1,
  LMX_PARAM_BOOL = 2,
  LMX_PARAM_ENUM = 3,
  LMX_PARAM_SHAPE = 4,     /* tuple of ints */
  LMX_PARAM_STRING = 5,
  LMX_PARAM_DTYPE = 6,
  LMX_PARAM_OPT_INT = 7,   /* int or None */
  LMX_PARAM_OPT_FLOAT = 8, /* float or None */
  LMX_PARAM_FLOATS = 9,    /* tuple of floats */
  LMX_PARAM_OPT_INTS = 10, /* tuple of ints whose entries may be None (slice) */
  LMX_PARAM_OPT_BOOL = 11  /* bool or None */
};

/* Operator flags (lmx_op_info). */
enum {
  LMX_OPFLAG_LOSS = 1,        /* backward needs no head gradient */
  LMX_OPFLAG_NO_GRAD = 2,     /* no gradient flows through it */
  LMX_OPFLAG_RANDOM = 4,      /* draws random numbers */
  LMX_OPFLAG_MUTATES_AUX = 8, /* writes its auxiliary states in training */
  LMX_OPFLAG_UPDATE = 16      /* optimizer update: writes its weight/state inputs */
};

/* Number of registered operators (aliases not counted). Never fails. */
LMX_API int lmx_op_registry_size(int *count);

/* Canonical name of operator i. LMX_ERR_ARG when i is out of range. */
LMX_API int lmx_op_get_name(int i, const char **name);

/* Index of an operator by name or alias ("split" -> SliceChannel's index).
 * LMX_ERR_NOTFOUND for an unknown name; the message suggests close names. */
LMX_API int lmx_op_lookup(const char *name, int *index);

/* Alias i of the registry (alias name and the index of its operator), for building
 * constructors under every name. count: number of aliases (may be NULL).
 * LMX_ERR_ARG when i is out of range (i = -1 only fills count). */
LMX_API int lmx_op_alias(int i, int *count, const char **alias, int *index);

/* Description of operator `index`: its name, documentation, automatic-name hint (the
 * lower-cased name; the symbol layer lower-cases the name the op was called by, see
 * lmx_op_hint), number of parameters and LMX_OPFLAG_* flags. Any out pointer may be NULL.
 * LMX_ERR_ARG for a bad index. */
LMX_API int lmx_op_info(int index, const char **name, const char **doc, const char **hint,
                        int *num_params, int *flags);

/* Automatic-name prefix of an op called by `called` (a name or alias), MXNet's rule:
 * the called name lower-cased ("_PlusScalar" -> "_plusscalar"). Written to buf
 * (NUL-terminated, truncated to cap). LMX_ERR_NOTFOUND for an unknown name. */
LMX_API int lmx_op_hint(const char *called, char *buf, int cap);

/* Parameter j of operator `index`: name, LMX_PARAM_* type, default in MXNet's string
 * form (NULL: the parameter is required), enum choices "a|b|c" (NULL otherwise) and a
 * one-line doc. Any out pointer may be NULL. LMX_ERR_ARG for bad indices. */
LMX_API int lmx_op_param_info(int index, int j, const char **name, int *type,
                              const char **def, const char **choices, const char **doc);

/* Names of the inputs (kind 0), outputs (kind 1) or auxiliary states (kind 2) of
 * operator `index` with the given parameters (n key/value strings; keys "__x__" are
 * ignored), joined by ',' into buf (NUL-terminated). count: number of names; visible:
 * the number of visible outputs (kind 1; may be NULL). Errors: parameter errors as
 * lmx_op_infer; LMX_ERR_ARG when cap is too small (the message gives the size needed). */
LMX_API int lmx_op_io_names(int index, int n, const char *const *keys,
                            const char *const *vals, int kind, char *buf, int cap,
                            int *count, int *visible);

/* Single-operator shape and dtype inference, forward and backward, as a symbol node
 * named `node` (used in messages; may be NULL) with parameters keys/vals (n pairs).
 * Inputs: nin must equal the op's input count for these parameters; input i has
 * in_ndims[i] dims (0 = unknown) stored at in_dims[i * LMX_MAX_NDIM ...] (a dim of 0 is
 * unknown); in_dtypes[i] is a dtype code or -1 (in_dtypes may be NULL: all unknown).
 * Results go to caller buffers of `cap` slots laid out as the op's inputs, then all its
 * outputs (hidden ones included), then its aux states: ndims[slot], dims[slot *
 * LMX_MAX_NDIM + d], dtypes[slot] (-1 unknown). counts[0..3] = number of inputs,
 * outputs, aux states, visible outputs. Inputs come back with what inference deduced
 * (e.g. FullyConnected's weight and bias).
 * Errors: LMX_ERR_ARG (unknown index, bad parameters: "FullyConnected 'fc1': parameter
 * 'num_hidden': expected an integer, got 'abc'", wrong nin, cap too small: the message
 * names the slots needed), LMX_ERR_SHAPE / LMX_ERR_DTYPE (a rule is violated: the message
 * names the op, node, input and both shapes), LMX_ERR_NOMEM. */
LMX_API int lmx_op_infer(int index, const char *node, int n, const char *const *keys,
                         const char *const *vals, int nin, const int *in_ndims,
                         const int64_t *in_dims, const int *in_dtypes, int cap, int *counts,
                         int *ndims, int64_t *dims, int *dtypes);

/* ================================================================== Symbols === */

/* A symbolic graph: a list of outputs (heads) of a graph of operator nodes and
 * variables, with MXNet's composition, naming, attribute, listing and JSON rules.
 * Nodes are shared between symbols (internals, selections, groups) and reference
 * counted, so symbol handles may be freed in any order. Composition and attribute
 * changes mutate nodes: they are visible through every symbol sharing the node, as in
 * MXNet. Borrowed strings (lists, JSON, attribute values) live in the symbol until the
 * next call of the same kind on the same symbol, or until it is freed.
 * Thread safety: one symbol handle per thread at a time; automatic names use a
 * process-wide counter per hint (thread-safe); attribute scopes are per thread. */
typedef struct lmx_symbol lmx_symbol;

/* What lmx_symbol_list returns. ATTR: the head node's attributes as key, value pairs
 * (2n strings), hidden keys "__k__" reported twice (also as "k"); ATTR_ALL: every
 * node's attributes in DFS order with keys "<node>$<key>". */
enum {
  LMX_SYM_ARGUMENTS = 0,
  LMX_SYM_OUTPUTS = 1,
  LMX_SYM_AUX_STATES = 2,
  LMX_SYM_INPUTS = 3,
  LMX_SYM_ATTR = 4,
  LMX_SYM_ATTR_ALL = 5
};

/* The mxnet_version written by lmx_symbol_tojson (MXNet 1.9.1, whose rules we follow). */
enum { LMX_SYMBOL_JSON_VERSION = 10901 };

/* A variable named `name` (non-empty), carrying the attributes of the current attribute
 * scope. out: one reference. */
LMX_API int lmx_symbol_variable(const char *name, lmx_symbol **out);

/* An operator node, not yet composed. op_name: a registered name or alias. node_name:
 * NULL for an automatic name ("<hint><n>": hint = op hint, lower-cased op name, or the
 * lower-cased alias called). keys/vals (n pairs, copied): parameters in MXNet's string
 * form, attributes "__x__", and ctx_group / lr_mult / wd_mult / force_mirroring /
 * mirror_stage (stored as "__x__"); "<input>_lr_mult"-style keys are refused. The
 * current attribute scope applies first. out: one reference.
 * Errors: LMX_ERR_NOTFOUND (unknown op), LMX_ERR_ARG (unknown parameter, missing
 * required parameter, bad value; the message names op, node and parameter). */
LMX_API int lmx_symbol_new_op(const char *op_name, const char *node_name, int n,
                              const char *const *keys, const char *const *vals,
                              lmx_symbol **out);

/* Sets the inputs of an uncomposed operator symbol: n inputs by position (names NULL,
 * or names[i] NULL) or by input name (names[i] non-NULL); positional ones come first. Each input must have one output. Inputs left
 * out become variables "<node>_<input>" with a copy of the op's attributes. On an
 * already composed symbol, only names are accepted: each names a variable of the graph
 * to replace (done on a copy of the graph, so other symbols are unaffected).
 * Errors (LMX_ERR_ARG): unknown input name (message lists candidates), too many
 * inputs, multi-output input, a cycle, positional inputs for a composed symbol. */
LMX_API int lmx_symbol_compose(lmx_symbol *sym, int n, const char *const *names,
                               lmx_symbol *const *inputs);

/* Releases one reference. NULL is a no-op. Always LMX_OK. */
LMX_API int lmx_symbol_free(lmx_symbol *sym);

/* Adds one reference. */
LMX_API int lmx_symbol_retain(lmx_symbol *sym);

/* A deep copy (new nodes, same names and attributes). out: one reference. */
LMX_API int lmx_symbol_copy(const lmx_symbol *sym, lmx_symbol **out);

/* The concatenation of the outputs of n symbols. out: one reference. */
LMX_API int lmx_symbol_group(int n, lmx_symbol *const *syms, lmx_symbol **out);

/* Number of outputs (heads). */
LMX_API int lmx_symbol_num_outputs(const lmx_symbol *sym, int *n);

/* Output i (0-based) as a symbol. LMX_ERR_ARG when out of range. out: one reference. */
LMX_API int lmx_symbol_get_output(const lmx_symbol *sym, int i, lmx_symbol **out);

/* Every variable and every visible op output, in DFS order. out: one reference. */
LMX_API int lmx_symbol_get_internals(const lmx_symbol *sym, lmx_symbol **out);

/* The inputs of the head node(s) (each distinct head node once); may have 0 outputs.
 * out: one reference. */
LMX_API int lmx_symbol_get_children(const lmx_symbol *sym, lmx_symbol **out);

/* The head node's name, borrowed (until the node is renamed); *name = NULL when the
 * heads are different nodes (a group). */
LMX_API int lmx_symbol_name(const lmx_symbol *sym, const char **name);

/* A list (kind: LMX_SYM_*). *n strings in *items, both borrowed from the symbol until
 * the next lmx_symbol_list call on it. Orders: MXNet's post-order DFS. */
LMX_API int lmx_symbol_list(lmx_symbol *sym, int kind, int *n, const char *const **items);

/* Attribute `key` of the head node: also "name", "op_name" ("null" for variables),
 * "_value_index"; a hidden key "lr_mult" falls back to "__lr_mult__". *value is NULL when
 * absent or when the heads are different nodes; otherwise borrowed from the symbol until
 * the next lmx_symbol_get_attr on it. */
LMX_API int lmx_symbol_get_attr(lmx_symbol *sym, const char *key, const char **value);

/* Sets attribute `key` of the single head node (key "name" renames it; hidden keys
 * become "__key__"; an op parameter is re-parsed and checked). LMX_ERR_ARG for a group
 * or a bad parameter value (the old value stays). */
LMX_API int lmx_symbol_set_attr(lmx_symbol *sym, const char *key, const char *value);

/* Attribute scopes (MXNet's AttrScope), per thread: push n key/value pairs (copied,
 * merged over the enclosing scope); every node created until the matching pop gets
 * them (hidden keys as "__key__"). Pop without push: LMX_ERR_STATE. */
LMX_API int lmx_attr_scope_push(int n, const char *const *keys, const char *const *vals);
LMX_API int lmx_attr_scope_pop(void);

/* Next automatic name for `hint` ("<hint><counter>") into buf (NUL-terminated; cap
 * bytes). LMX_ERR_ARG when it does not fit. Thread-safe. */
LMX_API int lmx_name_next(const char *hint, char *buf, int cap);

/* Forgets every automatic-name counter (MXNet's fresh NameManager). Thread-safe. */
LMX_API int lmx_name_reset(void);

/* Shape inference. Inputs: n known shapes, by name (keys[i] names an argument or aux
 * state) or by position in list_arguments() order (keys NULL); ndim[i] dims are in
 * dims[i * LMX_MAX_NDIM ...]; ndim 0 = unknown, dim 0 = unknown dim. Variables'
 * "__shape__" attributes fill what is not given.
 * Outputs: cap slots, at least #arguments + #outputs + #aux; slot k gets out_ndim[k] and
 * out_dims[k * LMX_MAX_NDIM ...] for the arguments, then the outputs, then the aux
 * states, in list order (ndim 0 = unknown). *complete = 1 when every shape is fully
 * known. partial = 0 fails with LMX_ERR_SHAPE naming the unknown arguments when not
 * complete; partial = 1 returns what is known.
 * Errors: LMX_ERR_ARG (unknown name, with candidates; too many shapes; cap too small),
 * LMX_ERR_SHAPE (a contradiction: op, node, input, expected and actual shapes). */
LMX_API int lmx_symbol_infer_shape(lmx_symbol *sym, int n, const char *const *keys,
                                   const int *ndim, const int64_t *dims, int partial, int cap,
                                   int *out_ndim, int64_t *out_dims, int *complete);

/* dtype inference, same conventions: dtypes[i] (-1 unknown), out_dtypes[cap] for
 * arguments, outputs, aux states (-1 unknown); "__dtype__" attributes seed variables. */
LMX_API int lmx_symbol_infer_type(lmx_symbol *sym, int n, const char *const *keys,
                                  const int *dtypes, int partial, int cap, int *out_dtypes,
                                  int *complete);

/* MXNet's JSON text (byte-identical layout to MXNet's writer; mxnet_version
 * LMX_SYMBOL_JSON_VERSION), borrowed from the symbol until the next lmx_symbol_tojson
 * or lmx_symbol_debug_str on it. */
LMX_API int lmx_symbol_tojson(lmx_symbol *sym, const char **json);

/* nnvm's Symbol::Print text, borrowed like lmx_symbol_tojson's. */
LMX_API int lmx_symbol_debug_str(lmx_symbol *sym, const char **text);

/* Writes the JSON to path atomically (temporary file in the same directory, then
 * rename). LMX_ERR_IO names the file. */
LMX_API int lmx_symbol_save(lmx_symbol *sym, const char *path);

/* Loads MXNet JSON (current or legacy; MXNet's upgraders applied) from len bytes of
 * text. Untrusted input: LMX_ERR_FORMAT with a message naming the node index, name and
 * field. out: one reference. */
LMX_API int lmx_symbol_from_json(const char *text, size_t len, lmx_symbol **out);

/* The same from a file (LMX_ERR_IO names it). */
LMX_API int lmx_symbol_load(const char *path, lmx_symbol **out);

#ifdef __cplusplus
}
#endif

#endif /* LUAMX_H */

/* oarlock_device.h: the native C ABI of an Oarlock device plugin.
 *
 * A native plugin is a shared library that exports one function,
 *
 *     int oarlock_plugin_init(oarlock_plugin *plugin);
 *
 * which fills the table below with its device type, its runtime functions and its kernels.
 * `adapter_api.native` (cffi, no compiler needed at run time) loads the library and turns the
 * table into an ordinary plugin of the `oarlock.plugins` entry-point group: the same
 * DeviceRuntime, kernels, Communicator, Compiler and conformance suite as a Python plugin. The contract in words is
 * adapter_api/runtime.py (runtime), adapter_api/primitives.py (what each kernel computes) and
 * adapter_api/registry.py (how kernels are called), adapter_api/communicator.py (collectives)
 * and adapter_api/compiler.py (compile access); this header is its C spelling.
 *
 * Versioning. The core zeroes a table of its own size, sets `struct_size` to that size and
 * calls oarlock_plugin_init. The plugin checks `struct_size >= sizeof(oarlock_plugin)`
 * (OARLOCK_PLUGIN_CHECK below does it), fills the fields it knows, and sets `abi_major`,
 * `abi_minor` and `struct_size` to the values it was compiled with. The core accepts equal
 * majors and a plugin minor not newer than its own; a minor release only appends optional
 * entries (taken from `reserved`), so an older plugin leaves them NULL, and the core reads
 * the entries of minors newer than the plugin's as NULL.
 *   1.0  runtime, streams, events, kernels.
 *   1.1  collectives and compile access (two optional groups, each all or none).
 *
 * Mandatory entries are checked at load: a NULL one makes the plugin broken, with an error
 * naming the entry. Optional entries may stay NULL (the default is given with each).
 *
 * Errors. Every function returns an oarlock_status; on anything but OARLOCK_OK the core calls
 * `last_error()` for the message (a thread-local string the plugin keeps until its next call)
 * and raises "[<device type>] <entry>: <message>" as the matching Oarlock exception:
 * OUT_OF_MEMORY -> OutOfMemoryError, INVALID_ARGUMENT -> OpArgumentError, NOT_SUPPORTED ->
 * KernelNotFoundError (a kernel declining: the core falls back to the cpu plugin), others ->
 * DeviceError (runtime) or KernelError (kernels).
 *
 * Memory. A buffer is an opaque `void *` the plugin returns from `allocate` (a device
 * pointer, a cl_mem, an index: anything but NULL); the core never dereferences it and always
 * passes it with a byte offset, which need not be aligned beyond the element size.
 */
#ifndef OARLOCK_DEVICE_H
#define OARLOCK_DEVICE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cdef:begin (the loader hands the text from here to cdef:end, minus preprocessor lines, to cffi) */

enum { OARLOCK_ABI_MAJOR = 1, OARLOCK_ABI_MINOR = 1, OARLOCK_MAX_DIMS = 8, OARLOCK_UNIQUE_ID_BYTES = 128 };

typedef enum oarlock_status {
    OARLOCK_OK = 0,
    OARLOCK_ERROR = 1,            /* anything else: DeviceError / KernelError */
    OARLOCK_OUT_OF_MEMORY = 2,    /* allocate: no room (the core empties its cache, retries once) */
    OARLOCK_INVALID_ARGUMENT = 3, /* bad input, e.g. an out-of-range gather index: OpArgumentError */
    OARLOCK_NOT_SUPPORTED = 4     /* a kernel declines these attributes: the core falls back */
} oarlock_status;

/* Element types (numpy names). A kernel is registered per dtype. */
typedef enum oarlock_dtype {
    OARLOCK_BOOL = 0, OARLOCK_INT8 = 1, OARLOCK_INT16 = 2, OARLOCK_INT32 = 3, OARLOCK_INT64 = 4,
    OARLOCK_UINT8 = 5, OARLOCK_FLOAT16 = 6, OARLOCK_BFLOAT16 = 7, OARLOCK_FLOAT32 = 8,
    OARLOCK_FLOAT64 = 9
} oarlock_dtype;

/* A contiguous, row-major tensor in device memory: `data` is the buffer from `allocate`,
 * element 0 is `offset` bytes into it. Shapes with more than OARLOCK_MAX_DIMS dims are not
 * passed to native kernels (the core falls back). */
typedef struct oarlock_tensor {
    void *data;
    int64_t offset;
    int32_t dtype;
    int32_t ndim;
    int64_t shape[8];
} oarlock_tensor;

/* One attribute of an op (adapter_api/primitives.py names them). Tuples (axes, perm, shape,
 * starts, stops, steps) are INTS; `pads` is INTS flattened (before0, after0, before1, ...);
 * `dtype` is DTYPE (the oarlock_dtype in `i`); Python ints and bools are INT, floats FLOAT. */
typedef enum oarlock_attr_kind {
    OARLOCK_ATTR_INT = 0, OARLOCK_ATTR_FLOAT = 1, OARLOCK_ATTR_INTS = 2, OARLOCK_ATTR_DTYPE = 3
} oarlock_attr_kind;

typedef struct oarlock_attr {
    const char *name;
    int32_t kind;
    int32_t count;        /* INTS: number of values */
    int64_t i;            /* INT, DTYPE */
    double f;             /* FLOAT */
    const int64_t *ints;  /* INTS */
} oarlock_attr;

/* Passed to every kernel call. */
typedef struct oarlock_kernel_ctx {
    int32_t device;       /* the device ordinal */
    void *stream;         /* the stream to enqueue on (NULL without streams) */
} oarlock_kernel_ctx;

/* A kernel, destination-passing like a Python one: write the results into `outs` (allocated
 * by the core with the inferred shapes and dtypes); never write elsewhere, never change
 * `ins`. Inputs come in the primitive's order; elementwise kernels registered with
 * OARLOCK_KERNEL_BROADCAST get inputs of the output's rank whose sizes equal the output's
 * or 1. */
typedef int (*oarlock_kernel_fn)(const oarlock_kernel_ctx *ctx, const oarlock_tensor *outs, int32_t n_outs,
                                 const oarlock_tensor *ins, int32_t n_ins, const oarlock_attr *attrs,
                                 int32_t n_attrs);

enum { OARLOCK_KERNEL_BROADCAST = 1 };

/* One registration: `fn` runs `op` (a primitive, or a composite's fused kernel) when the
 * op's dispatch dtype (its first tensor input's, x's for `where`, the output's for ops
 * without tensor inputs) is `dtype`. Later rows replace earlier ones. */
typedef struct oarlock_kernel_def {
    const char *op;
    int32_t dtype;
    int32_t flags;        /* OARLOCK_KERNEL_BROADCAST or 0 */
    oarlock_kernel_fn fn;
} oarlock_kernel_def;

/* What `properties` fills (strings NUL-terminated, truncated to fit). */
typedef struct oarlock_device_properties {
    char name[128];
    char vendor[64];
    char driver_version[64];
    char runtime_version[64];
    int64_t total_memory;   /* bytes, 0 when unknown */
    int32_t compute_units;
    uint32_t dtypes;        /* bit (1u << oarlock_dtype) for each dtype the device can hold */
} oarlock_device_properties;

/* Reduce operators of the collectives (ABI 1.1). */
typedef enum oarlock_reduce_op {
    OARLOCK_SUM = 0, OARLOCK_AVG = 1, OARLOCK_MAX = 2, OARLOCK_MIN = 3, OARLOCK_PROD = 4
} oarlock_reduce_op;

/* The most arguments the core passes to one compiled kernel's launch. */
#define OARLOCK_MAX_LAUNCH_ARGS 64

/* One argument of a compiled kernel's launch (ABI 1.1). */
typedef enum oarlock_arg_kind { OARLOCK_ARG_BUFFER = 0, OARLOCK_ARG_INT = 1, OARLOCK_ARG_FLOAT = 2 } oarlock_arg_kind;

typedef struct oarlock_launch_arg {
    int32_t kind;         /* oarlock_arg_kind */
    int32_t dtype;        /* BUFFER: its elements; INT/FLOAT: the scalar's (int64, float32, ...) */
    void *data;           /* BUFFER: the buffer from allocate */
    int64_t offset;       /* BUFFER: byte offset of element 0 */
    int64_t i;            /* INT */
    double f;             /* FLOAT */
} oarlock_launch_arg;

typedef struct oarlock_plugin {
    /* -- header ----------------------------------------------------------------------- */
    uint32_t struct_size;   /* in: the core's sizeof(oarlock_plugin); out: the plugin's */
    uint16_t abi_major;     /* out: OARLOCK_ABI_MAJOR as the plugin was compiled */
    uint16_t abi_minor;     /* out: OARLOCK_ABI_MINOR as the plugin was compiled */
    const char *device_type;    /* mandatory: a plain name such as "mydev" */
    const char *version;        /* optional: the plugin's version, shown by `oarlock devices` */
    const char *description;    /* optional */
    const char *(*last_error)(void);   /* mandatory: message of this thread's last failure */

    /* -- devices ---------------------------------------------------------------------- */
    int (*device_count)(int32_t *count);                                      /* mandatory */
    int (*properties)(int32_t device, oarlock_device_properties *props);      /* mandatory */

    /* -- memory ----------------------------------------------------------------------- */
    int (*allocate)(int32_t device, uint64_t nbytes, void **buffer);          /* mandatory; nbytes may be 0 */
    int (*free)(int32_t device, void *buffer);                                /* mandatory */
    int (*memset)(int32_t device, void *buffer, uint64_t offset, int32_t value, uint64_t nbytes,
                  void *stream);                                              /* mandatory */

    /* -- copies (`blocking` 0: may still run on return; the core keeps host memory alive
     *    until the stream is synchronized) ------------------------------------------------ */
    int (*copy_h2d)(int32_t device, void *dst, uint64_t dst_offset, const void *src, uint64_t nbytes,
                    void *stream, int32_t blocking);                          /* mandatory */
    int (*copy_d2h)(int32_t device, void *dst, const void *src, uint64_t src_offset, uint64_t nbytes,
                    void *stream, int32_t blocking);                          /* mandatory */
    int (*copy_d2d)(int32_t device, void *dst, uint64_t dst_offset, const void *src,
                    uint64_t src_offset, uint64_t nbytes, void *stream, int32_t blocking); /* mandatory */

    /* -- streams (optional, all or none: default one synchronous stream, NULL) ----------- */
    int (*default_stream)(int32_t device, void **stream);
    int (*create_stream)(int32_t device, void **stream);
    int (*destroy_stream)(int32_t device, void *stream);
    int (*synchronize_stream)(void *stream);
    int (*query_stream)(void *stream, int32_t *done);
    int (*stream_wait_event)(void *stream, void *event);

    /* -- events ----------------------------------------------------------------------- */
    int (*create_event)(int32_t device, void **event);                        /* mandatory */
    int (*destroy_event)(void *event);                                        /* optional */
    int (*record_event)(void *event, void *stream);                           /* mandatory */
    int (*synchronize_event)(void *event);                                    /* mandatory */
    int (*query_event)(void *event, int32_t *done);          /* optional: synchronize, then 1 */
    int (*elapsed_ms)(void *start, void *end, double *ms);                    /* mandatory */
    int (*synchronize)(int32_t device);                      /* optional: nothing to wait for */

    /* -- kernels ---------------------------------------------------------------------- */
    const oarlock_kernel_def *kernels;                                        /* mandatory */
    int32_t kernel_count;

    /* -- collectives (ABI 1.1; optional, all or none) --------------------------------- */
    /* NCCL-shaped collectives on device buffers (handle + byte offset), `count` elements of
     * `dtype`, enqueued on `stream` after the work queued there (NULL without streams).
     * `op` is an oarlock_reduce_op; AVG of integers rounds down (floor), of bool is not asked
     * for; SUM/MAX of bool is "or", PROD/MIN "and". `send` and `recv` may be the same buffer
     * (all_reduce, reduce). A peer that does not arrive within the communicator's timeout
     * fails the call with a message naming the missing rank(s). Any failure other than
     * OUT_OF_MEMORY / INVALID_ARGUMENT becomes CommunicationError.
     *
     * Bootstrap: a native communicator is never the host one. For each group, rank 0 calls
     * comm_unique_id, the core sends the OARLOCK_UNIQUE_ID_BYTES bytes to every rank over
     * the host communicator (the cpu plugin's, on MPI), then every member calls comm_create
     * at the same time. Without these entries the core stages collectives through host
     * memory (copy_d2h, the host communicator, copy_h2d). */
    int (*comm_unique_id)(int32_t device, uint8_t *id);     /* fill OARLOCK_UNIQUE_ID_BYTES bytes */
    int (*comm_create)(int32_t device, const uint8_t *id, int32_t rank, int32_t size, double timeout_s,
                       void **comm);
    int (*comm_destroy)(void *comm);
    int (*comm_set_timeout)(void *comm, double timeout_s);  /* seconds a call waits for a peer */
    int (*all_reduce)(void *comm, void *send, uint64_t send_offset, void *recv, uint64_t recv_offset,
                      uint64_t count, int32_t dtype, int32_t op, void *stream);
    int (*reduce)(void *comm, void *send, uint64_t send_offset, void *recv, uint64_t recv_offset,
                  uint64_t count, int32_t dtype, int32_t op, int32_t root, void *stream); /* recv: root only */
    int (*broadcast)(void *comm, void *buf, uint64_t offset, uint64_t count, int32_t dtype, int32_t root,
                     void *stream);
    int (*all_gather)(void *comm, void *send, uint64_t send_offset, void *recv, uint64_t recv_offset,
                      uint64_t send_count, int32_t dtype, void *stream);    /* recv: size x send_count, rank-major */
    int (*reduce_scatter)(void *comm, void *send, uint64_t send_offset, void *recv, uint64_t recv_offset,
                          uint64_t recv_count, int32_t dtype, int32_t op, void *stream); /* send: size x recv_count */
    int (*all_to_all)(void *comm, void *send, uint64_t send_offset, void *recv, uint64_t recv_offset,
                      uint64_t count, int32_t dtype, void *stream);  /* count per rank: chunk j goes to rank j */
    int (*send)(void *comm, void *buf, uint64_t offset, uint64_t count, int32_t dtype, int32_t peer, void *stream);
    int (*recv)(void *comm, void *buf, uint64_t offset, uint64_t count, int32_t dtype, int32_t peer, void *stream);
    int (*barrier)(void *comm);

    /* -- compile access (ABI 1.1; optional, all or none) ------------------------------ */
    /* The core generates kernel source in `kernel_language` and builds it through its kernel
     * cache: `compile` returns bytes the core stores (memory and disk) and hands back to `load`
     * later, so the plugin caches nothing. The calling convention of generated kernels
     * (adapter_api/compiler.py): parameters in0, in1, ..., out0, out1, ..., then the row count
     * last (int64_t in C); `args` of `launch` come in that order, tensors as BUFFER (handle +
     * byte offset of element 0), the row count as INT. Generated primitives (the core writes
     * them for every element-wise, cast, reduction and creation primitive your kernel table
     * lacks, so expect `compile` calls even with a full table of kernels) have a symbolic row
     * length `n` after `rows`; in "c" one library holds a batch of them behind one entry
     *     void entry(int64_t k, void *p0, void *p1, void *p2, void *p3, int64_t rows, int64_t n)
     * so `args` are INT k (the kernel in the batch), four BUFFERs (inputs then outputs; unused
     * ones repeat the last), INT rows, INT n. `options` of `compile` are the core's build
     * options, part of the cache key: none for "c" and "cuda", "-cl-unsafe-math-optimizations"
     * for OpenCL C on CPU devices. `grid` is (rows) for "c" (the function
     * loops over rows itself) and (rows * L) with `local` (L) for "opencl-c" and "cuda".
     * A failing `compile` leaves the compiler's log in last_error (the core shows it with the
     * source around the failing line): CompileError; a failing `launch`: KernelError.
     * The core passes at most OARLOCK_MAX_LAUNCH_ARGS arguments to one `launch` (a merged
     * kernel of many groups is cut to fit), so a fixed array of that size holds them. */
    const char *kernel_language;   /* "c", "opencl-c" or "cuda" */
    int (*compiler_identity)(int32_t device, char *buf, uint64_t size); /* changes whenever output would */
    int (*compile)(int32_t device, const char *source, const char *entry, const char *const *options,
                   int32_t n_options, void **binary, uint64_t *nbytes);
    int (*free_binary)(void *binary);                        /* what compile returned, once copied */
    int (*load)(int32_t device, const void *binary, uint64_t nbytes, const char *entry, void **program);
    int (*launch)(void *program, const oarlock_launch_arg *args, int32_t n_args, const int64_t *grid,
                  int32_t grid_dims, const int64_t *local, int32_t local_dims, void *stream);
    int (*free_program)(void *program);

    /* Later minor versions append entries here, taken from `reserved` (the table's size stays). */
    void *reserved[4];
} oarlock_plugin;

int oarlock_plugin_init(oarlock_plugin *plugin);

/* cdef:end */

/* -- helpers for plugin authors (not part of the ABI) ------------------------------------ */

/* Start of oarlock_plugin_init: refuse a core whose table is smaller than ours. */
#define OARLOCK_PLUGIN_CHECK(p)                                              \
    do {                                                                     \
        if ((p) == 0 || (p)->struct_size < sizeof(oarlock_plugin)) return OARLOCK_ERROR; \
        (p)->struct_size = (uint32_t)sizeof(oarlock_plugin);                 \
        (p)->abi_major = OARLOCK_ABI_MAJOR;                                  \
        (p)->abi_minor = OARLOCK_ABI_MINOR;                                  \
    } while (0)

/* The attribute called `name`, or NULL. */
static inline const oarlock_attr *oarlock_find_attr(const oarlock_attr *attrs, int32_t n, const char *name) {
    for (int32_t k = 0; k < n; k++) {
        const char *a = attrs[k].name, *b = name;
        while (*a && *a == *b) { a++; b++; }
        if (*a == *b) return &attrs[k];
    }
    return 0;
}

/* Number of elements of a tensor. */
static inline int64_t oarlock_numel(const oarlock_tensor *t) {
    int64_t n = 1;
    for (int32_t d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

/* Host address of element 0, for devices whose buffers are host pointers. */
#define OARLOCK_HOST_PTR(t) ((void *)((char *)(t)->data + (t)->offset))

#ifdef __cplusplus
}
#endif

#endif /* OARLOCK_DEVICE_H */

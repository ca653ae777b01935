/* nativedev: an Oarlock device plugin written in C against oarlock_device.h.
 *
 * Device memory is host memory (aligned malloc), work runs synchronously on one implicit
 * stream, matmul splits its rows over a few POSIX threads. Kernels are plain C loops over
 * float32, float64, int32, int64 and bool; floating-point math runs in double and is rounded
 * once, integer math wraps like numpy. What each primitive computes: adapter_api/primitives.py.
 * This file is the runtime and the kernels; collectives.c and compiler.c add the ABI 1.1
 * groups (collectives over shared memory, compile access for "c").
 */
#include "nativedev.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KERNEL(name) static int name(const oarlock_kernel_ctx *ctx, const oarlock_tensor *o, int32_t n_outs, \
                                     const oarlock_tensor *in, int32_t n_ins, const oarlock_attr *at, int32_t n_at)
#define PTR(t) ((char *)OARLOCK_HOST_PTR(t))
enum { F32 = OARLOCK_FLOAT32, F64 = OARLOCK_FLOAT64, I32 = OARLOCK_INT32, I64 = OARLOCK_INT64, B8 = OARLOCK_BOOL };
static const int64_t MEMORY = 8LL << 30; /* what the device claims to have */
static const int THREADS = 4;

/* -- errors: one thread-local message (long enough for a compiler's log) -------------------- */
static _Thread_local char message[16384];

int nd_fail(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return status;
}
static const char *last_error(void) { return message; }

/* -- runtime ------------------------------------------------------------------------------- */
static int device_count(int32_t *n) { *n = 1; return OARLOCK_OK; }

static int properties(int32_t dev, oarlock_device_properties *p) {
    snprintf(p->name, sizeof p->name, "NativeDev 1");
    snprintf(p->vendor, sizeof p->vendor, "Example Corp");
    snprintf(p->driver_version, sizeof p->driver_version, "nativedev 0.1");
    snprintf(p->runtime_version, sizeof p->runtime_version, "C, %d threads", THREADS);
    p->total_memory = MEMORY;
    p->compute_units = THREADS;
    p->dtypes = 1u << B8 | 1u << I32 | 1u << I64 | 1u << F32 | 1u << F64;
    return OARLOCK_OK;
}

static int allocate(int32_t dev, uint64_t nbytes, void **buffer) {
    if (nbytes > (uint64_t)MEMORY)
        return nd_fail(OARLOCK_OUT_OF_MEMORY, "out of memory: %llu bytes asked, the device has %lld",
                    (unsigned long long)nbytes, (long long)MEMORY);
    *buffer = aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
    return *buffer ? OARLOCK_OK : nd_fail(OARLOCK_OUT_OF_MEMORY, "out of memory: malloc of %llu bytes failed",
                                       (unsigned long long)nbytes);
}
static int release(int32_t dev, void *buffer) { free(buffer); return OARLOCK_OK; }
static int fill_bytes(int32_t dev, void *b, uint64_t off, int32_t v, uint64_t n, void *s) {
    memset((char *)b + off, v, n);
    return OARLOCK_OK;
}
static int copy_h2d(int32_t dev, void *dst, uint64_t off, const void *src, uint64_t n, void *s, int32_t blocking) {
    memcpy((char *)dst + off, src, n);
    return OARLOCK_OK;
}
static int copy_d2h(int32_t dev, void *dst, const void *src, uint64_t off, uint64_t n, void *s, int32_t blocking) {
    memcpy(dst, (const char *)src + off, n);
    return OARLOCK_OK;
}
static int copy_d2d(int32_t dev, void *dst, uint64_t doff, const void *src, uint64_t soff, uint64_t n, void *s,
                    int32_t blocking) {
    memmove((char *)dst + doff, (const char *)src + soff, n);
    return OARLOCK_OK;
}

/* Events: work is finished when a call returns, so an event only remembers when it was recorded. */
static int create_event(int32_t dev, void **event) {
    *event = calloc(1, sizeof(double));
    return *event ? OARLOCK_OK : nd_fail(OARLOCK_OUT_OF_MEMORY, "out of memory creating an event");
}
static int destroy_event(void *event) { free(event); return OARLOCK_OK; }
static int record_event(void *event, void *stream) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *(double *)event = ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
    return OARLOCK_OK;
}
static int synchronize_event(void *event) { return OARLOCK_OK; }
static int elapsed_ms(void *start, void *end, double *ms) {
    *ms = *(double *)end - *(double *)start;
    return OARLOCK_OK;
}

/* -- element access: every dtype read as double or int64, written back rounded or wrapped -- */
static int is_float(int dt) { return dt == F32 || dt == F64; }
int64_t nd_itemsize(int dt) {
    static const int8_t size[] = {1, 1, 2, 4, 8, 1, 2, 2, 4, 8}; /* in oarlock_dtype order */
    return dt >= 0 && dt < (int)sizeof size ? size[dt] : 0;
}

static double ldf(const char *p, int dt, int64_t k) {
    switch (dt) {
    case F32: return ((const float *)p)[k];
    case F64: return ((const double *)p)[k];
    case I32: return ((const int32_t *)p)[k];
    case I64: return (double)((const int64_t *)p)[k];
    default: return ((const uint8_t *)p)[k];
    }
}
static int64_t ldi(const char *p, int dt, int64_t k) {
    switch (dt) {
    case F32: return (int64_t)((const float *)p)[k];
    case F64: return (int64_t)((const double *)p)[k];
    case I32: return ((const int32_t *)p)[k];
    case I64: return ((const int64_t *)p)[k];
    default: return ((const uint8_t *)p)[k];
    }
}
static void stf(char *p, int dt, int64_t k, double v) {
    switch (dt) {
    case F32: ((float *)p)[k] = (float)v; break;
    case F64: ((double *)p)[k] = v; break;
    case I32: ((int32_t *)p)[k] = (int32_t)v; break;
    case I64: ((int64_t *)p)[k] = (int64_t)v; break;
    default: ((uint8_t *)p)[k] = v != 0;
    }
}
static void sti(char *p, int dt, int64_t k, int64_t v) {
    switch (dt) {
    case F32: ((float *)p)[k] = (float)v; break;
    case F64: ((double *)p)[k] = (double)v; break;
    case I32: ((int32_t *)p)[k] = (int32_t)(uint32_t)(uint64_t)v; break; /* wraps */
    case I64: ((int64_t *)p)[k] = v; break;
    default: ((uint8_t *)p)[k] = v != 0;
    }
}

static const oarlock_attr *attr(const oarlock_attr *at, int32_t n, const char *name) {
    static const oarlock_attr none = {0};
    const oarlock_attr *a = oarlock_find_attr(at, n, name);
    return a ? a : &none;
}
static double num(const oarlock_attr *a) { return a->kind == OARLOCK_ATTR_FLOAT ? a->f : (double)a->i; }
static void store_num(char *p, int dt, int64_t k, const oarlock_attr *a) {
    if (a->kind == OARLOCK_ATTR_FLOAT) stf(p, dt, k, a->f); else sti(p, dt, k, a->i);
}

/* Row-major strides in elements. */
static void strides(const oarlock_tensor *t, int64_t *st) {
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) { st[d] = s; s *= t->shape[d]; }
}

/* -- elementwise: inputs broadcast against the output (same rank, sizes equal or 1) -------- */
typedef struct { int nd, n; int64_t shape[8], idx[8], st[3][8], off[3]; } walk;

static void walk_init(walk *w, const oarlock_tensor *out, const oarlock_tensor *ins, int n) {
    memset(w, 0, sizeof *w);
    w->nd = out->ndim, w->n = n;
    for (int j = 0; j < n; j++) {
        int64_t st[8];
        strides(&ins[j], st);
        for (int d = 0; d < w->nd; d++) w->st[j][d] = ins[j].shape[d] == 1 ? 0 : st[d];
    }
    memcpy(w->shape, out->shape, sizeof w->shape);
}
static void walk_next(walk *w) {
    for (int d = w->nd - 1; d >= 0; d--) {
        w->idx[d]++;
        for (int j = 0; j < w->n; j++) w->off[j] += w->st[j][d];
        if (w->idx[d] < w->shape[d]) return;
        for (int j = 0; j < w->n; j++) w->off[j] -= w->st[j][d] * w->shape[d];
        w->idx[d] = 0;
    }
}

typedef double (*f1)(double);
typedef int64_t (*i1)(int64_t);
typedef double (*f2)(double, double);
typedef int64_t (*i2)(int64_t, int64_t);

static int unary(const oarlock_tensor *o, const oarlock_tensor *x, f1 ff, i1 fi) {
    int64_t n = oarlock_numel(o);
    char *po = PTR(o), *px = PTR(x);
    if (is_float(x->dtype) || !fi)
        for (int64_t k = 0; k < n; k++) stf(po, o->dtype, k, ff(ldf(px, x->dtype, k)));
    else
        for (int64_t k = 0; k < n; k++) sti(po, o->dtype, k, fi(ldi(px, x->dtype, k)));
    return OARLOCK_OK;
}

static int binary(const oarlock_tensor *o, const oarlock_tensor *in, f2 ff, i2 fi) {
    walk w;
    walk_init(&w, o, in, 2);
    int64_t n = oarlock_numel(o);
    char *po = PTR(o), *pa = PTR(&in[0]), *pb = PTR(&in[1]);
    int da = in[0].dtype, db = in[1].dtype;
    for (int64_t k = 0; k < n; k++, walk_next(&w)) {
        if (is_float(da)) stf(po, o->dtype, k, ff(ldf(pa, da, w.off[0]), ldf(pb, db, w.off[1])));
        else sti(po, o->dtype, k, fi(ldi(pa, da, w.off[0]), ldi(pb, db, w.off[1])));
    }
    return OARLOCK_OK;
}

/* unary functions */
static double f_neg(double x) { return -x; }
static int64_t i_neg(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
static int64_t i_abs(int64_t x) { return x < 0 ? i_neg(x) : x; }
static double f_sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x; }
static int64_t i_sign(int64_t x) { return (x > 0) - (x < 0); }
static double f_rsqrt(double x) { return 1.0 / sqrt(x); }
static int64_t i_not(int64_t x) { return !x; }

/* binary functions; integer ones wrap (unsigned arithmetic) like numpy */
static double f_add(double a, double b) { return a + b; }
static double f_sub(double a, double b) { return a - b; }
static double f_mul(double a, double b) { return a * b; }
static double f_div(double a, double b) { return a / b; }
static int64_t i_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t i_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t i_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static int64_t i_pow(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? (b & 1 ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)a;
    for (; b; b >>= 1, x *= x) if (b & 1) r *= x;
    return (int64_t)r;
}
static double f_max(double a, double b) { return isnan(a) || a > b ? a : b; }
static double f_min(double a, double b) { return isnan(a) || a < b ? a : b; }
static int64_t i_max(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t i_min(int64_t a, int64_t b) { return a < b ? a : b; }
/* numpy's npy_divmod: the quotient rounded toward -inf, the remainder with the sign of b */
static double f_floordiv(double a, double b) {
    if (b == 0) return a / b;
    double mod = fmod(a, b), div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1.0;
    if (div == 0) return copysign(0.0, a / b);
    double fl = floor(div);
    return div - fl > 0.5 ? fl + 1.0 : fl;
}
static double f_mod(double a, double b) {
    if (b == 0) return fmod(a, b);
    double mod = fmod(a, b);
    if (mod != 0) return (b < 0) != (mod < 0) ? mod + b : mod;
    return copysign(0.0, b);
}
static int64_t i_floordiv(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return i_neg(a);
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}
static int64_t i_mod(int64_t a, int64_t b) {
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}
static double f_eq(double a, double b) { return a == b; }
static double f_ne(double a, double b) { return a != b; }
static double f_lt(double a, double b) { return a < b; }
static double f_le(double a, double b) { return a <= b; }
static double f_gt(double a, double b) { return a > b; }
static double f_ge(double a, double b) { return a >= b; }
static int64_t i_eq(int64_t a, int64_t b) { return a == b; }
static int64_t i_ne(int64_t a, int64_t b) { return a != b; }
static int64_t i_lt(int64_t a, int64_t b) { return a < b; }
static int64_t i_le(int64_t a, int64_t b) { return a <= b; }
static int64_t i_gt(int64_t a, int64_t b) { return a > b; }
static int64_t i_ge(int64_t a, int64_t b) { return a >= b; }
static int64_t i_and(int64_t a, int64_t b) { return a && b; }
static int64_t i_or(int64_t a, int64_t b) { return a || b; }

#define UNARY(name, ff, fi) KERNEL(k_##name) { return unary(o, in, ff, fi); }
#define BINARY(name, ff, fi) KERNEL(k_##name) { return binary(o, in, ff, fi); }
UNARY(neg, f_neg, i_neg) UNARY(abs, fabs, i_abs) UNARY(sign, f_sign, i_sign) UNARY(exp, exp, 0) UNARY(log, log, 0)
UNARY(sqrt, sqrt, 0) UNARY(rsqrt, f_rsqrt, 0) UNARY(sin, sin, 0) UNARY(cos, cos, 0) UNARY(tanh, tanh, 0)
UNARY(erf, erf, 0) UNARY(floor, floor, 0) UNARY(ceil, ceil, 0) UNARY(logical_not, 0, i_not)
BINARY(add, f_add, i_add) BINARY(sub, f_sub, i_sub) BINARY(mul, f_mul, i_mul) BINARY(div, f_div, 0)
BINARY(pow, pow, i_pow) BINARY(maximum, f_max, i_max) BINARY(minimum, f_min, i_min)
BINARY(floor_divide, f_floordiv, i_floordiv) BINARY(remainder, f_mod, i_mod)
BINARY(eq, f_eq, i_eq) BINARY(ne, f_ne, i_ne) BINARY(lt, f_lt, i_lt) BINARY(le, f_le, i_le)
BINARY(gt, f_gt, i_gt) BINARY(ge, f_ge, i_ge) BINARY(logical_and, 0, i_and) BINARY(logical_or, 0, i_or)

/* bool add and mul are or and and: i_add/i_mul give 2 or 1, stored as True */

KERNEL(k_where) { /* cond, x, y; copies the chosen element's bytes */
    walk w;
    walk_init(&w, o, in, 3);
    int64_t n = oarlock_numel(o), sz = nd_itemsize(o->dtype);
    char *po = PTR(o), *pc = PTR(&in[0]), *px = PTR(&in[1]), *py = PTR(&in[2]);
    for (int64_t k = 0; k < n; k++, walk_next(&w))
        memcpy(po + k * sz, pc[w.off[0]] ? px + w.off[1] * sz : py + w.off[2] * sz, sz);
    return OARLOCK_OK;
}

/* float -> int: truncate toward zero, saturate to the target's range, NaN -> 0 (C leaves an
   out-of-range conversion undefined: test first; both bounds are powers of two, exact) */
static int64_t float_to_int(double v, int to) {
    double hi = to == I32 ? 2147483648.0 : 9223372036854775808.0;
    if (isnan(v)) return 0;
    if (v >= hi) return to == I32 ? INT32_MAX : INT64_MAX;
    if (v < -hi) return to == I32 ? INT32_MIN : INT64_MIN;
    return (int64_t)v;
}

KERNEL(k_cast) { /* float -> int truncates toward zero and saturates; -> bool is x != 0 */
    int to = o->dtype;
    if (to != F32 && to != F64 && to != I32 && to != I64 && to != B8)
        return nd_fail(OARLOCK_NOT_SUPPORTED, "cast to dtype code %d is not supported", to);
    int64_t n = oarlock_numel(o);
    char *po = PTR(o), *px = PTR(in);
    for (int64_t k = 0; k < n; k++) {
        if (to == B8) sti(po, to, k, ldf(px, in->dtype, k) != 0);
        else if (is_float(in->dtype) && !is_float(to)) sti(po, to, k, float_to_int(ldf(px, in->dtype, k), to));
        else if (is_float(in->dtype)) stf(po, to, k, ldf(px, in->dtype, k));
        else sti(po, to, k, ldi(px, in->dtype, k));
    }
    return OARLOCK_OK;
}

/* -- reductions ---------------------------------------------------------------------------- */
enum { SUM, PROD, MAX, MIN };

static int reduce(const oarlock_tensor *o, const oarlock_tensor *x, const oarlock_attr *axes, int how) {
    int nd = x->ndim, flt = is_float(x->dtype);
    int64_t ost[8] = {0}, s = 1, n = oarlock_numel(x), m = oarlock_numel(o), idx[8] = {0}, off = 0;
    int reduced[8] = {0};
    for (int j = 0; j < axes->count; j++) reduced[axes->ints[j]] = 1;
    for (int d = nd - 1; d >= 0; d--) if (!reduced[d]) { ost[d] = s; s *= x->shape[d]; }
    double *af = malloc(sizeof(double) * (m ? m : 1));
    int64_t *ai = malloc(sizeof(int64_t) * (m ? m : 1));
    if (!af || !ai) { free(af); free(ai); return nd_fail(OARLOCK_OUT_OF_MEMORY, "out of memory in a reduction"); }
    for (int64_t k = 0; k < m; k++) {
        af[k] = how == SUM ? -0.0 : how == PROD ? 1.0 : how == MAX ? -INFINITY : INFINITY;
        ai[k] = how == SUM ? 0 : how == PROD ? 1 : how == MAX ? INT64_MIN : INT64_MAX;
    }
    char *px = PTR(x);
    for (int64_t k = 0; k < n; k++) {
        if (flt) {
            double v = ldf(px, x->dtype, k), *a = &af[off];
            *a = how == SUM ? *a + v : how == PROD ? *a * v : how == MAX ? f_max(v, *a) : f_min(v, *a);
        } else {
            int64_t v = ldi(px, x->dtype, k), *a = &ai[off];
            *a = how == SUM ? i_add(*a, v) : how == PROD ? i_mul(*a, v) : how == MAX ? i_max(v, *a) : i_min(v, *a);
        }
        for (int d = nd - 1; d >= 0; d--) {
            off += ost[d];
            if (++idx[d] < x->shape[d]) break;
            off -= ost[d] * x->shape[d];
            idx[d] = 0;
        }
    }
    for (int64_t k = 0; k < m; k++) flt ? stf(PTR(o), o->dtype, k, af[k]) : sti(PTR(o), o->dtype, k, ai[k]);
    free(af);
    free(ai);
    return OARLOCK_OK;
}
KERNEL(k_sum) { return reduce(o, in, attr(at, n_at, "axes"), SUM); }
KERNEL(k_prod) { return reduce(o, in, attr(at, n_at, "axes"), PROD); }
KERNEL(k_max) { return reduce(o, in, attr(at, n_at, "axes"), MAX); }
KERNEL(k_min) { return reduce(o, in, attr(at, n_at, "axes"), MIN); }

/* outer x axis x inner view of x around one axis */
static void split(const oarlock_tensor *x, int axis, int64_t *outer, int64_t *inner) {
    *outer = *inner = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (d < axis) *outer *= x->shape[d];
        if (d > axis) *inner *= x->shape[d];
    }
}

static int argext(const oarlock_tensor *o, const oarlock_tensor *x, int axis, int max) {
    int64_t outer, inner, len = x->ndim ? x->shape[axis] : 1;
    split(x, axis, &outer, &inner);
    char *px = PTR(x);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            int64_t best = 0, base = a * len * inner + b;
            for (int64_t j = 1; j < len; j++) {
                int64_t k = base + j * inner, kb = base + best * inner;
                if (is_float(x->dtype)) { /* the first NaN wins, as in numpy */
                    double v = ldf(px, x->dtype, k), w = ldf(px, x->dtype, kb);
                    if (isnan(w)) break;
                    if (isnan(v) || (max ? v > w : v < w)) best = j;
                } else {
                    int64_t v = ldi(px, x->dtype, k), w = ldi(px, x->dtype, kb);
                    if (max ? v > w : v < w) best = j;
                }
            }
            ((int64_t *)PTR(o))[a * inner + b] = best;
        }
    return OARLOCK_OK;
}
KERNEL(k_argmax) { return argext(o, in, (int)attr(at, n_at, "axis")->i, 1); }
KERNEL(k_argmin) { return argext(o, in, (int)attr(at, n_at, "axis")->i, 0); }

/* -- argsort: a stable bottom-up merge sort of each last-axis row's indices ------------------- */
/* a goes strictly before b; NaN is greater than every number (last ascending, first descending) */
static int sort_before(const char *p, int dt, int64_t a, int64_t b, int desc) {
    if (is_float(dt)) {
        double x = ldf(p, dt, a), y = ldf(p, dt, b);
        if (desc) return !isnan(y) && (isnan(x) || x > y);
        return !isnan(x) && (isnan(y) || x < y);
    }
    int64_t x = ldi(p, dt, a), y = ldi(p, dt, b);
    return desc ? x > y : x < y;
}

KERNEL(k_argsort) {
    int64_t len = in->ndim ? in->shape[in->ndim - 1] : 1, n = oarlock_numel(o);
    int desc = (int)attr(at, n_at, "descending")->i;
    int64_t *tmp = malloc(sizeof(int64_t) * (len ? len : 1));
    if (!tmp) return nd_fail(OARLOCK_OUT_OF_MEMORY, "argsort: out of host memory for %lld indices", (long long)len);
    for (int64_t r = 0; len && r < n / len; r++) {
        int64_t *y = (int64_t *)PTR(o) + r * len, *src = y, *dst = tmp;
        const char *row = PTR(in) + r * len * nd_itemsize(in->dtype);
        for (int64_t i = 0; i < len; i++) y[i] = i;
        for (int64_t w = 1; w < len; w *= 2) {
            for (int64_t s = 0; s < len; s += 2 * w) {
                int64_t i = s, mid = s + w < len ? s + w : len, j = mid, e = s + 2 * w < len ? s + 2 * w : len;
                for (int64_t k = s; k < e; k++) /* the left run wins ties: stable */
                    dst[k] = (j >= e || (i < mid && !sort_before(row, in->dtype, src[j], src[i], desc))) ? src[i++] : src[j++];
            }
            int64_t *t = src; src = dst; dst = t;
        }
        if (src != y) memcpy(y, src, sizeof(int64_t) * len);
    }
    free(tmp);
    return OARLOCK_OK;
}

/* -- matmul: rows split over a few threads --------------------------------------------------- */
typedef struct { const oarlock_tensor *o, *a, *b; int64_t m, k, n, row0, row1; } mm_job;

static void *mm_rows(void *arg) {
    mm_job *j = arg;
    int64_t M = j->m, K = j->k, N = j->n;
    int da = j->a->dtype;
    char *pa = PTR(j->a), *pb = PTR(j->b), *po = PTR(j->o);
    double *acc = malloc(sizeof(double) * (N ? N : 1));
    int64_t *iacc = malloc(sizeof(int64_t) * (N ? N : 1));
    for (int64_t r = j->row0; r < j->row1; r++) { /* r runs over batch x M */
        int64_t bt = r / (M ? M : 1), arow = r * K, bbase = bt * K * N;
        for (int64_t c = 0; c < N; c++) acc[c] = 0.0, iacc[c] = 0;
        for (int64_t q = 0; q < K; q++) {
            if (da == F32) {
                double v = ((float *)pa)[arow + q];
                const float *brow = (const float *)pb + bbase + q * N;
                for (int64_t c = 0; c < N; c++) acc[c] += v * brow[c];
            } else if (is_float(da)) {
                double v = ldf(pa, da, arow + q);
                for (int64_t c = 0; c < N; c++) acc[c] += v * ldf(pb, da, bbase + q * N + c);
            } else {
                int64_t v = ldi(pa, da, arow + q);
                for (int64_t c = 0; c < N; c++) iacc[c] = i_add(iacc[c], i_mul(v, ldi(pb, da, bbase + q * N + c)));
            }
        }
        for (int64_t c = 0; c < N; c++)
            is_float(da) ? stf(po, da, r * N + c, acc[c]) : sti(po, da, r * N + c, iacc[c]);
    }
    free(acc);
    free(iacc);
    return 0;
}

KERNEL(k_matmul) {
    const oarlock_tensor *a = &in[0], *b = &in[1];
    int nd = a->ndim;
    int64_t M = a->shape[nd - 2], K = a->shape[nd - 1], N = b->shape[nd - 1], rows = oarlock_numel(o) / (N ? N : 1);
    if (N == 0) rows = 0;
    int nt = rows * K * N > (1 << 16) ? THREADS : 1, started[8] = {0};
    mm_job jobs[8];
    pthread_t tid[8];
    for (int t = 0; t < nt; t++) jobs[t] = (mm_job){o, a, b, M, K, N, rows * t / nt, rows * (t + 1) / nt};
    for (int t = 1; t < nt; t++) started[t] = pthread_create(&tid[t], 0, mm_rows, &jobs[t]) == 0;
    mm_rows(&jobs[0]);
    for (int t = 1; t < nt; t++) started[t] ? pthread_join(tid[t], 0) : (mm_rows(&jobs[t]), 0);
    return OARLOCK_OK;
}

/* -- layout: everything is a strided copy of elements ---------------------------------------- */
static void strided_copy(int nd, const int64_t *shape, char *dst, const int64_t *dst_st, const char *src,
                         const int64_t *src_st, int64_t sz) {
    int64_t n = 1, idx[8] = {0}, doff = 0, soff = 0;
    for (int d = 0; d < nd; d++) n *= shape[d];
    for (int64_t k = 0; k < n; k++) {
        memcpy(dst + doff * sz, src + soff * sz, sz);
        for (int d = nd - 1; d >= 0; d--) {
            doff += dst_st[d], soff += src_st[d];
            if (++idx[d] < shape[d]) break;
            doff -= dst_st[d] * shape[d], soff -= src_st[d] * shape[d];
            idx[d] = 0;
        }
    }
}

KERNEL(k_copy) { memcpy(PTR(o), PTR(in), oarlock_numel(o) * nd_itemsize(o->dtype)); return OARLOCK_OK; }

KERNEL(k_permute) {
    const oarlock_attr *perm = attr(at, n_at, "perm");
    int64_t ist[8], ost[8], sst[8];
    strides(in, ist);
    strides(o, ost);
    for (int d = 0; d < o->ndim; d++) sst[d] = ist[perm->ints[d]];
    strided_copy(o->ndim, o->shape, PTR(o), ost, PTR(in), sst, nd_itemsize(o->dtype));
    return OARLOCK_OK;
}

KERNEL(k_expand) {
    int64_t ist[8], ost[8];
    strides(in, ist);
    strides(o, ost);
    for (int d = 0; d < o->ndim; d++) if (in->shape[d] == 1) ist[d] = 0;
    strided_copy(o->ndim, o->shape, PTR(o), ost, PTR(in), ist, nd_itemsize(o->dtype));
    return OARLOCK_OK;
}

KERNEL(k_slice) {
    const oarlock_attr *starts = attr(at, n_at, "starts"), *steps = attr(at, n_at, "steps");
    int64_t ist[8], ost[8], base = 0, sz = nd_itemsize(o->dtype);
    strides(in, ist);
    strides(o, ost);
    for (int d = 0; d < o->ndim; d++) base += starts->ints[d] * ist[d], ist[d] *= steps->ints[d];
    strided_copy(o->ndim, o->shape, PTR(o), ost, PTR(in) + base * sz, ist, sz);
    return OARLOCK_OK;
}

KERNEL(k_concat) {
    int axis = (int)attr(at, n_at, "axis")->i;
    int64_t ost[8], at_axis = 0, sz = nd_itemsize(o->dtype);
    strides(o, ost);
    for (int j = 0; j < n_ins; j++) {
        int64_t ist[8];
        strides(&in[j], ist);
        strided_copy(o->ndim, in[j].shape, PTR(o) + at_axis * ost[axis] * sz, ost, PTR(&in[j]), ist, sz);
        at_axis += in[j].shape[axis];
    }
    return OARLOCK_OK;
}

KERNEL(k_pad) {
    const oarlock_attr *pads = attr(at, n_at, "pads");
    int64_t n = oarlock_numel(o), ist[8], ost[8], base = 0, sz = nd_itemsize(o->dtype);
    for (int64_t k = 0; k < n; k++) store_num(PTR(o), o->dtype, k, attr(at, n_at, "value"));
    strides(in, ist);
    strides(o, ost);
    for (int d = 0; d < o->ndim; d++) base += pads->ints[2 * d] * ost[d];
    strided_copy(in->ndim, in->shape, PTR(o) + base * sz, ost, PTR(in), ist, sz);
    return OARLOCK_OK;
}

/* -- indexing: gather, scatter, scatter_add; an index out of range is the caller's error ---- */
static int check_index(const oarlock_tensor *index, int64_t size, int axis) {
    const int64_t *ix = (const int64_t *)PTR(index);
    for (int64_t j = 0, n = oarlock_numel(index); j < n; j++)
        if (ix[j] < 0 || ix[j] >= size)
            return nd_fail(OARLOCK_INVALID_ARGUMENT, "index %lld is out of range [0, %lld) on axis %d; "
                        "clamp or check the indices", (long long)ix[j], (long long)size, axis);
    return OARLOCK_OK;
}

KERNEL(k_gather) {
    int axis = (int)attr(at, n_at, "axis")->i;
    int64_t outer, inner, len = in[0].shape[axis], ni = oarlock_numel(&in[1]), sz = nd_itemsize(o->dtype);
    if (check_index(&in[1], len, axis)) return OARLOCK_INVALID_ARGUMENT;
    split(&in[0], axis, &outer, &inner);
    const int64_t *ix = (const int64_t *)PTR(&in[1]);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t j = 0; j < ni; j++)
            memcpy(PTR(o) + (a * ni + j) * inner * sz, PTR(&in[0]) + (a * len + ix[j]) * inner * sz, inner * sz);
    return OARLOCK_OK;
}

static int scatter(const oarlock_tensor *o, const oarlock_tensor *in, int axis, int add) {
    int64_t outer, inner, len = in[0].shape[axis], ni = oarlock_numel(&in[1]), sz = nd_itemsize(o->dtype);
    if (check_index(&in[1], len, axis)) return OARLOCK_INVALID_ARGUMENT;
    split(&in[0], axis, &outer, &inner);
    memcpy(PTR(o), PTR(&in[0]), oarlock_numel(o) * sz);
    const int64_t *ix = (const int64_t *)PTR(&in[1]);
    char *po = PTR(o), *ps = PTR(&in[2]);
    int dt = o->dtype;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t d0 = (a * len + ix[j]) * inner, s0 = (a * ni + j) * inner;
            if (!add) { memcpy(po + d0 * sz, ps + s0 * sz, inner * sz); continue; }
            for (int64_t c = 0; c < inner; c++)
                is_float(dt) ? stf(po, dt, d0 + c, ldf(po, dt, d0 + c) + ldf(ps, dt, s0 + c))
                             : sti(po, dt, d0 + c, i_add(ldi(po, dt, d0 + c), ldi(ps, dt, s0 + c)));
        }
    return OARLOCK_OK;
}
KERNEL(k_scatter) { return scatter(o, in, (int)attr(at, n_at, "axis")->i, 0); }
KERNEL(k_scatter_add) { return scatter(o, in, (int)attr(at, n_at, "axis")->i, 1); }

/* -- creation ---------------------------------------------------------------------------------- */
KERNEL(k_full) {
    const oarlock_attr *v = attr(at, n_at, "value");
    for (int64_t k = 0, n = oarlock_numel(o); k < n; k++) store_num(PTR(o), o->dtype, k, v);
    return OARLOCK_OK;
}

KERNEL(k_arange) {
    const oarlock_attr *start = attr(at, n_at, "start"), *step = attr(at, n_at, "step");
    for (int64_t k = 0, n = oarlock_numel(o); k < n; k++)
        is_float(o->dtype) ? stf(PTR(o), o->dtype, k, num(start) + k * num(step))
                           : sti(PTR(o), o->dtype, k, i_add((int64_t)num(start), i_mul(k, (int64_t)num(step))));
    return OARLOCK_OK;
}

/* Philox4x32-10 as adapter_api/primitives.py specifies it. */
KERNEL(k_philox_uniform) {
    uint64_t seed = (uint64_t)attr(at, n_at, "seed")->i, offset = (uint64_t)attr(at, n_at, "offset")->i;
    int64_t n = oarlock_numel(o);
    for (int64_t blk = 0; blk * 4 < n; blk++) {
        uint64_t ctr = offset + (uint64_t)blk;
        uint32_t c[4] = {(uint32_t)ctr, (uint32_t)(ctr >> 32), 0, 0}, k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
        for (int r = 0; r < 10; r++) {
            uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
            c[0] = n0, c[1] = (uint32_t)p1, c[2] = n2, c[3] = (uint32_t)p0;
            k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
        }
        for (int j = 0; j < 4 && blk * 4 + j < n; j++) stf(PTR(o), o->dtype, blk * 4 + j, (c[j] >> 8) * 0x1p-24);
    }
    return OARLOCK_OK;
}

/* -- the kernel table: op x dtype ------------------------------------------------------------- */
#define ROW(op, dt, fn) {op, dt, OARLOCK_KERNEL_BROADCAST, fn}
#define FLOATS(op, fn) ROW(op, F32, fn), ROW(op, F64, fn)
#define NUMS(op, fn) FLOATS(op, fn), ROW(op, I32, fn), ROW(op, I64, fn)
#define ALLS(op, fn) NUMS(op, fn), ROW(op, B8, fn)

static const oarlock_kernel_def KERNELS[] = {
    NUMS("neg", k_neg), NUMS("abs", k_abs), NUMS("sign", k_sign), FLOATS("exp", k_exp), FLOATS("log", k_log),
    FLOATS("sqrt", k_sqrt), FLOATS("rsqrt", k_rsqrt), FLOATS("sin", k_sin), FLOATS("cos", k_cos),
    FLOATS("tanh", k_tanh), FLOATS("erf", k_erf), FLOATS("floor", k_floor), FLOATS("ceil", k_ceil),
    ROW("logical_not", B8, k_logical_not), ALLS("add", k_add), NUMS("sub", k_sub), ALLS("mul", k_mul),
    FLOATS("div", k_div), NUMS("pow", k_pow), ALLS("maximum", k_maximum), ALLS("minimum", k_minimum),
    NUMS("floor_divide", k_floor_divide), NUMS("remainder", k_remainder), ALLS("eq", k_eq), ALLS("ne", k_ne),
    ALLS("lt", k_lt), ALLS("le", k_le), ALLS("gt", k_gt), ALLS("ge", k_ge), ROW("logical_and", B8, k_logical_and),
    ROW("logical_or", B8, k_logical_or), ALLS("where", k_where), ALLS("cast", k_cast), NUMS("sum", k_sum),
    NUMS("prod", k_prod), ALLS("max", k_max), ALLS("min", k_min), ALLS("argmax", k_argmax),
    ALLS("argmin", k_argmin), ALLS("argsort", k_argsort), NUMS("matmul", k_matmul), ALLS("permute", k_permute), ALLS("expand", k_expand),
    ALLS("slice", k_slice), ALLS("concat", k_concat), ALLS("pad", k_pad), ALLS("gather", k_gather),
    NUMS("scatter_add", k_scatter_add), ALLS("scatter", k_scatter), ALLS("full", k_full), NUMS("arange", k_arange),
    FLOATS("philox_uniform", k_philox_uniform), ALLS("copy", k_copy),
};

int oarlock_plugin_init(oarlock_plugin *p) {
    OARLOCK_PLUGIN_CHECK(p);
    p->device_type = "nativedev";
    p->version = "0.1.0";
    p->description = "host memory, C kernels";
    p->last_error = last_error;
    p->device_count = device_count;
    p->properties = properties;
    p->allocate = allocate;
    p->free = release;
    p->memset = fill_bytes;
    p->copy_h2d = copy_h2d;
    p->copy_d2h = copy_d2h;
    p->copy_d2d = copy_d2d;
    p->create_event = create_event;
    p->destroy_event = destroy_event;
    p->record_event = record_event;
    p->synchronize_event = synchronize_event;
    p->elapsed_ms = elapsed_ms;
    p->kernels = KERNELS;
    p->kernel_count = (int32_t)(sizeof KERNELS / sizeof KERNELS[0]);
    nd_collectives(p);
    nd_compiler(p);
    return OARLOCK_OK;
}

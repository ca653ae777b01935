/* The eager fast path of binary tensor operators (x + y, x * y, ...), a CPython extension.
 *
 * A FastBinary wraps an op's Python function (the slow path) and, for the one case where the
 * Python path provably does nothing but look up a kernel, allocate the output and call the
 * kernel, does that in C:
 *   both operands exactly of the Tensor type, one dtype, one device, one shape, materialised
 *   native views (so no distributed tensor: its ops go to the interceptor); no AMP policy, no tracer, no profiler, no poison
 *   mode, and either grad mode off or both operands stop_gradient (no autograd record).
 * The operators: + - * / and the comparisons (one per op), and float + - * / x (reflected: the
 * kernel takes the float's constant first, as the Python path's operands); an op whose Python
 * function does more for some dtypes gives its own resolver (divide: no plan for integers);
 * a unary one (-x) takes one operand, its resolver called (op, x, x).
 * Everything else (and every error) is the slow path's: the wrapped function is called with
 * the same arguments. The kernel, allocator, view function and kernel context come from a
 * Python resolver (dispatch.fast_binary_plan) per (op, dtype, device), cached here until the
 * generation changes (a plugin registered, a stream changed: dispatch bumps it).
 *
 * The core never imports a plugin: this file calls the Python callables it is handed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* ---- configuration, set once by configure() ---- */
static PyTypeObject *tensor_type;   /* framework Tensor (exact type only) */
static Py_ssize_t off_block, off_offset, off_shape, off_dtype, off_device, off_nv, off_node, off_stop;
static PyObject *resolver;          /* fn(op, x, y) -> plan tuple | None */
static PyObject *failed;            /* fn(op, plan, ins, exc) -> outs list (or raises) */
static PyObject *interceptors;      /* dispatch.INTERCEPTORS (a list, mutated in place) */
static PyObject *profiling_dict;    /* the profiling module's globals: "ACTIVE" */
static PyObject *active_key;
static PyObject *off_vars;          /* tuple of ContextVars that must all be None/False */
static PyObject *grad_var;          /* autograd.GRAD_ENABLED */
static PyObject *handle_name, *zero, *minus_one;
/* tensor op float: ops.elementwise's plan resolver, its constants' cache and maker */
static PyObject *scalar_resolver, *const_cache, *const_fn, *s_num, *s_name;
/* the caching allocator's plain case (allocator.py: CachingAllocator.malloc's pool hit) */
static PyTypeObject *allocator_type, *block_type;
static PyObject *allocator_globals;  /* "WATCH" */
static Py_ssize_t off_b_handle, off_b_size, off_b_allocator, off_b_stream, off_b_uses, off_b_written;
static Py_ssize_t off_a_passthrough, off_a_stream, off_a_free, off_a_deferred, off_a_multi, off_a_allocated,
    off_a_peak, off_a_requests, off_a_hits;
static PyObject *s_watch;
static unsigned long generation = 1;
static int configured = 0;

/* plan: (entry, kernel fn, allocator, malloc, view, ctx, out dtype, itemsize) */
enum { P_ENTRY, P_FN, P_ALLOC, P_MALLOC, P_VIEW, P_CTX, P_DTYPE, P_ITEMSIZE, P_LEN };

#define NCACHE 4
typedef struct {
    PyObject *dtype;  /* borrowed identity keys, kept alive by plan (or negative: dtype/device refs held) */
    PyObject *device;
    PyObject *plan;   /* tuple, or Py_None: not eligible */
    unsigned long gen;
} CacheSlot;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *op;
    PyObject *slow;
    PyObject *dict;
    PyObject *resolver;       /* this op's own plan resolver (tensor op tensor), or NULL: the global one */
    int reflected;            /* __radd__ & co: (x, v) runs op(v, x) — only for a float v here */
    int unary;                /* __neg__: slow(x), the plan from the resolver called (op, x, x) */
    CacheSlot cache[NCACHE];  /* tensor op tensor */
    CacheSlot scache[NCACHE]; /* tensor op float */
    int next, snext;
    Py_ssize_t fast_calls;
} FastBinary;

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

static int member_offset(PyTypeObject *t, const char *name, Py_ssize_t *out) {
    PyObject *d = PyDict_GetItemString(t->tp_dict, name);
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "[dispatch] %s has no slot '%s'", t->tp_name, name);
        return -1;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    if (m->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "[dispatch] %s slot '%s' is not an object slot", t->tp_name, name);
        return -1;
    }
    *out = m->offset;
    return 0;
}

/* the int in o's slot at off, plus delta; 0, or -1 with an error. *result: the new value (borrowed) */
static int slot_add(PyObject *o, Py_ssize_t off, Py_ssize_t delta, PyObject **result) {
    PyObject *v = SLOT(o, off);
    if (v == NULL) {
        PyErr_SetString(PyExc_AttributeError, "[memory] an allocator counter is unset");
        return -1;
    }
    int overflow = 1;
    long long cur = PyLong_CheckExact(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : 0;
    PyObject *nv;
    if (!overflow && !(cur == -1 && PyErr_Occurred())) {
        nv = PyLong_FromLongLong(cur + delta);
    } else { /* a huge count, or not an int: Python's arithmetic */
        if (PyErr_Occurred()) return -1;
        PyObject *dv = PyLong_FromSsize_t(delta);
        if (dv == NULL) return -1;
        nv = PyNumber_Add(v, dv);
        Py_DECREF(dv);
    }
    if (nv == NULL) return -1;
    SLOT(o, off) = nv;
    Py_DECREF(v);
    if (result != NULL) *result = nv;
    return 0;
}

/* CachingAllocator.malloc(nbytes) where it is a pool hit on one stream and nothing watches:
 * the same block, statistics and Block object; the Python method everywhere else. */
static PyObject *allocate(PyObject *alloc, PyObject *malloc_fn, Py_ssize_t nbytes) {
    PyObject *key = NULL, *handle = NULL, *blk = NULL;
    if (nbytes <= 0 || nbytes >= (1 << 20) || Py_TYPE(alloc) != allocator_type) goto slow;
    PyObject *watch = PyDict_GetItemWithError(allocator_globals, s_watch);
    if (watch != Py_None) goto slow_clear;
    PyObject *deferred = SLOT(alloc, off_a_deferred), *free = SLOT(alloc, off_a_free);
    PyObject *stream = SLOT(alloc, off_a_stream);
    if (SLOT(alloc, off_a_passthrough) != Py_False || deferred == NULL || PyObject_Length(deferred) != 0 ||
        free == NULL || !PyDict_Check(free) || stream == NULL)
        goto slow_clear;
    Py_ssize_t size = (nbytes + 511) & ~(Py_ssize_t)511;
    key = PyLong_FromSsize_t(size);
    if (key == NULL) goto error;
    PyObject *pool = PyDict_GetItemWithError(free, key);
    if (pool == NULL || !PyList_CheckExact(pool) || PyList_GET_SIZE(pool) == 0) goto slow_clear;
    Py_ssize_t n = PyList_GET_SIZE(pool);
    handle = PyList_GET_ITEM(pool, n - 1);
    Py_INCREF(handle);
    if (PyList_SetSlice(pool, n - 1, n, NULL) < 0) goto error;
    PyObject *allocated, *peak;
    if (slot_add(alloc, off_a_requests, 1, NULL) < 0 || slot_add(alloc, off_a_hits, 1, NULL) < 0 ||
        slot_add(alloc, off_a_allocated, size, &allocated) < 0)
        goto error;
    peak = SLOT(alloc, off_a_peak);
    if (peak == NULL) goto error;
    int more = PyObject_RichCompareBool(allocated, peak, Py_GT);
    if (more < 0) goto error;
    if (more) {
        Py_INCREF(allocated);
        SLOT(alloc, off_a_peak) = allocated;
        Py_DECREF(peak);
    }
    Py_INCREF(stream); /* held: the block's slot */
    blk = block_type->tp_alloc(block_type, 0);
    if (blk == NULL) {
        Py_DECREF(stream);
        goto error;
    }
    SLOT(blk, off_b_handle) = handle;
    SLOT(blk, off_b_size) = key;
    Py_INCREF(alloc); SLOT(blk, off_b_allocator) = alloc;
    SLOT(blk, off_b_stream) = stream;
    Py_INCREF(Py_None); SLOT(blk, off_b_uses) = Py_None;
    Py_INCREF(minus_one); SLOT(blk, off_b_written) = minus_one;
    return blk;
slow_clear:
    Py_XDECREF(key);
    if (PyErr_Occurred()) return NULL;
slow:;
    PyObject *nb = PyLong_FromSsize_t(nbytes);
    if (nb == NULL) return NULL;
    PyObject *r = PyObject_CallOneArg(malloc_fn, nb);
    Py_DECREF(nb);
    return r;
error:
    Py_XDECREF(key);
    Py_XDECREF(handle);
    return NULL;
}

static void clear_cache(FastBinary *f) {
    for (int i = 0; i < NCACHE; i++) {
        CacheSlot *cs[2] = {&f->cache[i], &f->scache[i]};
        for (int j = 0; j < 2; j++) {
            Py_CLEAR(cs[j]->dtype);
            Py_CLEAR(cs[j]->device);
            Py_CLEAR(cs[j]->plan);
            cs[j]->gen = 0;
        }
    }
}

static PyObject *call_slow(FastBinary *f, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    return PyObject_Vectorcall(f->slow, args, nargsf, kwnames);
}

/* 1: every mode is at its default (fast path allowed); 0: not; -1: error */
static int modes_plain(PyObject *x, PyObject *y) {
    /* NOTE: dispatch.INTERCEPTORS stays set once a distributed tensor has existed in the
     * process; it takes only the ops of distributed tensors (their class sets _dist), and the
     * operands here are of the exact Tensor type, so the interceptor would pass them on */
    PyObject *active = PyDict_GetItemWithError(profiling_dict, active_key);
    if (active == NULL) return PyErr_Occurred() ? -1 : 0;
    if (active != Py_False) return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(off_vars);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v;
        if (PyContextVar_Get(PyTuple_GET_ITEM(off_vars, i), NULL, &v) < 0) return -1;
        int plain = (v == NULL || v == Py_None || v == Py_False);
        Py_XDECREF(v);
        if (!plain) return 0;
    }
    PyObject *sx = SLOT(x, off_stop), *sy = SLOT(y, off_stop);
    if (sx != Py_True || sy != Py_True) {
        /* an operand may need a gradient: allowed only with grad mode off */
        PyObject *g;
        if (PyContextVar_Get(grad_var, NULL, &g) < 0) return -1;
        int on = g == NULL ? 1 : PyObject_IsTrue(g);
        Py_XDECREF(g);
        if (on != 0) return on < 0 ? -1 : 0;
    }
    return 1;
}

static int same_shape(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    if (!PyTuple_Check(a) || !PyTuple_Check(b)) return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(a);
    if (n != PyTuple_GET_SIZE(b)) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *u = PyTuple_GET_ITEM(a, i), *v = PyTuple_GET_ITEM(b, i);
        if (u == v) continue;
        if (!PyLong_CheckExact(u) || !PyLong_CheckExact(v)) return 0;
        int eq = PyObject_RichCompareBool(u, v, Py_EQ);
        if (eq <= 0) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

/* the plan for (dtype, device), a new reference: a tuple, Py_None (not eligible) or NULL (error) */
static PyObject *lookup(FastBinary *f, PyObject *x, PyObject *y, PyObject *dtype, PyObject *device, int scalar) {
    CacheSlot *cache = scalar ? f->scache : f->cache;
    int *next = scalar ? &f->snext : &f->next;
    for (int i = 0; i < NCACHE; i++) {
        CacheSlot *c = &cache[i];
        if (c->gen == generation && c->dtype == dtype && c->device == device) {
            Py_INCREF(c->plan);
            return c->plan;
        }
    }
    unsigned long gen = generation;
    PyObject *args[4] = {f->op, x, y, f->reflected ? Py_True : Py_False};
    PyObject *plan = scalar ? PyObject_Vectorcall(scalar_resolver, args, 4, NULL)
                            : PyObject_Vectorcall(f->resolver != NULL ? f->resolver : resolver, args, 3, NULL);
    if (plan == NULL) return NULL;
    if (plan != Py_None && (!PyTuple_CheckExact(plan) || PyTuple_GET_SIZE(plan) != P_LEN)) {
        Py_DECREF(plan);
        PyErr_SetString(PyExc_TypeError, "[dispatch] the fast path's resolver returned a malformed plan");
        return NULL;
    }
    if (gen == generation) {
        CacheSlot *c = &cache[*next];
        *next = (*next + 1) % NCACHE;
        Py_INCREF(dtype);
        Py_INCREF(device);
        Py_INCREF(plan);
        Py_XSETREF(c->dtype, dtype);
        Py_XSETREF(c->device, device);
        Py_XSETREF(c->plan, plan);
        c->gen = gen;
    }
    return plan;
}

static PyObject *run_plan(FastBinary *f, PyObject *plan, PyObject *x, PyObject *y, PyObject *xnv, PyObject *ynv,
                          PyObject *shape, PyObject *device, int swap);
static PyObject *fast_scalar(FastBinary *f, PyObject *x, PyObject *value);

static PyObject *fast_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    FastBinary *f = (FastBinary *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (!configured || nargs != (f->unary ? 1 : 2) || kwnames != NULL) return call_slow(f, args, nargsf, kwnames);
    PyObject *x = args[0], *y = args[f->unary ? 0 : 1]; /* -x: x as both operands' checks, one kernel input */
    if (!f->unary && Py_TYPE(x) == tensor_type && PyFloat_CheckExact(y) && scalar_resolver != NULL) {
        PyObject *out = fast_scalar(f, x, y);
        if (out != Py_NotImplemented) return out;
        Py_DECREF(out);
        return call_slow(f, args, nargsf, kwnames);
    }
    if (f->reflected || Py_TYPE(x) != tensor_type || Py_TYPE(y) != tensor_type)
        return call_slow(f, args, nargsf, kwnames);
    PyObject *dtype = SLOT(x, off_dtype), *device = SLOT(x, off_device), *shape = SLOT(x, off_shape);
    PyObject *xnv = SLOT(x, off_nv), *ynv = SLOT(y, off_nv);
    if (dtype == NULL || device == NULL || shape == NULL || SLOT(y, off_dtype) != dtype ||
        SLOT(y, off_device) != device || xnv == NULL || xnv == Py_None || ynv == NULL ||
        ynv == Py_None || SLOT(x, off_stop) == NULL || SLOT(y, off_stop) == NULL ||
        !same_shape(shape, SLOT(y, off_shape)))
        return call_slow(f, args, nargsf, kwnames);
    int plain = modes_plain(x, y);
    if (plain < 0) return NULL;
    if (!plain) return call_slow(f, args, nargsf, kwnames);
    PyObject *plan = lookup(f, x, y, dtype, device, 0);
    if (plan == NULL) return NULL;
    PyObject *out = plan == Py_None ? Py_NewRef(Py_NotImplemented) : run_plan(f, plan, x, y, xnv, ynv, shape, device, 0);
    Py_DECREF(plan);
    if (out == Py_NotImplemented) {
        Py_DECREF(out);
        return call_slow(f, args, nargsf, kwnames);
    }
    return out;
}

/* the constant ops.elementwise._const makes for ``value`` next to x (a new reference), from its cache */
static PyObject *constant(PyObject *value, PyObject *dtype, PyObject *device, Py_ssize_t ndim) {
    PyObject *num = PyObject_GetAttr(dtype, s_num), *name = PyObject_GetAttr(device, s_name);
    PyObject *nd = PyLong_FromSsize_t(ndim), *key = NULL, *c = NULL;
    if (num == NULL || name == NULL || nd == NULL) goto out;
    key = PyTuple_Pack(5, (PyObject *)Py_TYPE(value), value, num, name, nd);
    if (key == NULL) goto out;
    c = PyDict_GetItemWithError(const_cache, key);
    if (c != NULL) {
        Py_INCREF(c);
    } else if (!PyErr_Occurred()) {
        PyObject *cargs[4] = {value, dtype, device, nd};
        c = PyObject_Vectorcall(const_fn, cargs, 4, NULL);
    }
out:
    Py_XDECREF(num);
    Py_XDECREF(name);
    Py_XDECREF(nd);
    Py_XDECREF(key);
    return c;
}

/* x op value, value a float: as ops.elementwise's scalar path (its cached constant), in C;
 * reflected (value op x): the kernel takes (constant, x), as the Python path's operands */
static PyObject *fast_scalar(FastBinary *f, PyObject *x, PyObject *value) {
    PyObject *dtype = SLOT(x, off_dtype), *device = SLOT(x, off_device), *shape = SLOT(x, off_shape);
    PyObject *xnv = SLOT(x, off_nv);
    if (dtype == NULL || device == NULL || shape == NULL || xnv == NULL || xnv == Py_None ||
        SLOT(x, off_stop) == NULL || !PyTuple_Check(shape))
        return Py_NewRef(Py_NotImplemented);
    int plain = modes_plain(x, x);
    if (plain <= 0) return plain < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    PyObject *plan = lookup(f, x, value, dtype, device, 1);
    if (plan == NULL) return NULL;
    if (plan == Py_None) {
        Py_DECREF(plan);
        return Py_NewRef(Py_NotImplemented);
    }
    PyObject *out = NULL, *c = constant(value, dtype, device, PyTuple_GET_SIZE(shape));
    if (c != NULL) {
        PyObject *cnv = Py_TYPE(c) == tensor_type ? SLOT(c, off_nv) : NULL;
        /* (its device: the one named in the cache's key, maybe another object equal to x's, which
         * dispatch.run accepts too) */
        out = cnv == NULL || cnv == Py_None || SLOT(c, off_dtype) != dtype
                  ? Py_NewRef(Py_NotImplemented)
                  : run_plan(f, plan, x, c, xnv, cnv, shape, device, f->reflected);
        Py_DECREF(c);
    }
    Py_DECREF(plan);
    return out;
}

/* run a plan: allocate the output (x's shape), call the kernel on (xnv, ynv) — (ynv, xnv) with
 * swap; the new Tensor, NULL with an error, or Py_NotImplemented (a new reference): take the
 * Python path */
static PyObject *run_plan(FastBinary *f, PyObject *plan, PyObject *x, PyObject *y, PyObject *xnv, PyObject *ynv,
                          PyObject *shape, PyObject *device, int swap) {
    /* bytes of the output: the product of the shape times the item size */
    Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(plan, P_ITEMSIZE));
    Py_ssize_t rank = PyTuple_GET_SIZE(shape);
    for (Py_ssize_t i = 0; i < rank; i++) {
        Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (s < 0 || n < 0) {
            if (PyErr_Occurred()) PyErr_Clear();
            return Py_NewRef(Py_NotImplemented);
        }
        n *= s;
    }
    PyObject *out = NULL, *block = NULL, *handle = NULL, *nv = NULL, *outs = NULL, *ins = NULL, *r = NULL;
    block = allocate(PyTuple_GET_ITEM(plan, P_ALLOC), PyTuple_GET_ITEM(plan, P_MALLOC), n);
    if (block == NULL) goto done;
    if (Py_TYPE(block) == block_type && SLOT(block, off_b_handle) != NULL) {
        handle = SLOT(block, off_b_handle);
        Py_INCREF(handle);
    } else if ((handle = PyObject_GetAttr(block, handle_name)) == NULL) {
        goto done;
    }
    PyObject *odtype = PyTuple_GET_ITEM(plan, P_DTYPE);
    PyObject *vargs[4] = {handle, zero, shape, odtype};
    nv = PyObject_Vectorcall(PyTuple_GET_ITEM(plan, P_VIEW), vargs, 4, NULL);
    if (nv == NULL) goto done;
    out = tensor_type->tp_alloc(tensor_type, 0);
    if (out == NULL) goto done;
    /* the slots Tensor._make sets, with the output's shape object shared with x's */
    Py_INCREF(block); SLOT(out, off_block) = block;
    Py_INCREF(zero); SLOT(out, off_offset) = zero;
    Py_INCREF(shape); SLOT(out, off_shape) = shape;
    Py_INCREF(odtype); SLOT(out, off_dtype) = odtype;
    Py_INCREF(device); SLOT(out, off_device) = device;
    Py_INCREF(nv); SLOT(out, off_nv) = nv;
    Py_INCREF(Py_None); SLOT(out, off_node) = Py_None;
    Py_INCREF(Py_True); SLOT(out, off_stop) = Py_True;
    Py_ssize_t nin = f->unary ? 1 : 2;
    outs = PyList_New(1);
    ins = PyList_New(nin);
    if (outs == NULL || ins == NULL) goto fail;
    Py_INCREF(nv); PyList_SET_ITEM(outs, 0, nv);
    Py_INCREF(xnv); PyList_SET_ITEM(ins, nin == 1 ? 0 : swap, xnv);
    if (nin == 2) { Py_INCREF(ynv); PyList_SET_ITEM(ins, 1 - swap, ynv); }
    PyObject *kargs[3] = {PyTuple_GET_ITEM(plan, P_CTX), outs, ins};
    r = PyObject_Vectorcall(PyTuple_GET_ITEM(plan, P_FN), kargs, 3, NULL);
    if (r == NULL) {
        /* the kernel failed: the slow path's handling (fallback, or a KernelError naming it) */
        PyObject *etype, *exc, *tb;
        PyErr_Fetch(&etype, &exc, &tb);
        PyErr_NormalizeException(&etype, &exc, &tb);
        if (tb != NULL) PyException_SetTraceback(exc, tb);
        Py_XDECREF(etype);
        Py_XDECREF(tb);
        PyObject *tins = PyList_New(nin);
        if (tins == NULL) { Py_DECREF(exc); goto fail; }
        Py_INCREF(x); PyList_SET_ITEM(tins, nin == 1 ? 0 : swap, x);
        if (nin == 2) { Py_INCREF(y); PyList_SET_ITEM(tins, 1 - swap, y); }
        PyObject *fargs[4] = {f->op, plan, tins, exc};
        PyObject *res = PyObject_Vectorcall(failed, fargs, 4, NULL);
        Py_DECREF(tins);
        Py_DECREF(exc);
        Py_CLEAR(out);
        if (res != NULL) {
            out = PyList_GetItem(res, 0);
            Py_XINCREF(out);
            Py_DECREF(res);
        }
        goto done;
    }
    f->fast_calls++;
    goto done;
fail:
    Py_CLEAR(out);
done:
    Py_XDECREF(r);
    Py_XDECREF(ins);
    Py_XDECREF(outs);
    Py_XDECREF(nv);
    Py_XDECREF(handle);
    Py_XDECREF(block);
    return out;
}

static PyObject *fast_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"op", "slow", "resolver", "reflected", "unary", NULL};
    PyObject *op, *slow, *res = Py_None;
    int reflected = 0, unary = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|Opp:FastBinary", kwlist, &op, &slow, &res, &reflected, &unary))
        return NULL;
    if (unary && (reflected || res == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "[dispatch] a unary FastBinary needs its own resolver and is not reflected");
        return NULL;
    }
    if (res != Py_None && !PyCallable_Check(res)) {
        PyErr_SetString(PyExc_TypeError, "[dispatch] FastBinary's resolver must be callable or None");
        return NULL;
    }
    if (!PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "[dispatch] FastBinary needs a callable slow path");
        return NULL;
    }
    FastBinary *f = (FastBinary *)type->tp_alloc(type, 0);
    if (f == NULL) return NULL;
    f->vectorcall = fast_vectorcall;
    Py_INCREF(op); f->op = op;
    Py_INCREF(slow); f->slow = slow;
    if (res != Py_None) { Py_INCREF(res); f->resolver = res; }
    f->reflected = reflected;
    f->unary = unary;
    return (PyObject *)f;
}

static int fast_traverse(FastBinary *f, visitproc visit, void *arg) {
    Py_VISIT(f->op);
    Py_VISIT(f->slow);
    Py_VISIT(f->dict);
    Py_VISIT(f->resolver);
    for (int i = 0; i < NCACHE; i++) {
        Py_VISIT(f->cache[i].plan);
        Py_VISIT(f->scache[i].plan);
    }
    return 0;
}

static int fast_clear(FastBinary *f) {
    Py_CLEAR(f->op);
    Py_CLEAR(f->slow);
    Py_CLEAR(f->dict);
    Py_CLEAR(f->resolver);
    clear_cache(f);
    return 0;
}

static void fast_dealloc(FastBinary *f) {
    PyObject_GC_UnTrack(f);
    fast_clear(f);
    Py_TYPE(f)->tp_free((PyObject *)f);
}

/* x.__add__ as an attribute: a bound method (the operator slots call the object unbound) */
static PyObject *fast_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *fast_repr(FastBinary *f) { return PyUnicode_FromFormat("<fast binary %R>", f->slow); }

static PyObject *fast_plans(FastBinary *f, PyObject *unused) {
    PyObject *l = PyList_New(0);
    if (l == NULL) return NULL;
    for (int i = 0; i < NCACHE; i++)
        if (f->cache[i].plan != NULL && f->cache[i].gen == generation && PyList_Append(l, f->cache[i].plan) < 0) {
            Py_DECREF(l);
            return NULL;
        }
    return l;
}

static PyMethodDef fast_methods[] = {
    {"plans", (PyCFunction)fast_plans, METH_NOARGS,
     "the plans cached now (dispatch.fast_binary_plan's tuples; None: the Python path)"},
    {NULL},
};

static PyMemberDef fast_members[] = {
    {"slow", T_OBJECT, offsetof(FastBinary, slow), READONLY, "the Python path this wraps"},
    {"op", T_OBJECT, offsetof(FastBinary, op), READONLY, "the OpDef"},
    {"fast_calls", T_PYSSIZET, offsetof(FastBinary, fast_calls), READONLY, "calls the C path finished"},
    {"reflected", T_INT, offsetof(FastBinary, reflected), READONLY, "1: (x, v) runs op(v, x) (__radd__ & co)"},
    {"unary", T_INT, offsetof(FastBinary, unary), READONLY, "1: slow(x), one operand (__neg__)"},
    {"__dictoffset__", T_PYSSIZET, offsetof(FastBinary, dict), READONLY},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FastBinary, vectorcall), READONLY},
    {NULL},
};

static PyGetSetDef fast_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict},
    {NULL},
};

static PyTypeObject FastBinaryType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "framework._src.fastcall.FastBinary",
    .tp_basicsize = sizeof(FastBinary),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "FastBinary(op, slow, resolver=None, reflected=False, unary=False): slow(x, y) (slow(x)) "
              "with the plain eager case in C (see fastcall.c)",
    .tp_new = fast_new,
    .tp_dealloc = (destructor)fast_dealloc,
    .tp_traverse = (traverseproc)fast_traverse,
    .tp_clear = (inquiry)fast_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(FastBinary, vectorcall),
    .tp_descr_get = fast_get,
    .tp_repr = (reprfunc)fast_repr,
    .tp_members = fast_members,
    .tp_methods = fast_methods,
    .tp_getset = fast_getset,
    .tp_dictoffset = offsetof(FastBinary, dict),
};

/* ---- BlockRelease: Block.__del__ with CachingAllocator.release's plain case in C ---- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *slow; /* the Python __del__ */
    Py_ssize_t fast_calls;
} BlockRelease;

/* 1: released here; 0: not the plain case (nothing changed) */
static int release_plain(PyObject *blk) {
    if (!configured || Py_TYPE(blk) != block_type) return 0;
    PyObject *alloc = SLOT(blk, off_b_allocator), *uses = SLOT(blk, off_b_uses);
    PyObject *size = SLOT(blk, off_b_size), *handle = SLOT(blk, off_b_handle), *stream = SLOT(blk, off_b_stream);
    if (alloc == NULL || Py_TYPE(alloc) != allocator_type || handle == NULL || size == NULL || stream == NULL ||
        !(uses == NULL || uses == Py_None) || !PyLong_CheckExact(size))
        return 0;
    PyObject *free = SLOT(alloc, off_a_free);
    if (SLOT(alloc, off_a_passthrough) != Py_False || SLOT(alloc, off_a_multi) != Py_False ||
        SLOT(alloc, off_a_stream) != stream || free == NULL)
        return 0;
    PyObject *watch = PyDict_GetItemWithError(allocator_globals, s_watch);
    if (watch != Py_None) {
        PyErr_Clear();
        return 0;
    }
    Py_ssize_t nbytes = PyLong_AsSsize_t(size);
    if (nbytes < 0) {
        PyErr_Clear();
        return 0;
    }
    int ok = 0;
    Py_INCREF(alloc);
    PyObject *pool = PyObject_GetItem(free, size); /* a defaultdict(list): makes the size's list */
    if (pool != NULL) {
        if (PyList_CheckExact(pool) && PyList_Append(pool, handle) == 0) {
            if (slot_add(alloc, off_a_allocated, -nbytes, NULL) == 0) {
                Py_INCREF(Py_None);
                SLOT(blk, off_b_allocator) = Py_None; /* as __del__ sets it: released once */
                Py_DECREF(alloc);                     /* the block's reference */
                ok = 1;
            } else { /* undo: the Python __del__ runs instead */
                Py_ssize_t n = PyList_GET_SIZE(pool);
                PyList_SetSlice(pool, n - 1, n, NULL);
            }
        }
        Py_DECREF(pool);
    }
    Py_DECREF(alloc);
    if (PyErr_Occurred()) PyErr_Clear();
    return ok;
}

static PyObject *release_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    BlockRelease *r = (BlockRelease *)self;
    if (PyVectorcall_NARGS(nargsf) == 1 && kwnames == NULL && release_plain(args[0])) {
        r->fast_calls++;
        Py_RETURN_NONE;
    }
    return PyObject_Vectorcall(r->slow, args, nargsf, kwnames);
}

static PyObject *release_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *slow;
    if (!PyArg_ParseTuple(args, "O:BlockRelease", &slow)) return NULL;
    BlockRelease *r = (BlockRelease *)type->tp_alloc(type, 0);
    if (r == NULL) return NULL;
    r->vectorcall = release_vectorcall;
    Py_INCREF(slow);
    r->slow = slow;
    return (PyObject *)r;
}

static int release_traverse(BlockRelease *r, visitproc visit, void *arg) {
    Py_VISIT(r->slow);
    return 0;
}

static int release_clear(BlockRelease *r) {
    Py_CLEAR(r->slow);
    return 0;
}

static void release_dealloc(BlockRelease *r) {
    PyObject_GC_UnTrack(r);
    release_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyMemberDef release_members[] = {
    {"slow", T_OBJECT, offsetof(BlockRelease, slow), READONLY, "the Python __del__ this wraps"},
    {"fast_calls", T_PYSSIZET, offsetof(BlockRelease, fast_calls), READONLY, "releases done in C"},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(BlockRelease, vectorcall), READONLY},
    {NULL},
};

static PyTypeObject BlockReleaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "framework._src.fastcall.BlockRelease",
    .tp_basicsize = sizeof(BlockRelease),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "BlockRelease(slow): Block.__del__ with the allocator's plain release in C",
    .tp_new = release_new,
    .tp_dealloc = (destructor)release_dealloc,
    .tp_traverse = (traverseproc)release_traverse,
    .tp_clear = (inquiry)release_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(BlockRelease, vectorcall),
    .tp_descr_get = fast_get,
    .tp_members = release_members,
};

static PyObject *configure(PyObject *mod, PyObject *args) {
    PyObject *ttype, *res, *fail, *inter, *pdict, *ovars, *gvar, *atype, *btype, *adict;
    if (!PyArg_ParseTuple(args, "O!OOO!O!O!OO!O!O!:configure", &PyType_Type, &ttype, &res, &fail,
                          &PyList_Type, &inter, &PyDict_Type, &pdict, &PyTuple_Type, &ovars, &gvar,
                          &PyType_Type, &atype, &PyType_Type, &btype, &PyDict_Type, &adict))
        return NULL;
    PyTypeObject *bt = (PyTypeObject *)btype;
    if (member_offset(bt, "handle", &off_b_handle) < 0 || member_offset(bt, "size", &off_b_size) < 0 ||
        member_offset(bt, "allocator", &off_b_allocator) < 0 || member_offset(bt, "stream", &off_b_stream) < 0 ||
        member_offset(bt, "uses", &off_b_uses) < 0 || member_offset(bt, "written_at", &off_b_written) < 0)
        return NULL;
    PyTypeObject *at = (PyTypeObject *)atype;
    if (member_offset(at, "passthrough", &off_a_passthrough) < 0 || member_offset(at, "stream", &off_a_stream) < 0 ||
        member_offset(at, "_free", &off_a_free) < 0 || member_offset(at, "_deferred", &off_a_deferred) < 0 ||
        member_offset(at, "multi", &off_a_multi) < 0 || member_offset(at, "allocated", &off_a_allocated) < 0 ||
        member_offset(at, "peak_allocated", &off_a_peak) < 0 ||
        member_offset(at, "num_requests", &off_a_requests) < 0 ||
        member_offset(at, "num_cache_hits", &off_a_hits) < 0)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(ovars);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyContextVar_CheckExact(PyTuple_GET_ITEM(ovars, i))) {
            PyErr_SetString(PyExc_TypeError, "[dispatch] configure: the mode variables must be ContextVars");
            return NULL;
        }
    if (!PyContextVar_CheckExact(gvar)) {
        PyErr_SetString(PyExc_TypeError, "[dispatch] configure: the grad mode must be a ContextVar");
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)ttype;
    if (member_offset(t, "_block", &off_block) < 0 || member_offset(t, "_offset", &off_offset) < 0 ||
        member_offset(t, "shape", &off_shape) < 0 || member_offset(t, "dtype", &off_dtype) < 0 ||
        member_offset(t, "device", &off_device) < 0 || member_offset(t, "_nv", &off_nv) < 0 ||
        member_offset(t, "_node", &off_node) < 0 || member_offset(t, "stop_gradient", &off_stop) < 0)
        return NULL;
    Py_INCREF(ttype); Py_XSETREF(tensor_type, t);
    Py_INCREF(res); Py_XSETREF(resolver, res);
    Py_INCREF(fail); Py_XSETREF(failed, fail);
    Py_INCREF(inter); Py_XSETREF(interceptors, inter);
    Py_INCREF(pdict); Py_XSETREF(profiling_dict, pdict);
    Py_INCREF(ovars); Py_XSETREF(off_vars, ovars);
    Py_INCREF(gvar); Py_XSETREF(grad_var, gvar);
    Py_INCREF(atype); Py_XSETREF(allocator_type, (PyTypeObject *)atype);
    Py_INCREF(btype); Py_XSETREF(block_type, bt);
    Py_INCREF(adict); Py_XSETREF(allocator_globals, adict);
    generation++;
    configured = 1;
    Py_RETURN_NONE;
}

static PyObject *configure_scalars(PyObject *mod, PyObject *args) {
    PyObject *res, *cache, *fn;
    if (!PyArg_ParseTuple(args, "OO!O:configure_scalars", &res, &PyDict_Type, &cache, &fn)) return NULL;
    Py_INCREF(res); Py_XSETREF(scalar_resolver, res);
    Py_INCREF(cache); Py_XSETREF(const_cache, cache);
    Py_INCREF(fn); Py_XSETREF(const_fn, fn);
    generation++;
    Py_RETURN_NONE;
}

static PyObject *invalidate(PyObject *mod, PyObject *unused) {
    generation++;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(tensor_type, resolver, failed, interceptors, profiling_globals, off_vars, grad_var, "
     "allocator_type, block_type, allocator_globals)"},
    {"configure_scalars", configure_scalars, METH_VARARGS,
     "configure_scalars(resolver, constants, make_constant): x op float in C too "
     "(resolver(op, x, value, reflected))"},
    {"invalidate", invalidate, METH_NOARGS, "forget every cached plan (a plugin registered, a stream changed)"},
    {NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_oarlock_fastcall", NULL, -1, methods};

PyMODINIT_FUNC PyInit__oarlock_fastcall(void) {
    if (PyType_Ready(&FastBinaryType) < 0 || PyType_Ready(&BlockReleaseType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL) return NULL;
    active_key = PyUnicode_InternFromString("ACTIVE");
    handle_name = PyUnicode_InternFromString("handle");
    zero = PyLong_FromLong(0);
    minus_one = PyLong_FromLong(-1);
    if (active_key == NULL || handle_name == NULL || zero == NULL || minus_one == NULL) return NULL;
    if ((s_watch = PyUnicode_InternFromString("WATCH")) == NULL || (s_num = PyUnicode_InternFromString("num")) == NULL ||
        (s_name = PyUnicode_InternFromString("_name")) == NULL)
        return NULL;
    Py_INCREF(&FastBinaryType);
    if (PyModule_AddObject(m, "FastBinary", (PyObject *)&FastBinaryType) < 0) return NULL;
    Py_INCREF(&BlockReleaseType);
    if (PyModule_AddObject(m, "BlockRelease", (PyObject *)&BlockReleaseType) < 0) return NULL;
    return m;
}

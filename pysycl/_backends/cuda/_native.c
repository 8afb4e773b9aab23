/* pysycl._backends.cuda._native: a remembered kernel launch in one C call.
 *
 * A launch through cuda-bindings pays the bindings' argument conversion on every call
 * (measured on an H200 host: 5.5 us per back-to-back cuLaunchKernel, 4.4 us from C), and
 * recording the command's event is a second call (0.9 us, 0.2 from C). launch() reads
 * everything from a record the Python side keeps up to date (pysycl/_backends/cuda/launch.py,
 * CUDALaunch) and calls the driver through the function pointers stored in it: no CUDA
 * header, no link to libcuda (the pointers come from the driver library already loaded).
 *
 * The record: 12 unsigned 64-bit words
 *   [0] cuLaunchKernel  [1] cuEventRecord  [2] CUfunction
 *   [3..5] grid x, y, z  [6..8] block x, y, z  [9] dynamic shared memory bytes
 *   [10] CUstream  [11] the kernel-parameter array (void **), 0 when the kernel has none
 *
 * wait(query_address, handle) -> CUresult: a wait for an event or a stream polled in C (the
 * Python loop it replaces cost ~1-2 us of latency a wait), interruptible by Ctrl-C.
 *
 * launch(record_address, event) -> CUresult: cuLaunchKernel, then (when it succeeded and
 * event is not None) cuEventRecord(event, stream); event is anything int() takes (a
 * cuda.bindings CUevent). The GIL is released around the driver calls: a full launch queue
 * blocks in the driver, and other threads keep running meanwhile.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);
typedef int (*record_fn)(void *, void *);

/* A driver handle (an int, or an object int() takes: a cuda.bindings CUevent/CUstream) as a
 * pointer; -1 with an exception set when it is neither. */
static int
handle_of(PyObject *o, void **out)
{
    PyObject *i;
    PyNumberMethods *nm = Py_TYPE(o)->tp_as_number;
    if (PyLong_Check(o)) {
        Py_INCREF(o);
        i = o;
    } else if (nm != NULL && nm->nb_int != NULL) {
        i = nm->nb_int(o);
        if (i == NULL)
            return -1;
        if (!PyLong_Check(i)) {
            Py_DECREF(i);
            PyErr_SetString(PyExc_TypeError, "the handle's __int__ gave no int");
            return -1;
        }
    } else {
        PyErr_Format(PyExc_TypeError, "a driver handle must be an int or have __int__, "
                     "not %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = PyLong_AsVoidPtr(i);
    Py_DECREF(i);
    return (*out == NULL && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *
native_launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "launch(record_address, event) takes 2 arguments");
        return NULL;
    }
    const uint64_t *r = (const uint64_t *)PyLong_AsVoidPtr(args[0]);
    if (r == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "launch: a null record");
        return NULL;
    }
    void *event = NULL;
    if (args[1] != Py_None && handle_of(args[1], &event) < 0)
        return NULL;
    launch_fn launch = (launch_fn)(uintptr_t)r[0];
    record_fn record = (record_fn)(uintptr_t)r[1];
    if (launch == NULL || record == NULL) {
        PyErr_SetString(PyExc_ValueError, "launch: the record has no driver entry points");
        return NULL;
    }
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = launch((void *)(uintptr_t)r[2], (unsigned)r[3], (unsigned)r[4], (unsigned)r[5],
                  (unsigned)r[6], (unsigned)r[7], (unsigned)r[8], (unsigned)r[9],
                  (void *)(uintptr_t)r[10], (void **)(uintptr_t)r[11], NULL);
    if (code == 0 && event != NULL)
        code = record(event, (void *)(uintptr_t)r[10]);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(code);
}

#define NOT_READY 600  /* CUDA_ERROR_NOT_READY */
typedef int (*query_fn)(void *);

static double
now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* wait(query_address, handle) -> CUresult: calls query(handle) (cuEventQuery or
 * cuStreamQuery) until it says something other than CUDA_ERROR_NOT_READY. The GIL is
 * released while it waits. It polls for the first SPIN_S seconds (10 ms: a core busy, as
 * CUDA's default spin-wait schedule keeps one for the whole wait); then it sleeps between
 * polls, each pause 1/128 of the time waited so far (between 2 and 100 us), with the
 * thread's timer slack set to 1 us for the wait (Linux's default, 50 us, is added to every
 * sleep): a wait ends at most ~1% (and 100 us) after the work did, at most ~10000 cheap
 * wake-ups a second (a few percent of a core). It slept 10 us doubling to 200 us with the
 * default slack before: a 2 ms reduction's wait ended ~0.2-0.3 ms late, 10-13% of its time
 * (an H100: the sum's wall time against its GPU time); with pauses of 1/32, ~3%; polled
 * for 1 ms then pauses of 1/128, ~1.5% (0.99x cupy.sum's wall time, whose kernels were
 * 1.7% slower on the GPU).
 * Every slice it takes the GIL back to let Python handle signals -- Ctrl-C interrupts the
 * wait (KeyboardInterrupt) as a Python loop would. */
#define SPIN_S 10e-3
#define PAUSE_MIN_NS 2000L
#define PAUSE_MAX_NS 100000L

static PyObject *
native_wait(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "wait(query_address, handle) takes 2 arguments");
        return NULL;
    }
    query_fn query = (query_fn)PyLong_AsVoidPtr(args[0]);
    if (query == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "wait: a null query function");
        return NULL;
    }
    void *h = NULL;
    if (handle_of(args[1], &h) < 0)
        return NULL;
    int code = query(h);
    if (code != NOT_READY)
        return PyLong_FromLong(code);
    double start = now_s();
#ifdef PR_SET_TIMERSLACK
    int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    int slack_set = 0;
#endif
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        double slice_end = now_s() + 2e-3;
        do {
            double waited = now_s() - start;
            if (waited > SPIN_S) {
#ifdef PR_SET_TIMERSLACK
                if (!slack_set && slack > 0)
                    slack_set = prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) == 0;
#endif
                long pause_ns = (long)(waited * 1e9 / 128);
                if (pause_ns < PAUSE_MIN_NS)
                    pause_ns = PAUSE_MIN_NS;
                if (pause_ns > PAUSE_MAX_NS)
                    pause_ns = PAUSE_MAX_NS;
                struct timespec ts = {0, pause_ns};
                nanosleep(&ts, NULL);
            }
            code = query(h);
        } while (code == NOT_READY && now_s() < slice_end);
        Py_END_ALLOW_THREADS
        if (code != NOT_READY || PyErr_CheckSignals() < 0)
            break;
    }
#ifdef PR_SET_TIMERSLACK
    if (slack_set)
        prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
#endif
    if (code == NOT_READY)
        return NULL;  /* the signal handler's exception (Ctrl-C) */
    return PyLong_FromLong(code);
}

/* ------------------------------------------------------------------ the remembered launch
 *
 * Relaunch: the CUDA executor's launch (CUDAExecutor.launch, a method descriptor: a call
 * ex.launch(q, kind, space, fn, name) reaches it with no bound method made). For the common
 * case of q.parallel_for(r, k) again -- the executor's remembered CUDALaunch of k's code was
 * primed by its last launch (pysycl/_backends/cuda/launch.py, CUDALaunch.again), and
 * nothing it was primed with changed -- it does in C what the Python way does
 * (pysycl/_backends/launching.py launch, the refresh of pysycl/_kernels/argplan.py,
 * CUDALaunch.enqueue): the checks, the launch and its event's record, the event reuse, the
 * held pointers, the queue's newest command. Anything else takes the Python way unchanged
 * (configure()'s slow: launching.launch), which primes the launch again.
 *
 * "Nothing changed": the same kind of launch and index space, the kernel-cache generation
 * and properties it was made with, bounds-checked mode off, and every value its refresh read
 * last time (the closure's cells, then the globals it names) is the same object: a number
 * (immutable: identity means the same argument), a library object (the refresh's own rule
 * is identity), or a USM pointer (identity through a weak reference -- a remembered launch
 * keeps no user memory alive -- and its allocation still live). The launch's argument
 * buffer then already holds these values: any packing of it (another launch's arguments, a
 * graph's node) drops the prime first, under the enqueue lock.
 *
 * Thread safety: as CUDALaunch.enqueue, everything between the event choice and the
 * queue's bookkeeping happens holding the enqueue lock (taken without blocking: a lock
 * another thread holds -- its launch, a graph being captured on the stream -- sends this
 * launch the Python way, which waits for it). A launch the driver refuses goes the Python
 * way too (it changed nothing yet): the Python way retries it in the right context or
 * raises its error; a failed event record after a launch raises here, as the Python way.
 */
#define MODE_POINTER 'p'

/* configure()'s objects: what the fast path reads and calls. */
static struct {
    PyObject *slow, *event_type, *acquire, *release, *current, *kernels, *bounds_mode, *stats,
        *pointer_type, *number_types, *props_attr;
    Py_ssize_t prune_at;
} cfg;

static PyObject *s_ex, *s_profiling, *s_reca, *s_floats;
static PyObject *s_launches, *s_primed, *s_last, *s_inflight, *s_pool, *s_shape, *s_cuctx,
    *s_ctx, *s_h, *s_live, *s_values, *s_generation, *s_memory_hits, *s_append, *s_allocation,
    *s_launch_failed, *s_global_range, *s_local_range, *s_offset, *s_range, *s_nd_range;

static PyObject *one;  /* 1 */
static int refused_tag;
#define REFUSED ((PyObject *)&refused_tag)

/* The object a weak reference refers to (borrowed: the caller only compares it with an
 * object it holds), NULL when it is gone. */
static PyObject *
referent(PyObject *ref)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *o = NULL;
    if (PyWeakref_GetRef(ref, &o) <= 0) {
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(o);
    return o;
#else
    PyObject *o = PyWeakref_GET_OBJECT(ref);
    return o == Py_None ? NULL : o;
#endif
}

/* A launch's prime: what its last Python launch read, and how to check it again. One per
 * CUDALaunch (its ``primer``), made with what does not change (the kind of launch, index
 * space, generation, properties, record, the refresh's modes and global names), its values
 * updated in place by each Python launch (update()); ``version`` counts the updates, so
 * that a C call that checked the values of one update never launches for another. */
typedef struct {
    PyObject_HEAD
    PyObject *kind, *space, *gen, *props, *names, *kernel;
    int shape;          /* 0 single_task, 1 range (space: its values), 2 nd_range (global, local) */
    int ready;          /* every value was set by a successful update */
    uint64_t reca;      /* the launch's record (its layout: native_launch above) */
    uint64_t version;
    Py_ssize_t n, ncells, nptr;
    char *modes;        /* per value: 'p' a USM pointer, 'v' a number, 'c' a library object */
    PyObject **want;    /* per value: it, or a pointer's weak reference */
    PyObject **alloc;   /* per value: a weak reference to a pointer's allocation, or NULL */
} Primed;

static int
primed_traverse(Primed *self, visitproc visit, void *arg)
{
    Py_VISIT(self->kind);
    Py_VISIT(self->space);
    Py_VISIT(self->gen);
    Py_VISIT(self->props);
    Py_VISIT(self->names);
    Py_VISIT(self->kernel);
    for (Py_ssize_t i = 0; i < self->n; i++) {
        Py_VISIT(self->want[i]);
        Py_VISIT(self->alloc[i]);
    }
    return 0;
}

static int
primed_clear(Primed *self)
{
    Py_CLEAR(self->kind);
    Py_CLEAR(self->space);
    Py_CLEAR(self->gen);
    Py_CLEAR(self->props);
    Py_CLEAR(self->names);
    Py_CLEAR(self->kernel);
    for (Py_ssize_t i = 0; i < self->n; i++) {
        Py_CLEAR(self->want[i]);
        Py_CLEAR(self->alloc[i]);
    }
    self->ready = 0;
    return 0;
}

static void
primed_dealloc(Primed *self)
{
    PyObject_GC_UnTrack(self);
    primed_clear(self);
    PyMem_Free(self->want);
    PyMem_Free(self->alloc);
    PyMem_Free(self->modes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Primed(kind, space, gen, props, kernel, reca, modes, names) */
static PyObject *
primed_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *kind, *space, *gen, *props, *kernel, *modes, *names;
    unsigned long long reca;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Primed() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "UOOOOKSO!:Primed", &kind, &space, &gen, &props, &kernel,
                          &reca, &modes, &PyTuple_Type, &names))
        return NULL;
    Py_ssize_t n = PyBytes_GET_SIZE(modes);
    if (PyTuple_GET_SIZE(names) > n) {
        PyErr_SetString(PyExc_ValueError, "Primed(): more global names than values");
        return NULL;
    }
    Primed *p = (Primed *)type->tp_alloc(type, 0);
    if (p == NULL)
        return NULL;
    p->want = PyMem_Calloc(n ? n : 1, sizeof(PyObject *));
    p->alloc = PyMem_Calloc(n ? n : 1, sizeof(PyObject *));
    p->modes = PyMem_Malloc(n ? n : 1);
    if (p->want == NULL || p->alloc == NULL || p->modes == NULL) {
        Py_DECREF(p);
        return PyErr_NoMemory();
    }
    p->n = n;
    p->ncells = n - PyTuple_GET_SIZE(names);
    memcpy(p->modes, PyBytes_AS_STRING(modes), n ? n : 1);
    for (Py_ssize_t i = 0; i < n; i++)
        p->nptr += p->modes[i] == MODE_POINTER;
    p->shape = PyUnicode_Compare(kind, s_range) == 0 ? 1
               : PyUnicode_Compare(kind, s_nd_range) == 0 ? 2 : 0;
    p->reca = reca;
    p->kind = Py_NewRef(kind);
    p->space = Py_NewRef(space);
    p->gen = Py_NewRef(gen);
    p->props = Py_NewRef(props);
    p->kernel = Py_NewRef(kernel);
    p->names = Py_NewRef(names);
    return (PyObject *)p;
}

/* Whether value v of mode 'v' (a number the refresh checked by type) is immutable, so that
 * the same object next time is the same argument. */
static int
immutable_number(PyObject *v, PyObject *before)
{
    if (PyLong_CheckExact(v) || PyFloat_CheckExact(v) || PyComplex_CheckExact(v) || PyBool_Check(v))
        return 1;
    if (before != NULL && Py_TYPE(before) == Py_TYPE(v))  /* accepted before: the same type */
        return 1;
    return cfg.number_types != NULL && PyObject_IsInstance(v, cfg.number_types) == 1;
}

/* update(seen) -> bool: the values the refresh read (the closure's cells, then the globals
 * of ``names``), for the C call to check by identity from now on; False (and the C call
 * refuses until the next update) where identity cannot vouch for one: a number that is no
 * immutable scalar (a 0-d array, a structured scalar), a "pointer" that is none. */
static PyObject *
primed_update(Primed *p, PyObject *seen)
{
    if (!PyTuple_Check(seen) || PyTuple_GET_SIZE(seen) != p->n) {
        PyErr_SetString(PyExc_TypeError, "update(seen): a tuple of one value per mode");
        return NULL;
    }
    p->version++;
    p->ready = 0;
    for (Py_ssize_t i = 0; i < p->n; i++) {
        PyObject *v = PyTuple_GET_ITEM(seen, i);
        if (p->modes[i] != MODE_POINTER) {
            if (p->modes[i] == 'v' && !immutable_number(v, p->want[i])) {
                if (PyErr_Occurred())
                    return NULL;
                Py_RETURN_FALSE;
            }
            Py_XSETREF(p->want[i], Py_NewRef(v));
            continue;
        }
        if ((PyObject *)Py_TYPE(v) != cfg.pointer_type)
            Py_RETURN_FALSE;
        if (p->want[i] != NULL && referent(p->want[i]) == v)
            continue;  /* the same pointer: the same allocation */
        PyObject *w = PyWeakref_NewRef(v, NULL);
        PyObject *a = w != NULL ? PyObject_GetAttr(v, s_allocation) : NULL;
        PyObject *aw = a != NULL ? PyWeakref_NewRef(a, NULL) : NULL;
        Py_XDECREF(a);
        if (aw == NULL) {
            Py_XDECREF(w);
            return NULL;
        }
        Py_XSETREF(p->want[i], w);
        Py_XSETREF(p->alloc[i], aw);
    }
    p->ready = 1;
    Py_RETURN_TRUE;
}

static PyMethodDef primed_methods[] = {
    {"update", (PyCFunction)primed_update, METH_O,
     "update(seen) -> bool: the values the last launch's refresh read (False: one that "
     "identity cannot vouch for; the C call refuses until the next update)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PrimedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pysycl._backends.cuda._native.Primed",
    .tp_doc = "Primed(kind, space, gen, props, kernel, reca, modes, names): a remembered CUDA "
              "launch's prime for the C call, its values set by update(seen)",
    .tp_basicsize = sizeof(Primed),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)primed_traverse,
    .tp_clear = (inquiry)primed_clear,
    .tp_dealloc = (destructor)primed_dealloc,
    .tp_methods = primed_methods,
    .tp_new = primed_new,
};

/* Whether value i of a primed launch is still what it read; a pointer also goes into ptrs
 * (a new reference: the driver call lets other threads run, which may rebind the cell). */
static int
same_value(Primed *p, Py_ssize_t i, PyObject *v, PyObject **ptrs, Py_ssize_t *np)
{
    if (p->modes[i] != MODE_POINTER)
        return p->want[i] == v;
    if (referent(p->want[i]) != v)
        return 0;
    PyObject *a = referent(p->alloc[i]);
    if (a == NULL)
        return 0;
    PyObject *live = PyObject_GetAttr(a, s_live);  /* sycl.free sets it False */
    if (live == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(live);
    if (live != Py_True || *np >= p->nptr)
        return 0;
    ptrs[(*np)++] = Py_NewRef(v);
    return 1;
}

/* The checks that need no lock: the captured values first (what changes most often: the
 * cheapest refusal), then the launch's kind and index space, the kernel-cache generation,
 * bounds-checked mode, the kernel's properties. ptrs/np: the pointers, new references. */
static int
unchanged(Primed *p, PyObject *kind, PyObject *space, PyObject *fn, PyObject **ptrs,
          Py_ssize_t *np)
{
    if (!p->ready)
        return 0;
    PyObject *cells = PyFunction_GET_CLOSURE(fn);
    Py_ssize_t ncells = cells != NULL ? PyTuple_GET_SIZE(cells) : 0;
    if (ncells != p->ncells)
        return 0;
    for (Py_ssize_t i = 0; i < ncells; i++) {
        PyObject *v = PyCell_GET(PyTuple_GET_ITEM(cells, i));
        if (v == NULL || !same_value(p, i, v, ptrs, np))
            return 0;
    }
    PyObject *globs = PyFunction_GET_GLOBALS(fn);
    for (Py_ssize_t i = ncells; i < p->n; i++) {
        PyObject *v = PyDict_GetItemWithError(globs, PyTuple_GET_ITEM(p->names, i - ncells));
        if (v == NULL || !same_value(p, i, v, ptrs, np))
            return 0;
    }
    if (*np != p->nptr || (p->kind != kind && PyUnicode_Compare(p->kind, kind) != 0))
        return 0;
    if (PyList_GET_ITEM(cfg.bounds_mode, 0) != Py_False)
        return 0;
    PyObject *g = PyObject_GetAttr(cfg.kernels, s_generation);
    int ok = g != NULL && (g == p->gen || PyObject_RichCompareBool(g, p->gen, Py_EQ) == 1);
    Py_XDECREF(g);
    if (!ok)
        return 0;
    PyObject *d = ((PyFunctionObject *)fn)->func_dict, *props = NULL;
    if (d != NULL && PyDict_GET_SIZE(d))
        props = PyDict_GetItemWithError(d, cfg.props_attr);
    if (PyErr_Occurred())
        return 0;
    if (props == NULL ? p->props != Py_None
            : props != p->props && PyObject_RichCompareBool(props, p->props, Py_EQ) != 1)
        return 0;
    if (p->shape == 1) {
        PyObject *v = PyObject_GetAttr(space, s_values);
        ok = v != NULL && (v == p->space || PyObject_RichCompareBool(v, p->space, Py_EQ) == 1);
        Py_XDECREF(v);
    } else if (p->shape == 2) {
        /* (global, local, offset): a launch with an offset takes the Python way, which
         * refuses it */
        ok = PyTuple_Check(p->space) && PyTuple_GET_SIZE(p->space) == 3;
        PyObject *const names[3] = {s_global_range, s_local_range, s_offset};
        for (int j = 0; ok && j < 3; j++) {
            PyObject *r = PyObject_CallMethodNoArgs(space, names[j]);
            PyObject *v = r != NULL ? PyObject_GetAttr(r, s_values) : NULL;
            PyObject *w = PyTuple_GET_ITEM(p->space, j);
            ok = v != NULL && (v == w || PyObject_RichCompareBool(v, w, Py_EQ) == 1);
            Py_XDECREF(v);
            Py_XDECREF(r);
        }
    }
    return ok;
}

/* Whether the newest held entry prev (a (event, pointers) tuple, or NULL) holds ptrs. */
static int
holds_these(PyObject *prev, PyObject **ptrs, Py_ssize_t n)
{
    if (prev == NULL || !PyTuple_Check(prev) || PyTuple_GET_SIZE(prev) != 2)
        return 0;
    PyObject *t = PyTuple_GET_ITEM(prev, 1);
    if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != n)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyTuple_GET_ITEM(t, i) != ptrs[i])
            return 0;
    return 1;
}

enum { HOLD_NOTHING, HOLD_REPLACE, HOLD_APPEND };

/* Under the enqueue lock: the launch and the queue's bookkeeping. ``p``: the prime the
 * launch was checked against (its record, the pointers it holds), or NULL: launch record
 * ``reca`` as packed, holding nothing (enqueue_again). */
static PyObject *
launch_locked(PyObject *ex, PyObject *ln, Primed *p, uint64_t version, PyObject **ptrs,
              uint64_t reca)
{
    PyObject *result = REFUSED, *last = NULL, *dq = NULL, *pool = NULL, *shape = NULL;
    PyObject *prev = NULL, *h = NULL, *ev = NULL, *entry = NULL, *primed = NULL;
    int reuse = 0, popped = 0;
    Py_ssize_t nptr = p != NULL ? p->nptr : 0;
    if (p != NULL) {
        primed = PyObject_GetAttr(ln, s_primed);
        if (primed != (PyObject *)p || p->version != version || !p->ready)  /* changed */
            goto done;
        reca = p->reca;
    }
    last = PyObject_GetAttr(ex, s_last);
    dq = PyObject_GetAttr(ex, s_inflight);
    pool = PyObject_GetAttr(ex, s_pool);
    shape = PyObject_GetAttr(ex, s_shape);
    if (last == NULL || dq == NULL || pool == NULL || shape == NULL || !PyList_Check(pool))
        goto error;
    Py_ssize_t ndq = PySequence_Size(dq);
    if (ndq < 0)
        goto error;
    if (ndq && (prev = PySequence_GetItem(dq, ndq - 1)) == NULL)
        goto error;
    int newest = prev != NULL && PyTuple_Check(prev) && PyTuple_GET_SIZE(prev) == 2
                 && PyTuple_GET_ITEM(prev, 0) == last;
    /* the newest command's event, when nothing but the queue refers to it (its slot in the
     * executor, this function's reference, the newest held entry): recorded again */
    reuse = (PyObject *)Py_TYPE(last) == cfg.event_type && Py_REFCNT(last) == 2 + newest;
    if (reuse) {
        if ((h = PyObject_GetAttr(last, s_h)) == NULL)
            goto error;
    } else {
        Py_ssize_t n = PyList_GET_SIZE(pool);
        if (n == 0)  /* a new CUevent: the Python way makes it */
            goto done;
        h = Py_NewRef(PyList_GET_ITEM(pool, n - 1));
        if (PyList_SetSlice(pool, n - 1, n, NULL) < 0)
            goto error;
        popped = 1;
    }
    int hold = HOLD_NOTHING;
    if (nptr) {
        int same = holds_these(prev, ptrs, nptr);
        if (reuse && newest && same)
            hold = HOLD_NOTHING;
        else if (newest && shape == ln && same)
            hold = HOLD_REPLACE;
        else if (ndq >= cfg.prune_at)  /* the Python way prunes after its append */
            goto done;
        else
            hold = HOLD_APPEND;
    }
    void *event = NULL;
    if (handle_of(h, &event) < 0)
        goto error;
    const uint64_t *r = (const uint64_t *)(uintptr_t)reca;
    launch_fn launch = (launch_fn)(uintptr_t)r[0];
    record_fn record = (record_fn)(uintptr_t)r[1];
    int code, recorded = 0;
    Py_BEGIN_ALLOW_THREADS
    code = launch((void *)(uintptr_t)r[2], (unsigned)r[3], (unsigned)r[4], (unsigned)r[5],
                  (unsigned)r[6], (unsigned)r[7], (unsigned)r[8], (unsigned)r[9],
                  (void *)(uintptr_t)r[10], (void **)(uintptr_t)r[11], NULL);
    if (code == 0)
        recorded = record(event, (void *)(uintptr_t)r[10]);
    Py_END_ALLOW_THREADS
    if (code != 0)  /* nothing launched: the Python way retries or raises */
        goto done;
    if (recorded != 0) {  /* launched, its event not recorded: raised as the Python way */
        PyObject *c = PyLong_FromLong(recorded);
        PyObject *exc = c != NULL ? PyObject_CallMethodObjArgs(ex, s_launch_failed, c, p->kernel,
                                                               NULL) : NULL;
        Py_XDECREF(c);
        if (exc != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
        goto error;
    }
    popped = 0;  /* the event is the command's now */
    if (reuse)
        ev = Py_NewRef(last);
    else {
        PyObject *a[2] = {h, pool};
        if ((ev = PyObject_Vectorcall(cfg.event_type, a, 2, NULL)) == NULL)
            goto error;
    }
    if (hold == HOLD_REPLACE)
        entry = PyTuple_Pack(2, ev, PyTuple_GET_ITEM(prev, 1));
    else if (hold == HOLD_APPEND) {
        PyObject *held = PyTuple_New(nptr);
        if (held != NULL)
            for (Py_ssize_t i = 0; i < nptr; i++)
                PyTuple_SET_ITEM(held, i, Py_NewRef(ptrs[i]));
        entry = held != NULL ? PyTuple_Pack(2, ev, held) : NULL;
        Py_XDECREF(held);
    }
    if (hold != HOLD_NOTHING && entry == NULL)
        goto error;
    if (hold == HOLD_REPLACE && PySequence_SetItem(dq, ndq - 1, entry) < 0)
        goto error;
    if (hold == HOLD_APPEND) {
        PyObject *ok = PyObject_CallMethodOneArg(dq, s_append, entry);
        if (ok == NULL)
            goto error;
        Py_DECREF(ok);
    }
    if (PyObject_SetAttr(ex, s_last, ev) < 0 || PyObject_SetAttr(ex, s_shape, ln) < 0)
        goto error;
    result = ev;
    ev = NULL;
    goto done;
error:
    result = NULL;
done:
    if (popped) {  /* not used: back to the pool (an exception stays as it was) */
        PyObject *et, *evv, *tb;
        PyErr_Fetch(&et, &evv, &tb);
        if (PyList_Append(pool, h) < 0)
            PyErr_Clear();
        PyErr_Restore(et, evv, tb);
    }
    Py_XDECREF(primed);
    Py_XDECREF(last);
    Py_XDECREF(dq);
    Py_XDECREF(pool);
    Py_XDECREF(shape);
    Py_XDECREF(prev);
    Py_XDECREF(h);
    Py_XDECREF(ev);
    Py_XDECREF(entry);
    return result;
}

/* Whether this thread made executor ``ex``'s context current last (objects.make_current)
 * and took the enqueue lock without waiting: 1, else 0 (no exception: the Python way). */
static int
enter_launch(PyObject *ex)
{
    PyObject *cur = PyObject_GetAttr(cfg.current, s_ctx);
    PyObject *cuctx = PyObject_GetAttr(ex, s_cuctx);
    int ours = cur != NULL && cur == cuctx;
    Py_XDECREF(cur);
    Py_XDECREF(cuctx);
    PyObject *got = ours ? PyObject_CallOneArg(cfg.acquire, Py_False) : NULL;
    /* Py_False: another thread's launch or a graph capture holds it */
    int entered = got == Py_True;
    Py_XDECREF(got);
    if (!entered)
        PyErr_Clear();
    return entered;
}

/* Release the enqueue lock, keeping the exception ``result`` (NULL) came with; ``result``,
 * or NULL if the release failed (it cannot, for a lock this thread holds). */
static PyObject *
leave_launch(PyObject *result)
{
    PyObject *et, *evv, *tb;
    PyErr_Fetch(&et, &evv, &tb);
    PyObject *ok = PyObject_CallNoArgs(cfg.release);
    if (ok == NULL) {
        Py_XDECREF(et);
        Py_XDECREF(evv);
        Py_XDECREF(tb);
        if (result != REFUSED)
            Py_XDECREF(result);
        return NULL;
    }
    Py_DECREF(ok);
    PyErr_Restore(et, evv, tb);
    return result;
}

/* The remembered launch in one call: its native event (a new reference), REFUSED (take the
 * Python way), or NULL with an exception. */
static PyObject *
relaunch_fast(PyObject *ex, PyObject *kind, PyObject *space, PyObject *fn, PyObject *name)
{
    if (cfg.slow == NULL || name != Py_None || !PyFunction_Check(fn))
        return REFUSED;
    PyObject *result = REFUSED, *launches = NULL, *ln = NULL, *primed = NULL;
    PyObject *ptrs_small[8], **ptrs = ptrs_small;
    Py_ssize_t np = 0;
    launches = PyObject_GetAttr(ex, s_launches);
    if (launches == NULL || !PyDict_CheckExact(launches))
        goto clear;
    ln = PyDict_GetItemWithError(launches, PyFunction_GET_CODE(fn));
    if (ln == NULL)
        goto clear;
    Py_INCREF(ln);
    primed = PyObject_GetAttr(ln, s_primed);  /* False, None (no prime) or a Primed */
    if (primed == NULL || Py_TYPE(primed) != &PrimedType)
        goto clear;
    Primed *p = (Primed *)primed;
    uint64_t version = p->version;
    if (p->nptr > 8 && (ptrs = PyMem_Malloc(p->nptr * sizeof(PyObject *))) == NULL)
        goto clear;
    if (!unchanged(p, kind, space, fn, ptrs, &np))
        goto clear;
    if (!enter_launch(ex))
        goto clear;
    result = leave_launch(launch_locked(ex, ln, p, version, ptrs, 0));
    if (result != NULL && result != REFUSED) {  /* a remembered launch: a kernel-cache hit */
        PyObject *c = PyDict_GetItemWithError(cfg.stats, s_memory_hits), *c1;
        if (c != NULL && (c1 = PyNumber_Add(c, one)) != NULL) {
            if (PyDict_SetItem(cfg.stats, s_memory_hits, c1) < 0)
                PyErr_Clear();
            Py_DECREF(c1);
        } else
            PyErr_Clear();
    }
    goto done;
clear:
    PyErr_Clear();  /* a failed look-up on the way: the Python way says what is wrong */
done:
    for (Py_ssize_t i = 0; i < np; i++)
        Py_DECREF(ptrs[i]);
    if (ptrs != ptrs_small)
        PyMem_Free(ptrs);
    Py_XDECREF(launches);
    Py_XDECREF(ln);
    Py_XDECREF(primed);
    return result;
}

/* Relaunch: a method descriptor, CUDAExecutor.launch. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
} Relaunch;

static PyObject *
relaunch_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && n == 6) {  /* (ex, q, kind, space, fn, name) */
        PyObject *r = relaunch_fast(args[0], args[2], args[3], args[4], args[5]);
        if (r != REFUSED)
            return r;
    }
    if (cfg.slow == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "pysycl._backends.cuda._native: configure() "
                        "was not called");
        return NULL;
    }
    return PyObject_Vectorcall(cfg.slow, args, nargsf, kwnames);
}

static PyObject *
relaunch_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *
relaunch_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) || (kwds != NULL && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "Relaunch() takes no arguments");
        return NULL;
    }
    Relaunch *self = (Relaunch *)type->tp_alloc(type, 0);
    if (self != NULL)
        self->vectorcall = relaunch_call;
    return (PyObject *)self;
}

/* Executor.launch's parameters, for inspect.signature (the backend conformance test). */
static PyObject *
relaunch_signature(PyObject *self, void *closure)
{
    return PyUnicode_FromString("($self, q, kind, index_space, fn, name)");
}

static PyGetSetDef relaunch_getset[] = {
    {"__text_signature__", relaunch_signature, NULL, NULL, NULL},
    {NULL},
};

static PyTypeObject RelaunchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pysycl._backends.cuda._native.Relaunch",
    .tp_doc = "CUDAExecutor.launch(q, kind, space, fn, name): a remembered launch in one C "
              "call where it was primed and nothing changed, else configure()'s slow way",
    .tp_basicsize = sizeof(Relaunch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(Relaunch, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = relaunch_get,
    .tp_getset = relaunch_getset,
    .tp_new = relaunch_new,
};

/* try_launch(ex, q, kind, space, fn, name) -> event | None: the fast way only (None: it
 * refused), for tests and benchmarks. */
/* enqueue_again(ln, args) -> event | None: CUDALaunch.enqueue(args, None, None, ln.bound) in
 * C where the launch's argument buffer holds ``args`` already (``ln.last`` equal to them:
 * the same list, as a command group submitted again passes) -- this thread's context
 * current, the queue not profiling, the enqueue lock free: launch, record the command's
 * event (the newest one again where nothing else refers to it), ``ex.last``/``ex.shape``.
 * None: refused, nothing done (the Python way packs, waits, retries or raises). */
static PyObject *
native_enqueue_again(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "enqueue_again(launch, args)");
        return NULL;
    }
    if (cfg.slow == NULL)
        Py_RETURN_NONE;
    PyObject *ln = args[0], *result = REFUSED, *ex = NULL;
    PyObject *prof = NULL, *last = NULL, *reca = NULL;
    if ((ex = PyObject_GetAttr(ln, s_ex)) == NULL || (prof = PyObject_GetAttr(ex, s_profiling))
            == NULL || prof != Py_False)
        goto clear;
    if ((reca = PyObject_GetAttr(ln, s_reca)) == NULL || !PyLong_Check(reca))
        goto clear;
    uint64_t rec = PyLong_AsUnsignedLongLong(reca);
    if (rec == 0 || PyErr_Occurred() || !enter_launch(ex))
        goto clear;
    last = PyObject_GetAttr(ln, s_last);
    int same = last != NULL ? PyObject_RichCompareBool(last, args[1], Py_EQ) : -1;
    if (same == 1 && last != args[1]) {  /* equal lists of other objects: a floating-point
                                             * argument must be the same object (a zero's sign) */
        PyObject *floats = PyObject_GetAttr(ln, s_floats);
        same = floats != NULL && PyTuple_Check(floats) && PyList_CheckExact(last)
               && PyList_CheckExact(args[1]);
        for (Py_ssize_t i = 0; same && i < PyTuple_GET_SIZE(floats); i++) {
            Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(floats, i));
            same = at >= 0 && at < PyList_GET_SIZE(last) && at < PyList_GET_SIZE(args[1])
                   && PyList_GET_ITEM(last, at) == PyList_GET_ITEM(args[1], at);
        }
        Py_XDECREF(floats);
    }
    if (same == 1 && PyObject_SetAttr(ln, s_primed, Py_None) == 0)
        result = launch_locked(ex, ln, NULL, 0, NULL, rec);
    else
        PyErr_Clear();
    result = leave_launch(result);
    goto done;
clear:
    PyErr_Clear();
done:
    Py_XDECREF(ex);
    Py_XDECREF(prof);
    Py_XDECREF(last);
    Py_XDECREF(reca);
    if (result == REFUSED)
        Py_RETURN_NONE;
    return result;
}

static PyObject *
native_try_launch(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "try_launch(ex, q, kind, space, fn, name)");
        return NULL;
    }
    PyObject *r = relaunch_fast(args[0], args[2], args[3], args[4], args[5]);
    if (r == REFUSED)
        Py_RETURN_NONE;
    return r;
}

/* configure(slow, event_type, lock, current, kernels, bounds_mode, stats, pointer_type,
 *           number_types, prune_at, props_attr) */
static PyObject *
native_configure(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "configure() takes 11 arguments");
        return NULL;
    }
    if (!PyList_Check(args[5]) || PyList_GET_SIZE(args[5]) < 1 || !PyDict_Check(args[6])
            || !PyType_Check(args[7]) || !PyUnicode_Check(args[10])) {
        PyErr_SetString(PyExc_TypeError, "configure(): bounds_mode a list, stats a dict, "
                        "pointer_type a type, props_attr a str");
        return NULL;
    }
    Py_ssize_t prune_at = PyLong_AsSsize_t(args[9]);
    if (prune_at == -1 && PyErr_Occurred())
        return NULL;
    PyObject *acquire = PyObject_GetAttrString(args[2], "acquire");
    PyObject *release = PyObject_GetAttrString(args[2], "release");
    if (acquire == NULL || release == NULL) {
        Py_XDECREF(acquire);
        Py_XDECREF(release);
        return NULL;
    }
    Py_XSETREF(cfg.slow, Py_NewRef(args[0]));
    Py_XSETREF(cfg.event_type, Py_NewRef(args[1]));
    Py_XSETREF(cfg.acquire, acquire);
    Py_XSETREF(cfg.release, release);
    Py_XSETREF(cfg.current, Py_NewRef(args[3]));
    Py_XSETREF(cfg.kernels, Py_NewRef(args[4]));
    Py_XSETREF(cfg.bounds_mode, Py_NewRef(args[5]));
    Py_XSETREF(cfg.stats, Py_NewRef(args[6]));
    Py_XSETREF(cfg.pointer_type, Py_NewRef(args[7]));
    Py_XSETREF(cfg.number_types, Py_NewRef(args[8]));
    Py_XSETREF(cfg.props_attr, Py_NewRef(args[10]));
    cfg.prune_at = prune_at;
    Py_RETURN_NONE;
}

#define RELAUNCH_METHODS \
    {"try_launch", (PyCFunction)(void (*)(void))native_try_launch, METH_FASTCALL, \
     "try_launch(ex, q, kind, space, fn, name) -> event | None: the C call alone (None: " \
     "refused, the Python way would take it)"}, \
    {"enqueue_again", (PyCFunction)(void (*)(void))native_enqueue_again, METH_FASTCALL, \
     "enqueue_again(launch, args) -> event | None: the launch with the arguments its buffer " \
     "holds, in C (None: refused, the Python way would take it)"}, \
    {"configure", (PyCFunction)(void (*)(void))native_configure, METH_FASTCALL, \
     "configure(slow, event_type, lock, current, kernels, bounds_mode, stats, pointer_type, " \
     "number_types, prune_at, props_attr): what Relaunch reads and calls"},

static int
relaunch_init(PyObject *m)
{
    struct { PyObject **s; const char *text; } names[] = {
        {&s_launches, "launches"}, {&s_primed, "primed"}, {&s_last, "last"},
        {&s_inflight, "inflight"}, {&s_pool, "pool"}, {&s_shape, "shape"},
        {&s_cuctx, "cuctx"}, {&s_ctx, "ctx"}, {&s_h, "h"}, {&s_live, "live"},
        {&s_values, "values"}, {&s_generation, "generation"},
        {&s_memory_hits, "memory_hits"}, {&s_append, "append"},
        {&s_allocation, "allocation"}, {&s_launch_failed, "launch_failed"},
        {&s_global_range, "get_global_range"}, {&s_local_range, "get_local_range"},
        {&s_offset, "get_offset"}, {&s_ex, "ex"}, {&s_profiling, "profiling"},
        {&s_reca, "reca"}, {&s_floats, "floats"},
        {&s_range, "range"}, {&s_nd_range, "nd_range"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((*names[i].s = PyUnicode_InternFromString(names[i].text)) == NULL)
            return -1;
    if ((one = PyLong_FromLong(1)) == NULL)
        return -1;
    if (PyType_Ready(&PrimedType) < 0 || PyType_Ready(&RelaunchType) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "Primed", (PyObject *)&PrimedType) < 0
            || PyModule_AddObjectRef(m, "Relaunch", (PyObject *)&RelaunchType) < 0)
        return -1;
    return 0;
}


static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))native_launch, METH_FASTCALL,
     "launch(record_address, event) -> CUresult: cuLaunchKernel from the record, then "
     "cuEventRecord(event) on its stream unless event is None"},
    {"wait", (PyCFunction)(void (*)(void))native_wait, METH_FASTCALL,
     "wait(query_address, handle) -> CUresult: query(handle) until it is not "
     "CUDA_ERROR_NOT_READY, without the GIL; Ctrl-C interrupts it"},
    RELAUNCH_METHODS
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "A remembered CUDA kernel launch in one C call (pysycl/_backends/cuda/launch.py).", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && relaunch_init(m) < 0)
        Py_CLEAR(m);
    return m;
}

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
#include <stdint.h>
#include <time.h>

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
 * released while it waits; it polls for the first millisecond, then sleeps between polls
 * (10 us doubling up to 200 us: a long wait overshoots by at most that, at a few thousand
 * cheap wake-ups a second), and every slice it takes the GIL back to let Python handle
 * signals -- Ctrl-C interrupts the wait (KeyboardInterrupt) as a Python loop would. */
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
    long pause_ns = 0;
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        double slice_end = now_s() + 2e-3;
        do {
            if (now_s() - start > 1e-3) {
                pause_ns = pause_ns ? (pause_ns * 2 > 200000 ? 200000 : pause_ns * 2) : 10000;
                struct timespec ts = {0, pause_ns};
                nanosleep(&ts, NULL);
            }
            code = query(h);
        } while (code == NOT_READY && now_s() < slice_end);
        Py_END_ALLOW_THREADS
        if (code != NOT_READY)
            return PyLong_FromLong(code);
        if (PyErr_CheckSignals() < 0)
            return NULL;
    }
}

static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))native_launch, METH_FASTCALL,
     "launch(record_address, event) -> CUresult: cuLaunchKernel from the record, then "
     "cuEventRecord(event) on its stream unless event is None"},
    {"wait", (PyCFunction)(void (*)(void))native_wait, METH_FASTCALL,
     "wait(query_address, handle) -> CUresult: query(handle) until it is not "
     "CUDA_ERROR_NOT_READY, without the GIL; Ctrl-C interrupts it"},
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
    return PyModule_Create(&module);
}

/* pysycl._backends.opencl._native: a command graph's pre-bound kernels enqueued in one C call.
 *
 * A graph replayed node by node (pysycl/_backends/opencl/launch.py, OpenCLLaunch.replayer)
 * enqueues a cl_kernel of each node's own whose arguments were set once. Through pyopencl
 * each enqueue converts its sizes, makes a cl_event and its Python object, and hands the GIL
 * back and forth; the driver's clEnqueueNDRangeKernel is most of the cost, the rest is
 * this. replay() makes the whole sequence one call: no event but the first and the last,
 * the GIL released once. No OpenCL header and no link to libOpenCL: the entry point is the
 * ICD loader's clEnqueueNDRangeKernel, whose address the Python side passes.
 *
 * The record: 8 unsigned 64-bit words a kernel
 *   [0] cl_kernel  [1] work dimensions (1-3)  [2..4] global size  [5..7] local size
 *   (local size [5] == 0: NULL, the driver's choice)
 *
 * replay(enqueue_address, release_address, queue, record_address, count)
 *   -> (status, index, first_event, last_event)
 * (release_address: the loader's clReleaseEvent, for the first event when a later kernel
 * fails)
 * status 0: every kernel enqueued; first_event and last_event are the cl_event handles (as
 * ints; the same handle once when count is 1 -- then last_event is 0) the caller owns.
 * Otherwise the OpenCL status of the kernel at index, which was not enqueued; the kernels
 * before it were (in order) and no event is returned (the first one's is released here).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

typedef int32_t (*enqueue_fn)(void *queue, void *kernel, uint32_t dims, const size_t *offset,
                              const size_t *global, const size_t *local, uint32_t nwait,
                              const void *waits, void **event);
typedef int32_t (*release_fn)(void *event);

#define WORDS 8

static PyObject *
native_replay(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "replay(enqueue_address, release_address, queue, "
                        "record_address, count) takes 5 arguments");
        return NULL;
    }
    enqueue_fn enqueue = (enqueue_fn)PyLong_AsVoidPtr(args[0]);
    release_fn release = (release_fn)PyLong_AsVoidPtr(args[1]);
    void *queue = PyLong_AsVoidPtr(args[2]);
    const uint64_t *rec = (const uint64_t *)PyLong_AsVoidPtr(args[3]);
    Py_ssize_t n = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred())
        return NULL;
    if (enqueue == NULL || release == NULL || queue == NULL || (rec == NULL && n > 0) || n < 0) {
        PyErr_SetString(PyExc_ValueError, "replay: a null entry point, queue or record");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t dims = rec[i * WORDS + 1];
        if (dims < 1 || dims > 3 || rec[i * WORDS] == 0) {
            PyErr_Format(PyExc_ValueError, "replay: node %zd has %llu dimensions or no kernel",
                         i, (unsigned long long)dims);
            return NULL;
        }
    }
    int32_t status = 0;
    Py_ssize_t at = n;
    void *first = NULL, *last = NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint64_t *r = rec + i * WORDS;
        size_t global[3], local[3];
        uint32_t dims = (uint32_t)r[1];
        for (uint32_t d = 0; d < dims; d++) {
            global[d] = (size_t)r[2 + d];
            local[d] = (size_t)r[5 + d];
        }
        void **ev = i == 0 ? &first : (i == n - 1 ? &last : NULL);
        status = enqueue(queue, (void *)(uintptr_t)r[0], dims, NULL, global,
                         r[5] ? local : NULL, 0, NULL, ev);
        if (status != 0) {
            at = i;
            break;
        }
    }
    if (status != 0 && first != NULL) {
        release(first);
        first = NULL;
    }
    Py_END_ALLOW_THREADS
    if (status != 0)
        return Py_BuildValue("(inKK)", (int)status, at, 0ULL, 0ULL);
    return Py_BuildValue("(inKK)", 0, n, (unsigned long long)(uintptr_t)first,
                         (unsigned long long)(uintptr_t)last);
}

static PyMethodDef methods[] = {
    {"replay", (PyCFunction)(void (*)(void))native_replay, METH_FASTCALL,
     "replay(enqueue_address, release_address, queue, record_address, count) -> "
     "(status, index, first_event, last_event)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pysycl._backends.opencl._native",
    "A command graph's pre-bound kernels enqueued in one C call (see the source's header).",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    return PyModule_Create(&module);
}

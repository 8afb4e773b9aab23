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
 * launch(record_address, event) -> CUresult: cuLaunchKernel, then (when it succeeded and
 * event is not None) cuEventRecord(event, stream); event is anything int() takes (a
 * cuda.bindings CUevent). The GIL is released around the driver calls: a full launch queue
 * blocks in the driver, and other threads keep running meanwhile.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);
typedef int (*record_fn)(void *, void *);

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
    if (args[1] != Py_None) {
        PyObject *o = args[1], *i;
        PyNumberMethods *nm = Py_TYPE(o)->tp_as_number;
        if (PyLong_Check(o)) {
            Py_INCREF(o);
            i = o;
        } else if (nm != NULL && nm->nb_int != NULL) {  /* a CUevent object: its __int__ */
            i = nm->nb_int(o);
            if (i == NULL)
                return NULL;
            if (!PyLong_Check(i)) {
                Py_DECREF(i);
                PyErr_SetString(PyExc_TypeError, "launch: the event's __int__ gave no int");
                return NULL;
            }
        } else {
            PyErr_Format(PyExc_TypeError, "launch: the event must be a CUevent or an int, "
                         "not %.100s", Py_TYPE(o)->tp_name);
            return NULL;
        }
        event = PyLong_AsVoidPtr(i);
        Py_DECREF(i);
        if (event == NULL && PyErr_Occurred())
            return NULL;
    }
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

static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))native_launch, METH_FASTCALL,
     "launch(record_address, event) -> CUresult: cuLaunchKernel from the record, then "
     "cuEventRecord(event) on its stream unless event is None"},
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

/* Verification's inner loops, compiled: dedup.engine.merge uses them when this module is built
 * (pip builds it when a C compiler is present) and numpy otherwise, with the same results.
 *
 * Shingles are sorted, distinct uint32 values; two articles' shared shingles are found by one
 * merge of the two arrays, a step per element, without the sort and the temporaries numpy needs.
 * Arguments are buffers (numpy arrays, C-contiguous): the Python side checks their types.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static int
u32_view(PyObject *obj, Py_buffer *view, int writable, const char *name)
{
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    if (view->itemsize != 4 || view->len % 4) {
        PyErr_Format(PyExc_TypeError, "%s: needs uint32 values", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* shared_count(x, y) -> int: how many values two sorted distinct uint32 arrays share. */
static PyObject *
shared_count(PyObject *self, PyObject *args)
{
    PyObject *xo, *yo;
    Py_buffer xb, yb;
    if (!PyArg_ParseTuple(args, "OO:shared_count", &xo, &yo))
        return NULL;
    if (u32_view(xo, &xb, 0, "x") < 0)
        return NULL;
    if (u32_view(yo, &yb, 0, "y") < 0) {
        PyBuffer_Release(&xb);
        return NULL;
    }
    const uint32_t *x = xb.buf, *y = yb.buf;
    Py_ssize_t nx = xb.len / 4, ny = yb.len / 4, i = 0, j = 0, shared = 0;
    Py_BEGIN_ALLOW_THREADS
    /* Branch-free steps: the comparisons of random hashes are unpredictable. */
    while (i < nx && j < ny) {
        uint32_t a = x[i], b = y[j];
        shared += a == b;
        i += a <= b;
        j += b <= a;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&xb);
    PyBuffer_Release(&yb);
    return PyLong_FromSsize_t(shared);
}

/* shared_counts(x, ys) -> list[int]: shared_count(x, y) for each y of a sequence. */
static PyObject *
shared_counts(PyObject *self, PyObject *args)
{
    PyObject *xo, *ys;
    Py_buffer xb;
    if (!PyArg_ParseTuple(args, "OO:shared_counts", &xo, &ys))
        return NULL;
    PyObject *seq = PySequence_Fast(ys, "ys: needs a sequence of arrays");
    if (seq == NULL)
        return NULL;
    if (u32_view(xo, &xb, 0, "x") < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    PyObject *result = PyList_New(count);
    const uint32_t *x = xb.buf;
    Py_ssize_t nx = xb.len / 4;
    for (Py_ssize_t k = 0; result != NULL && k < count; k++) {
        Py_buffer yb;
        if (u32_view(PySequence_Fast_GET_ITEM(seq, k), &yb, 0, "y") < 0) {
            Py_CLEAR(result);
            break;
        }
        const uint32_t *y = yb.buf;
        Py_ssize_t ny = yb.len / 4, i = 0, j = 0, shared = 0;
        while (i < nx && j < ny) {
            uint32_t a = x[i], b = y[j];
            shared += a == b;
            i += a <= b;
            j += b <= a;
        }
        PyBuffer_Release(&yb);
        PyObject *value = PyLong_FromSsize_t(shared);
        if (value == NULL)
            Py_CLEAR(result);
        else
            PyList_SET_ITEM(result, k, value);
    }
    PyBuffer_Release(&xb);
    Py_DECREF(seq);
    return result;
}

/* partial_passages(mine, mine_of, theirs, theirs_of, half, width) -> list[(int, int)]: merge
 * two articles' sorted distinct shingles (mine_of and theirs_of: the passage of each; width:
 * how many passages theirs has; half: per passage of mine, the least shared shingles that make
 * most of it) and return (p, q) for each passage p of mine mostly shared, q being the passage
 * of theirs holding most of it (the lowest such number on a tie), in order of p. */
static PyObject *
partial_passages(PyObject *self, PyObject *args)
{
    PyObject *objects[5];
    Py_buffer views[5];
    static const char *names[5] = {"mine", "mine_of", "theirs", "theirs_of", "half"};
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "OOOOOn:partial_passages", &objects[0], &objects[1],
                          &objects[2], &objects[3], &objects[4], &width))
        return NULL;
    int got = 0;
    for (; got < 5; got++)
        if (u32_view(objects[got], &views[got], 0, names[got]) < 0)
            break;
    PyObject *result = NULL;
    uint32_t *counts = NULL, *totals = NULL;
    if (got < 5)
        goto done;
    Py_ssize_t nx = views[0].len / 4, ny = views[2].len / 4, rows = views[4].len / 4;
    const uint32_t *x = views[0].buf, *x_of = views[1].buf;
    const uint32_t *y = views[2].buf, *y_of = views[3].buf, *half = views[4].buf;
    if (views[1].len / 4 != nx || views[3].len / 4 != ny) {
        PyErr_SetString(PyExc_ValueError, "a passage array's length differs from its shingles'");
        goto done;
    }
    if (width <= 0 || rows <= 0 || rows > PY_SSIZE_T_MAX / width / 4) {
        PyErr_SetString(PyExc_ValueError, "bad passage counts");
        goto done;
    }
    counts = PyMem_Calloc((size_t)(rows * width), sizeof(uint32_t));
    totals = PyMem_Calloc((size_t)rows, sizeof(uint32_t));
    if (counts == NULL || totals == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t i = 0, j = 0;
    while (i < nx && j < ny) {
        uint32_t a = x[i], b = y[j];
        if (a == b) {
            uint32_t p = x_of[i], q = y_of[j];
            if (p >= rows || q >= width) {
                PyErr_SetString(PyExc_ValueError, "a passage number is out of range");
                goto done;
            }
            counts[p * width + q]++;
            totals[p]++;
        }
        i += a <= b;
        j += b <= a;
    }
    result = PyList_New(0);
    for (Py_ssize_t p = 0; result != NULL && p < rows; p++) {
        if (totals[p] == 0 || totals[p] < half[p])
            continue;
        const uint32_t *row = counts + p * width;
        Py_ssize_t best = 0;
        for (Py_ssize_t q = 1; q < width; q++)
            if (row[q] > row[best])
                best = q;
        PyObject *pair = Py_BuildValue("(nn)", p, best);
        if (pair == NULL || PyList_Append(result, pair) < 0)
            Py_CLEAR(result);
        Py_XDECREF(pair);
    }
done:
    PyMem_Free(counts);
    PyMem_Free(totals);
    for (int k = 0; k < got; k++)
        PyBuffer_Release(&views[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"shared_count", shared_count, METH_VARARGS,
     "shared_count(x, y) -> int: values two sorted distinct uint32 arrays share"},
    {"shared_counts", shared_counts, METH_VARARGS,
     "shared_counts(x, ys) -> list[int]: shared_count(x, y) for each y"},
    {"partial_passages", partial_passages, METH_VARARGS,
     "partial_passages(mine, mine_of, theirs, theirs_of, half, width) -> list: passages mostly"
     " shared, and where"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_merge", "Verification's merges of sorted shingles, compiled.", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__merge(void)
{
    return PyModule_Create(&module);
}

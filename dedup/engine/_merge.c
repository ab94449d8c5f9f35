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

/* shared_passages(x, x_of, y, y_of, out_x, out_y) -> int: merge two sorted distinct uint32
 * arrays; for the n-th value both hold, write x_of and y_of at its places into out_x[n] and
 * out_y[n]; return how many they share. The outputs need min(len(x), len(y)) + 1 places. */
static PyObject *
shared_passages(PyObject *self, PyObject *args)
{
    PyObject *objects[6];
    Py_buffer views[6];
    static const char *names[6] = {"x", "x_of", "y", "y_of", "out_x", "out_y"};
    if (!PyArg_ParseTuple(args, "OOOOOO:shared_passages", &objects[0], &objects[1],
                          &objects[2], &objects[3], &objects[4], &objects[5]))
        return NULL;
    int got = 0;
    for (; got < 6; got++)
        if (u32_view(objects[got], &views[got], got >= 4, names[got]) < 0)
            break;
    PyObject *result = NULL;
    if (got < 6)
        goto done;
    Py_ssize_t nx = views[0].len / 4, ny = views[2].len / 4;
    Py_ssize_t least = (nx < ny ? nx : ny) + 1;
    if (views[1].len / 4 != nx || views[3].len / 4 != ny) {
        PyErr_SetString(PyExc_ValueError, "a passage array's length differs from its shingles'");
        goto done;
    }
    if (views[4].len / 4 < least || views[5].len / 4 < least) {
        PyErr_SetString(PyExc_ValueError, "outputs need min(len(x), len(y)) + 1 places");
        goto done;
    }
    const uint32_t *x = views[0].buf, *x_of = views[1].buf;
    const uint32_t *y = views[2].buf, *y_of = views[3].buf;
    uint32_t *out_x = views[4].buf, *out_y = views[5].buf;
    Py_ssize_t i = 0, j = 0, shared = 0;
    Py_BEGIN_ALLOW_THREADS
    while (i < nx && j < ny) {
        uint32_t a = x[i], b = y[j];
        /* Written every step, kept (shared advances) only on a match: no branch. */
        out_x[shared] = x_of[i];
        out_y[shared] = y_of[j];
        shared += a == b;
        i += a <= b;
        j += b <= a;
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(shared);
done:
    for (int k = 0; k < got; k++)
        PyBuffer_Release(&views[k]);
    return result;
}

/* passage_partners(mine, theirs, half, width) -> list[(int, int)]: for the shared shingles'
 * passages (mine[n] in one article, theirs[n] in the other, width passages there), return
 * (p, q) for each passage p of mine holding at least half[p] shared shingles, q being the
 * passage of theirs holding most of them (the lowest such number on a tie), in order of p. */
static PyObject *
passage_partners(PyObject *self, PyObject *args)
{
    PyObject *objects[3];
    Py_buffer views[3];
    static const char *names[3] = {"mine", "theirs", "half"};
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "OOOn:passage_partners", &objects[0], &objects[1], &objects[2],
                          &width))
        return NULL;
    int got = 0;
    for (; got < 3; got++)
        if (u32_view(objects[got], &views[got], 0, names[got]) < 0)
            break;
    PyObject *result = NULL;
    uint32_t *counts = NULL, *totals = NULL;
    if (got < 3)
        goto done;
    Py_ssize_t n = views[0].len / 4, rows = views[2].len / 4;
    const uint32_t *mine = views[0].buf, *theirs = views[1].buf, *half = views[2].buf;
    if (views[1].len / 4 != n || width <= 0 || rows > PY_SSIZE_T_MAX / width) {
        PyErr_SetString(PyExc_ValueError, "mine and theirs differ in length, or bad width");
        goto done;
    }
    counts = PyMem_Calloc((size_t)(rows * width), sizeof(uint32_t));
    totals = PyMem_Calloc((size_t)rows, sizeof(uint32_t));
    if (counts == NULL || totals == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        if (mine[k] >= rows || theirs[k] >= width) {
            PyErr_SetString(PyExc_ValueError, "a passage number is out of range");
            goto done;
        }
        counts[mine[k] * width + theirs[k]]++;
        totals[mine[k]]++;
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
    {"shared_passages", shared_passages, METH_VARARGS,
     "shared_passages(x, x_of, y, y_of, out_x, out_y) -> int: the passages of shared values"},
    {"passage_partners", passage_partners, METH_VARARGS,
     "passage_partners(mine, theirs, half, width) -> list: passages mostly shared, and where"},
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

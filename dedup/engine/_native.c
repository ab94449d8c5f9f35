/* Verification's inner loops, compiled: dedup.engine.merge uses them when this module is built
 * (pip builds it when a C compiler is present) and numpy otherwise, with the same results; and
 * the features' gram table, which Detector.features makes with numpy otherwise.
 *
 * Shingles are sorted, distinct uint32 values; two articles' shared shingles are found by one
 * merge of the two arrays, a step per element, without the sort and the temporaries numpy needs.
 * Arguments are buffers (numpy arrays, C-contiguous): the Python side checks their types.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The constants the numpy code (dedup.engine.native) shares; the module exports them, and
 * dedup.engine.native refuses a build whose values differ from its own. */
#define GRAM 4 /* code points per gram: gram_hash reads four */
#define ACROSS 0xFFFFFFFFu
#define PRIME 0x9E3779B97F4A7C15ull
#define PRIME_2 0xC2B2AE3D27D4EB4Full
#define HIGH 0xFFFFFFFF00000000ull

#if PY_LITTLE_ENDIAN
#define NATIVE_ORDER '<'
#else
#define NATIVE_ORDER '>'
#endif

/* Whether a buffer format (struct module syntax) is one unsigned integer: a byte order that
 * is the machine's, then one of B H I L Q. */
static int
unsigned_format(const char *format)
{
    if (format == NULL) /* no format: unsigned bytes */
        return 1;
    if (*format == '@' || *format == '=' || *format == NATIVE_ORDER)
        format++;
    return format[0] != '\0' && format[1] == '\0' && strchr("BHILQ", format[0]) != NULL;
}

/* A buffer of C-contiguous unsigned integers of `size` bytes each (4: uint32, 8: uint64),
 * writable if asked; on a mismatch of type or size, a TypeError naming the argument. */
static int
values_view(PyObject *obj, Py_buffer *view, Py_ssize_t size, int writable, const char *name)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    if (view->itemsize != size || view->len % size || !unsigned_format(view->format)) {
        PyErr_Format(PyExc_TypeError, "%s: needs uint%zd values, not format '%s' of %zd bytes",
                     name, size * 8, view->format ? view->format : "B", view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static int
u32_view(PyObject *obj, Py_buffer *view, int writable, const char *name)
{
    return values_view(obj, view, 4, writable, name);
}

/* How many values two sorted distinct uint32 arrays share, by one merge. */
static Py_ssize_t
merge_count(const uint32_t *x, Py_ssize_t nx, const uint32_t *y, Py_ssize_t ny)
{
    Py_ssize_t i = 0, j = 0, shared = 0;
    while (i < nx && j < ny) { /* branch-free: comparisons of random hashes are unpredictable */
        uint32_t a = x[i], b = y[j];
        shared += a == b;
        i += a <= b;
        j += b <= a;
    }
    return shared;
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
    Py_ssize_t shared;
    Py_BEGIN_ALLOW_THREADS
    shared = merge_count(xb.buf, xb.len / 4, yb.buf, yb.len / 4);
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
        Py_ssize_t shared = merge_count(x, nx, yb.buf, yb.len / 4);
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

/* --- features: the grams of a text and its passages --------------------------------------- */

static int
u64_view(PyObject *obj, Py_buffer *view, int writable, const char *name)
{
    return values_view(obj, view, 8, writable, name);
}

#if GRAM != 4
#error "gram_hash reads four code points: change it with GRAM"
#endif

/* The hash of the 4-gram at i, as verify._gram_hashes computes it: two code points as one
 * 64-bit value (the first in the low half), the pair at i + 2 times PRIME_2 plus the pair at
 * i, times PRIME. */
static inline uint64_t
gram_hash(const uint32_t *codes, Py_ssize_t i)
{
    uint64_t low = (uint64_t)codes[i] | (uint64_t)codes[i + 1] << 32;
    uint64_t high = (uint64_t)codes[i + 2] | (uint64_t)codes[i + 3] << 32;
    return (high * PRIME_2 + low) * PRIME;
}

/* grams(normal, least, packed, keys) -> (codes, grams, passages): what Detector.features
 * computes with numpy, in one pass. Of the normalised text, the code points but separators
 * (",", " ", "\n") are kept; lines of them join into passages of at least `least` code points
 * (a short tail joins the last one). For each gram, packed gets the high half of its hash over
 * its passage's number (ACROSS for a gram across a passage's end); keys gets each passage's
 * least gram hash. Returns how many code points were kept, grams packed and passages made. */
static PyObject *
grams(PyObject *self, PyObject *args)
{
    PyObject *text, *packed_obj, *keys_obj;
    Py_ssize_t least;
    if (!PyArg_ParseTuple(args, "UnOO:grams", &text, &least, &packed_obj, &keys_obj))
        return NULL;
    /* A passage shorter than a gram would have a negative count of grams inside it. */
    if (least < GRAM) {
        PyErr_Format(PyExc_ValueError, "least: needs at least %d (a gram), not %zd", GRAM, least);
        return NULL;
    }
    Py_buffer pb, kb;
    if (u64_view(packed_obj, &pb, 1, "packed") < 0)
        return NULL;
    if (u64_view(keys_obj, &kb, 1, "keys") < 0) {
        PyBuffer_Release(&pb);
        return NULL;
    }
    PyObject *result = NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t size = PyUnicode_GET_LENGTH(text), kept = 0, passages = 0, line = 0, running = 0;
    uint32_t *codes = PyMem_Malloc((size_t)(size + 1) * sizeof(uint32_t));
    Py_ssize_t *lengths = PyMem_Malloc((size_t)(size / least + 2) * sizeof(Py_ssize_t));
    if (codes == NULL || lengths == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k <= size; k++) {
        Py_UCS4 c = k < size ? PyUnicode_READ(kind, data, k) : '\n';
        if (c == ',' || c == ' ')
            continue;
        if (c != '\n') {
            codes[kept++] = c;
            line++;
            continue;
        }
        running += line; /* a line ends: short lines join the next */
        line = 0;
        if (running >= least) {
            lengths[passages++] = running;
            running = 0;
        }
    }
    if (running) { /* a short tail joins the passage before it */
        if (passages)
            lengths[passages - 1] += running;
        else
            lengths[passages++] = running;
    }
    Py_ssize_t n = kept - (GRAM - 1);
    if (n <= 0) {
        result = Py_BuildValue("(nnn)", kept, (Py_ssize_t)0, passages);
        goto done;
    }
    if (pb.len / 8 < n || kb.len / 8 < passages) {
        PyErr_SetString(PyExc_ValueError, "packed or keys has too few places");
        goto done;
    }
    uint64_t *packed = pb.buf, *keys = kb.buf;
    Py_ssize_t at = 0;
    for (Py_ssize_t p = 0; p < passages; p++) {
        Py_ssize_t inside = lengths[p] - (GRAM - 1), end = p + 1 < passages ? at + lengths[p] : n;
        uint64_t key = UINT64_MAX;
        for (Py_ssize_t i = at; i < at + inside; i++) {
            uint64_t h = gram_hash(codes, i);
            key = h < key ? h : key;
            packed[i] = (h & HIGH) | (uint64_t)p;
        }
        for (Py_ssize_t i = at + inside; i < end; i++) /* across this passage's end */
            packed[i] = (gram_hash(codes, i) & HIGH) | ACROSS;
        keys[p] = key;
        at += lengths[p];
    }
    result = Py_BuildValue("(nnn)", kept, n, passages);
done:
    PyMem_Free(codes);
    PyMem_Free(lengths);
    PyBuffer_Release(&pb);
    PyBuffer_Release(&kb);
    return result;
}

/* firsts(packed, shingles, passage_of) -> int: of packed values sorted (as `grams` made
 * them), write each distinct shingle (a high half) once, with its first passage, into
 * shingles and passage_of; leave out shingles seen only across passage ends. Returns how
 * many were written. */
static PyObject *
firsts(PyObject *self, PyObject *args)
{
    PyObject *packed_obj, *shingles_obj, *of_obj;
    if (!PyArg_ParseTuple(args, "OOO:firsts", &packed_obj, &shingles_obj, &of_obj))
        return NULL;
    Py_buffer pb, sb, ob;
    if (u64_view(packed_obj, &pb, 0, "packed") < 0)
        return NULL;
    if (u32_view(shingles_obj, &sb, 1, "shingles") < 0) {
        PyBuffer_Release(&pb);
        return NULL;
    }
    if (u32_view(of_obj, &ob, 1, "passage_of") < 0) {
        PyBuffer_Release(&pb);
        PyBuffer_Release(&sb);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = pb.len / 8, written = 0;
    if (sb.len / 4 < n || ob.len / 4 < n) {
        PyErr_SetString(PyExc_ValueError, "shingles or passage_of has too few places");
    } else {
        const uint64_t *packed = pb.buf;
        uint32_t *shingles = sb.buf, *passage_of = ob.buf;
        for (Py_ssize_t k = 0; k < n; k++) {
            uint32_t value = (uint32_t)(packed[k] >> 32), passage = (uint32_t)packed[k];
            if ((k == 0 || value != (uint32_t)(packed[k - 1] >> 32)) && passage != ACROSS) {
                shingles[written] = value;
                passage_of[written++] = passage;
            }
        }
        result = PyLong_FromSsize_t(written);
    }
    PyBuffer_Release(&pb);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ob);
    return result;
}

/* --- facts: the grams that hold a number, and its place ------------------------------------- */

#define ANY_NUMBER 0x10FFFFu /* what a number stands for in its place's grams (facts.ANY_NUMBER) */
#define PLACES 2

typedef struct {
    uint32_t code, id;
} number_entry;

static int
entry_order(const void *a, const void *b)
{
    uint32_t x = ((const number_entry *)a)->code, y = ((const number_entry *)b)->code;
    return (x > y) - (x < y);
}

/* The id of a code point that is a number (its entry in the sorted table), or NULL. */
static const number_entry *
number_of(const number_entry *table, Py_ssize_t count, uint32_t code)
{
    Py_ssize_t lo = 0, hi = count;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (table[mid].code < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < count && table[lo].code == code ? &table[lo] : NULL;
}

static PyObject *
u32_bytearray(const uint32_t *values, Py_ssize_t count)
{
    return PyByteArray_FromStringAndSize((const char *)values, count * (Py_ssize_t)sizeof(uint32_t));
}

/* number_facts(units, ids) -> (facts, places, number_ids) or None: what facts.fact_shingles,
 * fact_places and fact_ids return, in one pass, as bytearrays of uint32. `units`: passage_lines'
 * text; `ids`: {code point of a number: its id}. None where the text states no number or is
 * shorter than a gram (line ends left out). */
static PyObject *
number_facts(PyObject *self, PyObject *args)
{
    PyObject *text, *ids;
    if (!PyArg_ParseTuple(args, "UO!:number_facts", &text, &PyDict_Type, &ids))
        return NULL;
    Py_ssize_t count = PyDict_GET_SIZE(ids);
    if (count == 0)
        Py_RETURN_NONE;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t size = PyUnicode_GET_LENGTH(text), length = 0, found = 0;
    PyObject *result = NULL;
    number_entry *table = PyMem_Malloc((size_t)count * sizeof(number_entry));
    uint32_t *codes = PyMem_Malloc((size_t)(size + 1) * sizeof(uint32_t));
    uint32_t *anon = PyMem_Malloc((size_t)(size + 1) * sizeof(uint32_t));
    Py_ssize_t *at = PyMem_Malloc((size_t)(size + 1) * sizeof(Py_ssize_t));
    uint32_t *out = NULL;
    if (table == NULL || codes == NULL || anon == NULL || at == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0, k = 0;
    while (PyDict_Next(ids, &pos, &key, &value)) {
        unsigned long code = PyLong_AsUnsignedLong(key), id = PyLong_AsUnsignedLong(value);
        if (PyErr_Occurred())
            goto done;
        table[k].code = (uint32_t)code;
        table[k++].id = (uint32_t)id;
    }
    qsort(table, (size_t)count, sizeof(number_entry), entry_order);
    uint32_t least = table[0].code;
    for (Py_ssize_t i = 0; i < size; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c == '\n')
            continue;
        anon[length] = c;
        if (c >= least && number_of(table, count, c) != NULL) {
            at[found++] = length;
            anon[length] = ANY_NUMBER;
        }
        codes[length++] = c;
    }
    if (length < GRAM || found == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t n = length - GRAM + 1;
    out = PyMem_Malloc((size_t)found * (GRAM + PLACES + 1) * sizeof(uint32_t));
    if (out == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    uint32_t *facts = out, *places = out + found * GRAM, *number_ids = places + found * PLACES;
    for (Py_ssize_t f = 0; f < found; f++) {
        Py_ssize_t p = at[f];
        for (Py_ssize_t j = 0; j < GRAM; j++) { /* the grams that hold it */
            Py_ssize_t start = p - GRAM + 1 + j;
            facts[f * GRAM + j] =
                start < 0 || start >= n ? 0 : (uint32_t)(gram_hash(codes, start) >> 32);
        }
        Py_ssize_t before = p - GRAM + 1, around = p - 1; /* its place: clipped to the text */
        before = before < 0 ? 0 : before >= n ? n - 1 : before;
        around = around < 0 ? 0 : around >= n ? n - 1 : around;
        places[f * PLACES] = (uint32_t)(gram_hash(anon, before) >> 32);
        places[f * PLACES + 1] = (uint32_t)(gram_hash(anon, around) >> 32);
        number_ids[f] = number_of(table, count, codes[p])->id;
    }
    result = Py_BuildValue("(NNN)", u32_bytearray(facts, found * GRAM),
                           u32_bytearray(places, found * PLACES), u32_bytearray(number_ids, found));
done:
    PyMem_Free(table);
    PyMem_Free(codes);
    PyMem_Free(anon);
    PyMem_Free(at);
    PyMem_Free(out);
    return result;
}

/* --- tokens: each distinct word's slot and count ------------------------------------------- */

/* count_slots(tokens, slot, slots, tf) -> (distinct, usable) or None: of a list of tokens (str),
 * each distinct usable word's slot (its value in the dict `slot`; 0 is the unusable words'),
 * in order of first occurrence, into `slots` and how often it occurs into `tf` (uintp arrays
 * of at least len(tokens) places); returns how many usable words and usable tokens there are,
 * or None when a word has no slot yet (tokens.Weigher fills them) or a token is no str. The words are counted in a
 * small table of this text's own first, then each distinct one is looked up in `slot` once:
 * that dictionary is too big for the CPU cache. */
static PyObject *
count_slots(PyObject *self, PyObject *args)
{
    PyObject *tokens, *slot, *slots_obj, *tf_obj;
    if (!PyArg_ParseTuple(args, "O!O!OO:count_slots", &PyList_Type, &tokens, &PyDict_Type,
                          &slot, &slots_obj, &tf_obj))
        return NULL;
    Py_buffer sb, cb;
    if (values_view(slots_obj, &sb, sizeof(Py_ssize_t), 1, "slots") < 0)
        return NULL;
    if (values_view(tf_obj, &cb, sizeof(Py_ssize_t), 1, "tf") < 0) {
        PyBuffer_Release(&sb);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t size = PyList_GET_SIZE(tokens), *slots = sb.buf, *tf = cb.buf;
    Py_ssize_t room = 16, distinct = 0, found = 0, usable = 0;
    while (room < 2 * size)
        room *= 2;
    Py_ssize_t *place = PyMem_Malloc((size_t)room * sizeof(Py_ssize_t)); /* 1 + distinct, or 0 */
    Py_hash_t *hashes = PyMem_Malloc((size_t)room * sizeof(Py_hash_t));
    PyObject **words = PyMem_Malloc((size_t)(size + 1) * sizeof(PyObject *));
    Py_ssize_t *counts = PyMem_Malloc((size_t)(size + 1) * sizeof(Py_ssize_t));
    if (place == NULL || hashes == NULL || words == NULL || counts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (sb.len / (Py_ssize_t)sizeof(Py_ssize_t) < size
        || cb.len / (Py_ssize_t)sizeof(Py_ssize_t) < size) {
        PyErr_SetString(PyExc_ValueError, "slots or tf has too few places");
        goto done;
    }
    memset(place, 0, (size_t)room * sizeof(Py_ssize_t));
    for (Py_ssize_t k = 0; k < size; k++) {
        PyObject *word = PyList_GET_ITEM(tokens, k);
        if (!PyUnicode_CheckExact(word)) { /* not words: the Python count's business */
            result = Py_NewRef(Py_None);
            goto done;
        }
        Py_hash_t h = PyObject_Hash(word);
        if (h == -1)
            goto done;
        size_t i = (size_t)h & (size_t)(room - 1);
        for (;; i = (i + 1) & (size_t)(room - 1)) {
            Py_ssize_t d = place[i];
            if (d == 0) { /* a new word */
                place[i] = ++distinct;
                hashes[i] = h;
                words[distinct - 1] = word;
                counts[distinct - 1] = 1;
                break;
            }
            PyObject *other = words[d - 1];
            if (hashes[i] == h && (other == word || PyUnicode_Compare(other, word) == 0)) {
                counts[d - 1]++;
                break;
            }
        }
    }
    for (Py_ssize_t d = 0; d < distinct; d++) {
        PyObject *value = PyDict_GetItemWithError(slot, words[d]);
        if (value == NULL) {
            if (!PyErr_Occurred())
                result = Py_NewRef(Py_None); /* a new word */
            goto done;
        }
        Py_ssize_t s = PyLong_AsSsize_t(value);
        if (s == -1 && PyErr_Occurred())
            goto done;
        if (s == 0)
            continue;
        slots[found] = s;
        tf[found++] = counts[d];
        usable += counts[d];
    }
    result = Py_BuildValue("(nn)", found, usable);
done:
    PyMem_Free(place);
    PyMem_Free(hashes);
    PyMem_Free(words);
    PyMem_Free(counts);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&cb);
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
    {"grams", grams, METH_VARARGS,
     "grams(normal, least, packed, keys) -> (codes, grams, passages): a text's gram table"},
    {"firsts", firsts, METH_VARARGS,
     "firsts(packed, shingles, passage_of) -> int: each distinct shingle and its first passage"},
    {"number_facts", number_facts, METH_VARARGS,
     "number_facts(units, ids) -> (facts, places, number_ids) or None: a text's numbers' grams"},
    {"count_slots", count_slots, METH_VARARGS,
     "count_slots(tokens, slot, slots, tf) -> (distinct, usable) or None: words' slots, counts"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "Verification merges and the features gram table, compiled.", -1,
    methods,
};

static int
add_unsigned(PyObject *m, const char *name, unsigned long long value)
{
    PyObject *object = PyLong_FromUnsignedLongLong(value);
    if (object == NULL)
        return -1;
    int result = PyModule_AddObjectRef(m, name, object);
    Py_DECREF(object);
    return result;
}

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "GRAM", GRAM) < 0
        || add_unsigned(m, "ACROSS", ACROSS) < 0 || add_unsigned(m, "PRIME", PRIME) < 0
        || add_unsigned(m, "PRIME_2", PRIME_2) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

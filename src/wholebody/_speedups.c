/* wholebody._speedups: the fast state checks of wholebody.robot._state in one C call.
 *
 * Each function answers True when a state vector (or two, or three) passes the checks the
 * slow path in Python would pass silently and unchanged, False otherwise; on False the
 * caller runs the slow path, which finds what is wrong and raises the typed error. So a
 * False costs nothing but time, and a True must never accept what the slow path refuses.
 *
 * A vector passes when it is a numpy array (or subclass) whose dtype is numpy's float64
 * (the very object: `x.dtype is np.dtype(np.float64)`, native byte order), with one
 * dimension of the expected length (any stride), every entry finite with |x| <= the
 * magnitude limit (NaN fails the comparison), and, for q, every unit-norm block (the base
 * quaternion, the (cos, sin) pairs of continuous joints) with |sum of squares - 1| within
 * the tolerance. The sum is taken left to right as the slow path's Python expression
 * `x*x + y*y + z*z + w*w`; the build passes -ffp-contract=off so that no fused multiply-add
 * changes its rounding.
 *
 * The array is read through the fields numpy's headers define (PyArrayObject_fields: data,
 * nd, dimensions, strides, base, descr), the layout every compiled numpy extension reads
 * through PyArray_DATA and friends and so part of numpy's ABI; no numpy headers are needed to
 * build. setup() is given the ndarray type and the float64 dtype object; wholebody checks the
 * fields read here against the array's own attributes on import (_view) and falls back to
 * the Python checks when they disagree.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF /* as -ffp-contract=off, which the build passes */
#endif

typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_intptr_t *dimensions;
    Py_intptr_t *strides;
    PyObject *base;
    PyObject *descr;
} ArrayHead;

static PyTypeObject *ndarray_type = NULL;
static PyObject *float64_dtype = NULL;
static double max_magnitude = 0.0;  /* set by setup(); before it no array passes (no type) */
static double norm2_tolerance = -1.0;

/* A 1-D float64 array of length n (any stride), or NULL; `writable` also asks for numpy's
 * WRITEABLE flag (0x0400). */
#define WB_WRITEABLE 0x0400
#define WB_MAX_JOINTS 512 /* more: None, the numpy code */
typedef struct {
    ArrayHead head;
    int flags;
} ArrayHeadFlags;

static const ArrayHead *
float_vector(PyObject *o, Py_ssize_t n, int writable)
{
    if (ndarray_type == NULL || !PyObject_TypeCheck(o, ndarray_type)) {
        return NULL;
    }
    const ArrayHead *a = (const ArrayHead *)o;
    if (a->descr != float64_dtype || a->nd != 1 || a->dimensions[0] != (Py_intptr_t)n) {
        return NULL;
    }
    if (writable && !(((const ArrayHeadFlags *)o)->flags & WB_WRITEABLE)) {
        return NULL;
    }
    return a;
}

/* The vector `o` if it is a 1-D float64 array of length n with finite entries within the
 * magnitude limit, else NULL. */
static const ArrayHead *
checked_vector(PyObject *o, Py_ssize_t n)
{
    const ArrayHead *a = float_vector(o, n, 0);
    if (a == NULL) {
        return NULL;
    }
    const char *p = a->data;
    const Py_intptr_t s = a->strides[0];
    const double limit = max_magnitude;
    /* Four independent tests a step (no branch, no dependency chain): the common contiguous
     * vector of 35 entries costs ~10 ns. */
    int ok0 = 1, ok1 = 1, ok2 = 1, ok3 = 1;
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4) {
        double x0, x1, x2, x3;
        memcpy(&x0, p + i * s, sizeof x0); /* the array may be unaligned */
        memcpy(&x1, p + (i + 1) * s, sizeof x1);
        memcpy(&x2, p + (i + 2) * s, sizeof x2);
        memcpy(&x3, p + (i + 3) * s, sizeof x3);
        ok0 &= fabs(x0) <= limit; /* false for NaN */
        ok1 &= fabs(x1) <= limit;
        ok2 &= fabs(x2) <= limit;
        ok3 &= fabs(x3) <= limit;
    }
    for (; i < n; i++) {
        double x;
        memcpy(&x, p + i * s, sizeof x);
        ok0 &= fabs(x) <= limit;
    }
    return (ok0 & ok1 & ok2 & ok3) ? a : NULL;
}

static double
entry(const ArrayHead *a, Py_ssize_t i)
{
    double x;
    memcpy(&x, a->data + i * a->strides[0], sizeof x);
    return x;
}

/* The unit-norm blocks of q (length nq): spec[2] holds the starts of 4-blocks, spec[3] of
 * 2-blocks. A start that is not an int in [0, nq - width] fails the check (never a read
 * outside q): the slow path then decides. */
static int
unit_blocks_ok(const ArrayHead *q, Py_ssize_t nq, PyObject *starts, Py_ssize_t width)
{
    const Py_ssize_t k = PyTuple_GET_SIZE(starts);
    for (Py_ssize_t j = 0; j < k; j++) {
        const Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(starts, j));
        if (i < 0 || i > nq - width) {
            PyErr_Clear();
            return 0;
        }
        double s = 0.0;
        for (Py_ssize_t m = 0; m < width; m++) {
            const double x = entry(q, i + m);
            s = s + x * x;
        }
        if (!(fabs(s - 1.0) <= norm2_tolerance)) {
            return 0;
        }
    }
    return 1;
}

/* spec = (nq, nv, quaternion starts, pair starts), a tuple made once per robot. */
static int
parse_spec(PyObject *spec, Py_ssize_t *nq, Py_ssize_t *nv)
{
    if (!PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != 4
        || !PyTuple_CheckExact(PyTuple_GET_ITEM(spec, 2))
        || !PyTuple_CheckExact(PyTuple_GET_ITEM(spec, 3))) {
        PyErr_SetString(PyExc_TypeError, "spec must be (nq, nv, tuple, tuple)");
        return -1;
    }
    *nq = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 0));
    *nv = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 1));
    if ((*nq == -1 || *nv == -1) && PyErr_Occurred()) {
        return -1;
    }
    return 0;
}

static int
q_ok(PyObject *x, PyObject *spec, Py_ssize_t nq)
{
    const ArrayHead *q = checked_vector(x, nq);
    return q != NULL && unit_blocks_ok(q, nq, PyTuple_GET_ITEM(spec, 2), 4)
           && unit_blocks_ok(q, nq, PyTuple_GET_ITEM(spec, 3), 2);
}

#define ANSWER(cond) \
    do {                     \
        if (cond) {          \
            Py_RETURN_TRUE;  \
        }                    \
        Py_RETURN_FALSE;     \
    } while (0)

static PyObject *
check_q(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t nq, nv;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "q(x, spec)");
        return NULL;
    }
    if (parse_spec(args[1], &nq, &nv) < 0) {
        return NULL;
    }
    ANSWER(q_ok(args[0], args[1], nq));
}

static PyObject *
check_v(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t nq, nv;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "v(x, spec)");
        return NULL;
    }
    if (parse_spec(args[1], &nq, &nv) < 0) {
        return NULL;
    }
    ANSWER(checked_vector(args[0], nv) != NULL);
}

static PyObject *
check_qv(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t nq, nv;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "qv(q, v, spec)");
        return NULL;
    }
    if (parse_spec(args[2], &nq, &nv) < 0) {
        return NULL;
    }
    ANSWER(checked_vector(args[1], nv) != NULL && q_ok(args[0], args[2], nq));
}

static PyObject *
check_qva(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t nq, nv;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "qva(q, v, a, spec)");
        return NULL;
    }
    if (parse_spec(args[3], &nq, &nv) < 0) {
        return NULL;
    }
    ANSWER(checked_vector(args[1], nv) != NULL && checked_vector(args[2], nv) != NULL
           && q_ok(args[0], args[3], nq));
}

static PyObject *
setup(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyType_Check(args[0]) || !PyFloat_Check(args[2])
        || !PyFloat_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError,
                        "setup(ndarray type, float64 dtype, max magnitude, norm2 tolerance)");
        return NULL;
    }
    Py_INCREF(args[0]);
    Py_INCREF(args[1]);
    Py_XDECREF((PyObject *)ndarray_type);
    Py_XDECREF(float64_dtype);
    ndarray_type = (PyTypeObject *)args[0];
    float64_dtype = args[1];
    max_magnitude = PyFloat_AS_DOUBLE(args[2]);
    norm2_tolerance = PyFloat_AS_DOUBLE(args[3]);
    Py_RETURN_NONE;
}

/* ---- joint bounds (wholebody.control.JointBounds._bounds_into, the same steps) ---------- */

static void
put(const ArrayHead *a, Py_ssize_t i, double x)
{
    memcpy(a->data + i * a->strides[0], &x, sizeof x);
}

static double
min2(double a, double b)
{
    return (a != a || b != b) ? NAN : (b < a ? b : a); /* np.minimum: NaN propagates */
}

static double
max2(double a, double b)
{
    return (a != a || b != b) ? NAN : (b > a ? b : a);
}

/* joint_bounds(q, v, q_upper, q_lower, margin, v_max, a_max, dt, lower, upper) -> far
 *
 * The acceleration bounds of JointBounds, step for step as its numpy code takes them (the
 * upper side, then the lower side mirrored: q -> -q, v -> -v, q_max -> -(q_min + margin)),
 * written into `lower` and `upper`; returns whether every joint is far from its position
 * limits (then the position and viability bounds are left out, as there). None when an
 * argument is not what it must be (the caller then runs the numpy code). */
static PyObject *
joint_bounds(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10 || !PyFloat_CheckExact(args[4]) || !PyFloat_CheckExact(args[7])) {
        Py_RETURN_NONE;
    }
    if (ndarray_type == NULL || !PyObject_TypeCheck(args[0], ndarray_type)
        || ((const ArrayHead *)args[0])->nd != 1) {
        Py_RETURN_NONE;
    }
    const Py_ssize_t nu = (Py_ssize_t)((const ArrayHead *)args[0])->dimensions[0];
    const ArrayHead *q = float_vector(args[0], nu, 0), *v = float_vector(args[1], nu, 0);
    const ArrayHead *qu = float_vector(args[2], nu, 0), *ql = float_vector(args[3], nu, 0);
    const ArrayHead *vm = float_vector(args[5], nu, 0), *am = float_vector(args[6], nu, 0);
    const ArrayHead *lo = float_vector(args[8], nu, 1), *up = float_vector(args[9], nu, 1);
    if (!q || !v || !qu || !ql || !vm || !am || !lo || !up || nu > WB_MAX_JOINTS) {
        Py_RETURN_NONE;
    }
    const double margin = PyFloat_AS_DOUBLE(args[4]), dt = PyFloat_AS_DOUBLE(args[7]);
    double U[2 * WB_MAX_JOINTS], D[2 * WB_MAX_JOINTS]; /* 16 KiB on the stack */
    int far = 1;
    for (Py_ssize_t k = 0; k < 2 * nu; k++) {
        const Py_ssize_t i = k < nu ? k : k - nu;
        const double X = k < nu ? entry(q, i) : -entry(q, i);
        const double V = k < nu ? entry(v, i) : -entry(v, i);
        const double QM = k < nu ? entry(qu, i) - margin : -(entry(ql, i) + margin);
        const double AM = entry(am, i);
        double u = entry(vm, i);
        u -= V;
        u /= dt;
        U[k] = min2(u, AM);
        D[k] = QM - X;
        double T = AM * (0.5 * dt * dt);
        T += V * dt;
        T = D[k] - T;
        T *= AM;
        T *= 2.0 * (1.0 - 1e-6);
        double R = AM * dt;
        R += V;
        R *= R;
        R *= 1.0 + 1e-6;
        T -= R;
        if (!(T >= 0.0)) {
            far = 0;
        }
    }
    for (Py_ssize_t k = 0; k < 2 * nu; k++) {
        const Py_ssize_t i = k < nu ? k : k - nu;
        const double V = k < nu ? entry(v, i) : -entry(v, i);
        const double AM = entry(am, i);
        double u = U[k];
        if (!far) {
            double d = D[k];
            double T = V * dt;
            T = d - T;
            T *= 2;
            T /= pow(dt, 2.0); /* Python's dt**2 */
            u = min2(u, T);
            T = AM * dt;
            T *= dt;
            double R = V * 4;
            R *= dt;
            T -= R;
            d *= 8;
            T += d;
            T *= AM;
            R = max2(T, 0.0);
            R = sqrt(R);
            double E = V * 2;
            E += AM * dt;
            R -= E;
            R /= 2 * dt;
            if (!(T >= 0.0)) {
                R = -AM;
            }
            u = min2(u, R);
        }
        u = max2(u, -AM);
        U[k] = min2(u, AM);
    }
    for (Py_ssize_t i = 0; i < nu; i++) {
        double l = -U[nu + i], h = U[i];
        if (l > h) { /* outside the viable set: brake at a_max against the motion */
            const double AM = entry(am, i);
            l = h = entry(v, i) > 0 ? -AM : AM;
        }
        put(lo, i, l);
        put(up, i, h);
    }
    if (far) {
        Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

/* What this module reads of an array: (data address, ndim, shape[0], strides[0], dtype is
 * the float64 dtype), to compare with numpy's own answer on import. */
static PyObject *
view(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1 || ndarray_type == NULL || !PyObject_TypeCheck(args[0], ndarray_type)) {
        PyErr_SetString(PyExc_TypeError, "_view(ndarray), after setup");
        return NULL;
    }
    const ArrayHead *a = (const ArrayHead *)args[0];
    if (a->nd < 1) {
        PyErr_SetString(PyExc_ValueError, "_view needs ndim >= 1");
        return NULL;
    }
    return Py_BuildValue("(Kinn)O", (unsigned long long)(Py_uintptr_t)a->data, a->nd,
                         (Py_ssize_t)a->dimensions[0], (Py_ssize_t)a->strides[0],
                         a->descr == float64_dtype ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"q", (PyCFunction)(void (*)(void))check_q, METH_FASTCALL,
     "q(x, spec) -> bool: x passes check_q's checks (spec = (nq, nv, quats, pairs))."},
    {"v", (PyCFunction)(void (*)(void))check_v, METH_FASTCALL,
     "v(x, spec) -> bool: x passes check_v's checks (length nv)."},
    {"qv", (PyCFunction)(void (*)(void))check_qv, METH_FASTCALL,
     "qv(q, v, spec) -> bool: both pass."},
    {"qva", (PyCFunction)(void (*)(void))check_qva, METH_FASTCALL,
     "qva(q, v, a, spec) -> bool: all three pass."},
    {"joint_bounds", (PyCFunction)(void (*)(void))joint_bounds, METH_FASTCALL,
     "joint_bounds(q, v, q_upper, q_lower, margin, v_max, a_max, dt, lower, upper) -> far, "
     "or None (see JointBounds)."},
    {"setup", (PyCFunction)(void (*)(void))setup, METH_FASTCALL,
     "setup(ndarray, float64 dtype, max magnitude, norm2 tolerance): the arrays accepted."},
    {"_view", (PyCFunction)(void (*)(void))view, METH_FASTCALL,
     "_view(x) -> ((data address, ndim, shape[0], strides[0]), dtype is float64)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "wholebody._speedups",
    "The state checks of wholebody.robot._state in C (see the source's header).", -1,
    methods,
};

#ifndef WB_SOURCE_SHA256
#define WB_SOURCE_SHA256 "" /* built without the hook: no claim about the source */
#endif

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&module);
    /* The SHA-256 of the source this module was built from (hatch_build.py passes it):
     * wholebody compares it with the source beside the module and leaves a stale build
     * unused. */
    if (m != NULL && PyModule_AddStringConstant(m, "SOURCE_SHA256", WB_SOURCE_SHA256) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

"""The compiled helpers (``wholebody._speedups``, src/wholebody/_speedups.c): loaded once,
screened, or None.

Built at install when a C compiler is there (hatch_build.py). wholebody.robot's state checks
load it (:func:`load`, with their limits); other hot loops with a numpy twin (the
controller's joint bounds) read :data:`speedups` and run their numpy code when it is None.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

F64 = np.dtype(np.float64)
#: The loaded, screened module; None until :func:`load` accepts one (or when none is built,
#: ``WHOLEBODY_NO_SPEEDUPS=1`` is set, or it failed its screening).
speedups: Any = None


def load(max_magnitude: float, norm2_tolerance: float) -> Any:
    """The compiled module (``wholebody._speedups``), set up, or None; kept as
    :data:`speedups` for the other users of its functions.

    ``max_magnitude`` is the largest entry a state may have, ``norm2_tolerance`` the bound
    on ``|x.x - 1|`` of a unit-norm block (wholebody.robot._checks gives its own).

    None when the module is not built (no C compiler at install), when
    ``WHOLEBODY_NO_SPEEDUPS=1`` is set, when it was built from another ``_speedups.c`` than
    the one beside it (a stale build: warned), when it reads arrays differently from numpy,
    or when it gets a known answer wrong (:func:`_known_answers_hold`): the Python code,
    which needs nothing, is then used.
    """
    global speedups
    speedups = None
    if os.environ.get("WHOLEBODY_NO_SPEEDUPS", "") not in ("", "0"):
        return None
    try:
        module: Any = importlib.import_module("wholebody._speedups")
    except Exception:  # not built, or a module that fails to load
        return None
    try:
        source = Path(module.__file__).with_name("_speedups.c")
        if source.is_file():
            sha = hashlib.sha256(source.read_bytes()).hexdigest()
            if module.SOURCE_SHA256 != sha:
                warnings.warn(
                    f"{module.__file__} was built from another version of {source.name}: "
                    "it is left unused and states are checked in Python (slower); rebuild "
                    "it with `python hatch_build.py` or reinstall wholebody",
                    RuntimeWarning,
                    stacklevel=2,
                )
                return None
        module.setup(np.ndarray, F64, float(max_magnitude), float(norm2_tolerance))
        base = np.arange(12.0)
        for x in (base, base[::-3], base.astype(np.float32), base.reshape(3, 4)[:, 1]):
            address = x.__array_interface__["data"][0]
            expected = ((address, x.ndim, x.shape[0], x.strides[0]), x.dtype is F64)
            if module._view(x) != expected:
                return None
        if not _known_answers_hold(module, max_magnitude, norm2_tolerance):
            return None
    except Exception:  # an unexpected module: the Python checks, which need nothing
        return None
    speedups = module
    return module


def _known_answers_hold(module: Any, max_magnitude: float, norm2_tolerance: float) -> bool:
    """The checks' answers on a free flyer's states (nq 7, nv 6; the quaternion at
    q[3:7]) match what the slow path decides: a good state passes; NaN, an entry one ulp
    beyond ``max_magnitude``, a wrong length, float32, a quaternion norm off by more than
    the tolerance, or a start outside q fail; the joint bounds at rest are +-a_max."""
    spec = (7, 6, (3,), ())
    q = np.array([0.1, -0.2, 0.3, 0.0, 0.0, 0.0, 1.0])
    v = np.full(6, max_magnitude)
    beyond = v.copy()
    beyond[5] = np.nextafter(max_magnitude, np.inf)
    nan_q = q.copy()
    nan_q[1] = np.nan
    inside, outside = q.copy(), q.copy()
    inside[6] = np.sqrt(1.0 + 0.75 * norm2_tolerance)
    outside[6] = np.sqrt(1.0 + 1.5 * norm2_tolerance)
    answers = [
        (module.q(q, spec), True),
        (module.q(inside, spec), True),
        (module.q(outside, spec), False),
        (module.q(nan_q, spec), False),
        (module.q(q[:6], spec), False),
        (module.q(q.astype(np.float32), spec), False),
        (module.q(q, (7, 6, (4,), ())), False),  # a block past the end of q
        (module.v(v, spec), True),
        (module.v(beyond, spec), False),
        (module.qv(q, v, spec), True),
        (module.qv(q, beyond, spec), False),
        (module.qva(q, v, -v, spec), True),
        (module.qva(q, v, beyond, spec), False),
        (module.qva(nan_q, v, v, spec), False),
    ]
    # The controller's joint bounds: at rest, far from every limit, they are +-a_max.
    lower, upper = np.zeros(2), np.zeros(2)
    far = module.joint_bounds(
        np.zeros(2), np.zeros(2), np.ones(2), -np.ones(2), 0.0, np.full(2, 10.0),
        np.full(2, 5.0), 1e-3, lower, upper,
    )  # fmt: skip
    answers.append((far, True))
    bounds = (lower.tolist(), upper.tolist()) == ([-5.0] * 2, [5.0] * 2)
    return all(got is want for got, want in answers) and bounds

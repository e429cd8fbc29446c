"""The compiled state checks (``wholebody._speedups``) against an independent reference and
against the Python fallback.

The reference is numpy: a vector passes the fast check when it is a 1-D float64 array of the
right length, every entry has ``|x| <= 1e8`` (NaN and inf fail) and, for ``q``, each unit-norm
block (base quaternion, (cos, sin) pairs) has ``|sum of squares - 1| <= 2e-10`` (the slow
path's bound). Inputs sit at least 1e-14 from that bound, where float rounding cannot decide.
Then the user-visible outcome of each Robot check (the array returned, or the typed error and
its message, and any warning) is the same on the compiled path and on the Python one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import wholebody as wb
from wholebody.robot import _state
from wholebody.robot._checks import MAX_STATE_MAGNITUDE, QUAT_EXACT_TOL

needs_speedups = pytest.mark.skipif(
    not _state.SPEEDUPS,
    reason="wholebody._speedups is not built (no C compiler at install, or "
    "WHOLEBODY_NO_SPEEDUPS=1): `python hatch_build.py` builds it in place",
)

SPECIALS = [
    np.nan,
    np.inf,
    -np.inf,
    MAX_STATE_MAGNITUDE,
    -MAX_STATE_MAGNITUDE,
    np.nextafter(MAX_STATE_MAGNITUDE, np.inf),
    -np.nextafter(MAX_STATE_MAGNITUDE, np.inf),
    5e-324,  # the smallest denormal
    -0.0,
    2.0**17,  # the Python byte test's edge
    1e300,  # overflows x.x
]


def _with_continuous_joint() -> wb.Robot:
    """Free flyer, a continuous joint (q as (cos, sin)) and a hinge: nq = 10, nv = 8."""
    m = pin.Model()
    body = pin.Inertia(1.0, np.zeros(3), 0.1 * np.eye(3))
    parent = 0
    for name, joint in (
        ("root_joint", pin.JointModelFreeFlyer()),
        ("wheel", pin.JointModelRUBZ()),
        ("hinge", pin.JointModelRY()),
    ):
        parent = m.addJoint(parent, joint, pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.1])), name)
        m.appendBodyToJoint(parent, body, pin.SE3.Identity())
    m.lowerPositionLimit[-1], m.upperPositionLimit[-1] = -1.0, 1.0
    return wb.Robot.from_model(m)


@pytest.fixture(scope="module")
def robots(humanoid) -> list[wb.Robot]:
    return [humanoid, _with_continuous_joint(), wb.load("two_link_arm")]


def _blocks(robot: wb.Robot) -> list[tuple[int, int]]:
    quats = [(3, 7)] if robot.model.joints[1].shortname() == "JointModelFreeFlyer" else []
    pairs = [
        (robot.model.joints[j].idx_q, robot.model.joints[j].idx_q + 2)
        for j in range(1, robot.model.njoints)
        if robot.model.joints[j].shortname().startswith("JointModelRUB")
    ]
    return quats + pairs


def reference_passes(robot: wb.Robot, x: object, n: int, is_q: bool) -> bool:
    """numpy's answer: the slow path passes ``x`` unchanged and silently."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float64 or not x.dtype.isnative:
        return False
    if x.ndim != 1 or x.shape[0] != n:
        return False
    with np.errstate(invalid="ignore"):
        if not (np.isfinite(x).all() and (np.abs(x) <= MAX_STATE_MAGNITUDE).all()):
            return False
    if is_q:
        for a, b in _blocks(robot):
            norm2 = float(np.sum(x[a:b].astype(np.longdouble) ** 2))
            if not abs(norm2 - 1.0) <= 2 * QUAT_EXACT_TOL:
                return False
    return True


def _vectors(robot: wb.Robot, base: np.ndarray, is_q: bool) -> list[tuple[str, object]]:
    """The inputs: special values at every kind of position, unit-norm blocks scaled just
    inside and outside the tolerance, wrong lengths, dtypes, shapes and layouts."""
    n = base.size
    out: list[tuple[str, object]] = [("as is", base.copy())]
    positions = {0, n // 2, n - 1} | ({a for a, _ in _blocks(robot)} if is_q else set())
    for i in sorted(positions):
        for value in SPECIALS:
            x = base.copy()
            x[i] = value
            out.append((f"x[{i}] = {value!r}", x))
    if is_q:
        # |(1 + d)^2 - 1| = 2d + d^2: 1.98e-10 passes, 2.02e-10 is renormalised (warning),
        # 2e-6 refused; a zero block is refused.
        for a, b in _blocks(robot):
            for d in (0.0, 9.9e-11, -9.9e-11, 1.01e-10, -1.01e-10, 4e-7, 2e-6, -1.0):
                x = base.copy()
                x[a:b] *= 1.0 + d
                out.append((f"q[{a}:{b}] scaled by 1{d:+g}", x))
            x = base.copy()
            x[a:b] = np.nan
            out.append((f"q[{a}:{b}] NaN", x))
    big = base.copy()
    big[: min(4, n)] = 9e7  # each entry within 1e8, the norm beyond it
    if is_q:
        for a, b in _blocks(robot):
            big[a:b] = base[a:b]
    out.append(("entries within 1e8, norm beyond", big))
    spaced = np.zeros(2 * n)
    spaced[::2] = base
    reversed_ = base[::-1].copy()
    readonly = base.copy()
    readonly.setflags(write=False)
    unaligned = np.frombuffer(b"\0" + base.tobytes(), dtype=np.float64, offset=1)

    class Sub(np.ndarray):
        pass

    out += [
        ("too short", base[:-1].copy()),
        ("too long", np.append(base, 0.0)),
        ("empty", np.zeros(0)),
        ("float32", base.astype(np.float32)),
        ("int64", np.round(base).astype(np.int64)),
        ("object", base.astype(object)),
        ("complex", base.astype(complex)),
        ("big-endian", base.astype(">f8")),
        ("every other entry", spaced[::2]),
        ("negative stride", reversed_[::-1]),
        ("row", base[None, :].copy()),
        ("column", base[:, None].copy()),
        ("2-D, not a vector", np.tile(base, (2, 1))),
        ("0-d", np.array(1.0)),
        ("read-only", readonly),
        ("unaligned", unaligned),
        ("subclass", base.copy().view(Sub)),
        ("list", base.tolist()),
        ("tuple", tuple(base.tolist())),
        ("None", None),
        ("str", "q"),
    ]
    if not is_q:
        out.append(("broadcast (stride 0)", np.broadcast_to(0.5, (n,))))
    return out


def _spec(robot: wb.Robot) -> tuple:
    return _state._spec(robot)


# --- the compiled check against numpy -------------------------------------------------------


@needs_speedups
def test_compiled_check_is_numpys(robots):
    from wholebody import _speedups

    checked = 0
    for robot in robots:
        spec = _spec(robot)
        rng = np.random.default_rng(7)
        for _ in range(3):
            q = robot.random_configuration(rng)
            v = rng.normal(size=robot.nv) * 10.0 ** rng.integers(-3, 7)
            for name, x in _vectors(robot, q, True):
                assert _speedups.q(x, spec) is reference_passes(robot, x, robot.nq, True), name
                checked += 1
            for name, y in _vectors(robot, v, False):
                expected = reference_passes(robot, y, robot.nv, False)
                assert _speedups.v(y, spec) is expected, name
                # The joint checks: the first fault of any member fails the whole.
                assert _speedups.qv(q, y, spec) is expected, name
                assert _speedups.qva(q, v, y, spec) is expected, name
                assert _speedups.qva(q, y, v, spec) is expected, name
                checked += 1
    assert checked > 500


@needs_speedups
@settings(max_examples=300, deadline=None)
@given(
    data=arrays(np.float64, 26, elements=st.floats(allow_nan=True, allow_infinity=True)),
    unit=st.booleans(),
)
def test_compiled_check_is_numpys_on_any_floats(humanoid, data, unit):
    from wholebody import _speedups

    with np.errstate(over="ignore", invalid="ignore"):
        norm = np.linalg.norm(data[3:7])
        if unit and np.isfinite(norm) and norm > 1e-100:
            data[3:7] /= norm
        norm2 = float(np.sum(data[3:7].astype(np.longdouble) ** 2))
    spec = _spec(humanoid)
    if np.isfinite(norm2) and abs(abs(norm2 - 1.0) - 2 * QUAT_EXACT_TOL) < 1e-14:
        return  # at the bound itself: rounding decides, on both paths
    assert _speedups.q(data, spec) is reference_passes(humanoid, data, 26, True)
    assert _speedups.v(data[1:], spec) is reference_passes(humanoid, data[1:], 25, False)


@needs_speedups
def test_what_the_compiled_check_passes_the_slow_path_returns_silently(robots):
    from wholebody import _speedups

    for robot in robots:
        spec = _spec(robot)
        for name, x in _vectors(robot, robot.random_configuration(3), True):
            if type(x) is np.ndarray and _speedups.q(x, spec):
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    assert robot._check_q_slow(x) is x, name


# --- the Robot checks: the same outcome on both paths ---------------------------------------


def _outcome(f, robot, *args):
    """What a user sees: the arrays returned (whether each is the input itself, its dtype,
    shape and bytes) and the warnings, or the error's type and message."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = f(robot, *args)
        except Exception as exc:  # the typed error is part of the outcome
            return ("raised", type(exc), str(exc))
    outs = out if isinstance(out, tuple) else (out,)
    arrays_ = tuple(
        (o is a, np.asarray(o).dtype.str, np.shape(o), np.asarray(o).tobytes())
        for o, a in zip(outs, args)
    )
    return ("returned", arrays_, [(w.category, str(w.message)) for w in caught])


@needs_speedups
def test_both_paths_give_the_same_outcome(robots):
    compared = 0
    for robot in robots:
        rng = np.random.default_rng(11)
        q = robot.random_configuration(rng)
        v, a = rng.normal(size=robot.nv), rng.normal(size=robot.nv)
        for name, x in _vectors(robot, q, True):
            c = _outcome(_state._check_q_c, robot, x)
            assert c == _outcome(_state._check_q_py, robot, x), name
            assert _outcome(_state._check_qv_c, robot, x, v) == _outcome(
                _state._check_qv_py, robot, x, v
            ), name
            compared += 1
        for name, y in _vectors(robot, v, False):
            for what in ("v", "a", "tau"):
                assert _outcome(_state._check_v_c, robot, y, what) == _outcome(
                    _state._check_v_py, robot, y, what
                ), name
            assert _outcome(_state._check_qv_c, robot, q, y) == _outcome(
                _state._check_qv_py, robot, q, y
            ), name
            for args in ((q, y, a), (q, v, y)):
                assert _outcome(_state._check_qva_c, robot, *args) == _outcome(
                    _state._check_qva_py, robot, *args
                ), name
            compared += 1
    assert compared > 150


def test_the_errors_name_the_fault_on_the_active_path(humanoid):
    """Whichever path is active: a fault is a StateError naming it, a near-unit quaternion
    is renormalised in a copy with a warning, a good state comes back as it is."""
    q = humanoid.random_configuration(5)
    v = np.zeros(humanoid.nv)
    assert humanoid.check_q(q) is q
    bad = q.copy()
    bad[12] = np.inf
    with pytest.raises(wb.errors.StateError, match=r"q has non-finite values at indices \[12\]"):
        humanoid.com(bad)
    bad = v.copy()
    bad[-1] = -1.5e8
    with pytest.raises(wb.errors.StateError, match=r"a\[24\] = -1.5e\+08 is beyond"):
        humanoid.inverse_dynamics(q, v, bad)
    near = q.copy()
    near[3:7] *= 1.0 + 1e-8
    with pytest.warns(wb.errors.StateWarning, match=r"base quaternion q\[3:7\] has norm"):
        fixed = humanoid.check_q(near)
    assert fixed is not near and abs(np.linalg.norm(fixed[3:7]) - 1.0) < 1e-15


# --- which path is active -------------------------------------------------------------------


def test_speedups_present_where_required():
    """CI (.ci/run) sets WHOLEBODY_REQUIRE_SPEEDUPS=1: the compiled path must be the one the
    suite tests there."""
    if os.environ.get("WHOLEBODY_REQUIRE_SPEEDUPS") != "1":
        pytest.skip("WHOLEBODY_REQUIRE_SPEEDUPS is not set (.ci/run sets it)")
    assert _state.SPEEDUPS, "wholebody._speedups was not built or not loaded"
    assert _state.check_q is _state._check_q_c


def test_the_environment_variable_selects_the_python_checks():
    code = (
        "from wholebody.robot import _state; "
        "print(_state.SPEEDUPS, _state.check_q is _state._check_q_py, _state.check_q.__name__)"
    )
    env = {**os.environ, "WHOLEBODY_NO_SPEEDUPS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "True", "check_q"]


# --- the loader's failing directions: a module it must leave unused ------------------------


@pytest.fixture(autouse=True)
def _keep_the_loaded_module(monkeypatch):
    """The loader sets wholebody._compiled.speedups: restored after each test."""
    from wholebody import _compiled

    monkeypatch.setattr(_compiled, "speedups", _compiled.speedups)


class _FakeSpeedups:
    """A stand-in for the compiled module: the real one's answers, with one thing broken."""

    def __init__(self, real, **broken):
        self.__file__ = real.__file__
        self.SOURCE_SHA256 = real.SOURCE_SHA256
        self.setup, self._view = real.setup, real._view
        self.q, self.v, self.qv, self.qva = real.q, real.v, real.qv, real.qva
        self.joint_bounds = real.joint_bounds
        for name, value in broken.items():
            setattr(self, name, value)


def _raise(*args):
    raise RuntimeError("broken")


@needs_speedups
@pytest.mark.parametrize(
    "broken",
    [
        {"SOURCE_SHA256": "0" * 64},  # built from another _speedups.c: a stale build
        {"setup": _raise},
        {"_view": lambda x: ((0, 1, 1, 8), True)},  # reads arrays differently from numpy
        {"q": lambda x, spec: True},  # passes everything
        {"v": lambda x, spec: x.shape == (6,)},  # ignores the magnitudes
        {"qv": lambda q, v, spec: False},  # refuses everything (a wrong answer too)
        {"qva": _raise},
        {"joint_bounds": lambda *args: None},  # cannot run the controller's bounds
    ],
    ids=["stale", "setup", "view", "q", "v", "qv", "qva", "joint_bounds"],
)
def test_a_module_that_is_stale_or_answers_wrong_is_left_unused(monkeypatch, broken):
    from wholebody.robot import _checks

    real = _checks._speedups
    assert _checks._load_speedups() is not None  # the real module passes its own screening
    monkeypatch.setitem(sys.modules, "wholebody._speedups", _FakeSpeedups(real, **broken))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _checks._load_speedups() is None
    from wholebody import _compiled

    assert _compiled.speedups is None  # the controller's joint bounds take numpy too
    stale = [w for w in caught if "built from another version" in str(w.message)]
    assert len(stale) == ("SOURCE_SHA256" in broken)


@needs_speedups
def test_the_module_is_built_from_the_source_beside_it():
    import hashlib
    from pathlib import Path

    from wholebody.robot import _checks

    source = Path(_checks._speedups.__file__).with_name("_speedups.c")
    assert _checks._speedups.SOURCE_SHA256 == hashlib.sha256(source.read_bytes()).hexdigest()


def test_a_missing_module_gives_the_python_checks(monkeypatch):
    from wholebody.robot import _checks

    monkeypatch.setitem(sys.modules, "wholebody._speedups", None)  # import raises ImportError
    assert _checks._load_speedups() is None


@needs_speedups
def test_block_starts_outside_q_fail_without_a_read_outside_it():
    """A spec whose unit-norm block lies past the end of q (or before it) fails the check
    (it once read past the buffer: a crash for a start of 1e12)."""
    from wholebody.robot._checks import _speedups as c

    q = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    assert c.q(q, (7, 6, (3,), ())) is True
    for quats, pairs in (((4,), ()), ((10**12,), ()), ((-1,), ()), ((), (6,)), ((), (10**12,))):
        assert c.q(q, (7, 6, quats, pairs)) is False
    assert c.q(np.zeros(1), (1, 1, (), (10**12,))) is False

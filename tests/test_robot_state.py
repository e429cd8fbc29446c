"""``Robot.state`` and the check of raw arrays at each call, against an independent numpy
reference; a State trusted where it travels (no second check) and immutable; and the failing
direction: no State is made from unchecked arrays through the public API.

The reference decides from numpy alone, in this order: a masked entry, an entry that is not a
real number (strings, complex numbers, booleans, None, dates), a wrong length, a non-finite
entry, an entry beyond 1e8, then each unit-norm block of ``q`` (free-flyer and spherical
quaternions, (cos, sin) pairs; their norms summed in long double) of norm 0 or off 1 by more
than 1e-6 is refused; a block off 1 by more than 1e-10 is renormalised with a StateWarning;
anything else is taken as it is. Norms sit at least 1e-11 from those bounds, where rounding
cannot decide. A refusal is a StateError that names the field, the index and the value (read
back from the message and compared with the input's); a pass gives raw Pinocchio's numbers on
the reference's array exactly (renormalised blocks: to 1e-15).
"""

from __future__ import annotations

import copy
import datetime
import pickle
import re
import warnings

import numpy as np
import pinocchio as pin
import pytest

import wholebody as wb
from wholebody.balance import gravito_inertial_wrench, newton_euler_residual
from wholebody.contacts import SurfaceContact
from wholebody.errors import StateError, StateWarning
from wholebody.robot import State, _state

LIMIT = 1e8
ABOVE = float(np.nextafter(LIMIT, np.inf))
SPECIALS = [np.nan, np.inf, -np.inf, LIMIT, -LIMIT, ABOVE, -ABOVE, 5e-324, -0.0, 2.0**17, 1e300]


def _mixed() -> wb.Robot:
    """Free flyer, a continuous joint ((cos, sin)), a spherical joint and a hinge:
    nq = 7 + 2 + 4 + 1, nv = 6 + 1 + 3 + 1."""
    m = pin.Model()
    body = pin.Inertia(1.0, np.array([0.0, 0.0, 0.05]), 0.1 * np.eye(3))
    parent = 0
    joints = (
        ("root_joint", pin.JointModelFreeFlyer()),
        ("wheel", pin.JointModelRUBZ()),
        ("ball", pin.JointModelSpherical()),
        ("hinge", pin.JointModelRY()),
    )
    for name, joint in joints:
        parent = m.addJoint(parent, joint, pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.1])), name)
        m.appendBodyToJoint(parent, body, pin.SE3.Identity())
    m.lowerPositionLimit[-1], m.upperPositionLimit[-1] = -1.0, 1.0
    return wb.Robot.from_model(m)


@pytest.fixture(scope="module")
def robots(humanoid, two_link_arm) -> list[wb.Robot]:
    return [humanoid, _mixed(), two_link_arm]


def _blocks(robot: wb.Robot) -> list[tuple[int, int]]:
    """The unit-norm blocks of q, read from the model's joint types."""
    out = []
    for joint in robot.model.joints[1:]:
        kind, i = joint.shortname(), joint.idx_q
        if kind == "JointModelFreeFlyer":
            out.append((i + 3, i + 7))
        elif kind.startswith("JointModelRUB") or kind == "JointModelSpherical":
            out.append((i, i + joint.nq))
    return out


# --- the reference ---------------------------------------------------------------------------


def _same(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or a == b


def reference(robot, field, x):
    """numpy's verdict on ``x`` as ``field``: ("refuse", check of the message), ("warn",
    array) or ("pass", array)."""
    n = robot.nq if field == "q" else robot.nv
    if x is None:
        return "refuse", lambda m: m.startswith(f"{field} must be an array of numbers, got None")
    if np.ma.isMaskedArray(x) and np.ma.getmaskarray(x).any():
        i = int(np.flatnonzero(np.ma.getmaskarray(x))[0])
        held = float(np.ma.getdata(x)[i])
        pattern = rf"{field}\[{i}\] is masked \(holding (\S+)\)"
        return "refuse", lambda m: _value_named(pattern, m, [held])
    arr = np.ma.getdata(x) if np.ma.isMaskedArray(x) else np.asarray(x)
    for i, e in enumerate(arr.reshape(-1).tolist()):
        if isinstance(e, bool) or not isinstance(e, (int, float)):
            name = f"{field}[{i}]" if arr.ndim == 1 else field
            return "refuse", lambda m, t=f"{name} = {e!r} is not a real number": m.startswith(t)
    if arr.size != n or not (arr.ndim == 1 or (arr.ndim == 2 and 1 in arr.shape)):
        return "refuse", lambda m: m.startswith(f"{field} must have shape ({n},), got")
    y = arr.astype(np.float64).reshape(n)
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        head = f"{field} has non-finite values at indices {bad.tolist()}: "
        return (
            "refuse",
            lambda m: (
                m.startswith(head)
                and all(
                    _same(float(got), want) for got, want in zip(m[len(head) :].split(", "), y[bad])
                )
            ),
        )
    huge = np.flatnonzero(np.abs(y) > LIMIT)
    if huge.size:
        i = int(huge[0])
        pattern = rf"{field}\[{i}\] = (\S+) is beyond any physical magnitude"
        return "refuse", lambda m: _value_named(pattern, m, [y[i]])
    if field != "q":
        return "pass", y
    warn = False
    for a, b in _blocks(robot):
        norm = float(np.sqrt(np.sum(y[a:b].astype(np.longdouble) ** 2)))
        if norm == 0.0:
            return "refuse", lambda m, p=rf"q\[{a}:{b}\].* is zero": re.search(p, m) is not None
        if abs(norm - 1.0) > 1e-6:
            pattern = rf"q\[{a}:{b}\].* has norm (\S+), not 1"
            return "refuse", lambda m, p=pattern, w=norm: _value_named(p, m, [w], rtol=1e-8)
        if abs(norm - 1.0) > 1e-10:
            y = y.copy()
            y[a:b] = (y[a:b].astype(np.longdouble) / np.longdouble(norm)).astype(np.float64)
            warn = True
    return ("warn" if warn else "pass"), y


def _value_named(pattern: str, message: str, values: list[float], rtol: float = 0.0) -> bool:
    """The message matches ``pattern`` and its captured value is the input's."""
    found = re.search(pattern, message)
    if found is None:
        return False
    got = float(found.group(1).rstrip(","))
    return all(_same(got, w) or abs(got - w) <= rtol * abs(w) for w in values)


def _vectors(robot, field, base):
    """Inputs: special values at every kind of position, unit-norm blocks scaled either side
    of the tolerances, wrong lengths, dtypes, shapes, layouts and kinds of container."""
    n = base.size
    blocks = _blocks(robot) if field == "q" else []
    out = [("as is", base.copy())]
    for i in sorted({0, n // 2, n - 1} | {a for a, _ in blocks}):
        for value in SPECIALS:
            x = base.copy()
            x[i] = value
            out.append((f"[{i}] = {value!r}", x))
    for a, b in blocks:
        for d in (0.0, 9e-11, -9e-11, 1.1e-10, -1.1e-10, 9.9e-7, -9.9e-7, 1.01e-6, -1.01e-6, -1.0):
            x = base.copy()
            x[a:b] *= 1.0 + d
            out.append((f"[{a}:{b}] x (1{d:+g})", x))
    masked = np.ma.masked_array(base.copy(), mask=np.zeros(n, dtype=bool))
    masked.data[n - 1], masked.mask[n - 1] = np.nan, True
    strings = base.astype(object)
    strings[n // 2] = "x"
    holes = base.astype(object)
    holes[0] = None

    class Sub(np.ndarray):
        pass

    readonly = base.copy()
    readonly.setflags(write=False)
    spaced = np.zeros(2 * n)
    spaced[::2] = base
    out += [
        ("too short", base[:-1].copy()),
        ("too long", np.append(base, 0.0)),
        ("empty", np.zeros(0)),
        ("float32", base.astype(np.float32)),
        ("int64", np.round(base).astype(np.int64)),
        ("bool", base > 0),
        ("complex", base.astype(complex)),
        ("strings", base.astype(str)),
        ("dates", np.full(n, np.datetime64("2020-01-01"))),
        ("object floats", base.astype(object)),
        ("object holding a string", strings),
        ("object holding None", holes),
        ("masked NaN", masked),
        ("masked, nothing masked", np.ma.masked_array(base.copy(), mask=np.zeros(n, bool))),
        ("big-endian", base.astype(">f8")),
        ("strided", spaced[::2]),
        ("negative stride", base[::-1].copy()[::-1]),
        ("row", base[None, :].copy()),
        ("column", base[:, None].copy()),
        ("2-D", np.tile(base, (2, 1))),
        ("0-d", np.array(1.0)),
        ("read-only", readonly),
        ("subclass", base.copy().view(Sub)),
        ("list", base.tolist()),
        ("tuple", tuple(base.tolist())),
        ("None", None),
        ("str", field),
    ]
    return out


def _outcome(call):
    """What a user sees: ("refuse", message) or ("warn" / "pass", result)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except StateError as exc:
            return "refuse", str(exc)
    warned = any(issubclass(w.category, StateWarning) for w in caught)
    return ("warn" if warned else "pass"), result


def _calls(robot, field, x, q0, v0, a0):
    """The field checked by Robot.state and by a method on raw arrays, each with raw
    Pinocchio's answer on the reference array: (name, call, its result for a pass or warn,
    raw Pinocchio on the reference array)."""
    m = robot.model
    d = m.createData()
    if field == "q":
        return [
            ("state", lambda: robot.state(x).q, lambda y: y),
            ("com", lambda: robot.com(x), lambda y: pin.centerOfMass(m, d, y, False).copy()),
        ]
    if field == "v":
        return [
            ("state", lambda: robot.state(q0, x).v, lambda y: y),
            (
                "nle",
                lambda: robot.nonlinear_effects(q0, x),
                lambda y: pin.nonLinearEffects(m, d, q0, y),
            ),
        ]
    if field == "a":
        return [
            ("state", lambda: robot.state(q0, v0, x).a, lambda y: y),
            (
                "rnea",
                lambda: robot.inverse_dynamics(q0, v0, x),
                lambda y: pin.rnea(m, d, q0, v0, y),
            ),
        ]
    return [("aba", lambda: robot.forward_dynamics(q0, v0, x), lambda y: pin.aba(m, d, q0, v0, y))]


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("field", ["q", "v", "a", "tau"])
def test_checks_are_numpys(robots, field):
    checked = 0
    for robot in robots:
        rng = np.random.default_rng(7)
        q0, v0, a0 = (robot.random_configuration(rng), *rng.normal(size=(2, robot.nv)))
        base = robot.random_configuration(rng) if field == "q" else rng.normal(size=robot.nv)
        for name, x in _vectors(robot, "q" if field == "q" else field, base):
            verdict, detail = reference(robot, field, x)
            kept = copy.deepcopy(x)
            for call_name, call, raw in _calls(robot, field, x, q0, v0, a0):
                if x is None and call_name == "state" and field != "q":
                    continue  # state(q, v=None): v not given
                what = f"{robot.name} {field} {name} via {call_name}"
                got, result = _outcome(call)
                assert got == verdict, f"{what}: {got} {result}"
                if verdict == "refuse":
                    assert detail(result), f"{what}: {result}"
                else:
                    tol = 1e-15 if verdict == "warn" else 0.0
                    np.testing.assert_allclose(result, raw(detail), rtol=0, atol=tol, err_msg=what)
                checked += 1
            if isinstance(x, np.ndarray) and x.dtype.kind == "f":  # the input left as it was
                np.testing.assert_array_equal(np.ma.getdata(x), np.ma.getdata(kept))
    assert checked > 150


def test_the_reference_sees_each_kind_of_fault(humanoid):
    """The reference itself, on one input of each kind (a reference that passes everything
    would pass the test above)."""
    q = humanoid.neutral()
    kinds = {name: reference(humanoid, "q", x)[0] for name, x in _vectors(humanoid, "q", q)}
    assert kinds["as is"] == kinds["float32"] == kinds["list"] == "pass"
    for name in ("[0] = nan", "[0] = 100000000.00000001", "[3:7] x (1+1.01e-06)", "[3:7] x (1-1)"):
        assert kinds[name] == "refuse", name
    assert kinds["[3:7] x (1+1.1e-10)"] == "warn" and kinds["[3:7] x (1+9e-11)"] == "pass"
    for name in ("complex", "strings", "bool", "masked NaN", "object holding a string", "2-D"):
        assert kinds[name] == "refuse", name


# --- a State: checked once, trusted after, immutable -------------------------------------


def _everything(robot, s):
    """Every single-sample term of a state, through the Robot's methods and the balance
    functions (``s`` a State, or the arrays (q, v, a))."""
    q, v, a = (s, None, None) if isinstance(s, State) else s
    feet = [
        SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.7)
        for f in ("left_sole", "right_sole")
    ]
    W = [np.r_[0.0, 0.0, 300.0, 0.0, 0.0, 0.0]] * 2
    tick = robot.controller_pass()
    tick(q, v)
    terms = {
        "M": robot.mass_matrix(q),
        "C": robot.coriolis_matrix(q, v),
        "Cv": robot.coriolis(q, v),
        "g": robot.gravity(q),
        "h": robot.nonlinear_effects(q, v),
        "rnea": robot.inverse_dynamics(q, v, a),
        "aba": robot.forward_dynamics(q, v, np.ones(robot.nv)),
        "split": robot.torque_terms(q, v, a).total,
        "joints": robot.joint_wrenches(q, v, a)[0],
        "J": robot.frame_jacobian(q, "left_sole"),
        "twist": robot.frame_velocity(q, v, "left_sole"),
        "drift": robot.frame_drift(q, v, "left_sole"),
        "placements": robot.placements(q, ["left_sole", "torso"]).positions,
        "position": robot.frame_position(q, "torso"),
        "com": robot.com(q),
        "Jcom": robot.com_jacobian(q),
        "hg": robot.centroidal_momentum(q, v),
        "dhg": robot.centroidal_momentum_rate(q, v, a),
        "named": np.array(list(robot.named(q).values())),
        "tick M": tick.mass_matrix.copy(),
        "tick drift": tick.momentum_drift.copy(),
        "residual": newton_euler_residual(robot, q, v, a, feet, W).force,
        "gi": gravito_inertial_wrench(robot, q, v, a).moment,
    }
    return terms


def test_a_state_is_checked_once_and_trusted_after(monkeypatch):
    robot = wb.load("humanoid")
    rng = np.random.default_rng(5)
    q, v, a = robot.random_configuration(rng), rng.normal(size=robot.nv), rng.normal(size=robot.nv)
    on_arrays = _everything(robot, (q, v, a))
    s = robot.state(q, v, a)
    q[:] = np.nan  # the caller's arrays change after the check: the State does not
    v[:] = np.inf

    def checked_again(*args, **kwargs):
        raise AssertionError("a State was checked again")

    for name in ("_is_normalized", "as_state_vector", "renormalized"):
        monkeypatch.setattr(_state, name, checked_again)
    on_state = _everything(robot, s)
    for name, value in on_arrays.items():
        np.testing.assert_array_equal(on_state[name], value, err_msg=name)
    # Raw Pinocchio on the State's arrays, fresh Data: the same numbers.
    m, d = robot.model, robot.model.createData()
    np.testing.assert_array_equal(on_state["rnea"], pin.rnea(m, d, s.q, s.v, s.a))
    np.testing.assert_array_equal(on_state["com"], pin.centerOfMass(m, d, s.q, False))
    # The patch is on the path of arrays: the same call on arrays is checked (and fails here).
    q2 = robot.neutral()
    with pytest.raises(AssertionError, match="checked again"):
        robot.com(q2)
    with pytest.raises(AssertionError, match="checked again"):
        robot.state(q2)


def test_the_controller_tick_checks_once_and_a_state_not_at_all(humanoid, monkeypatch):
    calls = []
    real = _state._is_normalized

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(_state, "_is_normalized", counted)
    tick = humanoid.controller_pass()
    q, v = humanoid.random_configuration(3), np.zeros(humanoid.nv)
    tick(q, v)
    assert len(calls) == 1
    s = humanoid.state(q, v)
    calls.clear()
    tick(s)
    humanoid.mass_matrix(s)
    assert calls == []
    np.testing.assert_allclose(tick.mass_matrix, humanoid.mass_matrix(q), rtol=0, atol=1e-12)


def test_a_state_cannot_change(humanoid):
    q, v = humanoid.neutral(), np.zeros(humanoid.nv)
    s = humanoid.state(q, v)
    with pytest.raises(AttributeError, match="a State cannot be changed"):
        s.q = np.zeros(humanoid.nq)
    with pytest.raises(AttributeError, match="a State cannot be changed"):
        s.a = np.zeros(humanoid.nv)
    with pytest.raises(AttributeError, match="a State cannot be changed"):
        del s.v
    for x in (s.q, s.v):
        with pytest.raises(ValueError, match="read-only"):
            x[0] = np.nan
        with pytest.raises(ValueError, match="WRITEABLE"):
            x.flags.writeable = True
        with pytest.raises(ValueError, match="WRITEABLE"):
            x.setflags(write=True)
    assert copy.copy(s) is s and copy.deepcopy(s) is s
    np.testing.assert_array_equal(s.q, q)
    assert s.a is None and repr(s) == "State(q, v; nq=26, nv=25)"


def test_no_state_is_made_from_unchecked_arrays(humanoid, two_link_arm):
    q, v = humanoid.neutral(), np.zeros(humanoid.nv)
    with pytest.raises(TypeError, match=r"made by Robot.state\(q, v, a\), which checks it"):
        State(q, v)
    with pytest.raises(TypeError, match="made by Robot.state"):
        State.__new__(State)
    s = humanoid.state(q, v)
    with pytest.raises(TypeError, match="made by Robot.state"):
        pickle.loads(pickle.dumps(s))
    q[3:7] = 0.0
    with pytest.raises(StateError, match=r"base quaternion q\[3:7\] is zero"):
        humanoid.state(q, v)
    # A robot of another layout refuses the State; one of the same layout takes it.
    with pytest.raises(StateError, match=r"checked for another layout \(nq=26, nv=25"):
        two_link_arm.com(s)
    twin = wb.load("humanoid")
    np.testing.assert_array_equal(twin.com(s), humanoid.com(s))
    assert humanoid.state(s) is s
    # With a State, v and a come from it; what it lacks is named.
    with pytest.raises(StateError, match="q is a State: its v and a are used"):
        humanoid.nonlinear_effects(s, np.zeros(humanoid.nv))
    with pytest.raises(StateError, match="q is a State"):
        humanoid.state(s, np.zeros(humanoid.nv))
    with pytest.raises(StateError, match=r"needs a and the State has none.*state\(q, v, a\)"):
        humanoid.inverse_dynamics(s)
    with pytest.raises(StateError, match=r"needs v and the State has none.*state\(q, v\)"):
        humanoid.centroidal_momentum(humanoid.state(humanoid.neutral()))
    with pytest.raises(StateError, match=r"needs v"):
        newton_euler_residual(humanoid, humanoid.state(humanoid.neutral()), None, None, [], [])


def test_a_date_is_not_a_number(humanoid):
    """A date array (numpy's datetime64) converts to float in numpy; as a state it is refused."""
    q = np.full(humanoid.nq, np.datetime64("2020-01-01"))
    with pytest.raises(StateError, match=re.escape(f"q[0] = {datetime.date(2020, 1, 1)!r}")):
        humanoid.com(q)

"""Expected error of the Newton-Euler residual when accelerations are differentiated from ``v``.

A log without accelerations is checked with ``a`` from central differences of ``v``
(:func:`wholebody.robot.differentiation.estimate_accelerations`). The residual at the CoM then
carries the differentiation error through the centroidal momentum matrix ``A_G(q)``:

.. math::

    \\delta r_i = A_G(q_i) (\\hat a_i - a_i), \\qquad
    \\hat a_i = \\frac{v_{i+1} - v_{i-1}}{2 \\Delta t}
             = \\frac{1}{2 \\Delta t} \\int_{t_{i-1}}^{t_{i+1}} a \\, dt .

For a consistent log the momentum rate is the total external wrench at the CoM,
``dh_G/dt = W_G(t)`` (contacts, known external wrenches and gravity, world axes), so
``delta r_i`` is the mean of ``W_G`` over ``[t_{i-1}, t_{i+1}]`` minus ``W_G(t_i)``, up to
terms of relative size ``dt |dA_G/dt| / |A_G|`` (about 1 %). The model has three parts:

- **Jumps, holds and truncation.** A jump ``Delta W`` of the total wrench at ``s`` inside
  ``(t_i, t_{i+1})`` (an impact, a lift-off, a heel or toe re-contact inside one foot) makes
  the central difference at ``t_i`` off by ``Delta W (dt - s) / (2 dt)`` and at ``t_{i+1}``
  by ``Delta W s / (2 dt)``: at most **half the jump** at each sample next to it. A
  simulator's semi-implicit step holds the acceleration of sample ``i`` over
  ``[t_i, t_{i+1})`` (``v_{i+1} = v_i + dt a_i``), so there the central difference is the
  mean ``(a_{i-1} + a_i) / 2``: off by half the change over the interval before. In general,
  with the wrench between its sampled values inside each interval, the mean over each of
  the two intervals is within its change of ``W_i`` and weighs one half:
  ``e_jump,i = (|W_i - W_{i-1}| + |W_{i+1} - W_i|) / 2`` (force and moment norms). It
  bounds both cases (a single jump gives exactly half of it at each sample next to it) and
  the truncation error of a smooth wrench (``dt^2 W'' / 6``).
- **Noise of v**, amplified by ``1/dt``: a white noise of std ``sigma_j`` on column ``j``
  (estimated from the second differences of ``v``, robustly) gives ``a`` a noise of std
  ``sigma_j / (sqrt(2) dt)``, and the residual ``A_G`` times that: ``e_noise,i = k
  |A_G(q_i) diag(sigma)|_F / (sqrt(2) dt)`` with ``k = NOISE_SIGMAS``.
- **Log start and end**: the one-sided second-order stencil ``(-3 v_0 + 4 v_1 - v_2) /
  (2 dt)`` is off by up to the **whole** jump (factor 1, not 1/2) and amplifies noise by
  ``sqrt(26) / 2`` instead of ``1 / sqrt(2)``: it is ``3/2`` of the mean over the first
  interval minus ``1/2`` of the mean over the second, so
  ``e_edge,0 = 2 |W_1 - W_0| + |W_2 - W_1| / 2`` (and the same at the end).

The expected error is the sum of the parts. A sample is ``unreliable`` when it alone could
exceed the residual tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contacts import Contact
from ..errors import InvalidArgumentError, LogFormatError
from ..robot.batch import centroidal_map_rows
from ..robot.core import Robot
from ..trajectory import Trajectory
from ._core import NOISE_SIGMAS, quiet_empty_slices
from .noise import measure_stamps, segments_between_gaps

__all__ = ["ExpectedResidualError", "expected_residual_error"]

Array = NDArray[np.float64]

_BLOCK = 2048  # samples per block of the batched algebra


@dataclass(frozen=True)
class ExpectedResidualError:
    """Per-sample expected error of the residual at the CoM from differentiating ``v``.

    Attributes
    ----------
    force_error : ndarray, shape (N,)
        Bound on ``|delta f_r|`` [N].
    moment_error : ndarray, shape (N,)
        Bound on ``|delta tau_r|`` about the CoM [N m].
    unreliable : ndarray of bool, shape (N,)
        Samples whose expected error exceeds the force or the moment tolerance.
    force_parts, moment_parts : dict of str to ndarray (N,)
        The parts ``"jump"``, ``"noise"``, ``"edge"``, ``"stamps"`` (the error is their sum)
        [N], [N m].
    velocity_noise : ndarray, shape (nv,)
        The estimated noise std of each column of ``v`` (robot order) [m/s, rad/s], from
        its second differences of neighbouring samples (the noise a central difference
        sees).
    slow_force_error, slow_moment_error : ndarray, shape (N,)
        The same bounds with the noise estimated at the lags :data:`NOISE_LAGS` (the largest
        estimate): the error of ``v`` at one sample, noise correlated over a few samples
        included, which bounds averages of the residual over windows [N], [N m].
    total_wrench : ndarray, shape (N, 6)
        The total external wrench at the CoM, gravity excluded, world axes [N, N m] (NaN
        where not computed): averages over windows are off by half its change across them.
    """

    force_error: Array
    moment_error: Array
    unreliable: NDArray[np.bool_]
    force_parts: dict[str, Array]
    moment_parts: dict[str, Array]
    velocity_noise: Array
    slow_force_error: Array | None = None
    slow_moment_error: Array | None = None
    total_wrench: Array | None = None


@quiet_empty_slices
def expected_residual_error(
    robot: Robot,
    traj: Trajectory,
    contacts: Sequence[Contact],
    *,
    force_tolerance: float = 0.01,
    moment_tolerance: float = 0.01,
    samples: ArrayLike | None = None,
) -> ExpectedResidualError:
    """Expected error of the Newton-Euler residual at the CoM when ``a`` is differentiated.

    Meaningful only for accelerations estimated from ``v`` by central differences (a log's
    ``a`` that was logged has no such error). The model is in the module docstring.

    Parameters
    ----------
    robot : Robot
    traj : Trajectory
        The log: ``v`` [m/s, rad/s], contact wrenches in world axes at the contact frames'
        origins [N, N m], known external wrenches at their frames' origins.
    contacts : sequence of Contact
        One per contact of the log, matched by name (their frames place the wrenches).
    force_tolerance : float
        Residual force tolerance relative to the weight (as in ``check_trajectory``).
    moment_tolerance : float
        Residual moment tolerance over the weight [m].
    samples : array of int, optional
        Only these samples are needed (the others come back as ``inf``): the per-sample
        Pinocchio work is done for them and their neighbours only.

    Returns
    -------
    ExpectedResidualError
        ``force_error`` (N,) [N], ``moment_error`` (N,) [N m], ``unreliable`` (N,).
    """
    for label, value in (
        ("force_tolerance", force_tolerance),
        ("moment_tolerance", moment_tolerance),
    ):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise InvalidArgumentError(f"{label} must be a finite number >= 0, got {value!r}")
    by_name = {c.name: c for c in contacts}
    missing = [n for n in traj.contact_names if n not in by_name]
    if missing:
        raise LogFormatError(
            f"{traj.source}: the log has contacts {missing} that are not "
            f"declared; declared: {sorted(by_name)}"
        )
    N = len(traj)
    if N < 3:
        raise LogFormatError(
            f"{traj.source}: differentiation needs at least 3 samples, the log has {N}"
        )
    traj = traj.at_frame_origins(robot, contacts)  # wrenches stated about other points
    q, v, _, _ = traj.for_robot(robot)
    arrays, flagged, _ = robot.check_batch(q=q, v=v)
    q, v = arrays["q"], arrays["v"]
    bad = np.asarray(flagged, dtype=bool)
    frames = [by_name[n].frame for n in traj.contact_names] + list(traj.external_frames)
    wrenches = traj.contact_wrenches
    if traj.external_wrenches is not None:
        wrenches = np.concatenate([wrenches, traj.external_wrenches], axis=1)
    wrenches = np.where(np.isfinite(wrenches), wrenches, 0.0)

    sigma = _noise_sigma(np.where(bad[:, None], np.nan, v), lags=FAST_NOISE_LAGS)
    sigma_slow = np.fmax(sigma, _noise_sigma(np.where(bad[:, None], np.nan, v)))
    fids = [robot.frame_id(f) for f in frames]
    (noise_f, noise_m), (slow_f, slow_m), W = _pass(
        robot, q, fids, wrenches, bad, samples, sigma, sigma_slow
    )
    stamps = measure_stamps(traj.time)
    segments = segments_between_gaps(traj.time, stamps.gap)
    weight = -robot.mass * robot.gravity_vector
    scale, parts = _parts(traj.time, W, noise_f, noise_m, segments, stamps.jitter, weight)
    force = sum(parts["force"].values(), np.zeros(N))
    moment = sum(parts["moment"].values(), np.zeros(N))
    slow_force = force + (slow_f - noise_f) * scale
    slow_moment = moment + (slow_m - noise_m) * scale
    # A flagged sample has no residual; its neighbours' differences use it: unknown error.
    near_bad = bad.copy()
    near_bad[1:] |= bad[:-1]
    near_bad[:-1] |= bad[1:]
    for x in (force, moment, slow_force, slow_moment):
        x[near_bad] = np.inf
    unreliable = (force > force_tolerance * robot.weight) | (
        moment > moment_tolerance * robot.weight
    )
    return ExpectedResidualError(
        force,
        moment,
        unreliable,
        parts["force"],
        parts["moment"],
        sigma,
        slow_force,
        slow_moment,
        W,
    )


def _pass(
    robot: Robot,
    q: Array,
    fids: list[int],
    wrenches: Array,
    bad: NDArray[np.bool_],
    samples: ArrayLike | None,
    sigma: Array,
    sigma_slow: Array,
) -> tuple[tuple[Array, Array], tuple[Array, Array], Array]:
    """One Pinocchio pass per sample needed (``samples`` and their neighbours; every sample
    when None) for A_G, the CoM and the frames, the algebra batched after, in blocks (the
    work memory does not grow with the log): the noise norms ``|A_G diag(sigma)|`` of force
    and moment for ``sigma`` and ``sigma_slow`` (N,) each, and the total external wrench at
    the CoM, gravity excluded (N, 6; NaN where not computed)."""
    N = len(q)
    need = np.ones(N, dtype=bool)
    if samples is not None:
        idx = np.asarray(samples, dtype=int)
        need[:] = False
        for shift in (-1, 0, 1):
            need[np.clip(idx + shift, 0, N - 1)] = True
    noise_f, noise_m = np.zeros(N), np.zeros(N)
    slow_f, slow_m = np.zeros(N), np.zeros(N)
    W = np.zeros((N, 6))
    all_rows = np.flatnonzero(~bad & need)
    for b in range(0, len(all_rows), _BLOCK):
        rows = all_rows[b : b + _BLOCK]
        Ag, G, P = centroidal_map_rows(robot, q, rows, fids)
        for s_, (out_f, out_m) in ((sigma, (noise_f, noise_m)), (sigma_slow, (slow_f, slow_m))):
            As = Ag * s_[None, None, :]
            out_f[rows] = np.sqrt(np.sum(As[:, :3] ** 2, axis=(1, 2)))
            out_m[rows] = np.sqrt(np.sum(As[:, 3:] ** 2, axis=(1, 2)))
        f = wrenches[rows, :, :3]
        W[rows, :3] = f.sum(axis=1)
        W[rows, 3:] = (wrenches[rows, :, 3:] + np.cross(P - G[:, None], f)).sum(axis=1)
    W[bad | ~need] = np.nan
    return (noise_f, noise_m), (slow_f, slow_m), W


def _parts(
    time: Array,
    W: Array,
    noise_f: Array,
    noise_m: Array,
    segments: Sequence[tuple[int, int]],
    jitter: float,
    weight: Array,
) -> tuple[Array, dict[str, dict[str, Array]]]:
    """The noise gain per sample (``NOISE_SIGMAS`` times the stencil's gain over the step)
    and the parts ``"jump"``, ``"noise"``, ``"edge"`` (at each segment's ends: the log's and
    a gap's) and ``"stamps"`` (the stamps' jitter: a difference over a span whose two ends
    each err by it is off by that share of the momentum rate, ``W`` plus the weight
    ``weight`` (3,) [N]) of the force and moment errors (module docstring)."""
    N = len(time)
    dt = np.diff(time)
    dt_i = np.empty(N)
    with np.errstate(invalid="ignore"):  # a stamp that is not finite: the step on its other side
        dt_i[1:-1] = np.nanmean(np.stack([dt[:-1], dt[1:]]), axis=0)
    dt_i[0], dt_i[-1] = dt[0], dt[-1]
    gain = np.full(N, 1.0 / math.sqrt(2.0))
    ends = [i for lo, hi in segments for i in (lo, hi - 1)]
    gain[ends] = math.sqrt(26.0) / 2.0
    scale = NOISE_SIGMAS * gain / dt_i
    parts: dict[str, dict[str, Array]] = {}
    for key, cols in (("force", slice(0, 3)), ("moment", slice(3, 6))):
        w = W[:, cols]
        jump = np.zeros(N)
        step = np.linalg.norm(np.diff(w, axis=0), axis=1)  # |W_{i+1} - W_i|
        jump[1:-1] = 0.5 * (step[:-1] + step[1:])
        edge = np.zeros(N)
        for lo, hi in segments:
            if hi - lo >= 3:
                edge[lo] = 2 * step[lo] + 0.5 * step[lo + 1]
                edge[hi - 1] = 2 * step[hi - 2] + 0.5 * step[hi - 3]
                jump[[lo, hi - 1]] = 0.0
        noise = (noise_f if key == "force" else noise_m) * scale
        # The momentum rate: the external wrench less the weight (W + m g, g downwards).
        rate = np.linalg.norm(w - (weight if key == "force" else 0.0), axis=1)
        stamps = NOISE_SIGMAS * math.sqrt(2.0) * jitter / (2.0 * dt_i) * rate
        parts[key] = {
            "jump": np.nan_to_num(jump, nan=np.inf),
            "noise": noise,
            "edge": np.nan_to_num(edge, nan=np.inf),
            "stamps": np.nan_to_num(stamps, nan=np.inf),
        }
    return scale, parts


#: Lags [samples] of the second differences the noise a central difference sees is estimated
#: from (the largest estimate): lag 2 too, since a central difference spans two samples and
#: noise correlated over neighbours hides from lag-1 second differences.
FAST_NOISE_LAGS = (1, 2)
#: Lags [samples] of the second differences the slow noise of ``v`` (for averages over
#: windows) is estimated from: the largest estimate counts, so that noise correlated over a
#: few samples (a filtered encoder, a state estimator) is not taken for smooth motion. Noise
#: correlated over longer times is motion as far as the log can tell.
NOISE_LAGS = (1, 2, 4, 8)


def _noise_sigma(v: Array, lags: Sequence[int] = NOISE_LAGS) -> Array:
    """Robust noise std of each column from its second differences at ``lags`` (increasing;
    ``var(v_{i+2k} - 2 v_{i+k} + v_i) = 6 sigma^2`` for noise uncorrelated over ``k``
    samples). Noise correlated over a few samples grows with the lag and then stays; smooth
    motion grows as ``k^2``: from one lag to the next the estimate may grow at most in
    proportion to the lag (what grows faster is motion, not noise)."""
    out = np.zeros(v.shape[1])
    prev = 0
    for k in lags:
        if len(v) < 2 * k + 1:
            break
        d2 = v[2 * k :] - 2 * v[k:-k] + v[: -2 * k]
        with np.errstate(invalid="ignore"):
            s = 1.4826 * np.nanmedian(np.abs(d2), axis=0) / math.sqrt(6.0)
        s = np.nan_to_num(np.asarray(s, dtype=float))
        out = s if not prev else np.fmax(out, np.fmin(s, out * (k / prev)))
        prev = k
    return out

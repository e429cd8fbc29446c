"""One call for one sample or N: :func:`estimate_contact_wrenches`.

``q`` of shape (nq,) estimates one sample
(:func:`wholebody.estimation.problem.estimate_contact_wrenches`; bad input raises) and returns
a :class:`~wholebody.estimation.results.ContactEstimate`; ``q`` of shape (N, nq) estimates N
(:func:`wholebody.estimation.batch.estimate_contact_wrenches_batch`; bad samples flagged) and
returns an :class:`~wholebody.estimation.results.EstimationBatch`.
Both results say which they hold (``is_batch``), as :class:`wholebody.balance.Residual` does.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..contacts import Contact
from ..robot.core import Robot
from . import problem as _problem
from .batch import estimate_contact_wrenches_batch
from .results import ContactEstimate, EstimationBatch

__all__ = ["estimate_contact_wrenches"]


def estimate_contact_wrenches(
    robot: Robot,
    q: ArrayLike,
    v: ArrayLike,
    a: ArrayLike,
    contacts: Sequence[Contact],
    *,
    tau: ArrayLike | None = None,
    external_wrenches: Mapping[str, Any] | None = None,
    active: ArrayLike | None = None,
    known_wrenches: Mapping[str, Any] | None = None,
    solver: str | None = None,
    noise: Any = None,
    confidence: float = 0.95,
    **kwargs: Any,
) -> ContactEstimate | EstimationBatch:
    """Estimate the contact wrenches of one sample or of N, by quadratic programming.

    Parameters
    ----------
    robot : Robot
        The robot.
    q : array of shape (nq,) or (N, nq)
        One configuration, or N. Its number of dimensions picks the path: one sample (bad
        input raises a typed error) or N samples (a bad sample is flagged with a reason and
        NaN results; the others are estimated). A (1, nq) row is a batch of one here (the
        one-sample path of earlier releases read it as one sample, as it still does).
    v, a : arrays of shape (nv,) or (N, nv)
        Velocities and accelerations, as ``q``.
    contacts : sequence of PointContact or SurfaceContact
        The contacts whose wrenches are unknown.
    tau : array, optional
        Measured joint torques, (nv - 6,) or (nv,), or (N, ...) for N samples: the
        ``"full_dynamics"`` mode.
    external_wrenches, active : optional
        Known external wrenches and the contacts that may carry a wrench, as in
        :func:`~wholebody.estimation.build_estimation_problem` (one sample) and
        :func:`~wholebody.estimation.estimate_contact_wrenches_batch` (per sample or
        constant).
    known_wrenches : mapping, deprecated
        Use ``external_wrenches``.
    solver : str, optional
        A qpsolvers backend; default :data:`~wholebody.estimation.DEFAULT_SOLVER`.
    noise : NoiseLevels, optional
        Also compute the wrench intervals at ``confidence``
        (:mod:`wholebody.estimation.uncertainty`); for N samples this is ``intervals=True`` of the
        batch.
    confidence : float
        Level of those intervals.
    **kwargs
        ``regularization``, ``pyramid_faces``, ``tolerance`` for both; for N samples also
        ``progress``, ``workers``, ``chunk_size``, ``friction_scale``, ``intervals`` of
        :func:`~wholebody.estimation.estimate_contact_wrenches_batch`.

    Returns
    -------
    ContactEstimate or EstimationBatch
        A :class:`~wholebody.estimation.ContactEstimate` for one sample, an
        :class:`~wholebody.estimation.EstimationBatch` for N; ``is_batch`` says which. The
        names of earlier releases stay: ``estimate_contact_wrenches_batch`` (N samples) and
        :func:`wholebody.estimation.problem.estimate_contact_wrenches` (one sample).

    Examples
    --------
    A humanoid standing still on two feet, once and over three samples: each foot carries
    half the weight (world axes, at the sole's origin, [N]).

    >>> import numpy as np, wholebody
    >>> from wholebody.contacts import SurfaceContact
    >>> from wholebody.estimation import estimate_contact_wrenches
    >>> robot = wholebody.load("humanoid")
    >>> feet = [SurfaceContact(f, half_length=0.1, half_width=0.05, mu=0.7)
    ...         for f in ("left_sole", "right_sole")]
    >>> q, zero = robot.neutral(), np.zeros(robot.nv)
    >>> one = estimate_contact_wrenches(robot, q, zero, zero, feet)
    >>> one.is_batch, one.status, np.round(one.wrenches["left_sole"][2], 1)
    (False, 'found', np.float64(322.3))
    >>> Q, Z = np.tile(q, (3, 1)), np.zeros((3, robot.nv))
    >>> many = estimate_contact_wrenches(robot, Q, Z, Z, feet)
    >>> many.is_batch, list(many.status), np.round(many.wrench("left_sole")[:, 2], 1)
    (True, ['found', 'found', 'found'], array([322.3, 322.3, 322.3]))
    """
    if tau is None and active is None and noise is None and type(q) is np.ndarray and q.ndim == 1:
        fast = _problem._fast_one(
            robot, q, v, a, contacts, external_wrenches, known_wrenches, solver, kwargs
        )
        if fast is not None:
            return fast
    if known_wrenches:
        # Warn here, at the caller's line.
        external_wrenches = {
            **_problem._deprecated_known(known_wrenches),
            **(external_wrenches or {}),
        }
    if np.ndim(q) == 2:
        if np.shape(q)[0] == 1:
            # Earlier releases read a (1, nq) row as one sample: say what changed, at the
            # caller's line, for one release.
            warnings.warn(
                "estimate_contact_wrenches: q of shape (1, nq) is a batch of one sample and "
                "gives an EstimationBatch (earlier releases gave a ContactEstimate); pass q of "
                "shape (nq,) for one sample",
                FutureWarning,
                stacklevel=2,
            )
        kwargs.setdefault("intervals", noise is not None)
        return estimate_contact_wrenches_batch(
            robot,
            q,
            v,
            a,
            contacts,
            tau=tau,
            external_wrenches=external_wrenches,
            active=active,
            solver=solver,
            noise=noise,
            confidence=confidence,
            **kwargs,
        )
    return _problem.estimate_contact_wrenches(
        robot,
        q,
        v,
        a,
        contacts,
        tau=tau,
        external_wrenches=external_wrenches,
        active=active,
        solver=solver,
        noise=noise,
        confidence=confidence,
        **kwargs,
    )

"""Contact-wrench estimation by quadratic programming: build the problem, then solve it.

Unknowns ``x``: the contact wrenches stacked in contact order, world axes at each contact
frame's origin (3 per :class:`PointContact`, 6 per :class:`SurfaceContact`), inside their
friction cones ``G x <= 0`` (inner k-face pyramids for points, the closed-form wrench cone
for soles; see :class:`wholebody.friction.ContactSet`).

Two modes:

``"newton_euler"`` (no joint torques known)
    The six Newton-Euler equations ``A_ne x = b_ne`` (about the CoM) hold exactly, and the
    split between contacts is the one of least norm:

    .. math::  \\min_x \\|x\\|^2 \\quad \\text{s.t.} \\quad A_{ne} x = b_{ne}, \\; G x \\le 0

    The total wrench is determined by the motion; the split comes from the regularisation,
    and the result says so (``split_from_regularization``).

``"full_dynamics"`` (measured joint torques ``tau``)
    All nv equations of motion ``J_c^T x = b = M a + h - S^T tau - sum_e J_e^T w_e`` in the
    least-squares sense. With the thin SVD ``J_c^T = U diag(s) V^T`` restricted to its rank
    r, every least-squares solution satisfies ``diag(s) V^T x = U^T b`` (r rows); among them
    the QP takes the one of least norm:

    .. math::

        \\min_x \\|x\\|^2 \\quad \\text{s.t.} \\quad
        \\mathrm{diag}(s) V^T x = U^T b, \\; G x \\le 0

    When ``r = n`` (full column rank) each contact's wrench is identifiable and the answer is
    the least-squares one; otherwise the split in the null space is the least-norm one. The
    rank is reported; the answer is unique, so every backend gives the same one.

A solution is ``found`` only once verified: finite, equations met and cones respected within
``tolerance * m |g|`` (backends have been seen to report success with NaN or wrong answers).
When the least-norm solve gives nothing verified, the closest wrenches inside the cones
(least squares on the raw equations, regularised; retried with a larger regularisation when
the backend fails it) decide: ``"infeasible"`` when they miss the equations (returned, with,
for single samples, the least friction scale that would make the sample feasible),
``"failed"`` when they meet them (the backend failed a feasible problem). The vocabulary is
in :mod:`wholebody.estimation.results`.

Known external wrenches (``external_wrenches=``, the library's one vocabulary: a push as a
wrench at a frame origin or a force at a point) enter as data, single and batch. An
``active`` mask (k,) or (N, k) (a contact schedule, :mod:`wholebody.schedule`) fixes inactive
contacts' wrenches to zero: their columns leave the equations, so the least-norm answer is
zero there. ``identifiable_by_contact`` says which contacts' wrenches the equations
determine (the null space of the equation matrix has no component on their columns);
intervals are in :mod:`wholebody.estimation.uncertainty`.

One call estimates one sample or N, :func:`estimate_contact_wrenches` (the result's
``is_batch`` says which), on one route: a QP workspace set up once and updated per sample
(daqp through its own API; any other installed qpsolvers backend by name).

Modules: :mod:`~wholebody.estimation.estimate` (:func:`estimate_contact_wrenches`),
:mod:`~wholebody.estimation.problem` (one sample's :class:`EstimationProblem`, to inspect or
to solve elsewhere), :mod:`~wholebody.estimation.assembly` (the rows of each mode),
:mod:`~wholebody.estimation.known` (known wrenches, active masks, identifiability),
:mod:`~wholebody.estimation.results` (results and the status function),
:mod:`~wholebody.estimation.solvers` (the QP workspace, backends and fallbacks),
:mod:`~wholebody.estimation.uncertainty` (intervals).
"""

from __future__ import annotations

from ..errors import SolverNotAvailableError
from .estimate import estimate_contact_wrenches
from .known import identifiable_contacts
from .problem import EstimationProblem, build_estimation_problem
from .results import (
    DETAILED_STATUSES,
    STATUSES,
    ContactEstimate,
    EstimationBatch,
    estimate_status,
)
from .solvers import DEFAULT_REGULARIZATION, DEFAULT_SOLVER, DEFAULT_TOLERANCE

__all__ = [
    "EstimationProblem",
    "ContactEstimate",
    "EstimationBatch",
    "build_estimation_problem",
    "estimate_contact_wrenches",
    "estimate_status",
    "SolverNotAvailableError",
    "DEFAULT_SOLVER",
    "DEFAULT_TOLERANCE",
    "DEFAULT_REGULARIZATION",
    "STATUSES",
    "DETAILED_STATUSES",
    "identifiable_contacts",
]

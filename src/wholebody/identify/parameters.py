"""Parameters of an identification from logs: the prior, the records of the fitted
parameters, the links chosen by the arguments, and what the logs can identify (the data
information and its observable directions, in prior-scaled parameters)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidArgumentError
from .links import LinkInertia

__all__ = [
    "DEFAULT_PRIOR_STD",
    "PARAMETER_SETS",
    "IDENTIFIED_SHARE",
    "UNOBSERVABLE_RTOL",
    "Param",
    "ParameterEstimate",
    "Identifiability",
    "parse_selection",
    "critical_value",
    "pinv_sym",
    "observable_basis",
    "identifiability_report",
    "direction_components",
]

Array = NDArray[np.float64]
#: Prior standard deviations (the spread of the URDF's error one expects), per kind:
#: mass scale (log, ~ relative), CoM shift (relative to the link's RMS extent along each
#: principal axis of its inertia), inertia (log-scale coordinates of the second moment about
#: the CoM), force offset [N], moment offset [N m], gain (relative), rotation [rad], torque
#: offset [N m].
DEFAULT_PRIOR_STD = {
    "mass": 0.1,
    "com": 0.5,
    "inertia": 0.2,
    "force_offset": 20.0,
    "moment_offset": 2.0,
    "gain": 0.05,
    "rotation": 0.05,
    "torque_offset": 2.0,
}
#: Presets of ``parameters``.
PARAMETER_SETS = (
    "total_mass",
    "mass",
    "com",
    "mass_com",
    "inertia",
    "mass_inertia",
    "com_inertia",
    "mass_com_inertia",
)
#: A parameter counts as identified when the logs shrink its prior variance by this factor.
IDENTIFIED_SHARE = 0.99
#: Directions with less data information than this share of the largest are unobservable.
UNOBSERVABLE_RTOL = 1e-10

# --- parameters ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One parameter of the fit, as the problem sees it (prior-scaled by ``prior_std``).

    ``name``, ``kind``, ``target`` and ``unit`` as in :class:`ParameterEstimate`;
    ``prior_std`` in ``unit`` (for a mass: of the log mass scale; for a CoM: relative to the
    link's extent; for an inertia: of the log-scale coordinates); ``axis`` 0, 1, 2 for x, y, z
    (CoM shifts, offsets and rotations), 0-5 for inertia coordinates (xx, yy, zz, xy, xz, yz),
    0 otherwise; ``log`` the log of a per-log sensor parameter (None: shared).
    """

    name: str
    kind: str  # mass | com | force_offset | moment_offset | gain | rotation | torque_offset
    target: str
    unit: str
    prior_std: float
    axis: int = 0
    log: int | None = None


@dataclass(frozen=True)
class ParameterEstimate:
    """One fitted parameter, in physical units.

    Attributes
    ----------
    name : str
        ``"torso.mass"``, ``"torso.com_x"`` (link axes), ``"left_sole.force_offset_x"``
        (the calibration's axes), ``"left_sole.gain"``, ``"left_knee.torque_offset"``...
    kind : str
        ``mass``, ``com``, ``inertia`` (an entry of the rotational inertia about the CoM, link
        axes), ``force_offset``, ``moment_offset``, ``gain``, ``rotation``, ``torque_offset``
        or ``lag`` (the time by which a log's wrenches lag its motion [s]).
    target : str
        The link, group, contact or joint.
    unit : str
    nominal : float
        The URDF's (or uncalibrated) value: a mass [kg], a CoM coordinate [m], 0 for sensors.
    estimate : float
    std_error : float
        Robust (sandwich) standard error of ``estimate``; inf when the logs do not determine
        it and no prior holds it.
    prior_std : float
        The prior's standard deviation, in the same unit.
    data_share : float
        ``1 - posterior variance / prior variance`` (with the prior at unit weight): 0 when the
        logs say nothing about it, 1 when they determine it.
    identified : bool
        ``data_share >= IDENTIFIED_SHARE``.
    dof : float
        Degrees of freedom of the interval's Student t (the number of independent stretches
        of the logs less one; inf: normal).
    resolution : float
        The fit's numerical resolution of ``estimate`` (same unit): how far float64 round-off
        in the fit's sums, through the problem's conditioning, can move it; no interval is
        narrower (on an exact log the noise is round-off and ``std_error`` alone understates
        it).
    """

    name: str
    kind: str
    target: str
    unit: str
    nominal: float
    estimate: float
    std_error: float
    prior_std: float
    data_share: float
    identified: bool
    dof: float = math.inf
    resolution: float = 0.0

    @property
    def change(self) -> float:
        return self.estimate - self.nominal

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Two-sided interval ``estimate +- max(t std_error, resolution)`` at ``level``
        (Student t with ``dof`` degrees of freedom; normal when inf)."""
        half = max(critical_value(level, self.dof) * self.std_error, self.resolution)
        return self.estimate - half, self.estimate + half


@dataclass(frozen=True)
class Identifiability:
    """What the logs can identify, in prior-scaled parameters (``theta_k / sigma_k``).

    Attributes
    ----------
    rank : int
        Directions with data information above ``UNOBSERVABLE_RTOL`` of the largest.
    n_parameters : int
    condition : float
        ``sqrt(largest / smallest)`` eigenvalue over the observable directions of the
        information with each row group scaled to unit norm (the condition number of the
        prior-scaled regressor, groups on their own scales).
    information : ndarray, shape (n_parameters,)
        Eigenvalues of the data information, descending (1 = as much as the prior).
    unobservable : list of dict of str to float
        Directions the logs do not excite, each as parameter name -> component (the largest).
    weak : list of dict of str to float
        Directions with less information than the prior (held mostly by the prior).
    """

    rank: int
    n_parameters: int
    condition: float
    information: Array
    unobservable: list[dict[str, float]]
    weak: list[dict[str, float]]


def critical_value(level: float, dof: float = math.inf) -> float:
    """Two-sided critical value of a Student t with ``dof`` degrees of freedom (normal: inf)."""
    if not 0 < level < 1:
        raise InvalidArgumentError(f"level must be in (0, 1), got {level!r}")
    if math.isinf(dof):
        from statistics import NormalDist

        return NormalDist().inv_cdf(0.5 + level / 2)
    # The inverse of Student's t distribution function itself (what scipy.stats.t.ppf calls),
    # without importing all of scipy.stats for one quantile.
    from scipy.special import stdtrit

    return float(stdtrit(max(dof, 1.0), 0.5 + level / 2))


def parse_selection(
    links: list[LinkInertia],
    parameters: Any,
    only: Sequence[str] | None,
    groups: Mapping[str, Sequence[str]] | None,
) -> tuple[list[tuple[str, list[int]]], list[int], list[int]]:
    """Mass groups [(name, link indices)], CoM links and inertia links [index] from the
    arguments."""
    names = [lk.name for lk in links]
    index = {n: i for i, n in enumerate(names)}

    def resolve(seq: Sequence[str], what: str) -> list[int]:
        unknown = [n for n in seq if n not in index]
        if unknown:
            raise InvalidArgumentError(f"{what}: unknown links {unknown}; links with mass: {names}")
        return [index[n] for n in seq]

    if parameters is not None and parameters not in PARAMETER_SETS:
        raise InvalidArgumentError(
            f"parameters must be one of {PARAMETER_SETS} or None, got {parameters!r}"
        )
    chosen = list(range(len(links))) if only is None else resolve(only, "links")
    mass_groups: list[tuple[str, list[int]]] = []
    grouped: set[int] = set()
    for gname, members in (groups or {}).items():
        ids = resolve(members, f"group {gname!r}")
        if grouped & set(ids):
            raise InvalidArgumentError(
                f"group {gname!r}: links {[names[i] for i in grouped & set(ids)]} "
                "are already in another group"
            )
        grouped |= set(ids)
        mass_groups.append((gname, ids))
    if parameters == "total_mass":
        rest = [i for i in chosen if i not in grouped]
        if rest:
            mass_groups.append(("robot" if only is None else "links", rest))
    parts = set(parameters.split("_")) if isinstance(parameters, str) else set()
    if parameters != "total_mass" and "mass" in parts:
        mass_groups += [(names[i], [i]) for i in chosen if i not in grouped]
    com = chosen if "com" in parts else []
    inertia = chosen if "inertia" in parts else []
    return mass_groups, com, inertia


# --- identifiability ------------------------------------------------------------------------


def pinv_sym(H: Array) -> Array:
    """Pseudo-inverse of a symmetric positive semi-definite ``H`` (p, p), eigenvalues below
    :data:`UNOBSERVABLE_RTOL` of the largest dropped."""
    w, V = np.linalg.eigh(H)
    keep = w > UNOBSERVABLE_RTOL * max(w.max(initial=0.0), 1e-300)
    return (V[:, keep] / w[keep]) @ V[:, keep].T


def _normalised_information(blocks: dict[str, Array]) -> tuple[Array, Array]:
    """Eigenvalues (descending) and vectors of the information with each row group scaled to
    unit norm: a direction is unobservable when no group sees it, on that group's own scale
    (noise levels of different groups can differ by orders of magnitude)."""
    p = next(iter(blocks.values())).shape[1]
    info = np.zeros((p, p))
    for J in blocks.values():
        norm = float(np.linalg.norm(J, 2)) if J.size else 0.0
        if norm > 0:
            info += (J / norm).T @ (J / norm)
    w, V = np.linalg.eigh(info)
    return w[::-1], V[:, ::-1]


def observable_basis(blocks: dict[str, Array]) -> tuple[Array, Array, Array]:
    """Orthonormal bases (p, r) of the observed and (p, p - r) unobserved directions."""
    w, V = _normalised_information(blocks)
    observable = w > UNOBSERVABLE_RTOL * max(float(w[0]) if len(w) else 0.0, 1e-300)
    return V[:, observable], V[:, ~observable], w


def direction_components(v: Array, names: list[str], top: int = 4) -> dict[str, float]:
    """A direction ``v`` (p,) as its largest ``top`` components, name -> value (the largest
    scaled to 1; components under 0.05 left out)."""
    v = v / v[np.argmax(np.abs(v))]
    order = np.argsort(-np.abs(v))[:top]
    return {names[i]: round(float(v[i]), 3) for i in order if abs(v[i]) > 0.05}


def identifiability_report(
    blocks: dict[str, Array], H_data: Array, names: list[str]
) -> Identifiability:
    """The :class:`Identifiability` of prior-scaled parameters.

    Parameters
    ----------
    blocks : dict of str to ndarray, shape (n_g, p)
        Each row group's (triangular-factored) derivative of the residual, prior-scaled.
    H_data : ndarray, shape (p, p)
        Data information (noise-weighted ``J^T J``) in prior-scaled parameters.
    names : list of str
        The ``p`` parameter names.
    """
    w_norm, V = _normalised_information(blocks)
    top = max(float(w_norm[0]) if len(w_norm) else 0.0, 1e-300)
    observable = w_norm > UNOBSERVABLE_RTOL * top
    rank = int(observable.sum())
    condition = math.sqrt(top / w_norm[observable].min()) if rank else math.inf
    unobservable = [direction_components(V[:, i], names) for i in np.flatnonzero(~observable)]
    w, U = np.linalg.eigh(H_data)
    w, U = w[::-1], U[:, ::-1]
    null = V[:, ~observable]
    weak = [
        direction_components(U[:, i], names)
        for i in range(len(w))
        if w[i] < 1.0 and np.linalg.norm(null.T @ U[:, i]) < 0.5
    ]
    return Identifiability(
        rank, len(names), float(condition), np.clip(w, 0.0, None), unobservable, weak
    )

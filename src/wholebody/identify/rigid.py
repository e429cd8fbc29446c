"""Rigid-body helpers of the identification: a link's dynamic parameters, its second moment
about the CoM (and its repair when the URDF's is no rigid body), the symmetric-matrix
coordinates of the inertia parametrisation and the pseudo-inertia."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "INERTIA_COMPONENTS",
    "MIN_EXTENT",
    "second_moment",
    "pseudo_inertia",
    "symmetric",
    "sqrtm_psd",
    "dynamic",
]

Array = NDArray[np.float64]

EYE3 = np.eye(3)
ZERO3 = np.zeros((3, 3))
#: Pinocchio's order of the inertia entries (xx, xy, yy, xz, yz, zz).
PIN_ROWS = np.array([0, 0, 1, 0, 1, 2])
PIN_COLS = np.array([0, 1, 1, 2, 2, 2])


def dynamic(m: float, c: Array, inertia_c: Array) -> Array:
    """:func:`link_parameters` without its checks and temporaries (the fit's inner loop)."""
    inertia = inertia_c + m * ((c @ c) * EYE3 - np.multiply.outer(c, c))
    out = np.empty(10)
    out[0] = m
    out[1:4] = m * c
    out[4:] = inertia[PIN_ROWS, PIN_COLS]
    return out


#: Order of the six inertia coordinates (the symmetric ``S`` and ``I_C``'s entries).
INERTIA_COMPONENTS = ("xx", "yy", "zz", "xy", "xz", "yz")
_PAIRS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))
#: Smallest RMS extent of a link assumed by the CoM prior and the consistency repair [m].
MIN_EXTENT = 0.01


def symmetric(v: Array) -> Array:
    """The symmetric 3x3 of six coordinates (orthonormal basis: off-diagonal ones / sqrt 2)."""
    S = np.zeros((3, 3))
    for k, (a, b) in enumerate(_PAIRS):
        if a == b:
            S[a, a] = v[k]
        else:
            S[a, b] = S[b, a] = v[k] / math.sqrt(2.0)
    return S


SYM_BASIS = [symmetric(np.eye(6)[k]) for k in range(6)]


def sqrtm_psd(S: Array) -> Array:
    w, V = np.linalg.eigh(S)
    return (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T


def second_moment(mass: float, inertia_com: Array) -> tuple[Array, bool]:
    """``Sigma = tr(I_C)/2 1 - I_C`` (3, 3) [kg m^2] of a link, and whether the URDF's is
    physically consistent (positive definite: the pseudo-inertia is).

    An inconsistent one is replaced by the nearest with eigenvalues at least
    ``mass * (1 cm)^2`` (so that fits of it start from a real rigid body).
    """
    sig = 0.5 * np.trace(inertia_com) * np.eye(3) - inertia_com
    w, V = np.linalg.eigh(0.5 * (sig + sig.T))
    floor = mass * MIN_EXTENT**2 * 1e-4
    ok = bool(w.min() > floor)
    if not ok:
        sig = (V * np.maximum(w, mass * MIN_EXTENT**2)) @ V.T
    return sig, ok


def pseudo_inertia(mass: float, com: Array, inertia_com: Array) -> Array:
    """The 4x4 pseudo-inertia ``[[Sigma_O, h], [h^T, m]]`` about the link origin."""
    c = np.asarray(com, dtype=float)
    sig_c = 0.5 * np.trace(inertia_com) * np.eye(3) - inertia_com
    J = np.empty((4, 4))
    J[:3, :3] = sig_c + mass * np.outer(c, c)
    J[:3, 3] = J[3, :3] = mass * c
    J[3, 3] = mass
    return J

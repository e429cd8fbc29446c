"""Identification from logs: corrections to links' masses and centres of mass, and sensor
calibrations, fitted to the logged motion and contact wrenches.

The equations of motion are linear in the bodies' dynamic parameters ``pi`` (Pinocchio's
joint-torque regressor ``Y``, ``pin.computeJointTorqueRegressor``):

.. math::

    Y(q, v, a)\\, \\pi = S^T \\tau + \\sum_i J_i^T w_i

Its first six rows (the floating base) need no torques: the contact wrenches alone must
supply them. Stacked over every sample of every log, they identify what the motion excites;
with joint torques every row is used. The unknowns ``theta`` are *corrections* to the URDF:

* per link (or per group of links) a mass ``m = m_0 e^s``, positive; the rotational inertia
  about the CoM is kept (no density assumption unless ``density=True``);
* per link a CoM shift ``c = c_0 + d`` in link axes;
* per link the rotational inertia through the second moment about the CoM,
  ``Sigma = A expm(S) A`` (``A = Sigma_0^(1/2)``, ``S`` symmetric), positive definite for
  every ``S``: every link stays a real rigid body (positive-definite pseudo-inertia);
* sensor parameters (:mod:`wholebody.io.calibration`, chosen by
  :class:`~wholebody.identify.calibrate.SensorModel`): offsets, gains, mount rotations (per log
  by default), joint-torque offsets, which enter the right-hand side linearly; and, when
  asked, each log's wrench lag (:mod:`~wholebody.identify.lag`, estimated first).

The fit minimises, over ``theta`` (Gauss-Newton, exact for logs without noise),

.. math::

    \\sum_g \\frac{\\lVert r_g(\\theta) \\rVert^2}{\\sigma_g^2}
    + \\lambda \\lVert L^{-1} \\theta \\rVert^2

with rows grouped as base forces, base moments and joint torques, each with its noise level
``sigma_g`` estimated from the fit's residual (iterated), and a Gaussian prior centred on the
URDF in a geometry-aware metric (``L``: the second-order entropic divergence of Lee, Wensing,
Park 2020, scaled per kind by :data:`DEFAULT_PRIOR_STD`; weight ``lambda = prior_weight``).
Standard errors are sandwich estimates with the middle from batch means over time
(:mod:`~wholebody.identify.intervals`), so they hold for time-correlated residuals, and no
interval is narrower than the fit's numerical resolution; a
cross-validation on held-out time windows compares the fit with the URDF; the
identifiability report says which quantities the logs determine. See
``docs/identification.md``.

The package's modules: :mod:`~wholebody.identify.links` (links' inertias from the URDF and
back), :mod:`~wholebody.identify.parameters` (the prior, parameter records, identifiability),
:mod:`~wholebody.identify.problem` (the map ``x(theta)`` and the per-sample features),
:mod:`~wholebody.identify.intervals` (standard errors for correlated residuals),
:mod:`~wholebody.identify.lag` (each log's wrench lag),
:mod:`~wholebody.identify.smoothing` (the low-pass logs with differentiated accelerations are
read through, regressor and measurements alike),
:mod:`~wholebody.identify.result` (:class:`IdentificationResult`) and
:mod:`~wholebody.identify.fit` (:func:`fit_inertial_parameters`, :func:`fit_calibration`).
"""

from .fit import fit_calibration, fit_inertial_parameters
from .links import (
    LinkInertia,
    link_parameters,
    rewrite_urdf_inertials,
    robot_links,
    transform_parameters,
)
from .parameters import (
    DEFAULT_PRIOR_STD,
    IDENTIFIED_SHARE,
    PARAMETER_SETS,
    UNOBSERVABLE_RTOL,
    Identifiability,
    ParameterEstimate,
)
from .result import CrossValidation, IdentificationResult

__all__ = [
    "fit_inertial_parameters",
    "fit_calibration",
    "IdentificationResult",
    "CrossValidation",
    "ParameterEstimate",
    "Identifiability",
    "DEFAULT_PRIOR_STD",
    "PARAMETER_SETS",
    "IDENTIFIED_SHARE",
    "UNOBSERVABLE_RTOL",
    "LinkInertia",
    "robot_links",
    "link_parameters",
    "transform_parameters",
    "rewrite_urdf_inertials",
]

"""Identification from logs: corrections to links' masses and centres of mass, and sensor
calibrations, fitted to the logged motion and contact wrenches.

The equations of motion are linear in the bodies' dynamic parameters ``pi`` (Pinocchio's
joint-torque regressor ``Y``, ``pin.computeJointTorqueRegressor``):

.. math::

    Y(q, v, a)\\, \\pi = S^T \\tau + \\sum_i J_i^T w_i

Its first six rows (the floating base) need no torques: the contact wrenches alone must
supply them. Stacked over every sample of every log, they identify what the motion excites;
with joint torques every row is used. The unknowns ``theta`` are *corrections* to the URDF:

* per link (or per group of links) a mass scale ``m = m_0 e^s`` (the link's density: its
  rotational inertia scales with it), so masses stay positive;
* per link a CoM shift ``c = c_0 + d`` in link axes, with the rotational inertia about the
  CoM kept, so the inertia stays physically realisable;
* sensor parameters (:mod:`wholebody.calibrate`): offsets, gains, mount rotations, joint-torque
  offsets, which enter the right-hand side linearly.

The fit minimises, over ``theta`` (Gauss-Newton, exact for logs without noise),

.. math::

    \\sum_g \\frac{\\lVert r_g(\\theta) \\rVert^2}{\\sigma_g^2}
    + \\lambda \\sum_k \\left(\\frac{\\theta_k}{\\sigma_{k}}\\right)^2

with rows grouped as base forces, base moments and joint torques, each with its noise level
``sigma_g`` estimated from the fit's residual (iterated), and a Gaussian prior centred on the
URDF (``sigma_k``: :data:`DEFAULT_PRIOR_STD`, weight ``lambda = prior_weight``). Standard
errors are sandwich (robust) estimates clustered by sample; the identifiability report
gives the information the logs carry about each parameter and names the directions they do
not excite. See ``docs/identification.md``.

The package's modules: :mod:`~wholebody.identify.links` (links' inertias from the URDF and
back), :mod:`~wholebody.identify.parameters` (the prior, parameter records, identifiability),
:mod:`~wholebody.identify.problem` (the map ``x(theta)`` and the per-sample features),
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

"""Checks of robot descriptions: URDF text, link inertias and the assembled model.

A problem found here is either an error (the model is physically impossible or its mass
matrix is singular) or a note (allowed, but worth knowing). What happens to each is set by
the ``validate`` policy of :meth:`wholebody.Robot.from_urdf`:

=========  ===========================  ====================
policy     errors                       notes
=========  ===========================  ====================
"raise"    raise a typed ModelError     ModelWarning
"warn"     ModelWarning                 ModelWarning
"ignore"   nothing                      nothing
=========  ===========================  ====================
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from ..errors import (
    InvalidArgumentError,
    InvalidInertiaError,
    InvalidJointError,
    ModelError,
    ModelFileNotFoundError,
    ModelWarning,
    URDFParseError,
)
from .model_warnings import inertia_note, mimic_joints

VALIDATE_POLICIES = ("raise", "warn", "ignore")
_URDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")

# Relative tolerance on the inertia checks: URDFs print inertias with 4-6 digits, so a
# triangle inequality that is an equality in theory (thin rods, flat plates) fails by rounding.
_INERTIA_RTOL = 1e-6
# Absolute floor [kg m^2]: point-mass links print inertias like 1e-35 of either sign.
_INERTIA_ATOL = 1e-12


@dataclass(frozen=True)
class Problem:
    """One finding of a model check."""

    error_type: type[ModelError] | None  # None for a note
    message: str


def check_policy(validate: object) -> None:
    """Raise :class:`InvalidArgumentError` unless ``validate`` is one of the policies."""
    if not isinstance(validate, str) or validate not in VALIDATE_POLICIES:
        allowed = ", ".join(repr(p) for p in VALIDATE_POLICIES)
        raise InvalidArgumentError(f"validate must be one of {allowed}, got {validate!r}")


def apply_policy(problems: list[Problem], validate: str, source: str) -> None:
    """Raise, warn or ignore the problems found, as the policy says."""
    if validate == "ignore":
        return
    for p in problems:
        if p.error_type is not None and validate == "raise":
            raise p.error_type(f"{source}: {p.message}")
    for p in problems:
        warnings.warn(f"{source}: {p.message}", ModelWarning, stacklevel=4)


def inertia_problems(owner: str, mass: float, inertia: np.ndarray) -> list[Problem]:
    """Check one rigid body's mass and rotational inertia (about its CoM) [kg, kg m^2]."""
    problems: list[Problem] = []
    if not np.isfinite(mass) or not np.all(np.isfinite(inertia)):
        return [Problem(InvalidInertiaError, f"{owner} has a non-finite mass or inertia")]
    if mass < 0:
        problems.append(Problem(InvalidInertiaError, f"{owner} has negative mass {mass:g} kg"))
    if not np.allclose(inertia, inertia.T, rtol=0, atol=1e-12 + _INERTIA_RTOL * abs(inertia).max()):
        problems.append(Problem(InvalidInertiaError, f"{owner} has a non-symmetric inertia matrix"))
        return problems
    moments = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    scale = max(float(abs(moments).max()), 1e-300)
    tol = _INERTIA_RTOL * scale + _INERTIA_ATOL
    if moments[0] < -tol:
        problems.append(
            Problem(
                InvalidInertiaError,
                f"{owner} has an inertia matrix that is not positive semi-definite "
                f"(principal moments {np.array2string(moments, precision=4)} kg m^2)",
            )
        )
    elif moments[0] + moments[1] < moments[2] - tol:
        problems.append(
            Problem(
                InvalidInertiaError,
                f"{owner} has principal moments of inertia that break the triangle inequality "
                f"I1 + I2 >= I3 ({moments[0]:.4g} + {moments[1]:.4g} < {moments[2]:.4g} kg m^2)",
            )
        )
    return problems


def _floats(text: str | None, n: int, what: str) -> np.ndarray:
    try:
        values = np.array([float(t) for t in (text or "").split()])
    except ValueError as exc:
        raise URDFParseError(f"{what}: cannot read numbers from {text!r}") from exc
    if values.size != n:
        raise URDFParseError(f"{what}: expected {n} numbers, got {text!r}")
    return values


def read_urdf(path: str | Path) -> tuple[str, ET.Element]:
    """Read a URDF file; a missing file or malformed XML is a typed error with the reason."""
    path = Path(path)
    if not path.is_file():
        raise ModelFileNotFoundError(f"URDF file not found: {path}")
    text = path.read_text()
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise URDFParseError(f"{path}: not well-formed XML: {exc}") from exc
    if root.tag != "robot":
        raise URDFParseError(f"{path}: the root element is <{root.tag}>, expected <robot>")
    return text, root


def check_urdf_tree(root: ET.Element, source: str) -> None:
    """Refuse a URDF whose links and joints cannot form a tree, naming the culprit.

    Pinocchio says only "does not contain a valid URDF model" for these; they are errors
    whatever the ``validate`` policy (no model can be built).

    Raises
    ------
    URDFParseError
        A link or joint without a name, a duplicated link or joint name, a joint without
        ``<parent>`` or ``<child>``, no single root link.
    InvalidJointError
        A joint whose parent or child link does not exist, a joint from a link to itself,
        a link that is the child of two joints, an unknown joint type.
    """
    links: set[str] = set()
    for link in root.findall("link"):
        name = link.get("name")
        if not name:
            raise URDFParseError(f"{source}: a <link> has no name")
        if name in links:
            raise URDFParseError(f"{source}: link name {name!r} is used twice")
        links.add(name)
    joints: set[str] = set()
    parent_of: dict[str, str] = {}
    for joint in root.findall("joint"):
        name = joint.get("name")
        if not name:
            raise URDFParseError(f"{source}: a <joint> has no name")
        if name in joints:
            raise URDFParseError(f"{source}: joint name {name!r} is used twice")
        joints.add(name)
        ends = {}
        for role in ("parent", "child"):
            el = joint.find(role)
            end = el.get("link") if el is not None else None
            if not end:
                raise URDFParseError(f"{source}: joint {name!r} has no <{role} link=...>")
            if end not in links:
                raise InvalidJointError(
                    f"{source}: joint {name!r} has {role} link {end!r}, which does not exist"
                )
            ends[role] = end
        if ends["parent"] == ends["child"]:
            raise InvalidJointError(
                f"{source}: joint {name!r} connects link {ends['child']!r} to itself"
            )
        child = ends["child"]
        if child in parent_of:
            raise InvalidJointError(
                f"{source}: link {child!r} is the child of two joints, "
                f"{parent_of[child]!r} and {name!r}"
            )
        parent_of[child] = name
        jtype = joint.get("type")
        if jtype not in _URDF_JOINT_TYPES:
            raise InvalidJointError(
                f"{source}: joint {name!r} has type {jtype!r}; URDF joint types are "
                f"{', '.join(_URDF_JOINT_TYPES)}"
            )
    roots = [r for r in links if r not in parent_of]
    if len(roots) != 1:
        if roots:
            shown = ", ".join(repr(r) for r in sorted(roots)[:6])
            raise URDFParseError(
                f"{source}: the links form {len(roots)} separate trees (roots {shown}); "
                "a robot has one root link"
            )
        raise URDFParseError(
            f"{source}: every link has a parent joint: the joints form a loop "
            "(a URDF is a tree with one root link)"
        )


def urdf_problems(root: ET.Element) -> list[Problem]:
    """Link- and joint-level checks on the URDF tree (names come from the file itself)."""
    problems: list[Problem] = []
    for link in root.iter("link"):
        name = link.get("name", "?")
        inertial = link.find("inertial")
        if inertial is None:
            continue
        mass_el = inertial.find("mass")
        inertia_el = inertial.find("inertia")
        if mass_el is None or inertia_el is None:
            problems.append(
                Problem(URDFParseError, f"link {name!r}: <inertial> lacks <mass> or <inertia>")
            )
            continue
        try:
            mass = float(mass_el.get("value", "nan"))
            c = {
                k: float(inertia_el.get(k, "nan"))
                for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
            }
        except ValueError as exc:
            problems.append(Problem(URDFParseError, f"link {name!r}: unreadable inertial ({exc})"))
            continue
        inertia = np.array(
            [
                [c["ixx"], c["ixy"], c["ixz"]],
                [c["ixy"], c["iyy"], c["iyz"]],
                [c["ixz"], c["iyz"], c["izz"]],
            ]
        )
        problems += inertia_problems(f"link {name!r}", mass, inertia)

    for joint in root.iter("joint"):
        name = joint.get("name", "?")
        jtype = joint.get("type", "")
        axis_el = joint.find("axis")
        if jtype in ("revolute", "continuous", "prismatic") and axis_el is not None:
            axis = _floats(axis_el.get("xyz"), 3, f"joint {name!r} axis")
            if np.linalg.norm(axis) < 1e-9:
                problems.append(
                    Problem(InvalidJointError, f"joint {name!r} has a zero-length axis")
                )
        limit = joint.find("limit")
        if jtype in ("revolute", "prismatic") and limit is not None:
            problems += _limit_problems(name, limit)
    mimic = mimic_joints(root)  # movable joints only: a fixed joint's <mimic> binds nothing
    if mimic:
        problems.append(
            Problem(
                None,
                f"mimic joints {mimic} are loaded as independent degrees of freedom "
                "(Pinocchio's default); the mimic relation is not enforced",
            )
        )
    return problems


def inertia_notes(root: ET.Element, path: Path | None = None) -> list[Problem]:
    """The note on links without ``<inertial>``
    (:func:`wholebody.robot.model_warnings.inertia_note`), for models other than those the
    library ships (whose massless sole and hand frames are part of their documented design)."""
    if path is not None:
        # The shipped models' folder (wholebody.models.models_dir, not imported: a cycle).
        here = Path(__file__).resolve()
        package = here.parents[1]  # src/wholebody (this file is robot/validation.py)
        shipped = {package / "_models", package.parents[1] / "models"}
        try:
            if Path(path).resolve().parent in shipped:
                return []
        except OSError:
            pass
    note = inertia_note(root)
    return [Problem(None, note)] if note else []


def _limit_problems(joint: str, limit: ET.Element) -> list[Problem]:
    try:
        lower = float(limit.get("lower", "0"))
        upper = float(limit.get("upper", "0"))
    except ValueError as exc:
        return [Problem(URDFParseError, f"joint {joint!r}: unreadable <limit> ({exc})")]
    if lower > upper:
        return [
            Problem(
                InvalidJointError,
                f"joint {joint!r} has an inverted limit: lower {lower:g} > upper {upper:g}",
            )
        ]
    return []


def model_problems(model: pin.Model, *, check_bodies: bool) -> list[Problem]:
    """Checks on the assembled Pinocchio model: total mass, singular mass matrix.

    With ``check_bodies``, each joint body's inertia is checked too (for models that did not
    come from a URDF we have read ourselves).
    """
    problems: list[Problem] = []
    body_name = {}
    for frame in model.frames:
        if frame.type == pin.FrameType.BODY and frame.parentJoint not in body_name:
            body_name[frame.parentJoint] = frame.name

    def owner(j: int) -> str:
        link = body_name.get(j)
        return f"link {link!r} (joint {model.names[j]!r})" if link else f"joint {model.names[j]!r}"

    if check_bodies:
        for j in range(1, model.njoints):
            Y = model.inertias[j]
            problems += inertia_problems(
                f"the body of {owner(j)}", float(Y.mass), np.array(Y.inertia)
            )

    total = float(sum(model.inertias[j].mass for j in range(1, model.njoints)))
    if not total > 0:
        problems.append(Problem(InvalidInertiaError, "the robot's total mass is zero"))
        return problems

    # A joint whose diagonal block of M is singular moves a subtree without inertia along
    # that motion: M is singular and forward dynamics is undefined.
    data = model.createData()
    q0 = pin.neutral(model)
    try:
        M = pin.crba(model, data, q0)
    except Exception as exc:  # pragma: no cover - Pinocchio rejects the model itself
        problems.append(Problem(ModelError, f"Pinocchio cannot compute the mass matrix: {exc}"))
        return problems
    M = np.triu(M) + np.triu(M, 1).T
    for j in range(1, model.njoints):
        i, n = model.joints[j].idx_v, model.joints[j].nv
        block = M[i : i + n, i : i + n]
        if n and np.linalg.eigvalsh(block)[0] <= 1e-12 * max(1.0, abs(M).max()):
            problems.append(
                Problem(
                    InvalidInertiaError,
                    f"{owner(j)} and everything it carries have no mass or inertia along the "
                    "joint's motion: the mass matrix is singular",
                )
            )
        # A massless link carried by massive ones (the middle links of a spherical joint
        # written as three hinges) is fine: M stays positive definite. Nothing to report.
    return problems

"""Checks of robot descriptions at load time: URDF text, link inertias and the assembled
model, and the notes that matter to simulation users.

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

The notes: links without ``<inertial>`` (what each engine gives them, :data:`ENGINE_DEFAULTS`,
and which of them are leaves: a contact declared on one moves mass an engine gave it, not the
robot's), and real mimic joints (movable joints with ``<mimic>``; a fixed joint that keeps a
``<mimic>`` element, as in Talos' reduced models, is none).
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

#: What each engine does with a URDF link that has no ``<inertial>`` (MuJoCo's compiler may also
#: merge a massless body into its parent).
ENGINE_DEFAULTS = {
    "pinocchio": "no mass",
    "pybullet": "1 kg at the link origin",
    "genesis": "a tiny mass",
    "mujoco": "an inertia inferred from its geoms (inertiafromgeom='auto')",
}


def links_without_inertia(root: ET.Element) -> list[str]:
    """Names of the URDF's links that have no ``<inertial>`` (file order)."""
    return [str(link.get("name")) for link in root.findall("link") if link.find("inertial") is None]


def inertialess_child_links(root: ET.Element) -> list[str]:
    """:func:`links_without_inertia` that are some joint's child (the root link excluded: a
    floating base's root carries no mass of its own in any engine's reading of the file)."""
    children = {
        str(c.get("link")) for j in root.findall("joint") if (c := j.find("child")) is not None
    }
    return [n for n in links_without_inertia(root) if n in children]


def leaf_links(root: ET.Element) -> set[str]:
    """Links that are no joint's parent."""
    parents = {
        str(p.get("link")) for j in root.findall("joint") if (p := j.find("parent")) is not None
    }
    return {str(link.get("name")) for link in root.findall("link")} - parents


def mimic_joints(root: ET.Element) -> list[str]:
    """Movable joints (not ``fixed``) of the robot with a ``<mimic>`` element: the joints a
    mimic relation binds. Only the robot's own ``<joint>`` elements count (not those inside
    ``<transmission>`` or ``<gazebo>``)."""
    return [
        str(j.get("name", "?"))
        for j in root.findall("joint")
        if j.find("mimic") is not None and j.get("type", "") != "fixed"
    ]


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
    """The note on links without ``<inertial>``, for models other than those the library ships
    (whose massless sole and hand frames are part of their documented design)."""
    if path is not None:
        # The shipped models' folder (wholebody.models.models_dir, not imported: a cycle).
        package = Path(__file__).resolve().parents[1]  # src/wholebody
        shipped = {package / "_models", package.parents[1] / "models"}
        try:
            if Path(path).resolve().parent in shipped:
                return []
        except OSError:
            pass
    missing = links_without_inertia(root)
    if not missing:
        return []
    leaves = leaf_links(root)
    on_leaves = [n for n in missing if n in leaves]
    shown = ", ".join(repr(n) for n in missing[:8]) + (", ..." if len(missing) > 8 else "")
    engines = "; ".join(f"{k}: {v}" for k, v in ENGINE_DEFAULTS.items())
    leaf_text = (
        f"; {len(on_leaves)} of them are leaves (sensor or contact frames): a contact declared on "
        "one is massless here but not in every simulator"
        if on_leaves
        else ""
    )
    note = (
        f"{len(missing)} links have no <inertial> ({shown}): engines differ on them ({engines}); "
        f"a log simulated in PyBullet carries {len(missing)} kg more than this model"
        f"{leaf_text}. Give them an <inertial> (or load PyBullet with the same masses) so that "
        "model and simulation agree"
    )
    return [Problem(None, note)]


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
    return problems

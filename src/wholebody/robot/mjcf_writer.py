"""A corrected copy of a robot's MJCF: fitted inertias written into MuJoCo's ``<inertial>``
elements (what ``wholebody fit`` and
:meth:`wholebody.identify.IdentificationResult.write_mjcf` write for a robot loaded from MJCF).

**The copy**: one self-contained file, the model file with every ``<include>`` inlined (as
:mod:`wholebody.robot.mjcf` resolves them), comments and scene objects kept; relative asset
folders rewritten relative to the new file. The original files are never written.

**Which MJCF body**: Pinocchio makes one body of an MJCF body with joints and every body
welded to it, and rigid-body data cannot tell welded bodies apart, so the change (fitted minus
nominal, exact) is added to one MJCF body of the group: the only one with mass, else the
heaviest. A group whose chosen body would not be a real rigid body, whose body has no unique
name, or whose values MuJoCo's compiler would change (``boundmass``, ``boundinertia``) is
refused by name with :class:`~wholebody.errors.ModelError`, and nothing is written.

**MuJoCo's conventions**: ``<inertial pos quat mass diaginertia>`` (CoM in the body frame,
principal axes as a w-x-y-z quaternion, principal moments); other orientation attributes and
``fullinertia`` are dropped. ``<compiler inertiafromgeom="true">`` (it would ignore every
``<inertial>``) becomes ``"auto"``, and ``settotalmass`` (it would rescale the fitted masses)
is removed; the notes say each.

The file is written under a temporary name, read back with
:func:`~wholebody.robot.mjcf.model_from_mjcf` and compared with the fitted model (relative
1e-9) before it is renamed into place.
"""

from __future__ import annotations

import math
import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from ..errors import InvalidArgumentError, ModelError, OutputError
from ._mjcf_tree import _DIR_KEYS, _expand, _is_free, _parse, read_mjcf_tree
from .mjcf import is_mjcf, model_from_mjcf

if TYPE_CHECKING:
    from .core import Robot

__all__ = ["MjcfCorrection", "write_corrected_mjcf"]

Array = NDArray[np.float64]
#: Relative agreement between the file read back and the fitted model.
VERIFY_RTOL = 1e-9
#: A joint's inertia counts as changed beyond this relative difference (round-off is ~1e-16).
_CHANGED_RTOL = 1e-12
_ROTATION_KEYS = ("quat", "euler", "axisangle", "xyaxes", "zaxis", "fullinertia", "diaginertia")


@dataclass(frozen=True)
class MjcfCorrection:
    """What :func:`write_corrected_mjcf` wrote.

    Attributes
    ----------
    path : Path
        The corrected MJCF.
    bodies : dict of str to str
        Each changed link (Pinocchio joint name) -> the MJCF body whose ``<inertial>`` was
        written.
    notes : tuple of str
        What the copy changed beyond those ``<inertial>`` elements, and which welded bodies
        kept their values.
    """

    path: Path
    bodies: dict[str, str]
    notes: tuple[str, ...]


# --- spatial inertias as 6x6 matrices (linear: welded bodies add and subtract exactly) -------


def _to_parent(matrix: Array, placement: pin.SE3) -> Array:
    """Spatial inertia (6, 6), Pinocchio's order (linear, angular), moved from a child frame to
    the parent in which ``placement`` places it: ``X* I X^-1``."""
    return placement.dualAction @ matrix @ placement.actionInverse


def _mass_com_inertia(matrix: Array) -> tuple[float, Array, Array]:
    """(mass [kg], CoM [m], rotational inertia about the CoM [kg m^2]) of a spatial inertia
    ``[[m 1, -[h]x], [[h]x, I_O]]`` (``h = m c``), in that frame's axes."""
    m = float(np.trace(matrix[:3, :3]) / 3)
    skew = 0.5 * (matrix[3:, :3] - matrix[:3, 3:])
    h = np.array([skew[2, 1], skew[0, 2], skew[1, 0]])
    c = h / m if m > 0 else np.zeros(3)
    inertia_origin = 0.5 * (matrix[3:, 3:] + matrix[3:, 3:].T)
    return m, c, inertia_origin - m * (c @ c * np.eye(3) - np.outer(c, c))


def _principal(inertia: Array) -> tuple[Array, Array]:
    """Principal moments (3,) and MuJoCo's quaternion (w, x, y, z) of the principal axes."""
    moments, axes = np.linalg.eigh(inertia)
    if np.linalg.det(axes) < 0:  # a proper rotation
        axes[:, 2] = -axes[:, 2]
    x, y, z, w = pin.Quaternion(axes).normalized().coeffs()
    quat = np.array([w, x, y, z])
    return moments, quat if w >= 0 else -quat


def _number(x: float) -> str:
    # Shortest text that reads back to the same double.
    return "0" if x == 0 else repr(float(x))


def _numbers(xs: NDArray[np.floating]) -> str:
    return " ".join(_number(float(x)) for x in xs)


# --- the copy --------------------------------------------------------------------------------


def _inlined(path: Path) -> ET.Element:
    """The model file with every ``<include>`` replaced by the included root's children, in
    the order MuJoCo reads them, comments kept (read again with the loader's checks: limits,
    includes confined to the model's folder, each file once)."""
    root = _parse(path, str(path), comments=True)
    _expand(root, path.parent, path, {path.resolve(): str(path)}, comments=True)
    return root


def _relative_dirs(root: ET.Element, model_folder: Path, out_folder: Path) -> bool:
    """Relative asset folders made relative to ``out_folder``; returns whether any changed."""
    compilers = [c for c in root if c.tag == "compiler"]
    base = Path(os.path.relpath(model_folder.resolve(), out_folder.resolve())).as_posix()
    if base == "." or not any(e.get("file") for e in root.iter() if e.tag != "include"):
        return False  # the same folder, or no file to find (meshes, textures, height fields)
    for compiler in compilers:
        for key in _DIR_KEYS:
            value = compiler.get(key)
            if value is not None and not Path(value).is_absolute():
                compiler.set(key, (Path(base) / value).as_posix())
    if not any(c.get("assetdir") is not None for c in compilers):
        # Files without a folder are relative to the model's folder; meshdir and texturedir,
        # where set, take precedence over assetdir as before.
        if not compilers:
            compilers = [ET.Element("compiler")]
            compilers[0].tail = "\n  "
            root.insert(0, compilers[0])
        compilers[0].set("assetdir", base)
    return True


def _compiler_value(root: ET.Element, key: str) -> str | None:
    """The value MuJoCo applies: the last ``<compiler>`` that sets ``key``."""
    value = None
    for compiler in root:
        if compiler.tag == "compiler" and compiler.get(key) is not None:
            value = compiler.get(key)
    return value


def _compiler_number(root: ET.Element, key: str) -> float | None:
    text = _compiler_value(root, key)
    try:
        return None if text is None else float(text)
    except ValueError:  # MuJoCo refuses such a file; Pinocchio ignores the attribute
        return None


def _robot_root(root: ET.Element) -> ET.Element:
    """The root body Pinocchio builds (the one root body, or the free one of a scene: as
    :func:`read_mjcf_tree` chose it)."""
    roots = [b for w in root if w.tag == "worldbody" for b in w if b.tag == "body"]
    free = [b for b in roots if _is_free(b)]
    return roots[0] if len(roots) == 1 or len(free) != 1 else free[0]


def _bodies_by_pinocchio_name(top: ET.Element) -> dict[str, list[ET.Element]]:
    """Body elements under ``top`` by the name Pinocchio's parser gives them (an unnamed body
    is its parent's name + "Bis")."""
    out: dict[str, list[ET.Element]] = {}
    stack = [(top, "")]
    while stack:  # iterative: deep chains stay off Python's recursion limit
        body, parent = stack.pop()
        name = body.get("name") or parent + "Bis"
        out.setdefault(name, []).append(body)
        stack += [(child, name) for child in body if child.tag == "body"]
    return out


# --- the bodies of each fitted link ----------------------------------------------------------


@dataclass
class _Group:
    """The MJCF bodies of one Pinocchio joint body: name -> (placement in the joint frame,
    own spatial inertia in the joint frame); ``jointed`` is the body carrying the joint."""

    joint: str
    jointed: str | None
    bodies: dict[str, tuple[pin.SE3, Array]]


def _groups(model: pin.Model) -> dict[int, _Group]:
    """Every joint body's MJCF bodies. A welded body's inertia is on the fixed-joint frame
    before its body frame; the jointed body's is what remains of the joint's inertia."""
    groups = {j: _Group(model.names[j], None, {}) for j in range(1, model.njoints)}
    for frame in model.frames:
        j = int(frame.parentJoint)
        if frame.type != pin.FrameType.BODY or j == 0:
            continue
        before = model.frames[frame.parentFrame]
        if before.type == pin.FrameType.FIXED_JOINT:
            own = _to_parent(before.inertia.matrix(), before.placement)
        else:
            own = np.zeros((6, 6))
            groups[j].jointed = frame.name
        groups[j].bodies[frame.name] = (frame.placement, own)
    for j, group in groups.items():
        if group.jointed is not None:
            placement, _ = group.bodies[group.jointed]
            welded = sum((own for _, own in group.bodies.values()), np.zeros((6, 6)))
            group.bodies[group.jointed] = (placement, model.inertias[j].matrix() - welded)
    return groups


def _changed(nominal: pin.Model, fitted: pin.Model) -> list[int]:
    out = []
    for j in range(1, nominal.njoints):
        a = nominal.inertias[j].toDynamicParameters()
        b = fitted.inertias[j].toDynamicParameters()
        if np.abs(b - a).max() > _CHANGED_RTOL * max(np.abs(a).max(), 1e-300):
            out.append(j)
    return out


def _consistency(m: float, inertia: Array) -> str | None:
    """Why (m, I_C) is not a real rigid body, or None: mass > 0 and the second moment
    ``tr(I_C)/2 1 - I_C`` positive definite (principal moments > 0, triangle inequality)."""
    if not m > 0:
        return f"its mass would be {m:.6g} kg"
    sigma = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    low = float(np.linalg.eigvalsh(sigma).min())
    if not low > 0:
        moments = np.linalg.eigvalsh(inertia)
        return (
            f"its principal moments {_numbers(moments)} kg m^2 would break the triangle "
            "inequality (not a real rigid body)"
        )
    return None


def _check_bounds(root: ET.Element, m: float, moments: NDArray[np.floating]) -> str | None:
    """Why MuJoCo's compiler would change the written values, or None."""
    for key, values, unit in (("boundmass", [m], "kg"), ("boundinertia", moments, "kg m^2")):
        bound = _compiler_number(root, key)
        text = _compiler_value(root, key)
        if bound is not None and min(values) < bound:
            return f"<compiler {key}={text!r}> would raise {min(values):.6g} {unit} to {bound:.6g}"
    return None


def _write_inertial(body: ET.Element, m: float, com: Array, inertia: Array) -> None:
    moments, quat = _principal(inertia)
    inertial = body.find("inertial")
    if inertial is None:  # first child, indented as the next one
        inertial = ET.Element("inertial")
        inertial.tail = body.text if len(body) else None
        body.insert(0, inertial)
    for key in _ROTATION_KEYS + ("pos", "mass"):
        inertial.attrib.pop(key, None)
    inertial.set("pos", _numbers(com))
    inertial.set("quat", _numbers(quat))
    inertial.set("mass", _number(m))
    inertial.set("diaginertia", _numbers(moments))


# --- the writer ------------------------------------------------------------------------------


def write_corrected_mjcf(robot: Robot, corrected: Robot, path: str | Path) -> MjcfCorrection:
    """Write a copy of ``robot``'s MJCF with ``corrected``'s inertias (see the module).

    Parameters
    ----------
    robot : Robot
        Loaded from an MJCF file (``robot.source``).
    corrected : Robot
        The same model with changed joint-body inertias (for example
        :meth:`~wholebody.identify.IdentificationResult.corrected_robot`); joint bodies whose
        ten dynamic parameters differ by more than a relative 1e-12 are written.
    path : str or Path
        The file to write (its folder must exist); never one of the model's own files.

    Returns
    -------
    MjcfCorrection

    Raises
    ------
    InvalidArgumentError
        ``robot`` has no MJCF source, or ``corrected`` is not the same mechanism, or ``path``
        is one of the model's files.
    ModelError
        A changed link that cannot be written as MuJoCo reads it (named, with the reason), or
        the file read back does not give the fitted inertias; nothing is written.
    OutputError
        The file cannot be written.
    """
    if not is_mjcf(robot.source):
        raise InvalidArgumentError(
            f"robot {robot.name!r} was not loaded from an MJCF file (source: {robot.source})"
        )
    source = Path(str(robot.source))
    nominal, fitted = robot.model, corrected.model
    if list(fitted.names) != list(nominal.names) or fitted.nv != nominal.nv:
        raise InvalidArgumentError(
            f"the corrected robot {corrected.name!r} has other joints than {robot.name!r}"
        )
    path = Path(path)
    with warnings.catch_warnings():  # the loader warned already (scene objects)
        warnings.simplefilter("ignore")
        tree = read_mjcf_tree(source)  # includes confined to the folder, sizes checked
    own_files = {source.resolve(), *(p.resolve() for p in tree.included)}
    if path.resolve() in own_files:
        raise InvalidArgumentError(f"{path} is one of the model's own files; write a copy")
    root = _inlined(source)
    notes: list[str] = []
    if tree.included:
        notes.append(
            f"{path.name}: {len(tree.included)} included file(s) inlined "
            f"({', '.join(p.name for p in tree.included)})"
        )
    if _relative_dirs(root, source.parent, path.parent):
        notes.append(f"{path.name}: asset folders rewritten relative to it")
    by_name = _bodies_by_pinocchio_name(_robot_root(root))
    groups = _groups(nominal)
    plans = [_plan(root, by_name, groups[j], nominal, fitted, j) for j in _changed(nominal, fitted)]
    refusals = [p for p in plans if isinstance(p, str)]
    if refusals:
        raise ModelError(
            f"no corrected MJCF written for {source.name}: "
            + "; ".join(refusals)
            + ". Fit again without these links (--link the others)"
        )
    chosen = [p for p in plans if isinstance(p, _Plan)]
    notes += [p.note for p in chosen if p.note]
    notes += _compiler_changes(root, chosen, path.name)
    for plan in chosen:
        _write_inertial(plan.element, plan.mass, plan.com, plan.inertia)
    written = {p.link: p.body for p in chosen}
    said = ", ".join(f"{k} -> body {v}" for k, v in written.items()) or "no link"
    # "--" may not appear inside an XML comment.
    comment = ET.Comment(
        f" written by wholebody: {source.name} with fitted inertias for {said} ".replace(
            "--", "- -"
        )
    )
    comment.tail = root.text
    root.insert(0, comment)
    _write_checked(root, path, robot, fitted)
    return MjcfCorrection(path, written, tuple(notes))


@dataclass(frozen=True)
class _Plan:
    """What is written for one changed link: the ``<body>`` element of the MJCF body that
    takes the change (``body``), its mass [kg], CoM [m] and inertia about it [kg m^2] in the
    body's frame, and a note when welded bodies keep their own values."""

    link: str
    body: str
    element: ET.Element
    mass: float
    com: Array
    inertia: Array
    note: str | None


def _plan(
    root: ET.Element,
    by_name: dict[str, list[ET.Element]],
    group: _Group,
    nominal: pin.Model,
    fitted: pin.Model,
    j: int,
) -> _Plan | str:
    """The write of joint ``j``'s change (fitted minus nominal) to one MJCF body of its group:
    the only one with mass, else the heaviest (ties: the body carrying the joint); or why it
    cannot be written."""
    link = f"link {group.joint!r}"
    masses = {b: _mass_com_inertia(own)[0] for b, (_, own) in group.bodies.items()}
    if not masses:
        return f"{link}: no MJCF body of the model carries joint {group.joint!r}"
    total = sum(max(v, 0.0) for v in masses.values())
    heavy = [b for b, v in masses.items() if v > 1e-9 * max(total, 1e-300)]
    target = max(heavy or list(masses), key=lambda b: (masses[b], b == group.jointed))
    welded = sorted(b for b in group.bodies if b != target)
    where = f"{link} (MJCF body {target!r}" + (
        f", welded to {', '.join(map(repr, welded))})" if welded else ")"
    )
    elements = by_name.get(target, [])
    if len(elements) != 1:
        return (
            f"{where}: {len(elements)} bodies of the file are named {target!r} as Pinocchio "
            "names them (an unnamed body is its parent's name + 'Bis'); name the body"
        )
    placement, own = group.bodies[target]
    delta = fitted.inertias[j].matrix() - nominal.inertias[j].matrix()
    m, com, inertia = _mass_com_inertia(_to_parent(own + delta, placement.inverse()))
    why = _consistency(m, inertia)
    if why is None:
        why = _check_bounds(root, m, np.linalg.eigvalsh(inertia))
    others_heavy = [b for b in heavy if b != target]
    if why is not None:
        return f"{where}: {why}" + (
            " once the welded bodies keep their own inertias" if others_heavy else ""
        )
    note = None
    if others_heavy:
        note = (
            f"{link}: MJCF bodies {', '.join(map(repr, sorted(group.bodies)))} are welded "
            f"into one rigid body (no joint between them); the fitted change is written to "
            f"{target!r}, the others keep their values"
        )
    return _Plan(group.joint, target, elements[0], m, com, inertia, note)


def _compiler_changes(root: ET.Element, plans: list[_Plan], name: str) -> list[str]:
    """The ``<compiler>`` settings that would undo the written ``<inertial>`` elements, changed
    (``inertiafromgeom="true"`` made ``"auto"``, the ``<inertial>`` elements it ignored
    removed; ``settotalmass`` removed); a note for each (``name``: the file written)."""
    notes = []
    if _compiler_value(root, "inertiafromgeom") == "true":
        ignored = 0
        chosen = {id(p.element) for p in plans}
        for body in root.iter("body"):
            inertial = body.find("inertial")
            if inertial is not None and id(body) not in chosen:
                body.remove(inertial)
                ignored += 1
        for compiler in root:
            if compiler.tag == "compiler" and compiler.get("inertiafromgeom") == "true":
                compiler.set("inertiafromgeom", "auto")
        removed = (
            f"; the {ignored} <inertial> element(s) it ignored are removed, so those bodies "
            "keep their geoms' inertia"
            if ignored
            else ""
        )
        notes.append(
            f'{name}: <compiler inertiafromgeom="true"> made "auto" (it would ignore the '
            f"written <inertial> elements){removed}"
        )
    if (_compiler_number(root, "settotalmass") or 0.0) > 0:  # MuJoCo rescales when positive
        value = _compiler_value(root, "settotalmass")
        for compiler in root:
            if compiler.tag == "compiler":
                compiler.attrib.pop("settotalmass", None)
        notes.append(
            f"{name}: <compiler settotalmass={value!r}> removed: MuJoCo would rescale the "
            "fitted masses (the fitted model is Pinocchio's, which does not apply it)"
        )
    return notes


def _write_checked(root: ET.Element, path: Path, robot: Robot, fitted: pin.Model) -> None:
    """Write under a temporary name, read back, compare, rename."""
    partial = path.with_name(f".{path.name}.partial.xml")
    try:
        ET.ElementTree(root).write(partial, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise OutputError(f"cannot write the corrected MJCF {path}: {exc}") from exc
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            back, _ = model_from_mjcf(
                partial, floating_base=robot.has_floating_base or None, validate="ignore"
            )
        bad = [
            back.names[j]
            for j in range(1, back.njoints)
            if j >= fitted.njoints
            or back.names[j] != fitted.names[j]
            or not _same(back.inertias[j], fitted.inertias[j])
        ]
        if bad or back.njoints != fitted.njoints:
            raise ModelError(
                f"the corrected MJCF read back does not give the fitted inertias of "
                f"{bad or 'the model'} (relative {VERIFY_RTOL:g}); nothing written"
            )
        os.replace(partial, path)
    except OSError as exc:
        raise OutputError(f"cannot write the corrected MJCF {path}: {exc}") from exc
    finally:
        if partial.exists():
            partial.unlink()


def _same(a: pin.Inertia, b: pin.Inertia) -> bool:
    pa, pb = a.toDynamicParameters(), b.toDynamicParameters()
    scale = max(float(np.abs(pb).max()), 1e-300)
    return bool(np.abs(pa - pb).max() <= VERIFY_RTOL * scale) and math.isfinite(scale)

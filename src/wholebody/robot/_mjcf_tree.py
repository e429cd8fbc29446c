"""An MJCF file read as MuJoCo reads it, before Pinocchio sees it: ``<include>`` elements
replaced by the children of the included file's ``<mujoco>`` root, repeated sections merged,
sizes bounded and physical attributes checked.

Reading is confined to the model's own tree: an include names a file relative to the folder
of the main model file (as MuJoCo resolves it) and must stay inside that folder, with no
absolute path and no ``..``; a file included twice (itself, a cycle) is refused as MuJoCo
refuses it. Every refusal is raised before a byte of the offending file is read.
"""

from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath

from ..errors import MJCFParseError, ModelFileNotFoundError, ModelWarning, OutsideInputError
from ..limits import LIMITS, check_file_size, check_limit

# Sections MuJoCo concatenates when a file has several (the main file and its includes).
_MERGED = (
    "worldbody",
    "asset",
    "default",
    "actuator",
    "sensor",
    "contact",
    "equality",
    "tendon",
    "keyframe",
    "custom",
    "extension",
    "deformable",
)
# Singletons whose attributes are combined, later ones winning.
_COMBINED = ("compiler", "option", "size", "visual", "statistic")
_DIR_KEYS = ("meshdir", "texturedir", "assetdir")


@dataclass
class MjcfTree:
    """The merged ``<mujoco>`` element and what went into it."""

    root: ET.Element
    path: Path
    included: list[Path] = field(default_factory=list)
    robot_name: str | None = None
    changed: bool = False  # includes or repeated sections: Pinocchio needs the merged copy


def _parse(path: Path, shown: str, *, comments: bool = False) -> ET.Element:
    """Parse one file, counting elements as they come so a huge file stops early; with
    ``comments``, the comments are kept in the tree (for a corrected copy of the file)."""
    if not path.is_file():
        raise ModelFileNotFoundError(f"MJCF file not found: {shown}")
    check_file_size(path, shown)
    count = 0
    try:
        for _event, _elem in ET.iterparse(path, events=("start",)):
            count += 1
            if count > LIMITS.model_elements:
                check_limit("model_elements", count, shown, "more XML elements than allowed")
        parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)) if comments else None
        root = ET.parse(path, parser=parser).getroot()
    except ET.ParseError as exc:
        raise MJCFParseError(f"{shown}: not well-formed XML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise MJCFParseError(f"{shown}: not UTF-8 text: {exc}") from exc
    except OSError as exc:
        raise MJCFParseError(f"{shown}: cannot read: {exc.strerror or exc}") from exc
    if root.tag != "mujoco":
        raise MJCFParseError(f"{shown}: the root element is <{root.tag}>, expected <mujoco>")
    return root


def _include_path(folder: Path, name: str | None, main: Path, parent: str) -> Path:
    if not name:
        raise MJCFParseError(f"{parent}: <include> without a 'file' attribute")
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or PureWindowsPath(name).drive or ".." in pure.parts:
        raise OutsideInputError(
            f"{parent}: <include file={name!r}> leaves the model's folder {folder}; an include "
            "must name a file inside it (relative, without '..'); refusing to read it",
            name,
        )
    target = folder / pure
    try:
        inside = target.resolve().is_relative_to(folder.resolve())
    except OSError:
        inside = False
    if not inside:
        raise OutsideInputError(
            f"{parent}: <include file={name!r}> resolves to {target.resolve()}, outside the "
            f"model's folder {folder} (a symbolic link); refusing to read it",
            name,
        )
    return target


def _includes(
    top: ET.Element, elems: list[ET.Element], where: str
) -> list[tuple[ET.Element, ET.Element, str]]:
    """(parent, <include>, file) of every include among ``elems`` (children of ``top``) and
    under them (ElementTree's iter does not recurse in Python: a deep file cannot exhaust the
    stack)."""
    out = [(top, e, where) for e in elems if e.tag == "include"]
    return out + [
        (parent, child, where)
        for elem in elems
        for parent in elem.iter()
        for child in parent
        if child.tag == "include"
    ]


def _expand(
    root: ET.Element, folder: Path, main: Path, seen: dict[Path, str], *, comments: bool = False
) -> list[str]:
    """Replace, in place, every <include> by the children of the included file's root (with
    their comments when ``comments``); returns the ``model`` names of the included files that
    hold bodies."""
    bodies: list[str] = []
    todo = _includes(root, list(root), str(main))
    while todo:
        parent, child, where = todo.pop(0)
        name = child.get("file")
        target = _include_path(folder, name, main, where)
        key = target.resolve()
        if key in seen:
            raise MJCFParseError(
                f"{where}: <include file={name!r}> includes {target} again (first included by "
                f"{seen[key]}); MuJoCo allows each file once (a file including itself or a "
                "cycle)"
            )
        seen[key] = where
        check_limit("include_files", len(seen) - 1, str(main), f"{len(seen) - 1} included files")
        if not target.is_file():
            raise ModelFileNotFoundError(
                f"{where}: <include file={name!r}>: no such file {target} (includes are "
                f"relative to the model's folder {folder})"
            )
        sub = _parse(target, str(target), comments=comments)
        if sub.find("worldbody/body") is not None:
            bodies.append(sub.get("model") or "")
        items = list(sub)
        i = list(parent).index(child)
        parent.remove(child)
        for k, item in enumerate(items):
            parent.insert(i + k, item)
        todo += _includes(parent, items, str(target))
    return bodies


def _merge_sections(root: ET.Element) -> None:
    first: dict[str, ET.Element] = {}
    for child in list(root):
        tag = child.tag
        if tag not in _MERGED and tag not in _COMBINED:
            continue
        if tag not in first:
            first[tag] = child
            continue
        if tag in _MERGED:
            first[tag].extend(list(child))
        else:
            first[tag].attrib.update(child.attrib)
        root.remove(child)


def _absolute_dirs(root: ET.Element, folder: Path) -> None:
    """Asset folders made absolute, so the merged copy resolves files as the original did
    (without any, files are relative to the model's folder: that becomes ``assetdir``)."""
    compilers = list(root.iter("compiler"))
    if not compilers:
        compilers = [ET.Element("compiler")]
        root.insert(0, compilers[0])
    for compiler in compilers:
        for key in _DIR_KEYS:
            value = compiler.get(key)
            if value is not None and not Path(value).is_absolute():
                compiler.set(key, str(folder / value))
    if not any(c.get("assetdir") or c.get("meshdir") for c in compilers):
        compilers[0].set("assetdir", str(folder))


def _numbers(text: str, n: int | None, what: str) -> list[float]:
    try:
        values = [float(x) for x in text.split()]
    except ValueError:
        raise MJCFParseError(f"{what}: {text!r} is not a list of numbers") from None
    if n is not None and len(values) != n:
        raise MJCFParseError(f"{what}: expected {n} numbers, got {len(values)} ({text!r})")
    bad = [v for v in values if not math.isfinite(v)]
    if bad:
        raise MJCFParseError(f"{what}: {text!r} is not finite")
    return values


def _check_attributes(root: ET.Element, shown: str) -> None:
    """Masses, inertias and positions that MuJoCo refuses (negative, non-finite) or that
    Pinocchio would clamp silently, named by body."""
    counter = 0
    # Iterative walk: a deep chain must reach the depth limit, not Python's recursion limit.
    stack: list[tuple[ET.Element, ET.Element | None, int]] = [
        (w, None, 0) for w in reversed(root.findall("worldbody"))
    ]
    while stack:
        elem, body, depth = stack.pop()
        for child in reversed(list(elem)):
            if child.tag == "body":
                counter += 1
                if counter > LIMITS.model_bodies:
                    check_limit(
                        "model_bodies",
                        counter,
                        shown,
                        f"more than {LIMITS.model_bodies} bodies",
                        "Pinocchio's MJCF parser needs about 1 GB for 300 bodies and 24 GB for "
                        "1000",
                    )
                if depth + 1 > LIMITS.model_depth:
                    check_limit(
                        "model_depth",
                        depth + 1,
                        shown,
                        f"bodies nested {depth + 1} deep (body {child.get('name')!r})",
                    )
                for key, n in (("pos", 3), ("quat", 4), ("euler", 3), ("axisangle", 4)):
                    if key in child.attrib:
                        who = f"{shown}: body {_body_name(child, counter)}"
                        _numbers(child.get(key, ""), n, f"{who}: <body {key}>")
                stack.append((child, child, depth + 1))
                continue
            if child.tag == "joint" and "axis" in child.attrib:
                who = f"{shown}: body {_body_name(body, counter)}"
                axis = _numbers(child.get("axis", ""), 3, f"{who}: <joint axis>")
                if not any(axis):
                    raise MJCFParseError(
                        f"{who}: <joint name={child.get('name')!r} axis='0 0 0'> has no direction"
                    )
            if child.tag in ("inertial", "geom"):
                _check_element(child, f"{shown}: body {_body_name(body, counter)}")
            stack.append((child, body, depth))


def _body_name(body: ET.Element | None, index: int) -> str:
    if body is None:
        return "worldbody"
    return repr(body.get("name")) if body.get("name") else f"<body> #{index} (unnamed)"


def _check_element(child: ET.Element, who: str) -> None:
    if child.tag == "inertial":
        mass = _numbers(child.get("mass", "0"), 1, f"{who}: <inertial mass>")[0]
        if mass < 0:
            raise MJCFParseError(
                f"{who}: <inertial mass={child.get('mass')!r}> is negative "
                "(MuJoCo refuses the file)"
            )
        if "diaginertia" in child.attrib:
            d = _numbers(child.get("diaginertia", ""), 3, f"{who}: <inertial diaginertia>")
            if min(d) < 0:
                raise MJCFParseError(f"{who}: <inertial diaginertia> has a negative entry")
        if "fullinertia" in child.attrib:
            _numbers(child.get("fullinertia", ""), 6, f"{who}: <inertial fullinertia>")
        if "pos" in child.attrib:
            _numbers(child.get("pos", ""), 3, f"{who}: <inertial pos>")
        return
    for key in ("mass", "density"):
        if key in child.attrib:
            value = _numbers(child.get(key, ""), 1, f"{who}: <geom {key}>")[0]
            if value < 0:
                raise MJCFParseError(
                    f"{who}: <geom {key}={child.get(key)!r}> is negative (MuJoCo refuses the file)"
                )


def _is_free(body: ET.Element) -> bool:
    return body.find("freejoint") is not None or any(
        j.get("type") == "free" for j in body.findall("joint")
    )


def _one_tree(root: ET.Element, shown: str) -> bool:
    """Pinocchio builds the first body under <worldbody> and silently drops the others: keep
    the one free-floating root body (the robot of a scene with objects) and say which were
    left out, or refuse when it is not clear which is the robot. Returns whether the tree
    changed."""
    world = root.find("worldbody")
    roots = [] if world is None else [b for b in world if b.tag == "body"]
    names = [b.get("name") or f"#{i}" for i, b in enumerate(roots)]
    if not roots:
        raise MJCFParseError(f"{shown}: no <body> under <worldbody>: there is no robot to build")
    seen: set[str] = set()
    for body in root.iter("body"):
        name = body.get("name")
        if name and name in seen:
            raise MJCFParseError(f"{shown}: two bodies are named {name!r}")
        if name:
            seen.add(name)
    if len(roots) == 1:
        return False
    free = [b for b in roots if _is_free(b)]
    if len(free) != 1:
        raise MJCFParseError(
            f"{shown}: {len(roots)} bodies under <worldbody> ({', '.join(map(repr, names))}), "
            f"{len(free)} of them with a free joint: wholebody builds one robot, the single "
            "free-floating root body of a scene; put the robot in a file of its own"
        )
    left = [n for b, n in zip(roots, names, strict=True) if b is not free[0]]
    assert world is not None
    for b in roots:
        if b is not free[0]:
            world.remove(b)
    warnings.warn(
        f"{shown}: the robot is root body {free[0].get('name')!r} (its free joint); the other "
        f"root bodies {left} are scene objects and are left out",
        ModelWarning,
        stacklevel=4,
    )
    return True


def read_mjcf_tree(path: Path) -> MjcfTree:
    """Read ``path`` and everything it includes as one ``<mujoco>`` element.

    Raises
    ------
    ModelFileNotFoundError
        The file or an included file does not exist (the message names the include).
    OutsideInputError
        An include that leaves the model's folder.
    MJCFParseError
        Malformed XML, a root other than ``<mujoco>``, a file included twice, a negative or
        non-finite mass or inertia (naming the body).
    SizeLimitError
        More elements, included files or body nesting than :data:`wholebody.limits.LIMITS`
        allows.
    """
    path = Path(path)
    root = _parse(path, str(path))
    folder = path.parent
    has_bodies = root.find("worldbody/body") is not None
    sections = len(root)
    seen: dict[Path, str] = {path.resolve(): "the command line"}
    bodies = _expand(root, folder, path, seen)
    included = [p for p in seen if p != path.resolve()]
    count = sum(1 for _ in root.iter())
    check_limit("model_elements", count, str(path), f"{count:,} XML elements (includes counted)")
    _merge_sections(root)
    changed = bool(included) or len(root) != sections
    _check_attributes(root, str(path))
    changed = _one_tree(root, str(path)) or changed
    if changed:  # the copy Pinocchio reads lives elsewhere: asset folders made absolute
        _absolute_dirs(root, folder)
    own = root.get("model")
    robot = None
    if not has_bodies and len(bodies) == 1 and bodies[0]:
        robot = str(bodies[0])  # a scene including one robot file: the robot's name
    return MjcfTree(root, path, included, robot or own, changed)

"""Robots from MJCF (MuJoCo's XML) through Pinocchio's MJCF parser, what
:meth:`wholebody.Robot.from_mjcf` wraps: joint names are MJCF joint names, body frames MJCF body
names, and a free joint on the root body becomes Pinocchio's free flyer (``q`` and ``v`` follow
wholebody's conventions, whatever MuJoCo's). An MJCF saved from a compiled model
(``mj_saveLastXML``) has lost the bodies MuJoCo merged (``fusestatic``): add the frames you need
with :meth:`~wholebody.Robot.add_frame`.
"""

from __future__ import annotations

import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pinocchio as pin

from ..errors import MJCFParseError
from . import validation as _validation
from ._mjcf_tree import read_mjcf_tree
from ._model import _FREE_FLYER

__all__ = ["model_from_mjcf", "is_mjcf"]


def _build(file: Path, shown: Path, root_joint: bool) -> pin.Model:
    try:
        if root_joint:
            return pin.buildModelFromMJCF(str(file), pin.JointModelFreeFlyer())
        return pin.buildModelFromMJCF(str(file))
    except (RuntimeError, ValueError) as exc:
        raise MJCFParseError(f"{shown}: Pinocchio cannot build the model: {exc}") from exc


def model_from_mjcf(
    path: str | Path,
    *,
    floating_base: bool | None = None,
    validate: str = "raise",
) -> tuple[pin.Model, str | None]:
    """The validated Pinocchio model of an MJCF file and the file's ``model`` name (parameters
    and errors as in :meth:`wholebody.Robot.from_mjcf`)."""
    _validation.check_policy(validate)
    path = Path(path)
    # Includes, sizes and masses first: Pinocchio drops includes and clamps masses silently.
    tree = read_mjcf_tree(path)
    with tempfile.TemporaryDirectory() as tmp:
        file = path
        if tree.changed:  # Pinocchio reads one file: hand it the merged copy
            file = Path(tmp) / path.name
            ET.ElementTree(tree.root).write(file, encoding="utf-8")
        model = _build(file, path, False)
        has_free = model.njoints > 1 and model.joints[1].shortname() == _FREE_FLYER
        if floating_base and not has_free:
            model = _build(file, path, True)
    has_free = model.njoints > 1 and model.joints[1].shortname() == _FREE_FLYER
    if floating_base is False and has_free:
        raise MJCFParseError(
            f"{path}: the root body has a free joint but floating_base=False was asked; "
            "remove the free joint from the file or pass floating_base=None"
        )
    _validation.apply_policy(
        _validation.model_problems(model, check_bodies=True), validate, str(path)
    )
    return model, tree.robot_name


def is_mjcf(path: str | Path | None) -> bool:
    """Whether ``path`` is an XML file whose root element is ``<mujoco>`` (only the first
    element is read)."""
    if path is None:
        return False
    try:
        with open(path, "rb") as file:  # closed at once, whatever the parser holds
            for _event, elem in ET.iterparse(file, events=("start",)):
                return bool(elem.tag == "mujoco")
    except (OSError, ET.ParseError):
        return False
    return False

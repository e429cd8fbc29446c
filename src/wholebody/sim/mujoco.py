"""MuJoCo for any robot: an editable model with its contacts, and MuJoCo's conventions converted.

:func:`mujoco_spec_for_robot` builds a MuJoCo ``MjSpec`` from a robot's URDF or MJCF (meshes
stripped or resolved, inertias MuJoCo refuses reported or repaired, a site and a collision
box per declared sole); :class:`~wholebody.sim.mujoco_recorder.MujocoRecorder` logs a running
simulation into a :class:`~wholebody.Trajectory`. This is the one place where MuJoCo's
conventions are known (the ``mujoco`` extra; the table is in the page below).

From a MuJoCo script to a checked log (``docs/mujoco.md``):

.. include:: ../../../docs/mujoco.md
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from ..contacts import Contact, SurfaceContact
from ..errors import (
    InvalidArgumentError,
    ModelError,
    ModelFileNotFoundError,
    ModelWarning,
)
from ..robot import validation as _validation
from ..robot.batch import frame_placements_rows
from ..robot.core import Array, Robot
from ._mujoco_base import (
    CONTACT_GEOM_PREFIX,
    CONTACT_SITE_PREFIX,
    FLOOR_NAME,
    MujocoStateMap,
    contact_body_id,
    contact_site_id,
    contact_wrenches_on_bodies,
    free_base_to_pinocchio,
    import_mujoco,
    mujoco_mass_matrix,
    trajectory_from_mujoco,
)
from ._mujoco_inertia import REPAIR_MASS, REPAIR_MOMENT, InertiaRepair, repair_inertias

__all__ = [
    "import_mujoco",
    "mujoco_spec_for_robot",
    "MujocoBuild",
    "InertiaRepair",
    "check_contact_geometry",
    "mujoco_mass_matrix",
    "MujocoStateMap",
    "free_base_to_pinocchio",
    "trajectory_from_mujoco",
    "contact_wrenches_on_bodies",
    "contact_site_id",
    "contact_body_id",
    "REPAIR_MASS",
    "REPAIR_MOMENT",
    "CONTACT_SITE_PREFIX",
    "CONTACT_GEOM_PREFIX",
    "FLOOR_NAME",
]


# --- building a MuJoCo model for a robot -------------------------------------------------

#: Mesh files MuJoCo can load.
_MESH_SUFFIXES = (".stl", ".obj", ".msh")


@dataclass
class MujocoBuild:
    """What :func:`mujoco_spec_for_robot` made: an editable spec and the robot that matches it.

    Attributes
    ----------
    spec : mujoco.MjSpec
        The model, not compiled: edit it (actuators, terrain, options) then :meth:`compile`.
    robot : Robot
        The robot whose dynamics equal the spec's: the robot given, or a copy of it with the
        same inertia repairs when some were made. Check the logs with this one.
    contacts : tuple of Contact
        The declared contacts.
    contact_sites : dict of str to str
        Contact name -> MuJoCo site at the contact frame (origin and axes); the recorder
        reads the wrench point there.
    contact_geoms : dict of str to str
        Contact name -> collision geom added for it (a box for a sole, a sphere for a point).
    repairs : tuple of InertiaRepair
        Inertias changed so that MuJoCo compiles (empty unless ``inertia="repair"``).
    stripped : tuple of str
        ``"link: file"`` of each mesh removed (visual meshes are always removed).
    """

    spec: Any
    robot: Robot
    contacts: tuple[Contact, ...]
    contact_sites: dict[str, str] = field(default_factory=dict)
    contact_geoms: dict[str, str] = field(default_factory=dict)
    repairs: tuple[InertiaRepair, ...] = ()
    stripped: tuple[str, ...] = ()

    def compile(self) -> Any:
        """Compile the spec; warn (ModelWarning) for a contact whose body cannot collide.

        Returns
        -------
        mujoco.MjModel

        Raises
        ------
        ModelError
            MuJoCo refuses the spec; its reason is in the message and ``__cause__``.
        """
        try:
            model = self.spec.compile()
        except Exception as exc:
            raise ModelError(
                f"MuJoCo cannot compile the model of {self.robot.name!r}: {exc}"
            ) from exc
        check_contact_geometry(model, self.contacts, self.contact_sites)
        return model


def check_contact_geometry(
    mj_model: Any, contacts: Sequence[Contact], sites: Mapping[str, str] | None = None
) -> list[str]:
    """Warn (ModelWarning) for each declared contact whose MuJoCo body has no collision geom.

    MuJoCo merges bodies welded to their parent (``fusestatic``), so the body checked is
    the merged body that carries the contact's site (or the body named as its frame).

    Returns
    -------
    list of str
        The names of the contacts warned about.
    """
    mujoco = import_mujoco()
    missing = []
    for c in contacts:
        body = contact_body_id(mj_model, c, sites)
        geoms = np.flatnonzero(mj_model.geom_bodyid == body)
        collides = (mj_model.geom_contype[geoms] != 0) | (mj_model.geom_conaffinity[geoms] != 0)
        if not np.any(collides):
            bname = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_BODY, body)
            warnings.warn(
                f"contact {c.name!r} (frame {c.frame!r}) is on MuJoCo body {bname!r}, which has no "
                "collision geometry: it cannot touch anything and its wrench will be zero "
                "(mujoco_spec_for_robot(..., contact_geoms=True) adds a sole box)",
                ModelWarning,
                stacklevel=3,
            )
            missing.append(c.name)
    return missing


def _resolve_mesh(filename: str, urdf: Path) -> Path | None:
    """A mesh file name (``package://PKG/rest``, ``file://``, relative) as an existing path."""
    if filename.startswith("file://"):
        p = Path(filename[len("file://") :])
        return p if p.is_file() else None
    if filename.startswith("package://"):
        pkg, _, rest = filename[len("package://") :].partition("/")
        for parent in urdf.resolve().parents:
            for cand in (
                (parent / pkg / rest, parent / rest) if parent.name != pkg else (parent / rest,)
            ):
                if cand.is_file():
                    return cand
        return None
    p = Path(filename)
    p = p if p.is_absolute() else urdf.parent / p
    return p if p.is_file() else None


def _unreadable_mesh(path: Path | None) -> str:
    """Why MuJoCo cannot load a mesh file ('' when it can)."""
    if path is None:
        return "not found"
    if path.suffix.lower() not in _MESH_SUFFIXES:
        return f"{path.suffix} meshes are not read by MuJoCo"
    if path.suffix.lower() == ".stl":
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(84)
        n = int.from_bytes(head[80:84], "little") if len(head) == 84 else -1
        if size != 84 + 50 * n:  # a binary STL has exactly this size; MuJoCo reads no other
            return "ASCII STL"
    return ""


def _urdf_text_for_mujoco(path: Path, meshes: str) -> tuple[str, list[str]]:
    """The URDF as MuJoCo should read it: visuals dropped, collision meshes stripped or resolved."""
    _, root = _validation.read_urdf(path)
    stripped = []
    for link in root.iter("link"):
        for visual in link.findall("visual"):
            link.remove(visual)
        for col in link.findall("collision"):
            mesh = col.find("geometry/mesh")
            if mesh is None:
                continue
            filename = mesh.get("filename", "")
            resolved = _resolve_mesh(filename, path) if meshes == "resolve" else None
            why = _unreadable_mesh(resolved) if meshes == "resolve" else ""
            if not why and resolved is not None:
                mesh.set("filename", str(resolved))
            else:
                link.remove(col)
                stripped.append(f"{link.get('name')}: {filename}" + (f" ({why})" if why else ""))
    return ET.tostring(root, encoding="unicode"), stripped


def _frame_in_spec_body(robot: Robot, frame: str, bodies: set[str]) -> tuple[str, pin.SE3]:
    """The spec body carrying a robot frame, and the frame's placement in that body."""
    model = robot.model
    fid = robot.frame_id(frame)
    anc = fid
    while not (model.frames[anc].type == pin.FrameType.BODY and model.frames[anc].name in bodies):
        if anc == 0:
            raise ModelError(f"frame {frame!r}: no ancestor frame is a body of the MuJoCo model")
        anc = model.frames[anc].parentFrame
    P, R = np.empty((1, 2, 3)), np.empty((1, 2, 3, 3))
    frame_placements_rows(robot, robot.neutral()[None], [0], [anc, fid], P, R)
    return model.frames[anc].name, pin.SE3(R[0, 0], P[0, 0]).actInv(pin.SE3(R[0, 1], P[0, 1]))


def _quat_wxyz(R: Array) -> list[float]:
    q = pin.Quaternion(np.asarray(R))
    return [q.w, q.x, q.y, q.z]


def mujoco_spec_for_robot(
    robot: Robot,
    contacts: Sequence[Contact] = (),
    *,
    floor: bool = True,
    contact_geoms: bool = True,
    other_collisions: bool = True,
    sole_thickness: float = 0.01,
    meshes: str = "strip",
    inertia: str = "raise",
    timestep: float = 0.001,
    solver_tolerance: float | None = 1e-12,
    solver_iterations: int = 500,
) -> MujocoBuild:
    """An editable MuJoCo model (``MjSpec``) of a robot, with its declared contacts.

    The robot's ``source`` (a URDF or MJCF file) is read by MuJoCo and edited as a spec
    (no text substitution): visual meshes are dropped, collision meshes stripped or
    resolved, inertias MuJoCo refuses reported or repaired, the root given a free joint
    when the robot has a floating base, and each declared contact given a site at its frame
    and, optionally, a collision geom: for a :class:`SurfaceContact` a box of the sole's
    half sizes whose bottom face is the sole (the contact frame's xy plane, the box inside
    the foot along the frame's +z), for a :class:`PointContact` a 5 mm sphere touching the
    frame origin. Bodies' inertias come from the file alone (``inertiafromgeom`` off), so
    the added geoms carry no mass.

    Parameters
    ----------
    robot : Robot
        Its ``source`` must be the URDF or MJCF file it was loaded from; its frames (those
        added with :meth:`Robot.add_frame` included) place the contacts.
    contacts : sequence of Contact
        The contacts to log (soles, points). Their frames need not be MuJoCo bodies: a frame
        is placed in the nearest ancestor link that is one.
    floor : bool
        Add a ground plane ``wb_floor`` at z = 0, friction the smallest ``mu`` of the contacts
        (MuJoCo takes the larger of two geoms' frictions).
    contact_geoms : bool
        Add the sole boxes / point spheres (default). Without them the contacts' bodies must
        have collision geoms of their own: a ModelWarning at :meth:`MujocoBuild.compile`
        names any that have none.
    other_collisions : bool
        Keep the file's collision geoms (default). False disables all of them but the added
        contact geoms: the robot touches the world only where contacts are declared.
    sole_thickness : float
        Height of the sole boxes [m].
    meshes : {"strip", "resolve"}
        URDF collision meshes: remove them (default; dynamics needs none and their
        ``package://`` paths rarely resolve), or resolve ``package://``, ``file://`` and
        relative paths and keep the STL/OBJ/MSH files found (others are removed). Every
        removed mesh is listed in :attr:`MujocoBuild.stripped`.
    inertia : {"raise", "repair"}
        Inertias MuJoCo refuses (principal moments breaking the triangle inequality or not
        positive, massless moving bodies): raise :class:`InvalidInertiaError` naming every
        body (default), or change them to the closest accepted values, list them in
        :attr:`MujocoBuild.repairs`, warn (ModelWarning) and apply the same change to a copy
        of the robot (:attr:`MujocoBuild.robot`), so both engines keep the same dynamics.
    timestep : float
        [s].
    solver_tolerance, solver_iterations
        MuJoCo's constraint-solver tolerance and iteration limit. Logged accelerations and
        contact forces agree only as far as the solver converged: the default 1e-12 makes
        the Newton-Euler residual of a log ~1e-10 N. None keeps MuJoCo's defaults.

    Returns
    -------
    MujocoBuild
        ``spec`` (edit it, then ``build.compile()``), the matching ``robot``, the contact
        sites and geoms, the repairs and the stripped meshes.

    Raises
    ------
    ModelError
        No source file, or MuJoCo cannot read it (the reason is kept as ``__cause__``).
    InvalidInertiaError
        ``inertia="raise"`` and some bodies would be refused; the message lists them.
    InvalidArgumentError
        A bad option value.
    """
    _check_options(meshes, inertia, sole_thickness, timestep)
    path, spec, stripped = _spec_from_file(robot, meshes)
    _set_options(spec, timestep, solver_tolerance, solver_iterations)
    # Inertias MuJoCo refuses: report, or repair in the spec and in a copy of the robot.
    out_robot, repairs = repair_inertias(spec, robot, str(path), inertia == "repair")
    _free_root(spec, robot, path)
    if not other_collisions:
        for g in spec.geoms:
            g.contype, g.conaffinity = 0, 0
    build = MujocoBuild(spec, out_robot, tuple(contacts), stripped=tuple(stripped), repairs=repairs)
    _add_contacts(build, robot, contact_geoms, sole_thickness)
    if floor:  # MuJoCo takes the larger of two geoms' frictions: the floor has the smallest
        _add_geom(
            spec.worldbody,
            "PLANE",
            FLOOR_NAME,
            min((c.mu for c in contacts), default=1.0),
            size=[50, 50, 0.1],
        )
    return build


def _check_options(meshes: str, inertia: str, sole_thickness: float, timestep: float) -> None:
    if meshes not in ("strip", "resolve"):
        raise InvalidArgumentError(f"meshes must be 'strip' or 'resolve', got {meshes!r}")
    if inertia not in ("raise", "repair"):
        raise InvalidArgumentError(f"inertia must be 'raise' or 'repair', got {inertia!r}")
    if not (np.isfinite(sole_thickness) and sole_thickness > 0):
        raise InvalidArgumentError(
            f"sole_thickness must be a positive length [m], got {sole_thickness!r}"
        )
    if not (np.isfinite(timestep) and timestep > 0):
        raise InvalidArgumentError(f"timestep must be positive [s], got {timestep!r}")


def _set_options(
    spec: Any, timestep: float, solver_tolerance: float | None, solver_iterations: int
) -> None:
    """Inertias from the file alone (the added geoms carry no mass), no visuals, the time
    step and the solver's convergence."""
    mujoco = import_mujoco()
    spec.compiler.balanceinertia = False
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.compiler.discardvisual = True
    spec.option.timestep = timestep
    if solver_tolerance is not None:
        spec.option.tolerance = solver_tolerance
        spec.option.iterations = solver_iterations


def _free_root(spec: Any, robot: Robot, path: Path) -> None:
    """Give the root body a free joint when the robot has a floating base and it has none."""
    mujoco = import_mujoco()
    root = spec.worldbody.first_body()
    if root is None:
        raise ModelError(f"{path}: MuJoCo finds no body in the model")
    if robot.has_floating_base and not any(
        j.type == mujoco.mjtJoint.mjJNT_FREE for j in root.joints
    ):
        root.add_freejoint()


def _add_contacts(
    build: MujocoBuild, robot: Robot, contact_geoms: bool, sole_thickness: float
) -> None:
    """A site at each contact frame (in the nearest spec body above it) and, with
    ``contact_geoms``, its collision geom: a box of the sole's half sizes whose bottom face is
    the sole for a :class:`SurfaceContact`, a 5 mm sphere touching the frame origin otherwise."""
    bodies = {b.name for b in build.spec.bodies if b.name}
    for c in build.contacts:
        body_name, placement = _frame_in_spec_body(robot, c.frame, bodies)
        body = build.spec.body(body_name)
        R, p = np.asarray(placement.rotation), np.asarray(placement.translation)
        site = CONTACT_SITE_PREFIX + c.name
        body.add_site(name=site, pos=p, quat=_quat_wxyz(R))
        build.contact_sites[c.name] = site
        if not contact_geoms:
            continue
        geom = build.contact_geoms[c.name] = CONTACT_GEOM_PREFIX + c.name
        if isinstance(c, SurfaceContact):
            half = [c.half_length, c.half_width, sole_thickness / 2]
            pos = p + R @ (c.center_point + [0.0, 0.0, sole_thickness / 2])
            _add_geom(body, "BOX", geom, c.mu, size=half, pos=pos, quat=_quat_wxyz(R))
        else:
            radius = 0.005
            _add_geom(
                body, "SPHERE", geom, c.mu, size=[radius, 0, 0], pos=p + R @ c.normal * radius
            )


def _add_geom(body: Any, kind: str, name: str, mu: float, **placed: Any) -> None:
    """A colliding geom of type ``mjGEOM_<kind>`` with friction ``mu`` (and MuJoCo's default
    torsional and rolling friction)."""
    mujoco = import_mujoco()
    body.add_geom(
        name=name,
        type=getattr(mujoco.mjtGeom, f"mjGEOM_{kind}"),
        friction=[mu, 0.005, 0.0001],
        contype=1,
        conaffinity=1,
        **placed,
    )


def _spec_from_file(robot: Robot, meshes: str) -> tuple[Path, Any, list[str]]:
    """The robot's URDF or MJCF file, MuJoCo's spec of it and the URDF meshes stripped."""
    mujoco = import_mujoco()
    if robot.source is None:
        raise ModelError(
            f"robot {robot.name!r} has no source file: load it from a URDF or MJCF file"
        )
    path = Path(robot.source)
    if not path.is_file():
        raise ModelFileNotFoundError(f"robot {robot.name!r}: source file not found: {path}")
    try:
        if ET.parse(path).getroot().tag == "mujoco":
            return path, mujoco.MjSpec.from_file(str(path)), []
        text, stripped = _urdf_text_for_mujoco(path, meshes)
        return path, mujoco.MjSpec.from_string(text), stripped
    except ET.ParseError as exc:
        raise ModelError(f"{path}: not well-formed XML: {exc}") from exc
    except (ValueError, RuntimeError) as exc:  # mujoco raises ValueError on bad files
        raise ModelError(f"MuJoCo cannot read {path}: {exc}") from exc

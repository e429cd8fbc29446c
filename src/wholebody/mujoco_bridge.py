"""MuJoCo for any robot: an editable model with its contacts, and MuJoCo's conventions converted.

:func:`mujoco_spec_for_robot` builds a MuJoCo ``MjSpec`` from a robot's URDF or MJCF (meshes
stripped or resolved, inertias MuJoCo refuses reported or repaired, a site and a collision
box per declared sole); :class:`~wholebody.mujoco_recorder.MujocoRecorder` logs a running
simulation into a :class:`~wholebody.Trajectory`. See ``docs/mujoco.md``.

This is the one place where MuJoCo's conventions are known (the ``mujoco`` extra):

* free-joint ``qpos = [x, y, z, qw, qx, qy, qz]`` (scalar first) where Pinocchio has
  ``[x, y, z, qx, qy, qz, qw]``;
* free-joint ``qvel = [linear velocity in world axes, angular velocity in body axes]`` where
  Pinocchio has both in body axes (LOCAL);
* hence ``qacc``'s linear part is ``R (dv_local + omega x v_local)``: the ``omega x v`` term
  must be removed when converting accelerations;
* joint order is MuJoCo's tree order: joints are mapped by name, never by position.
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
from numpy.typing import ArrayLike

from . import _validation
from ._optional import require
from .contacts import Contact, SurfaceContact
from .errors import (
    InvalidArgumentError,
    InvalidInertiaError,
    ModelError,
    ModelFileNotFoundError,
    ModelWarning,
)
from .robot import Array, Robot

__all__ = [
    "import_mujoco",
    "mujoco_spec_for_robot",
    "MujocoBuild",
    "InertiaRepair",
    "check_contact_geometry",
    "mujoco_model_from_urdf",
    "mujoco_mass_matrix",
    "MujocoStateMap",
    "free_base_to_pinocchio",
    "contact_wrenches_on_bodies",
]


def _quat_wxyz_to_rotation(quat_wxyz: Array) -> Array:
    """Rotation matrices (N, 3, 3) from MuJoCo quaternions (N, 4), normalised first."""
    w, x, y, z = (quat_wxyz / np.linalg.norm(quat_wxyz, axis=1, keepdims=True)).T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
        ],
        axis=1,
    )


def free_base_to_pinocchio(
    qpos: ArrayLike, qvel: ArrayLike, qacc: ArrayLike | None = None
) -> tuple[Array, Array, Array | None]:
    """Convert free-floating states from MuJoCo's conventions to Pinocchio's, for N samples.

    Parameters
    ----------
    qpos : array, shape (N, 7 + nj)
        ``[x, y, z, qw, qx, qy, qz, joints...]``.
    qvel, qacc : arrays, shape (N, 6 + nj)
        ``[linear velocity (world axes), angular velocity (body axes), joints...]`` and its
        time derivative.

    Returns
    -------
    q, v, a
        ``q = [x, y, z, qx, qy, qz, qw, joints]``; ``v`` with the base linear velocity in
        base axes, ``v_lin = R^T qvel_lin``; ``a_lin = R^T qacc_lin - omega x v_lin``
        (the derivative of a rotating-frame vector). The joints are unchanged.
    """
    qpos = np.atleast_2d(np.asarray(qpos, dtype=float))
    qvel = np.atleast_2d(np.asarray(qvel, dtype=float))
    R = _quat_wxyz_to_rotation(qpos[:, 3:7])
    q = np.concatenate([qpos[:, :3], qpos[:, 4:7], qpos[:, 3:4], qpos[:, 7:]], axis=1)
    v_lin = np.einsum("nji,nj->ni", R, qvel[:, :3])
    v = np.concatenate([v_lin, qvel[:, 3:]], axis=1)
    a = None
    if qacc is not None:
        qacc = np.atleast_2d(np.asarray(qacc, dtype=float))
        a_lin = np.einsum("nji,nj->ni", R, qacc[:, :3]) - np.cross(qvel[:, 3:6], v_lin)
        a = np.concatenate([a_lin, qacc[:, 3:]], axis=1)
    return q, v, a


def contact_wrenches_on_bodies(
    mj_model: Any, mj_data: Any, bodies: list[str], points: Array
) -> Array:
    """The contact wrench on each named body, world axes, about the given points, (k, 6).

    Sums every active contact of the body: ``mj_contactForce`` gives the force of geom1 on
    geom2 in the contact frame (rows of ``contact.frame`` are its axes, the normal first), so
    a body that is geom1 receives its opposite. Torsional/rolling friction torques (condim >
    3) are included.
    """
    mujoco = import_mujoco()
    ids = [mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_BODY, b) for b in bodies]
    for name, i in zip(bodies, ids, strict=True):
        if i < 0:
            raise ModelError(f"MuJoCo model has no body {name!r}")
    out = np.zeros((len(bodies), 6))
    local = np.zeros(6)
    for c in range(mj_data.ncon):
        con = mj_data.contact[c]
        mujoco.mj_contactForce(mj_model, mj_data, c, local)
        frame = con.frame.reshape(3, 3).T  # columns: normal, tangent 1, tangent 2
        f, tau = frame @ local[:3], frame @ local[3:]
        b1, b2 = mj_model.geom_bodyid[con.geom1], mj_model.geom_bodyid[con.geom2]
        for k, body in enumerate(ids):
            sign = 1.0 if b2 == body else (-1.0 if b1 == body else 0.0)
            if sign:
                out[k, :3] += sign * f
                out[k, 3:] += sign * (tau + np.cross(con.pos - points[k], f))
    return out


def import_mujoco() -> Any:
    """Import :mod:`mujoco` or raise :class:`MissingDependencyError` with the install line."""
    return require("mujoco", "mujoco", "MuJoCo models and logs")


# --- building a MuJoCo model for a robot -------------------------------------------------

#: Mass [kg] and principal moments [kg m^2] given to a moving body that MuJoCo would refuse
#: as massless (a virtual link between two hinges of a spherical joint). Pinocchio gets the
#: same values, so the two engines keep the same dynamics.
REPAIR_MASS = 1e-6
REPAIR_MOMENT = 1e-9
#: Relative margin kept by repaired principal moments (MuJoCo checks them strictly).
_REPAIR_MARGIN = 1e-6
#: MuJoCo's mjMINVAL: smaller principal moments of a full inertia are refused.
_MJ_MINVAL = 1e-15
#: Mesh files MuJoCo can load.
_MESH_SUFFIXES = (".stl", ".obj", ".msh")
#: Prefixes of the names the bridge gives to what it adds.
CONTACT_SITE_PREFIX = "wb_contact_"
CONTACT_GEOM_PREFIX = "wb_sole_"
FLOOR_NAME = "wb_floor"


@dataclass(frozen=True)
class InertiaRepair:
    """One body whose inertia MuJoCo refuses, and what the bridge did about it.

    Attributes
    ----------
    body : str
        MuJoCo body (URDF link, MJCF body) name.
    reason : str
        What MuJoCo would refuse: the triangle inequality, a non-positive principal moment,
        or a massless moving body.
    mass_before, mass_after : float
        [kg].
    moments_before, moments_after : ndarray, shape (3,)
        Principal moments of inertia about the body's centre of mass, ascending [kg m^2].
        ``moments_after`` is the closest set of moments (Euclidean) that MuJoCo accepts,
        with a relative margin of 1e-6; the principal axes are kept.
    """

    body: str
    reason: str
    mass_before: float
    mass_after: float
    moments_before: Array
    moments_after: Array

    def __str__(self) -> str:
        return (
            f"{self.body}: {self.reason}; mass {self.mass_before:.6g} -> {self.mass_after:.6g} kg, "
            f"principal moments {np.array2string(self.moments_before, precision=4)} -> "
            f"{np.array2string(self.moments_after, precision=4)} kg m^2"
        )


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
        body = _contact_body(mj_model, c, sites)
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


def _contact_site(mj_model: Any, c: Contact, sites: Mapping[str, str] | None) -> int:
    mujoco = import_mujoco()
    names = [sites[c.name]] if sites and c.name in sites else []
    names += [CONTACT_SITE_PREFIX + c.name, c.frame]
    for n in names:
        i = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_SITE, n)
        if i >= 0:
            return int(i)
    return -1


def _contact_body(mj_model: Any, c: Contact, sites: Mapping[str, str] | None) -> int:
    mujoco = import_mujoco()
    site = _contact_site(mj_model, c, sites)
    if site >= 0:
        return int(mj_model.site_bodyid[site])
    body = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_BODY, c.frame)
    if body < 0:
        raise ModelError(
            f"contact {c.name!r}: the MuJoCo model has no site {CONTACT_SITE_PREFIX + c.name!r} "
            f"nor a site or body {c.frame!r} (MuJoCo merges bodies welded to their parent: build "
            "the model with mujoco_spec_for_robot, which adds a site at each contact frame)"
        )
    return int(body)


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


def _body_inertia(body: Any) -> tuple[Array, Array]:
    """A spec body's inertia: (rotation of its axes in the body frame, 3x3 inertia in them)."""
    R = np.zeros(9)
    quat = np.asarray(body.iquat, dtype=float)
    import_mujoco().mju_quat2Mat(R, quat if np.all(np.isfinite(quat)) else np.array([1.0, 0, 0, 0]))
    full = np.asarray(body.fullinertia, dtype=float)
    if np.all(np.isfinite(full)) and np.any(full != 0):
        xx, yy, zz, xy, xz, yz = full
        inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    else:
        inertia = np.diag(np.nan_to_num(np.asarray(body.inertia, dtype=float)))
    return R.reshape(3, 3), inertia


def _repaired_moments(d: Array, full: bool) -> tuple[Array, str]:
    """Closest principal moments (ascending) that MuJoCo accepts, and why they changed.

    MuJoCo refuses a full (non-diagonal) inertia with a principal moment that is not
    positive, and any inertia whose moments break the triangle inequality; an all-zero
    diagonal inertia (a point mass) it accepts.
    """
    d = np.sort(np.asarray(d, dtype=float))
    scale = max(float(abs(d).max()), REPAIR_MOMENT)
    reason = ""
    if full and d[0] < _MJ_MINVAL:
        reason = "full inertia with a principal moment that is not positive (< 1e-15)"
        d = np.maximum(d, max(_REPAIR_MARGIN * scale, REPAIR_MOMENT))
    excess = d[2] - d[0] - d[1]
    if excess > 0.0 or (reason and excess >= -_REPAIR_MARGIN * scale):
        reason = reason or "principal moments break the triangle inequality I1 + I2 >= I3"
        # Euclidean projection onto I1 + I2 - I3 >= margin: move each by a third.
        shift = (excess + _REPAIR_MARGIN * scale) / 3.0
        d = d + np.array([shift, shift, -shift])
    return np.sort(d), reason


def _moving_bodies_mass(spec: Any) -> dict[str, tuple[float, float]]:
    """Each body with joints: (mass, largest principal moment) with the joint-less bodies
    MuJoCo fuses into it (the moment ignores the parallel-axis terms: a lower bound)."""
    out: dict[str, tuple[float, float]] = {}

    def fused(body: Any) -> tuple[float, float]:
        m, moment = float(body.mass), float(np.abs(_body_inertia(body)[1]).max())
        for child in body.bodies:
            if child.first_joint() is None:
                cm, cmoment = fused(child)
                m, moment = m + cm, max(moment, cmoment)
        return m, moment

    for body in spec.bodies:
        if body.name and body.first_joint() is not None:
            out[body.name] = fused(body)
    return out


def _inertia_repairs(spec: Any) -> list[tuple[Any, InertiaRepair, Array, Array]]:
    """Bodies MuJoCo would refuse: (spec body, repair, axes rotation, new 3x3 inertia)."""
    found = []
    moving = _moving_bodies_mass(spec)
    for body in spec.bodies:
        if not body.name:
            continue
        R, inertia = _body_inertia(body)
        mass = float(body.mass)
        # MuJoCo diagonalises a full inertia and refuses one with a moment < 1e-15; an all-zero
        # inertia (a point mass) it takes as given.
        full_values = np.asarray(body.fullinertia, dtype=float)
        full = bool(np.all(np.isfinite(full_values)) and np.any(full_values != 0))
        moments, axes = np.linalg.eigh(0.5 * (inertia + inertia.T))
        fused_mass, fused_moment = moving.get(body.name, (np.inf, np.inf))
        if fused_mass < REPAIR_MASS or fused_moment < _MJ_MINVAL:
            reason = (
                "massless moving body (MuJoCo needs mass and inertia)"
                if fused_mass < REPAIR_MASS
                else "moving body without rotational inertia (MuJoCo needs some)"
            )
            new_mass = mass + REPAIR_MASS if fused_mass < REPAIR_MASS else mass
            new_moments = np.maximum(moments, 0.0) + REPAIR_MOMENT
        else:
            new_mass = mass
            new_moments, reason = _repaired_moments(moments, full)
        if not reason:
            continue
        new_inertia = axes @ np.diag(new_moments) @ axes.T
        found.append(
            (
                body,
                InertiaRepair(
                    body.name, reason, mass, new_mass, np.sort(moments), np.sort(new_moments)
                ),
                R,
                new_inertia,
            )
        )
    return found


def _parameters_in_joint(mass: float, com: Array, inertia: Array, placement: pin.SE3) -> Array:
    """Pinocchio's 10 dynamic parameters of a link given in its own frame, in its joint's frame.

    ``[m, m c, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]`` with ``I`` about the joint origin; built
    by hand because ``pin.Inertia`` refuses the invalid inertias being repaired.
    """
    R, p = np.asarray(placement.rotation), np.asarray(placement.translation)
    c = R @ com + p
    Io = R @ inertia @ R.T + mass * (c @ c * np.eye(3) - np.outer(c, c))
    return np.r_[mass, mass * c, Io[0, 0], Io[0, 1], Io[1, 1], Io[0, 2], Io[1, 2], Io[2, 2]]


def _patched_robot(
    robot: Robot, changes: list[tuple[str, float, float, Array, Array, Array]]
) -> Robot:
    """A copy of ``robot`` whose links have the new inertias.

    ``changes``: (link, old mass, new mass, CoM, old inertia, new inertia), the CoM and the
    inertias (about the CoM) in the link frame.
    """
    model = robot.model.copy()
    ids = {f.name: i for i, f in enumerate(model.frames) if f.type == pin.FrameType.BODY}
    for link, m_old, m_new, com, I_old, I_new in changes:
        if link not in ids:
            raise ModelError(
                f"cannot repair link {link!r}: the robot has no body frame of that name"
            )
        frame = model.frames[ids[link]]
        j = frame.parentJoint
        params = (
            model.inertias[j].toDynamicParameters()
            - _parameters_in_joint(m_old, com, I_old, frame.placement)
            + _parameters_in_joint(m_new, com, I_new, frame.placement)
        )
        model.inertias[j] = pin.Inertia.FromDynamicParameters(params)
    return Robot(model, name=robot.name, source=robot.source)


def _frame_in_spec_body(robot: Robot, frame: str, bodies: set[str]) -> tuple[str, pin.SE3]:
    """The spec body carrying a robot frame, and the frame's placement in that body."""
    model = robot.model
    fid = robot.frame_id(frame)
    data = model.createData()
    pin.framesForwardKinematics(model, data, pin.neutral(model))
    anc = fid
    while not (model.frames[anc].type == pin.FrameType.BODY and model.frames[anc].name in bodies):
        if anc == 0:
            raise ModelError(f"frame {frame!r}: no ancestor frame is a body of the MuJoCo model")
        anc = model.frames[anc].parentFrame
    return model.frames[anc].name, data.oMf[anc].actInv(data.oMf[fid])


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
    mujoco = import_mujoco()
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
    if robot.source is None:
        raise ModelError(
            f"robot {robot.name!r} has no source file: load it from a URDF or MJCF file"
        )
    path = Path(robot.source)
    if not path.is_file():
        raise ModelFileNotFoundError(f"robot {robot.name!r}: source file not found: {path}")
    stripped: list[str] = []
    try:
        if ET.parse(path).getroot().tag == "mujoco":
            spec = mujoco.MjSpec.from_file(str(path))
        else:
            text, stripped = _urdf_text_for_mujoco(path, meshes)
            spec = mujoco.MjSpec.from_string(text)
    except ET.ParseError as exc:
        raise ModelError(f"{path}: not well-formed XML: {exc}") from exc
    except (ValueError, RuntimeError) as exc:  # mujoco raises ValueError on bad files
        raise ModelError(f"MuJoCo cannot read {path}: {exc}") from exc
    spec.compiler.balanceinertia = False
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.compiler.discardvisual = True
    spec.option.timestep = timestep
    if solver_tolerance is not None:
        spec.option.tolerance = solver_tolerance
        spec.option.iterations = solver_iterations

    # Inertias MuJoCo refuses: report, or repair in the spec and in a copy of the robot.
    found = _inertia_repairs(spec)
    if found and inertia == "raise":
        lines = "\n  ".join(str(r) for _, r, _, _ in found)
        raise InvalidInertiaError(
            f"{path}: MuJoCo refuses the inertia of {len(found)} bodies (the closest accepted "
            "values are shown; inertia='repair' applies them to MuJoCo and to the robot):"
            f"\n  {lines}"
        )
    changes = []
    for body, rep, R, new_inertia in found:
        com = np.asarray(body.ipos, dtype=float)
        if not np.all(np.isfinite(com)):  # a body without <inertial>: mass at its origin
            com = np.zeros(3)
            body.ipos = com
            body.iquat = [1.0, 0.0, 0.0, 0.0]
            R = np.eye(3)
        changes.append(
            (
                rep.body,
                rep.mass_before,
                rep.mass_after,
                com,
                R @ _body_inertia(body)[1] @ R.T,
                R @ new_inertia @ R.T,
            )
        )
        body.explicitinertial = True
        body.mass = rep.mass_after
        body.fullinertia = [
            new_inertia[0, 0],
            new_inertia[1, 1],
            new_inertia[2, 2],
            new_inertia[0, 1],
            new_inertia[0, 2],
            new_inertia[1, 2],
        ]
    out_robot = _patched_robot(robot, changes) if changes else robot
    repairs = tuple(r for _, r, _, _ in found)
    if repairs:
        warnings.warn(
            f"{path}: inertias repaired for MuJoCo (and in the returned robot):\n  "
            + "\n  ".join(str(r) for r in repairs),
            ModelWarning,
            stacklevel=2,
        )

    root = spec.worldbody.first_body()
    if root is None:
        raise ModelError(f"{path}: MuJoCo finds no body in the model")
    if robot.has_floating_base and not any(
        j.type == mujoco.mjtJoint.mjJNT_FREE for j in root.joints
    ):
        root.add_freejoint()
    if not other_collisions:
        for g in spec.geoms:
            g.contype, g.conaffinity = 0, 0

    build = MujocoBuild(spec, out_robot, tuple(contacts), stripped=tuple(stripped), repairs=repairs)
    bodies = {b.name for b in spec.bodies if b.name}
    for c in contacts:
        body_name, placement = _frame_in_spec_body(robot, c.frame, bodies)
        body = spec.body(body_name)
        R, p = np.asarray(placement.rotation), np.asarray(placement.translation)
        site = CONTACT_SITE_PREFIX + c.name
        body.add_site(name=site, pos=p, quat=_quat_wxyz(R))
        build.contact_sites[c.name] = site
        if not contact_geoms:
            continue
        geom = CONTACT_GEOM_PREFIX + c.name
        if isinstance(c, SurfaceContact):
            body.add_geom(
                name=geom,
                type=mujoco.mjtGeom.mjGEOM_BOX,
                size=[c.half_length, c.half_width, sole_thickness / 2],
                pos=p + R[:, 2] * sole_thickness / 2,
                quat=_quat_wxyz(R),
                friction=[c.mu, 0.005, 0.0001],
                contype=1,
                conaffinity=1,
            )
        else:
            radius = 0.005
            body.add_geom(
                name=geom,
                type=mujoco.mjtGeom.mjGEOM_SPHERE,
                size=[radius, 0, 0],
                pos=p + R @ c.normal * radius,
                friction=[c.mu, 0.005, 0.0001],
                contype=1,
                conaffinity=1,
            )
        build.contact_geoms[c.name] = geom
    if floor:
        mu = min((c.mu for c in contacts), default=1.0)
        spec.worldbody.add_geom(
            name=FLOOR_NAME,
            type=mujoco.mjtGeom.mjGEOM_PLANE,
            size=[50, 50, 0.1],
            friction=[mu, 0.005, 0.0001],
        )
    return build


def mujoco_model_from_urdf(
    urdf: str | Path, *, floating_base: bool = True, floor: bool = False, timestep: float = 0.002
) -> Any:
    """Compile a MuJoCo model from a URDF file (visual meshes and collision meshes dropped).

    A shortcut for the shipped robots; for any other robot use :func:`mujoco_spec_for_robot`
    (contacts, inertia repairs, an editable spec).

    Parameters
    ----------
    floating_base : bool
        Give the root link a free joint, as :meth:`Robot.from_urdf` does.
    floor : bool
        Add a ground plane at z = 0 (for simulations with contacts).

    Returns
    -------
    mujoco.MjModel

    Raises
    ------
    ModelError
        MuJoCo refuses the file (inertias: use :func:`mujoco_spec_for_robot` with
        ``inertia="repair"``).
    """
    robot = Robot.from_urdf(urdf, floating_base=floating_base, validate="ignore")
    build = mujoco_spec_for_robot(robot, (), floor=floor, timestep=timestep, solver_tolerance=None)
    return build.compile()


class MujocoStateMap:
    """Maps MuJoCo states of a model to Pinocchio states of a :class:`Robot`, by joint name.

    Parameters
    ----------
    robot : Robot
    mj_model : mujoco.MjModel
        A model of the same robot (for example from :func:`mujoco_model_from_urdf`).
    """

    def __init__(self, robot: Robot, mj_model: Any):
        mujoco = import_mujoco()
        self.robot = robot
        m = robot.model
        self.nq_mj, self.nv_mj = mj_model.nq, mj_model.nv
        q_idx = np.full(m.nq, -1)
        v_idx = np.full(m.nv, -1)
        self._free_mj: tuple[int, int] | None = None
        for jid in range(mj_model.njnt):
            jtype = int(mj_model.jnt_type[jid])
            qa, va = mj_model.jnt_qposadr[jid], mj_model.jnt_dofadr[jid]
            if jtype == int(mujoco.mjtJoint.mjJNT_FREE):
                if not robot.has_floating_base:
                    raise ModelError("the MuJoCo model has a free joint, the robot a fixed base")
                self._free_mj = (qa, va)
                continue
            name = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_JOINT, jid)
            if jtype not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
                raise ModelError(f"MuJoCo joint {name!r}: only hinge, slide and free joints map")
            pj = m.joints[robot.joint_id(name)]
            if pj.nq != 1:
                raise ModelError(
                    f"joint {name!r} has {pj.nq} coordinates in Pinocchio, 1 in MuJoCo"
                )
            q_idx[pj.idx_q] = qa
            v_idx[pj.idx_v] = va
        if robot.has_floating_base and self._free_mj is None:
            raise ModelError("the robot has a floating base but the MuJoCo model no free joint")
        start_q, start_v = (7, 6) if robot.has_floating_base else (0, 0)
        missing = [
            robot.model.names[j]
            for j in range(1, m.njoints)
            if m.joints[j].nq == 1 and q_idx[m.joints[j].idx_q] < 0
        ]
        if missing:
            raise ModelError(f"joints {missing} are not in the MuJoCo model")
        self._q_idx = q_idx[start_q:]
        self._v_idx = v_idx[start_v:]

    def _base_rotation(self, qpos: Array) -> Array:
        if self._free_mj is None:
            return np.eye(3)
        qa, _ = self._free_mj
        w, x, y, z = qpos[qa + 3 : qa + 7]
        return pin.Quaternion(w, x, y, z).normalized().toRotationMatrix()

    def _convert(self, qpos: Array, qvel: Array | None, qacc: Array | None):
        # Reorder into [free joint, joints in robot order], then convert in one place.
        qpos = np.asarray(qpos, dtype=float)
        if self._free_mj is None:
            return (
                qpos[self._q_idx],
                None if qvel is None else np.asarray(qvel)[self._v_idx],
                None if qacc is None else np.asarray(qacc)[self._v_idx],
            )
        qa, va = self._free_mj
        qp = np.concatenate([qpos[qa : qa + 7], qpos[self._q_idx]])
        qv = (
            np.zeros(6 + len(self._v_idx))
            if qvel is None
            else np.concatenate(
                [
                    np.asarray(qvel, dtype=float)[va : va + 6],
                    np.asarray(qvel, dtype=float)[self._v_idx],
                ]
            )
        )
        qc = (
            None
            if qacc is None
            else np.concatenate(
                [
                    np.asarray(qacc, dtype=float)[va : va + 6],
                    np.asarray(qacc, dtype=float)[self._v_idx],
                ]
            )
        )
        q, v, a = free_base_to_pinocchio(qp, qv, qc)
        return q[0], v[0], None if a is None else a[0]

    def q(self, qpos: Array) -> Array:
        """Pinocchio ``q`` from MuJoCo ``qpos``."""
        return self._convert(qpos, None, None)[0]

    def v(self, qpos: Array, qvel: Array) -> Array:
        """Pinocchio ``v`` (base twist in base axes) from MuJoCo ``qvel``."""
        return self._convert(qpos, qvel, None)[1]

    def a(self, qpos: Array, qvel: Array, qacc: Array) -> Array:
        """Pinocchio ``a`` from MuJoCo ``qacc``: removes the ``omega x v`` term of the base."""
        return self._convert(qpos, qvel, qacc)[2]

    def velocity_map(self, qpos: Array) -> Array:
        """``T`` with ``qvel = T v``, shape (nv_mj, nv); generalized forces map by ``T^T``."""
        T = np.zeros((self.nv_mj, self.robot.nv))
        start = 0
        if self._free_mj is not None:
            _, va = self._free_mj
            T[va : va + 3, 0:3] = self._base_rotation(np.asarray(qpos, dtype=float))
            T[va + 3 : va + 6, 3:6] = np.eye(3)
            start = 6
        T[self._v_idx, np.arange(start, self.robot.nv)] = 1.0
        return T


def mujoco_mass_matrix(mj_model: Any, mj_data: Any) -> Array:
    """MuJoCo's dense mass matrix after ``mj_forward``, shape (nv_mj, nv_mj).

    ``mj_fullM`` changed its signature in MuJoCo 3.3 (data instead of ``qM``).
    """
    mujoco = import_mujoco()
    M = np.zeros((mj_model.nv, mj_model.nv))
    if hasattr(mj_data, "qM"):
        mujoco.mj_fullM(mj_model, M, mj_data.qM)
    else:
        mujoco.mj_fullM(mj_model, mj_data, M)
    return M

"""Arrays for :class:`wholebody.trajectory.Trajectory`: the tables ``from_arrays`` builds
from mappings {name: array}, and the checks of the point fields (wrenches at stated points).
Private to :mod:`wholebody.trajectory`; every problem raises :class:`LogFormatError` naming
the argument or field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .errors import LogFormatError
from .io.logfiles.fields import as_bool_array, as_float_array, check_labels

Array = NDArray[np.float64]


def _float_array(x: Any, name: str, ndim: int, source: str) -> Array:
    arr = as_float_array(x, name, source)
    if arr.ndim != ndim:
        raise LogFormatError(
            f"{source}: field {name!r} must have {ndim} dimensions, got shape {arr.shape}"
        )
    return arr


def _wrench_table(
    wrenches: Any, what: str, N: int, allow_forces: bool
) -> tuple[tuple[str, ...], Array]:
    """Names and an (N, k, 6) array from a mapping {name: (N, 6) or (N, 3) array}."""
    if not isinstance(wrenches, Mapping):
        raise LogFormatError(
            f"arrays: {what} must be a mapping {{name: (N, 6) array}}, got "
            f"{type(wrenches).__name__}"
            + (f" of shape {np.shape(wrenches)}" if isinstance(wrenches, np.ndarray) else "")
        )
    names = tuple(wrenches)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise LogFormatError(f"arrays: {what} names must be strings, got {bad[0]!r}")
    W = np.zeros((N, len(names), 6))
    widths = (3, 6) if allow_forces else (6,)
    for k, name in enumerate(names):
        w = as_float_array(wrenches[name], f"{what}[{name!r}]", "arrays")
        if w.ndim != 2 or w.shape[0] != N or w.shape[1] not in widths:
            allowed = " or ".join(f"({N}, {n})" for n in widths)
            raise LogFormatError(
                f"arrays: {what} {name!r} must have shape {allowed}, got {w.shape}"
            )
        W[:, k, : w.shape[1]] = w
    return names, W


def _mapping(value: Any, what: str, expect: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise LogFormatError(
            f"arrays: {what} must be a mapping {{name: {expect}}}, got "
            f"{type(value).__name__}"
            + (f" of shape {np.shape(value)}" if isinstance(value, np.ndarray) else "")
        )
    return value


def _unknown_names(given: Mapping[str, Any], names: tuple[str, ...], what: str, of: str) -> None:
    unknown = [n for n in given if n not in names]
    if unknown:
        raise LogFormatError(
            f"arrays: {what} names {unknown[0]!r}, which is not one of the {of} {list(names)}"
        )


def _local_points(value: Any, names: tuple[str, ...], what: str, of: str) -> Array | None:
    """A (k, 3) array from {name: (3,) point}; names absent get the frame origin."""
    if value is None:
        return None
    value = _mapping(value, what, "(3,) point [m]")
    _unknown_names(value, names, what, of)
    out = np.zeros((len(names), 3))
    for j, name in enumerate(names):
        if name in value:
            p = as_float_array(value[name], f"{what}[{name!r}]", "arrays")
            if p.shape != (3,):
                raise LogFormatError(
                    f"arrays: {what} {name!r} must have shape (3,) [m], got {p.shape}"
                )
            out[j] = p
    return out


def _world_points(value: Any, names: tuple[str, ...], N: int, what: str, of: str) -> Array | None:
    """An (N, k, 3) array from {name: (N, 3) points}, one entry per name."""
    if value is None:
        return None
    value = _mapping(value, what, "(N, 3) points [m]")
    _unknown_names(value, names, what, of)
    missing = [n for n in names if n not in value]
    if missing:
        raise LogFormatError(
            f"arrays: {what} must give the points of every one of the {of} {list(names)}; "
            f"missing {missing} (use the frame origin's own position, or "
            f"{what.replace('world', 'local')} for points fixed in the frames)"
        )
    out = np.zeros((N, len(names), 3))
    for j, name in enumerate(names):
        p = as_float_array(value[name], f"{what}[{name!r}]", "arrays")
        if p.shape != (N, 3):
            raise LogFormatError(f"arrays: {what} {name!r} must have shape ({N}, 3), got {p.shape}")
        out[:, j] = p
    return out


def _point_force_table(
    forces: Any, positions: Any, names: tuple[str, ...], N: int
) -> tuple[Array | None, Array | None, tuple[str, ...]]:
    """(N, m, 3) forces and positions and the m owners from {contact: (N, 3) or (N, n, 3)}."""
    if forces is None and positions is None:
        return None, None, ()
    if forces is None or positions is None:
        given, other = (
            ("point_forces", "point_force_positions")
            if positions is None
            else ("point_force_positions", "point_forces")
        )
        raise LogFormatError(f"arrays: {given} needs {other} (a position for every force)")
    forces = _mapping(forces, "point_forces", "(N, 3) or (N, n, 3) forces [N]")
    positions = _mapping(positions, "point_force_positions", "(N, 3) or (N, n, 3) points [m]")
    _unknown_names(forces, names, "point_forces", "contacts")
    if set(forces) != set(positions):
        raise LogFormatError(
            f"arrays: point_forces and point_force_positions must name the same contacts; "
            f"point_forces {list(forces)}, point_force_positions {list(positions)}"
        )
    F, P, owners = [], [], []
    for name in forces:
        arrays = []
        for what, table in (("point_forces", forces), ("point_force_positions", positions)):
            x = as_float_array(table[name], f"{what}[{name!r}]", "arrays")
            if x.ndim == 2:
                x = x[:, None, :]
            if x.ndim != 3 or x.shape[0] != N or x.shape[2] != 3:
                raise LogFormatError(
                    f"arrays: {what} {name!r} must have shape ({N}, 3) or ({N}, n, 3), "
                    f"got {np.shape(table[name])}"
                )
            arrays.append(x)
        if arrays[0].shape != arrays[1].shape:
            raise LogFormatError(
                f"arrays: point_forces {name!r} has shape {arrays[0].shape} but "
                f"point_force_positions {name!r} has {arrays[1].shape}"
            )
        F.append(arrays[0])
        P.append(arrays[1])
        owners += [name] * arrays[0].shape[1]
    return np.concatenate(F, axis=1), np.concatenate(P, axis=1), tuple(owners)


def _active_table(active: Any, names: tuple[str, ...], N: int) -> Any:
    """An (N, k) mask in ``names`` order from a mapping {contact: (N,) mask} or an array."""
    if not isinstance(active, Mapping):
        return active  # checked by Trajectory.__post_init__
    unknown = [n for n in active if n not in names]
    missing = [n for n in names if n not in active]
    if unknown or missing:
        raise LogFormatError(
            f"arrays: contact_active must have one (N,) mask per contact "
            f"{list(names)}; unknown {unknown}, missing {missing}"
        )
    columns = []
    for name in names:
        col = as_bool_array(active[name], f"contact_active[{name!r}]", "arrays")
        if col.shape != (N,):
            raise LogFormatError(
                f"arrays: contact_active {name!r} must have shape ({N},), got {col.shape}"
            )
        columns.append(col)
    return np.stack(columns, axis=1) if columns else np.zeros((N, 0), dtype=bool)


def check_point_fields(self: Any, N: int) -> None:
    """Validate and convert the point fields of a Trajectory ``self`` (shapes, names,
    finiteness of the fixed points); an empty set of point forces becomes None."""
    src = self.source
    pairs = (
        ("contact_points_local", "contact_points_world", self.contact_names, "contacts"),
        ("external_points_local", "external_points_world", self.external_frames, "frames"),
    )
    for local_name, world_name, names, of in pairs:
        local, world = getattr(self, local_name), getattr(self, world_name)
        if local is not None and world is not None:
            raise LogFormatError(f"{src}: give {local_name!r} or {world_name!r}, not both")
        if local_name == "external_points_local" and self.external_wrenches is None:
            given = local_name if local is not None else world_name
            if local is not None or world is not None:
                raise LogFormatError(f"{src}: field {given!r} is given without external_wrenches")
        k = len(names)
        if local is not None:
            arr = _float_array(local, local_name, 2, src)
            if arr.shape != (k, 3):
                raise LogFormatError(
                    f"{src}: field {local_name!r} must have shape {(k, 3)} (a point per "
                    f"one of the {of} {list(names)}, in its frame [m]), got {arr.shape}"
                )
            if not np.isfinite(arr).all():
                j = int(np.flatnonzero(~np.isfinite(arr).all(axis=1))[0])
                raise LogFormatError(
                    f"{src}: field {local_name!r}: the point of {names[j]!r} is "
                    f"{arr[j].tolist()}; points fixed in a frame must be finite [m]"
                )
            object.__setattr__(self, local_name, arr if k else None)
        if world is not None:
            arr = _float_array(world, world_name, 3, src)
            if arr.shape != (N, k, 3):
                raise LogFormatError(
                    f"{src}: field {world_name!r} must have shape {(N, k, 3)} (N samples, "
                    f"a point per one of the {of} {list(names)}, world [m]), got {arr.shape}"
                )
            object.__setattr__(self, world_name, arr if k else None)
    owners = check_labels(self.point_force_contacts, "point_force_contacts", src)
    object.__setattr__(self, "point_force_contacts", owners)
    F, P = self.point_forces, self.point_force_positions
    if F is None and P is None:
        if owners:
            raise LogFormatError(
                f"{src}: field 'point_force_contacts' is given without 'point_forces' "
                "and 'point_force_positions'"
            )
        return
    if F is None or P is None:
        given, other = (
            ("point_forces", "point_force_positions")
            if P is None
            else ("point_force_positions", "point_forces")
        )
        raise LogFormatError(f"{src}: field {given!r} is given without {other!r}")
    unknown = [c for c in owners if c not in self.contact_names]
    if unknown:
        raise LogFormatError(
            f"{src}: field 'point_force_contacts' names {unknown[0]!r}, which is not a "
            f"contact; contacts: {list(self.contact_names)}"
        )
    m = len(owners)
    for name, value in (("point_forces", F), ("point_force_positions", P)):
        arr = _float_array(value, name, 3, src)
        if arr.shape != (N, m, 3):
            raise LogFormatError(
                f"{src}: field {name!r} must have shape {(N, m, 3)} (N samples, one per "
                f"entry of point_force_contacts), got {arr.shape}"
            )
        object.__setattr__(self, name, arr if m else None)
    if not m:
        object.__setattr__(self, "point_force_contacts", ())


def point_arrays(
    N: int, names: tuple[str, ...], external_wrenches: Any, **points: Any
) -> tuple[tuple[str, ...], Array | None, dict[str, Any]]:
    """For ``Trajectory.from_arrays``: the external frames and (N, e, 6) wrenches, and the
    point fields as ``Trajectory`` keyword arguments, from the mappings given."""
    ext_frames: tuple[str, ...] = ()
    E = None
    if external_wrenches is not None and (
        not isinstance(external_wrenches, Mapping) or external_wrenches
    ):
        # A bare force (N, 3) is a push at a stated point: only with the points.
        at_points = (
            points["external_points_local"] is not None
            or points["external_points_world"] is not None
        )
        ext_frames, E = _wrench_table(
            external_wrenches, "external_wrenches", N, allow_forces=at_points
        )
    F, P, owners = _point_force_table(
        points["point_forces"], points["point_force_positions"], names, N
    )
    out: dict[str, Any] = {
        "point_forces": F,
        "point_force_positions": P,
        "point_force_contacts": owners,
    }
    for key, table, of in (
        ("contact_points", names, "contacts"),
        ("external_points", ext_frames, "external frames"),
    ):
        out[f"{key}_local"] = _local_points(points[f"{key}_local"], table, f"{key}_local", of)
        out[f"{key}_world"] = _world_points(points[f"{key}_world"], table, N, f"{key}_world", of)
    return ext_frames, E, out

"""The reader interface every format implements: names and sizes first, samples on demand."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import LogFormatError
from .fields import (
    ACTIVE_FIELD,
    POINT_SAMPLE_FIELDS,
    LogFields,
    as_bool_array,
    check_time_increasing,
    seconds_from_times,
)
from .safety import check_declared_size

__all__ = ["FieldReader"]

BASE_NQ, BASE_NV = 7, 6


class FieldReader(ABC):
    """A log file opened for reading: names, sizes and metadata read at once, samples by range.

    Subclasses set the attributes below in their constructor and implement :meth:`_raw`.

    Attributes
    ----------
    source : str
        The path, for messages.
    n_samples : int
        Number of samples N.
    joint_names, contact_names, external_frames : tuple of str
    metadata : dict
    accelerations_estimated : bool
    has_accelerations, has_torques, has_external : bool
        Whether ``a``, ``tau`` and ``external_wrenches`` are in the file.
    has_active : bool
        Whether the file holds a contact schedule (``contact_active``); False by default.
    has_points : frozenset of str
        Which per-sample point fields (:data:`~wholebody.io.logfiles.fields.POINT_SAMPLE_FIELDS`)
        the file holds; empty by default.
    point_force_contacts : tuple of str
        The contact of each point force (m entries); () by default.
    contact_points_local, external_points_local : ndarray, (k, 3) and (e, 3), or None
        Points fixed in the contact / external frames, read at opening; None by default.
    """

    source: str
    n_samples: int
    joint_names: tuple[str, ...]
    contact_names: tuple[str, ...]
    external_frames: tuple[str, ...]
    metadata: dict[str, Any]
    accelerations_estimated: bool
    has_accelerations: bool
    has_torques: bool
    has_external: bool
    has_active: bool = False
    has_points: frozenset[str] = frozenset()
    point_force_contacts: tuple[str, ...] = ()
    contact_points_local: NDArray[np.float64] | None = None
    external_points_local: NDArray[np.float64] | None = None
    #: datetime64 of the first sample when the file's times are datetimes, else None.
    time_origin: np.datetime64 | None = None

    @abstractmethod
    def _raw(self, name: str, start: int, stop: int) -> NDArray[Any]:
        """Samples ``start:stop`` of a numeric field, as float64 (the time field may be
        datetime64 or timedelta64; ``contact_active`` bool, or integers for
        :meth:`read` to check)."""

    def close(self) -> None:
        """Release the file (a no-op for formats read whole)."""
        return None

    def expected_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shape of each numeric field present, from the names and ``n_samples``."""
        N, nj = self.n_samples, len(self.joint_names)
        shapes: dict[str, tuple[int, ...]] = {
            "time": (N,),
            "q": (N, BASE_NQ + nj),
            "v": (N, BASE_NV + nj),
            "contact_wrenches": (N, len(self.contact_names), 6),
        }
        if self.has_accelerations:
            shapes["a"] = (N, BASE_NV + nj)
        if self.has_torques:
            shapes["tau"] = (N, nj)
        if self.has_external:
            shapes["external_wrenches"] = (N, len(self.external_frames), 6)
        if self.has_active:
            shapes[ACTIVE_FIELD] = (N, len(self.contact_names))
        widths = {
            "contact_points_world": len(self.contact_names),
            "point_forces": len(self.point_force_contacts),
            "point_force_positions": len(self.point_force_contacts),
            "external_points_world": len(self.external_frames),
        }
        for name in POINT_SAMPLE_FIELDS:
            if name in self.has_points:
                shapes[name] = (N, widths[name], 3)
        return shapes

    def check_shapes(self, declared: dict[str, tuple[int, ...]]) -> None:
        """Compare declared shapes with the expected ones (messages as ``Trajectory``'s)."""
        nj = len(self.joint_names)
        if self.n_samples == 0:
            raise LogFormatError(f"{self.source}: the log has no samples")
        for name, shape in self.expected_shapes().items():
            got = declared[name]
            if len(got) != len(shape):
                raise LogFormatError(
                    f"{self.source}: field {name!r} must have {len(shape)} "
                    f"dimensions, got shape {got}"
                )
            if got != shape:
                detail = f" (N samples, base + {nj} joints)" if name in ("q", "v") else ""
                raise LogFormatError(
                    f"{self.source}: field {name!r} must have shape {shape}{detail}, got {got}"
                )

    def init_points(self, present: Any, has_force_contacts: bool) -> None:
        """Set :attr:`has_points` from the names of the fields ``present``, refusing point
        forces without their positions or their contacts (and the reverse)."""
        self.has_points = frozenset(n for n in POINT_SAMPLE_FIELDS if n in present)
        pair = ("point_forces", "point_force_positions")
        given = [n for n in pair if n in self.has_points]
        if given and len(given) < 2:
            other = pair[1] if given[0] == pair[0] else pair[0]
            raise LogFormatError(
                f"{self.source}: field {given[0]!r} needs {other!r} (point forces and "
                "their positions come together)"
            )
        if given and not has_force_contacts:
            raise LogFormatError(
                f"{self.source}: field 'point_forces' needs 'point_force_contacts' (the "
                "contact each point force belongs to)"
            )
        if has_force_contacts and not given:
            raise LogFormatError(
                f"{self.source}: field 'point_force_contacts' is given without "
                "'point_forces' and 'point_force_positions'"
            )

    def first_time(self) -> np.datetime64 | None:
        """The first sample's datetime when the time field holds datetimes."""
        raw = self._raw("time", 0, 1)
        if raw.dtype.kind != "M":
            return None
        origin = raw[0]
        if np.isnat(origin):
            raise LogFormatError(
                f"{self.source}: field 'time' holds datetimes and its first "
                "sample is not a time (NaT); it is the origin of the seconds"
            )
        return origin

    def init_time(self) -> None:
        """Find the time origin of datetime logs and record it as ``metadata['time_origin']``
        (ISO 8601, nanoseconds)."""
        self.time_origin = self.first_time()
        if self.time_origin is not None:
            self.metadata["time_origin"] = str(np.datetime_as_string(self.time_origin, unit="ns"))

    def _bounds(self, start: int, stop: int | None) -> tuple[int, int]:
        N = self.n_samples
        stop = N if stop is None else stop
        if not (0 <= start <= stop <= N) or start == stop:
            raise LogFormatError(
                f"{self.source}: samples [{start}, {stop}) are not a non-empty "
                f"range of the log's {N} samples"
            )
        return int(start), int(stop)

    def time(self, start: int, stop: int) -> NDArray[np.float64]:
        """Sample times ``start:stop`` [s] (datetimes as seconds since the first sample)."""
        raw = self._raw("time", start, stop)
        if raw.dtype.kind in "Mm":
            return seconds_from_times(raw, self.time_origin)
        return raw

    def read(self, start: int = 0, stop: int | None = None) -> LogFields:
        """Samples ``start:stop`` (all by default) as :class:`LogFields`.

        The times are checked to increase across ``start`` (against the sample before it).
        """
        start, stop = self._bounds(start, stop)
        width = sum(math.prod(shape[1:]) for shape in self.expected_shapes().values())
        check_declared_size(
            self.source,
            f"reading samples {start}..{stop - 1}",
            (stop - start, width),
            8,
            field=False,
        )
        lo = max(start - 1, 0)
        t = self.time(lo, stop)
        check_time_increasing(t, self.source, offset=lo)
        t = t[start - lo :]
        arrays = {
            name: self._raw(name, start, stop) for name in self.expected_shapes() if name != "time"
        }
        active = arrays.get(ACTIVE_FIELD)
        return LogFields(
            time=t,
            q=arrays["q"],
            v=arrays["v"],
            a=arrays.get("a"),
            tau=arrays.get("tau"),
            joint_names=self.joint_names,
            contact_names=self.contact_names,
            contact_wrenches=arrays["contact_wrenches"],
            external_frames=self.external_frames,
            external_wrenches=arrays.get("external_wrenches"),
            accelerations_estimated=self.accelerations_estimated,
            metadata=dict(self.metadata),
            source=self.source,
            contact_active=None
            if active is None
            else as_bool_array(active, ACTIVE_FIELD, self.source, offset=start),
            contact_points_local=self.contact_points_local,
            contact_points_world=arrays.get("contact_points_world"),
            point_forces=arrays.get("point_forces"),
            point_force_positions=arrays.get("point_force_positions"),
            point_force_contacts=self.point_force_contacts,
            external_points_local=self.external_points_local,
            external_points_world=arrays.get("external_points_world"),
        )

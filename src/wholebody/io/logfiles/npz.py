"""``.npz`` logs: named arrays in a zip archive, read member by member, only those used.

Each member's ``.npy`` header is read first: Python objects (which would need unpickling) are
refused, and the declared size is capped against the memory available. Members that wholebody
does not use are never decompressed. The members used are loaded whole on first access.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.typing import NDArray

from ...errors import LogFormatError
from .fields import (
    ACTIVE_FIELD,
    NAME_FIELDS,
    POINT_FORCE_CONTACTS,
    POINT_SAMPLE_FIELDS,
    POINT_STATIC_FIELDS,
    FieldReader,
    LogFields,
    as_bool_array,
    as_float_array,
    check_declared_size,
    check_labels,
    check_names,
    dump_metadata,
    missing_fields,
    output_file,
    parse_metadata,
)

__all__ = ["NpzReader", "write_npz"]

#: Names and metadata are small; a larger declared size is refused outright.
MAX_TEXT_BYTES = 64 * 2**20


def _header(fh: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(fh)
    return np.lib.format.read_array_header_2_0(fh)  # 2.0 and 3.0 share the layout


class NpzReader(FieldReader):
    """An ``.npz`` log opened for reading (see the module docstring)."""

    def __init__(self, path: Path):
        self.source = str(path)
        try:
            self._zip = zipfile.ZipFile(path)
            members = {n[:-4]: n for n in self._zip.namelist() if n.endswith(".npy")}
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            raise LogFormatError(
                f"{path}: cannot read as .npz (truncated or not a NumPy archive): {exc}"
            ) from exc
        self._members = members
        self._cache: dict[str, NDArray[Any]] = {}
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        missing = missing_fields(self._members)
        if missing:
            raise LogFormatError(
                f"{self.source}: missing field(s) {missing}; present: {sorted(self._members)}"
            )
        self.has_accelerations = "a" in self._members
        self.has_torques = "tau" in self._members
        self.has_external = "external_wrenches" in self._members
        self.has_wrenches = "contact_wrenches" in self._members
        self.has_active = ACTIVE_FIELD in self._members
        if self.has_external and "external_frames" not in self._members:
            raise LogFormatError(
                f"{self.source}: field 'external_wrenches' needs "
                "'external_frames' (the frames they act on)"
            )
        self.metadata, self.accelerations_estimated = {}, False
        if "metadata" in self._members:
            self.metadata, self.accelerations_estimated = parse_metadata(
                self._load("metadata", text=True), self.source
            )
        names = {
            k: check_names(self._load(k, text=True), k, self.source) if k in self._members else ()
            for k in NAME_FIELDS
        }
        self.joint_names = names["joint_names"]
        self.contact_names = names["contact_names"]
        self.external_frames = names["external_frames"] if self.has_external else ()
        has_labels = POINT_FORCE_CONTACTS in self._members
        self.init_points(self._members, has_labels)
        if has_labels:
            self.point_force_contacts = check_labels(
                self._load(POINT_FORCE_CONTACTS, text=True), POINT_FORCE_CONTACTS, self.source
            )
        for name in POINT_STATIC_FIELDS:
            if name in self._members:
                setattr(self, name, self._load(name))
        declared: dict[str, tuple[int, ...]] = {}
        numeric = ("time", "q", "v", "a", "tau", "contact_wrenches", "external_wrenches")
        for name in numeric + POINT_SAMPLE_FIELDS:
            if name in self._members:
                shape, dtype = self._declared(name)
                if dtype.kind not in "fiuMm" or (dtype.kind in "Mm" and name != "time"):
                    # Let the conversion name the kind.
                    as_float_array(np.zeros(0, dtype=dtype), name, self.source)
                check_declared_size(self.source, name, shape, dtype.itemsize)
                declared[name] = shape
        if self.has_active:
            shape, dtype = self._declared(ACTIVE_FIELD)
            if dtype.kind not in "biu":
                as_bool_array(np.zeros(0, dtype=dtype), ACTIVE_FIELD, self.source)
            check_declared_size(self.source, ACTIVE_FIELD, shape, dtype.itemsize)
            declared[ACTIVE_FIELD] = shape
        self.n_samples = declared["time"][0] if len(declared["time"]) == 1 else -1
        if self.n_samples < 0:
            raise LogFormatError(
                f"{self.source}: field 'time' must have 1 dimensions, got shape {declared['time']}"
            )
        self.check_shapes(declared)
        self.init_time()

    def _declared(self, name: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
        try:
            with self._zip.open(self._members[name]) as fh:
                shape, _, dtype = _header(fh)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            raise LogFormatError(
                f"{self.source}: field {name!r} cannot be read (truncated or "
                f"not a NumPy array): {exc}"
            ) from exc
        if dtype.hasobject:
            raise LogFormatError(
                f"{self.source}: field {name!r} holds Python objects, which "
                "would need unpickling; wholebody never unpickles"
            )
        return tuple(int(n) for n in shape), dtype

    def _load(self, name: str, text: bool = False) -> NDArray[Any]:
        if name in self._cache:
            return self._cache[name]
        shape, dtype = self._declared(name)
        check_declared_size(
            self.source, name, shape, dtype.itemsize, limit=MAX_TEXT_BYTES if text else None
        )
        try:
            with self._zip.open(self._members[name]) as fh:
                value = np.lib.format.read_array(fh, allow_pickle=False)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            raise LogFormatError(
                f"{self.source}: field {name!r} cannot be read (truncated or damaged): {exc}"
            ) from exc
        if name == ACTIVE_FIELD:
            value = as_bool_array(value, name, self.source)
            self._cache[name] = value
        elif not text:
            if not (name == "time" and value.dtype.kind in "Mm"):
                value = as_float_array(value, name, self.source)
            self._cache[name] = value
        return value

    def _raw(self, name: str, start: int, stop: int) -> NDArray[Any]:
        return self._load(name)[start:stop]

    def close(self) -> None:
        """Close the archive and drop the loaded arrays."""
        self._cache.clear()
        self._zip.close()


def write_npz(fields: LogFields, path: Path) -> None:
    """Write ``fields`` as a compressed ``.npz`` (names as unicode arrays, metadata as one JSON
    string, ``contact_active`` as bool, the point fields as float arrays)."""
    arrays: dict[str, Any] = {
        "time": fields.time,
        "q": fields.q,
        "v": fields.v,
        "joint_names": np.array(fields.joint_names, dtype=str),
        "contact_names": np.array(fields.contact_names, dtype=str),
        "contact_wrenches": fields.contact_wrenches,
        "metadata": np.array(dump_metadata(fields, str(path))),
    }
    if fields.a is not None:
        arrays["a"] = fields.a
    if fields.tau is not None:
        arrays["tau"] = fields.tau
    if fields.external_wrenches is not None:
        arrays["external_frames"] = np.array(fields.external_frames, dtype=str)
        arrays["external_wrenches"] = fields.external_wrenches
    if fields.contact_active is not None:
        arrays[ACTIVE_FIELD] = np.asarray(fields.contact_active, dtype=np.bool_)
    for name in POINT_STATIC_FIELDS + POINT_SAMPLE_FIELDS:
        if getattr(fields, name) is not None:
            arrays[name] = getattr(fields, name)
    if fields.point_forces is not None:
        arrays[POINT_FORCE_CONTACTS] = np.array(fields.point_force_contacts, dtype=str)
    with output_file(path) as tmp, open(tmp, "wb") as fh:
        np.savez_compressed(fh, **arrays)

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
    POINT_FORCE_CONTACTS,
    POINT_SAMPLE_FIELDS,
    POINT_STATIC_FIELDS,
    FieldReader,
    LogFields,
    as_bool_array,
    as_float_array,
    check_declared_size,
    dump_metadata,
    output_file,
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
            self.open_named(self._members)
        except BaseException:
            self.close()
            raise

    def _text(self, name: str) -> Any:
        return self._load(name, text=True)

    def _static(self, name: str) -> NDArray[np.float64]:
        return self._load(name)

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

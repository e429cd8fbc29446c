"""``.h5`` / ``.hdf5`` logs: the named fields of ``.npz`` as HDF5 datasets, read by slices.

Safety: only hard links to datasets inside the file are followed; external links, external
storage (``dset.external``) and virtual datasets (``dset.is_virtual``), which would read
other files, are refused without being read, and file contents never appear in messages.
Declared shapes are capped against the memory available before anything is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import LogFormatError, require
from .fields import (
    ACTIVE_FIELD,
    NUMERIC_FIELDS,
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

__all__ = ["Hdf5Reader", "write_hdf5"]

MAX_TEXT_BYTES = 64 * 2**20


def _h5py() -> Any:
    return require("h5py", "hdf5", "HDF5 logs")


class Hdf5Reader(FieldReader):
    """An HDF5 log opened for reading by slices (see the module docstring)."""

    def __init__(self, path: Path):
        h5py = _h5py()
        self._h5py = h5py
        self.source = str(path)
        try:
            self._file = h5py.File(path, "r")
        except OSError as exc:
            raise LogFormatError(
                f"{path}: cannot read as HDF5 (truncated or not HDF5): {type(exc).__name__}"
            ) from exc
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _dataset(self, name: str) -> Any:
        """The dataset ``name`` after the safety checks, or None when absent."""
        h5py, f = self._h5py, self._file
        try:
            link = f.get(name, getlink=True)
        except (OSError, KeyError, RuntimeError) as exc:
            raise LogFormatError(
                f"{self.source}: field {name!r} cannot be read: {type(exc).__name__}"
            ) from exc
        if link is None:
            return None
        if isinstance(link, h5py.ExternalLink):
            raise LogFormatError(
                f"{self.source}: field {name!r} is a link to another file; "
                "refusing to read outside the log file"
            )
        try:
            obj = f[name]
        except (OSError, KeyError, RuntimeError) as exc:
            raise LogFormatError(
                f"{self.source}: field {name!r} cannot be read (a dangling "
                f"link?): {type(exc).__name__}"
            ) from exc
        if not isinstance(obj, h5py.Dataset):
            raise LogFormatError(
                f"{self.source}: field {name!r} is an HDF5 "
                f"{type(obj).__name__.lower()}, expected a dataset"
            )
        if obj.external:
            raise LogFormatError(
                f"{self.source}: field {name!r} uses external storage (data "
                "in other files); refusing to read outside the log file"
            )
        if obj.is_virtual:
            raise LogFormatError(
                f"{self.source}: field {name!r} is a virtual dataset (data "
                "mapped from other datasets or files); refusing to read it"
            )
        return obj

    def _text(self, name: str) -> Any:
        dset = self._dataset(name)
        if dset is None:
            return None
        check_declared_size(
            self.source, name, dset.shape, dset.dtype.itemsize or 8, limit=MAX_TEXT_BYTES
        )
        kind = dset.dtype.kind
        string_info = self._h5py.check_string_dtype(dset.dtype)
        if string_info is None and kind != "S":
            raise LogFormatError(
                f"{self.source}: field {name!r} must hold strings, got {dset.dtype}"
            )
        try:
            value = dset[()]
        except (OSError, ValueError, TypeError) as exc:
            raise LogFormatError(
                f"{self.source}: field {name!r} cannot be read: {type(exc).__name__}"
            ) from exc
        try:
            if isinstance(value, bytes):
                return value.decode("utf-8")
            if isinstance(value, np.ndarray):
                return np.array(
                    [
                        x.decode("utf-8") if isinstance(x, bytes) else str(x)
                        for x in value.reshape(-1)
                    ],
                    dtype=object,
                ).reshape(value.shape)
        except UnicodeDecodeError as exc:
            raise LogFormatError(f"{self.source}: field {name!r} is not UTF-8 text") from exc
        return value

    def _open(self) -> None:
        # Every numeric field passes the safety checks before anything is read.
        present = {k: self._dataset(k) for k in NUMERIC_FIELDS}
        self._dsets = {k: d for k, d in present.items() if d is not None}
        self.open_named(set(self._file))

    def _static(self, name: str) -> NDArray[np.float64]:
        dset = self._dataset(name)
        check_declared_size(self.source, name, dset.shape, dset.dtype.itemsize or 8)
        if self._h5py.check_string_dtype(dset.dtype) is not None:
            raise LogFormatError(
                f"{self.source}: field {name!r} holds strings; expected real numbers"
            )
        try:
            value = dset[()]
        except (OSError, ValueError, TypeError) as exc:
            raise LogFormatError(
                f"{self.source}: field {name!r} cannot be read: {type(exc).__name__}"
            ) from exc
        return as_float_array(value, name, self.source)

    def _declared(self, name: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
        dtype = self._dsets[name].dtype
        if name == "time" and dtype.kind == "V" and self._h5py.check_opaque_dtype(dtype):
            dtype = np.dtype(dtype.str)  # datetime64 stored as opaque data by h5py
        if self._h5py.check_string_dtype(dtype) is not None:
            expected = "booleans (or 0/1 integers)" if name == ACTIVE_FIELD else "real numbers"
            raise LogFormatError(
                f"{self.source}: field {name!r} holds strings; expected {expected}"
            )
        return tuple(int(n) for n in self._dsets[name].shape), dtype

    def _raw(self, name: str, start: int, stop: int) -> NDArray[Any]:
        dset = self._dsets[name]
        try:
            value = dset[start:stop]
        except (OSError, ValueError, TypeError) as exc:
            raise LogFormatError(
                f"{self.source}: field {name!r} cannot be read (samples "
                f"{start}..{stop - 1}): {type(exc).__name__}"
            ) from exc
        if name == "time" and value.dtype.kind in "Mm":
            return value
        if name == ACTIVE_FIELD:
            return as_bool_array(value, name, self.source, offset=start)
        return as_float_array(value, name, self.source)

    def close(self) -> None:
        """Close the file."""
        try:
            self._file.close()
        except Exception:  # noqa: BLE001 - closing a damaged file must not mask the error
            pass


def write_hdf5(fields: LogFields, path: Path) -> None:
    """Write ``fields`` as HDF5 datasets (names and metadata as UTF-8 strings,
    ``contact_active`` as uint8 0/1, the point fields as float datasets)."""
    h5py = _h5py()
    text = h5py.string_dtype("utf-8")
    meta = dump_metadata(fields, str(path))
    with output_file(path) as tmp, h5py.File(tmp, "w") as f:
        f.create_dataset("time", data=fields.time)
        f.create_dataset("q", data=fields.q)
        f.create_dataset("v", data=fields.v)
        f.create_dataset("contact_wrenches", data=fields.contact_wrenches)
        if fields.a is not None:
            f.create_dataset("a", data=fields.a)
        if fields.tau is not None:
            f.create_dataset("tau", data=fields.tau)
        names = {"joint_names": fields.joint_names, "contact_names": fields.contact_names}
        if fields.external_wrenches is not None:
            f.create_dataset("external_wrenches", data=fields.external_wrenches)
            names["external_frames"] = fields.external_frames
        if fields.contact_active is not None:
            f.create_dataset(ACTIVE_FIELD, data=np.asarray(fields.contact_active, np.uint8))
        for name in POINT_STATIC_FIELDS + POINT_SAMPLE_FIELDS:
            if getattr(fields, name) is not None:
                f.create_dataset(name, data=getattr(fields, name))
        if fields.point_forces is not None:
            names[POINT_FORCE_CONTACTS] = fields.point_force_contacts
        for key, value in names.items():
            f.create_dataset(key, shape=(len(value),), dtype=text, data=list(value) or None)
        f.create_dataset("metadata", data=meta, dtype=text)

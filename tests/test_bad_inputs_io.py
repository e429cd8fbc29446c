"""Bad inputs to the log readers, the writer and the profile: each gives a typed error naming
the file and the field, column or key (class and message fragment checked), never an untyped
exception or a silent wrong number. Also: datetimes, lazy npz members, chunked reading, and
round trips of every field in every format."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from wholebody.errors import (
    LogFileError,
    LogFormatError,
    MJCFParseError,
    ModelFileNotFoundError,
    OutputError,
    OutsideInputError,
    ProfileError,
    RecordingError,
    SizeLimitError,
)
from wholebody.io import open_log
from wholebody.io.profile import load_profile
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0
JOINTS = ("j0", "j1")


def _traj(N: int = 20, seed: int = 0, **extra) -> Trajectory:
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((N, 7 + len(JOINTS)))
    q[:, 3:7] = [0.0, 0.0, 0.0, 1.0]
    fields = dict(
        time=np.arange(N) * 0.01,
        q=q,
        v=rng.standard_normal((N, 6 + len(JOINTS))),
        a=rng.standard_normal((N, 6 + len(JOINTS))),
        tau=rng.standard_normal((N, len(JOINTS))),
        joint_names=JOINTS,
        contact_names=("left", "right"),
        contact_wrenches=rng.standard_normal((N, 2, 6)),
        metadata={"robot": "test"},
    )
    fields.update(extra)
    return Trajectory(**fields)


def _npz_fields(tmp: Path) -> dict[str, np.ndarray]:
    _traj().save(tmp / "good.npz")
    with np.load(tmp / "good.npz") as data:
        return {k: data[k] for k in data.files}


def _npz(tmp: Path, **changes) -> Path:
    fields = _npz_fields(tmp)
    for k, v in changes.items():
        if v is None:
            del fields[k]
        else:
            fields[k] = v
    np.savez(tmp / "bad.npz", **fields)
    return tmp / "bad.npz"


def _active(N: int = 20) -> np.ndarray:
    """A contact schedule for ``_traj``: left every other sample, right from sample 5."""
    i = np.arange(N)
    return np.stack([i % 2 == 0, i >= 5], axis=1)


def _npz_forged_member(tmp: Path, name: str, shape: tuple[int, ...], descr: str = "<f8") -> Path:
    """An npz whose member ``name`` declares ``shape`` of ``descr`` but holds 16 bytes."""
    good = tmp / "good.npz"
    _traj().save(good)
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(tmp / "forged.npz", "w") as dst:
        for item in src.namelist():
            if item != f"{name}.npy":
                dst.writestr(item, src.read(item))
        import io as _io

        buf = _io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, header)
        dst.writestr(f"{name}.npy", buf.getvalue() + b"\0" * 16)
    return tmp / "forged.npz"


def _csv(
    tmp: Path,
    edit: Callable[[list[str]], list[str]] | None = None,
    raw: bytes | None = None,
    traj: Trajectory | None = None,
) -> Path:
    path = tmp / "bad.csv"
    if raw is not None:
        path.write_bytes(raw)
        return path
    (traj or _traj()).save(tmp / "good.csv")
    lines = (tmp / "good.csv").read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(edit(lines) if edit else lines) + "\n", encoding="utf-8")
    return path


def _replace_cell(lines: list[str], row: int, col: int, text: str) -> list[str]:
    cells = lines[row].split(",")
    cells[col] = text
    return lines[:row] + [",".join(cells)] + lines[row + 1 :]


def _csv_active_cell(tmp: Path, row: int, column: str, text: str) -> Path:
    """A CSV log with a schedule whose cell (line ``row + 1``, ``column``) is ``text``."""

    def edit(lines: list[str]) -> list[str]:
        return _replace_cell(lines, row, lines[1].split(",").index(column), text)

    return _csv(tmp, edit, traj=_traj(contact_active=_active()))


def _csv_header(tmp: Path, old: str, new: str) -> Path:
    """A CSV log with a schedule whose header has ``old`` replaced by ``new``."""
    return _csv(
        tmp,
        lambda ls: [ls[0], ls[1].replace(old, new)] + ls[2:],
        traj=_traj(contact_active=_active()),
    )


def _parquet(tmp: Path, column: str, values, traj: Trajectory | None = None) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    (traj or _traj()).save(tmp / "good.parquet")
    table = pq.read_table(tmp / "good.parquet")
    i = table.schema.get_field_index(column)
    table = table.set_column(i, column, pa.array(values))
    pq.write_table(table, tmp / "bad.parquet")
    return tmp / "bad.parquet"


def _parquet_dup(tmp: Path) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    _traj().save(tmp / "good.parquet")
    table = pq.read_table(tmp / "good.parquet")
    table = table.append_column(pa.field("q:j0", pa.float64()), table.column("q:j0"))
    pq.write_table(table, tmp / "bad.parquet")
    return tmp / "bad.parquet"


def _h5(tmp: Path, edit: Callable) -> Path:
    h5py = pytest.importorskip("h5py")
    path = tmp / "bad.h5"
    _traj(contact_active=_active()).save(path)
    with h5py.File(path, "a") as f:
        edit(f, h5py, tmp)
    return path


def _h5_replace(name: str, make: Callable) -> Callable:
    def edit(f, h5py, tmp):
        del f[name]
        make(f, h5py, tmp)

    return edit


def _h5_external(f, h5py, tmp):
    secret = tmp / "secret.bin"
    np.arange(20 * 9, dtype="<f8").tofile(secret)
    del f["q"]
    f.create_dataset("q", shape=(20, 9), dtype="<f8", external=[(str(secret), 0, 20 * 9 * 8)])


def _h5_virtual(f, h5py, tmp):
    layout = h5py.VirtualLayout(shape=(20, 9), dtype="f8")
    layout[:] = h5py.VirtualSource(str(tmp / "other.h5"), "q", shape=(20, 9))
    del f["q"]
    f.create_virtual_dataset("q", layout)


def _h5_external_link(f, h5py, tmp):
    with h5py.File(tmp / "other.h5", "w") as g:
        g["q"] = np.zeros((20, 9))
    del f["q"]
    f["q"] = h5py.ExternalLink(str(tmp / "other.h5"), "q")


def _profile(tmp: Path, text: str) -> Path:
    path = tmp / "p.toml"
    path.write_text(text, encoding="utf-8")
    return path


CONTACT = '[[contacts]]\nframe = "left_sole"\nhalf_length = 0.1\nhalf_width = 0.05\nmu = 1.0\n'
HUMANOID = 'robot = "humanoid"\n'


def _chmod0(path: Path) -> Path:
    path.chmod(0)
    return path


# (id, builder(tmp) -> path, reader(path), error class, message fragment)
LOAD = Trajectory.load
CASES: list[tuple[str, Callable, Callable, type, str]] = [
    # --- npz -------------------------------------------------------------------------------
    (
        "npz-meta-list",
        lambda t: _npz(t, metadata=np.array("[1, 2]")),
        LOAD,
        LogFormatError,
        "bad.npz: field 'metadata' must be a JSON object, got a JSON list",
    ),
    (
        "npz-meta-deep",
        lambda t: _npz(t, metadata=np.array("[" * 100_000 + "]" * 100_000)),
        LOAD,
        LogFormatError,
        "field 'metadata' is JSON nested",
    ),
    (
        "npz-meta-deep-object",
        lambda t: _npz(t, metadata=np.array('{"a": ' + "[" * 200 + "]" * 200 + "}")),
        LOAD,
        LogFormatError,
        "nested deeper than",
    ),
    (
        "npz-meta-number",
        lambda t: _npz(t, metadata=np.array([1.5, 2.5])),
        LOAD,
        LogFormatError,
        "field 'metadata' must be one JSON string",
    ),
    (
        "npz-meta-not-json",
        lambda t: _npz(t, metadata=np.array("{robot: x")),
        LOAD,
        LogFormatError,
        "field 'metadata' is not JSON",
    ),
    (
        "npz-meta-estimated",
        lambda t: _npz(t, metadata=np.array('{"accelerations_estimated": "yes"}')),
        LOAD,
        LogFormatError,
        "'accelerations_estimated' must be true or false",
    ),
    (
        "npz-complex-q",
        lambda t: _npz(t, q=_npz_fields(t)["q"] + 1j),
        LOAD,
        LogFormatError,
        "bad.npz: field 'q' holds complex numbers",
    ),
    (
        "npz-string-q",
        lambda t: _npz(t, q=_npz_fields(t)["q"].astype(str)),
        LOAD,
        LogFormatError,
        "field 'q' holds strings",
    ),
    (
        "npz-bool-v",
        lambda t: _npz(t, v=_npz_fields(t)["v"] > 0),
        LOAD,
        LogFormatError,
        "field 'v' holds booleans",
    ),
    (
        "npz-object-tau",
        lambda t: _npz(t, tau=np.array([None] * 20, dtype=object)),
        LOAD,
        LogFormatError,
        "field 'tau' holds Python objects, which would need unpickling",
    ),
    (
        "npz-numeric-names",
        lambda t: _npz(t, joint_names=np.array([1.0, 2.0])),
        LOAD,
        LogFormatError,
        "field 'joint_names' must be a 1-D array of strings",
    ),
    (
        "npz-dup-contacts",
        lambda t: _npz(t, contact_names=np.array(["left", "left"])),
        LOAD,
        LogFormatError,
        "field 'contact_names' has duplicates ['left']",
    ),
    (
        "npz-dup-external",
        lambda t: _npz(
            t, external_frames=np.array(["push", "push"]), external_wrenches=np.zeros((20, 2, 6))
        ),
        LOAD,
        LogFormatError,
        "field 'external_frames' has duplicates ['push']",
    ),
    (
        "npz-external-no-frames",
        lambda t: _npz(t, external_wrenches=np.zeros((20, 1, 6))),
        LOAD,
        LogFormatError,
        "field 'external_wrenches' needs 'external_frames'",
    ),
    (
        "npz-huge-declared",
        lambda t: _npz_forged_member(t, "q", (10**12, 9)),
        LOAD,
        LogFormatError,
        "field 'q' declares shape (1000000000000, 9)",
    ),
    (
        "npz-missing",
        lambda t: _npz(t, contact_wrenches=None),
        LOAD,
        LogFormatError,
        "missing field(s) ['contact_wrenches']",
    ),
    (
        "npz-time-2d",
        lambda t: _npz(t, time=np.zeros((20, 2))),
        LOAD,
        LogFormatError,
        "field 'time' must have 1 dimensions",
    ),
    (
        "npz-no-samples",
        lambda t: _npz(
            t,
            time=np.zeros(0),
            q=np.zeros((0, 9)),
            v=np.zeros((0, 8)),
            a=np.zeros((0, 8)),
            tau=np.zeros((0, 2)),
            contact_wrenches=np.zeros((0, 2, 6)),
        ),
        LOAD,
        LogFormatError,
        "the log has no samples",
    ),
    (
        "npz-truncated",
        lambda t: (t / "cut.npz").write_bytes(b"PK\x03\x04" + b"\0" * 30) and t / "cut.npz",
        LOAD,
        LogFormatError,
        "cut.npz: cannot read as .npz",
    ),
    (
        "npz-wrong-shape-chunked",
        lambda t: _npz(t, v=np.zeros((20, 5))),
        lambda p: open_log(p).read(0, 5),
        LogFormatError,
        "field 'v' must have shape (20, 8) (N samples, base + 2 joints), got (20, 5)",
    ),
    (
        "npz-active-float",
        lambda t: _npz(t, contact_active=_active().astype(float)),
        LOAD,
        LogFormatError,
        "bad.npz: field 'contact_active' holds floats; expected booleans",
    ),
    (
        "npz-active-strings",
        lambda t: _npz(t, contact_active=np.where(_active(), "yes", "no")),
        LOAD,
        LogFormatError,
        "field 'contact_active' holds strings; expected booleans",
    ),
    (
        "npz-active-two",
        lambda t: _npz(t, contact_active=_active().astype(np.int8) * 2),
        LOAD,
        LogFormatError,
        "field 'contact_active' must hold booleans or 0/1 integers, got 2",
    ),
    (
        "npz-active-negative-chunk",
        lambda t: _npz(
            t, contact_active=np.r_[np.ones((12, 2), np.int16), np.full((8, 2), -1, np.int16)]
        ),
        lambda p: open_log(p).read(10, 20),
        LogFormatError,
        "field 'contact_active' must hold booleans or 0/1 integers, got -1 at sample 12, column 0",
    ),
    (
        "npz-active-shape",
        lambda t: _npz(t, contact_active=np.ones((20, 3), bool)),
        LOAD,
        LogFormatError,
        "field 'contact_active' must have shape (20, 2), got (20, 3)",
    ),
    (
        "npz-active-huge-declared",
        lambda t: _npz_forged_member(t, "contact_active", (10**13, 2), "|b1"),
        LOAD,
        LogFormatError,
        "field 'contact_active' declares shape (10000000000000, 2)",
    ),
    # --- csv -------------------------------------------------------------------------------
    (
        "csv-active-nan",
        lambda t: _csv_active_cell(t, 4, "active:right", "nan"),
        LOAD,
        LogFormatError,
        "bad.csv: column 'active:right', sample 2: nan is not 0 or 1",
    ),
    (
        "csv-active-empty",
        lambda t: _csv_active_cell(t, 9, "active:left", ""),
        LOAD,
        LogFormatError,
        "column 'active:left', sample 7: nan is not 0 or 1",
    ),
    (
        "csv-active-half",
        lambda t: _csv_active_cell(t, 2, "active:left", "0.5"),
        LOAD,
        LogFormatError,
        "column 'active:left', sample 0: 0.5 is not 0 or 1",
    ),
    (
        "csv-active-text",
        lambda t: _csv_active_cell(t, 3, "active:left", "yes"),
        LOAD,
        LogFormatError,
        "('active:left'): not a number",
    ),
    (
        "csv-active-unknown",
        lambda t: _csv_header(t, "active:left", "active:lefty"),
        LOAD,
        LogFormatError,
        "column 'active:lefty' names no contact; contacts (from the contact: "
        "columns): ['left', 'right']",
    ),
    (
        "csv-active-missing",
        lambda t: _csv_header(t, "active:right", "other"),
        LOAD,
        LogFormatError,
        "missing column(s) ['active:right'] for contact_active",
    ),
    (
        "csv-not-utf8",
        lambda t: _csv(t, raw=b"time,q:\xe9\n1\n"),
        LOAD,
        LogFormatError,
        "bad.csv: not UTF-8 text (line 1); save the CSV as UTF-8",
    ),
    (
        "csv-dup-column",
        lambda t: _csv(t, lambda ls: [ls[0], ls[1] + ",q:j0"] + [x + ",0" for x in ls[2:]]),
        LOAD,
        LogFormatError,
        "('q:j0') repeats column 9",
    ),
    (
        "csv-quoted-text",
        lambda t: _csv(t, lambda ls: _replace_cell(ls, 3, 8, '"abc"')),
        LOAD,
        LogFormatError,
        "line 4, column 9 ('q:j0'): not a number",
    ),
    (
        "csv-text",
        lambda t: _csv(t, lambda ls: _replace_cell(ls, 5, 2, "1.2.3")),
        LOAD,
        LogFormatError,
        "line 6, column 3 ('base_y'): not a number",
    ),
    (
        "csv-short-line",
        lambda t: _csv(t, lambda ls: ls[:4] + ["0.5,1,2"] + ls[5:]),
        LOAD,
        LogFormatError,
        "line 5 has 3 fields, the header",
    ),
    (
        "csv-missing-column",
        lambda t: _csv(
            t,
            lambda ls: (
                [",".join(c.replace("base_vz", "base_vq") for c in ls[1].split(","))] + ls[2:]
            ),
        ),
        LOAD,
        LogFormatError,
        "missing column(s) ['base_vz']",
    ),
    (
        "csv-bad-component",
        lambda t: _csv(
            t, lambda ls: [ls[0], ls[1].replace("contact:left:fx", "contact:left:fq")] + ls[2:]
        ),
        LOAD,
        LogFormatError,
        "column 'contact:left:fq': expected contact:<name>:fx",
    ),
    ("csv-empty", lambda t: _csv(t, raw=b""), LOAD, LogFormatError, "bad.csv: empty file"),
    (
        "csv-header-only",
        lambda t: _csv(t, lambda ls: ls[:2]),
        LOAD,
        LogFormatError,
        "the log has no samples",
    ),
    (
        "csv-meta-list",
        lambda t: _csv(t, lambda ls: ["# wholebody: [1]"] + ls[1:]),
        LOAD,
        LogFormatError,
        "field 'metadata' must be a JSON object, got a JSON list",
    ),
    (
        "csv-no-time",
        lambda t: _csv(t, lambda ls: [ls[0], ls[1].replace("time", "t", 1)] + ls[2:]),
        LOAD,
        LogFormatError,
        "missing column 'time'",
    ),
    (
        "csv-datetime-text",
        lambda t: _csv(t, lambda ls: _replace_cell(ls, 2, 0, "2024-01-01T00:00:00")),
        LOAD,
        LogFormatError,
        "line 3, column 1 ('time'): not a number",
    ),
    # --- parquet ---------------------------------------------------------------------------
    (
        "parquet-string",
        lambda t: _parquet(t, "q:j0", [str(i) for i in range(20)]),
        LOAD,
        LogFormatError,
        "bad.parquet: column 'q:j0' holds strings",
    ),
    (
        "parquet-bool",
        lambda t: _parquet(t, "v:j1", [True] * 20),
        LOAD,
        LogFormatError,
        "column 'v:j1' holds booleans",
    ),
    (
        "parquet-timestamp-not-time",
        lambda t: _parquet(t, "tau:j0", np.arange(20).astype("datetime64[s]")),
        LOAD,
        LogFormatError,
        "column 'tau:j0' holds dates or times",
    ),
    (
        "parquet-complex-like",
        lambda t: _parquet(t, "base_x", [[1.0, 2.0]] * 20),
        LOAD,
        LogFormatError,
        "column 'base_x' holds values of type list<",
    ),
    (
        "parquet-active-string",
        lambda t: _parquet(t, "active:left", ["1"] * 20, _traj(contact_active=_active())),
        LOAD,
        LogFormatError,
        "column 'active:left' holds strings; expected 0 or 1 (or booleans)",
    ),
    (
        "parquet-active-null",
        lambda t: _parquet(
            t, "active:right", [True] * 3 + [None] + [False] * 16, _traj(contact_active=_active())
        ),
        LOAD,
        LogFormatError,
        "column 'active:right', sample 3: nan is not 0 or 1",
    ),
    (
        "parquet-active-float",
        lambda t: _parquet(t, "active:right", [0.25] * 20, _traj(contact_active=_active())),
        LOAD,
        LogFormatError,
        "column 'active:right', sample 0: 0.25 is not 0 or 1",
    ),
    ("parquet-dup-column", _parquet_dup, LOAD, LogFormatError, "('q:j0') repeats column 9"),
    (
        "parquet-truncated",
        lambda t: (t / "cut.parquet").write_bytes(b"PAR1" + b"\0" * 64) and t / "cut.parquet",
        LOAD,
        LogFormatError,
        "cut.parquet: cannot read as Parquet",
    ),
    # --- hdf5 ------------------------------------------------------------------------------
    (
        "h5-group",
        lambda t: _h5(t, _h5_replace("q", lambda f, h, _: f.create_group("q"))),
        LOAD,
        LogFormatError,
        "bad.h5: field 'q' is an HDF5 group, expected a dataset",
    ),
    (
        "h5-complex",
        lambda t: _h5(
            t, _h5_replace("q", lambda f, h, _: f.create_dataset("q", data=np.zeros((20, 9)) + 1j))
        ),
        LOAD,
        LogFormatError,
        "field 'q' holds complex numbers",
    ),
    (
        "h5-string",
        lambda t: _h5(
            t,
            _h5_replace(
                "v",
                lambda f, h, _: f.create_dataset(
                    "v", data=np.full((20, 8), "1.0").astype(object), dtype=h.string_dtype()
                ),
            ),
        ),
        LOAD,
        LogFormatError,
        "field 'v' holds strings",
    ),
    (
        "h5-bytes",
        lambda t: _h5(
            t,
            _h5_replace("v", lambda f, h, _: f.create_dataset("v", data=np.full((20, 8), b"1.0"))),
        ),
        LOAD,
        LogFormatError,
        "field 'v' holds strings",
    ),
    (
        "h5-external-storage",
        lambda t: _h5(t, _h5_external),
        LOAD,
        LogFormatError,
        "field 'q' uses external storage",
    ),
    (
        "h5-virtual",
        lambda t: _h5(t, _h5_virtual),
        LOAD,
        LogFormatError,
        "field 'q' is a virtual dataset",
    ),
    (
        "h5-external-link",
        lambda t: _h5(t, _h5_external_link),
        LOAD,
        LogFormatError,
        "field 'q' is a link to another file",
    ),
    (
        "h5-huge-declared",
        lambda t: _h5(
            t,
            _h5_replace(
                "q",
                lambda f, h, _: f.create_dataset(
                    "q", shape=(10**12, 9), dtype="f8", chunks=(1024, 9)
                ),
            ),
        ),
        LOAD,
        LogFormatError,
        "field 'q' declares shape (1000000000000, 9)",
    ),
    (
        "h5-meta-list",
        lambda t: _h5(
            t,
            _h5_replace(
                "metadata",
                lambda f, h, _: f.create_dataset("metadata", data="[1]", dtype=h.string_dtype()),
            ),
        ),
        LOAD,
        LogFormatError,
        "field 'metadata' must be a JSON object",
    ),
    (
        "h5-numeric-names",
        lambda t: _h5(
            t,
            _h5_replace(
                "joint_names", lambda f, h, _: f.create_dataset("joint_names", data=[1.0, 2.0])
            ),
        ),
        LOAD,
        LogFormatError,
        "field 'joint_names' must hold strings",
    ),
    (
        "h5-active-float",
        lambda t: _h5(
            t,
            _h5_replace(
                "contact_active",
                lambda f, h, _: f.create_dataset("contact_active", data=np.ones((20, 2))),
            ),
        ),
        LOAD,
        LogFormatError,
        "bad.h5: field 'contact_active' holds floats; expected booleans",
    ),
    (
        "h5-active-strings",
        lambda t: _h5(
            t,
            _h5_replace(
                "contact_active",
                lambda f, h, _: f.create_dataset(
                    "contact_active",
                    data=np.full((20, 2), "1").astype(object),
                    dtype=h.string_dtype(),
                ),
            ),
        ),
        LOAD,
        LogFormatError,
        "field 'contact_active' holds strings; expected booleans",
    ),
    (
        "h5-active-shape",
        lambda t: _h5(
            t,
            _h5_replace(
                "contact_active",
                lambda f, h, _: f.create_dataset("contact_active", data=np.ones(20, bool)),
            ),
        ),
        LOAD,
        LogFormatError,
        "field 'contact_active' must have 2 dimensions, got shape (20,)",
    ),
    (
        "h5-active-chunk",
        lambda t: _h5(
            t,
            _h5_replace(
                "contact_active",
                lambda f, h, _: f.create_dataset(
                    "contact_active",
                    data=np.r_[np.ones((15, 2)), np.full((5, 2), 3)].astype(np.uint8),
                ),
            ),
        ),
        lambda p: open_log(p).read(10, 20),
        LogFormatError,
        "field 'contact_active' must hold booleans or 0/1 integers, got 3 at sample 15, column 0",
    ),
    (
        "h5-truncated",
        lambda t: (t / "cut.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 64) and t / "cut.h5",
        LOAD,
        LogFormatError,
        "cut.h5: cannot read as HDF5",
    ),
    # --- paths -----------------------------------------------------------------------------
    (
        "path-directory",
        lambda t: (t / "d.npz").mkdir() or t / "d.npz",
        LOAD,
        LogFileError,
        "d.npz: is a directory, not a log file",
    ),
    ("path-missing", lambda t: t / "none.csv", LOAD, LogFileError, "none.csv: no such log file"),
    (
        "path-suffix",
        lambda t: (t / "log.txt").write_text("x") and t / "log.txt",
        LOAD,
        LogFormatError,
        "unknown log format '.txt'",
    ),
    (
        "path-unreadable",
        lambda t: _chmod0(_traj().save(t / "u.npz") or t / "u.npz"),
        LOAD,
        LogFileError,
        "u.npz: cannot open the log file: permission denied",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_log_inputs(tmp_path, case):
    name, build, read, error, fragment = case
    if name == "path-unreadable" and ROOT_USER:
        pytest.skip("root reads any file")
    path = build(tmp_path)
    with pytest.raises(error) as info:
        read(path)
    assert fragment in str(info.value)


# --- arrays and writer ---------------------------------------------------------------------


def _save_under_file(t: Path) -> None:
    (t / "plain").write_text("x")
    _traj().save(t / "plain" / "log.npz")


def _save_read_only(t: Path) -> None:
    (t / "ro").mkdir()
    (t / "ro").chmod(0o500)
    _traj().save(t / "ro" / "log.h5")


ARRAY_CASES: list[tuple[str, Callable, type, str]] = [
    (
        "from-arrays-array",
        lambda t: Trajectory.from_arrays(
            np.arange(3.0),
            np.zeros((3, 7)),
            np.zeros((3, 6)),
            joint_names=[],
            contact_wrenches=np.zeros((3, 6)),
        ),
        LogFormatError,
        "contact_wrenches must be a mapping {name: (N, 6) array}, got ndarray of shape (3, 6)",
    ),
    (
        "from-arrays-external-shape",
        lambda t: Trajectory.from_arrays(
            np.arange(3.0),
            np.zeros((3, 7)),
            np.zeros((3, 6)),
            joint_names=[],
            contact_wrenches={},
            external_wrenches={"push": np.zeros((3, 3))},
        ),
        LogFormatError,
        "external_wrenches 'push' must have shape (3, 6), got (3, 3)",
    ),
    (
        "from-arrays-complex-time",
        lambda t: Trajectory.from_arrays(
            np.arange(3.0) + 0j,
            np.zeros((3, 7)),
            np.zeros((3, 6)),
            joint_names=[],
            contact_wrenches={},
        ),
        LogFormatError,
        "field 'time' holds complex numbers",
    ),
    (
        "trajectory-dup-contacts",
        lambda t: dataclasses.replace(_traj(), contact_names=("a", "a")),
        LogFormatError,
        "field 'contact_names' has duplicates ['a']",
    ),
    (
        "trajectory-dup-external",
        lambda t: _traj(external_frames=("p", "p"), external_wrenches=np.zeros((20, 2, 6))),
        LogFormatError,
        "field 'external_frames' has duplicates ['p']",
    ),
    (
        "trajectory-datetime-time",
        lambda t: _traj(time=np.arange(20).astype("datetime64[s]")),
        LogFormatError,
        "field 'time' holds datetimes; expected real numbers (give seconds",
    ),
    (
        "trajectory-active-shape",
        lambda t: _traj(contact_active=np.ones((20, 3), bool)),
        LogFormatError,
        "arrays: field 'contact_active' must have shape (20, 2) (N samples, "
        "contacts ['left', 'right']), got (20, 3)",
    ),
    (
        "trajectory-active-strings",
        lambda t: _traj(contact_active=[["on", "off"]] * 20),
        LogFormatError,
        "field 'contact_active' holds strings; expected booleans (or 0/1",
    ),
    (
        "trajectory-active-float",
        lambda t: _traj(contact_active=np.ones((20, 2))),
        LogFormatError,
        "field 'contact_active' holds floats",
    ),
    (
        "trajectory-active-nan",
        lambda t: _traj(contact_active=np.full((20, 2), np.nan)),
        LogFormatError,
        "field 'contact_active' holds floats",
    ),
    (
        "from-arrays-active-missing",
        lambda t: Trajectory.from_arrays(
            np.arange(3.0),
            np.zeros((3, 7)),
            np.zeros((3, 6)),
            joint_names=[],
            contact_wrenches={"l": np.zeros((3, 6)), "r": np.zeros((3, 6))},
            contact_active={"l": [True, True, False], "x": [True] * 3},
        ),
        LogFormatError,
        "contact_active must have one (N,) mask per contact ['l', 'r']; unknown ['x'], "
        "missing ['r']",
    ),
    (
        "from-arrays-active-length",
        lambda t: Trajectory.from_arrays(
            np.arange(3.0),
            np.zeros((3, 7)),
            np.zeros((3, 6)),
            joint_names=[],
            contact_wrenches={"l": np.zeros((3, 6))},
            contact_active={"l": [True, False]},
        ),
        LogFormatError,
        "contact_active 'l' must have shape (3,), got (2,)",
    ),
    (
        "from-arrays-active-int",
        lambda t: Trajectory.from_arrays(
            np.arange(3.0),
            np.zeros((3, 7)),
            np.zeros((3, 6)),
            joint_names=[],
            contact_wrenches={"l": np.zeros((3, 6))},
            contact_active={"l": [0, 1, -1]},
        ),
        LogFormatError,
        "field \"contact_active['l']\" must hold booleans or 0/1 integers, got -1 at sample 2",
    ),
    (
        "save-onto-directory",
        lambda t: (t / "d.csv").mkdir() or _traj().save(t / "d.csv"),
        OutputError,
        "d.csv: cannot write the log: is a directory",
    ),
    ("save-under-file", _save_under_file, OutputError, "plain is a file, not a directory"),
    ("save-read-only", _save_read_only, OutputError, "permission denied"),
    (
        "save-metadata",
        lambda t: _traj(metadata={"x": object()}).save(t / "m.npz"),
        LogFormatError,
        "m.npz: metadata is not JSON-serialisable",
    ),
    (
        "save-suffix",
        lambda t: _traj().save(t / "log.xls"),
        LogFormatError,
        "unknown log format '.xls'",
    ),
]


@pytest.mark.parametrize("case", ARRAY_CASES, ids=[c[0] for c in ARRAY_CASES])
def test_bad_arrays_and_outputs(tmp_path, case):
    name, action, error, fragment = case
    if name == "save-read-only" and ROOT_USER:
        pytest.skip("root writes anywhere")
    with pytest.raises(error) as info:
        action(tmp_path)
    assert fragment in str(info.value)
    assert not list(tmp_path.rglob(".*.tmp"))  # no temporary file left behind


# --- profiles ------------------------------------------------------------------------------

PROFILE_CASES: list[tuple[str, Callable, str]] = [
    (
        "unknown-top",
        lambda t: _profile(t, 'robt = "humanoid"\n' + CONTACT),
        "p.toml: unknown key 'robt'; did you mean 'robot'?",
    ),
    (
        "unknown-contact",
        lambda t: _profile(t, HUMANOID + CONTACT.replace("mu =", "muu =")),
        "contacts[0]: unknown key 'muu'; did you mean 'mu'?",
    ),
    (
        "unknown-frame",
        lambda t: _profile(
            t,
            HUMANOID
            + '[[frames]]\nname = "x"\nparent = "left_sole"\ntranslaton = [0, 0, 0]\n'
            + CONTACT,
        ),
        "frames[0]: unknown key 'translaton'; did you mean 'translation'?",
    ),
    (
        "mu-true",
        lambda t: _profile(t, HUMANOID + CONTACT.replace("mu = 1.0", "mu = true")),
        "contacts[0]: 'mu' must be a number, got a boolean True",
    ),
    (
        "mu-string",
        lambda t: _profile(t, HUMANOID + CONTACT.replace("mu = 1.0", 'mu = "1"')),
        "'mu' must be a number, got a string '1'",
    ),
    (
        "mu-negative",
        lambda t: _profile(t, HUMANOID + CONTACT.replace("mu = 1.0", "mu = -1")),
        "'mu' must be a positive finite number, got -1",
    ),
    (
        "mu-nan",
        lambda t: _profile(t, HUMANOID + CONTACT.replace("mu = 1.0", "mu = nan")),
        "'mu' must be a positive finite number, got nan",
    ),
    (
        "half-zero",
        lambda t: _profile(t, HUMANOID + CONTACT.replace("half_width = 0.05", "half_width = 0")),
        "'half_width' must be a positive finite number",
    ),
    (
        "validate-typo",
        lambda t: _profile(
            t, f'urdf = "{ROOT}/models/humanoid.urdf"\nvalidate = "warnn"\n' + CONTACT
        ),
        "'validate' must be 'raise', 'warn' or 'ignore', got 'warnn'; did you mean 'warn'?",
    ),
    (
        "contacts-table",
        lambda t: _profile(t, HUMANOID + CONTACT.replace("[[contacts]]", "[contacts]")),
        "'contacts' must be an array of tables",
    ),
    (
        "robot-number",
        lambda t: _profile(t, "robot = 3\n" + CONTACT),
        "'robot' must be a non-empty string, got an integer 3",
    ),
    (
        "urdf-number",
        lambda t: _profile(t, "urdf = 3\n" + CONTACT),
        "'urdf' must be a non-empty string",
    ),
    (
        "translation-2",
        lambda t: _profile(
            t,
            HUMANOID
            + '[[frames]]\nname = "x"\nparent = "left_sole"\ntranslation = [1, 2]\n'
            + CONTACT,
        ),
        "'translation' must be an array of 3 numbers",
    ),
    (
        "dup-contacts",
        lambda t: _profile(t, HUMANOID + CONTACT + CONTACT),
        "contacts[1]: contact name 'left_sole' is already used by contacts[0]",
    ),
    (
        "frame-exists",
        lambda t: _profile(
            t, HUMANOID + '[[frames]]\nname = "left_sole"\nparent = "pelvis"\n' + CONTACT
        ),
        "frames[0]: frame 'left_sole' already exists",
    ),
    (
        "frame-parent",
        lambda t: _profile(t, HUMANOID + '[[frames]]\nname = "x"\nparent = "left_sol"\n' + CONTACT),
        "frames[0]: frame 'left_sol' not found; did you mean 'left_sole'",
    ),
    (
        "rotation-bad",
        lambda t: _profile(
            t,
            HUMANOID + '[[frames]]\nname = "x"\nparent = "left_sole"\n'
            "rotation = [[1, 0, 0], [0, 2, 0], [0, 0, 1]]\n" + CONTACT,
        ),
        "'rotation' is not a rotation matrix",
    ),
    (
        "rotation-and-rpy",
        lambda t: _profile(
            t,
            HUMANOID + '[[frames]]\nname = "x"\nparent = "left_sole"\nrpy = [0, 0, 0]\n'
            "rotation = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]\n" + CONTACT,
        ),
        "give 'rotation' or 'rpy', not both",
    ),
    (
        "type-box",
        lambda t: _profile(t, HUMANOID + CONTACT + 'type = "box"\n'),
        "'type' must be 'surface' or 'point', got 'box'",
    ),
    (
        "normal-on-surface",
        lambda t: _profile(t, HUMANOID + CONTACT + "normal = [0, 0, 1]\n"),
        "'normal' applies to point contacts",
    ),
    (
        "contact-frame",
        lambda t: _profile(t, HUMANOID + CONTACT.replace('"left_sole"', '"left_sol"')),
        "contacts[0]: frame 'left_sol' not found; did you mean 'left_sole'",
    ),
    ("not-toml", lambda t: _profile(t, "robot = \n"), "p.toml: not valid TOML"),
    ("no-contacts", lambda t: _profile(t, HUMANOID), "no [[contacts]] entries"),
    (
        "robot-and-urdf",
        lambda t: _profile(t, HUMANOID + 'urdf = "x.urdf"\n' + CONTACT),
        "give one of 'robot' (a name), 'urdf' or 'mjcf' (a path), not 'robot' and 'urdf'",
    ),
    (
        "validate-with-name",
        lambda t: _profile(t, HUMANOID + 'validate = "raise"\n' + CONTACT),
        "'validate' applies with 'urdf'",
    ),
    (
        "directory",
        lambda t: (t / "d.toml").mkdir() or t / "d.toml",
        "d.toml: is a directory, not a profile",
    ),
    (
        "not-utf8",
        lambda t: (t / "b.toml").write_bytes(b'robot = "\xff"\n') and t / "b.toml",
        "b.toml: not UTF-8 text",
    ),
]


@pytest.mark.parametrize("case", PROFILE_CASES, ids=[c[0] for c in PROFILE_CASES])
def test_bad_profiles(tmp_path, case):
    _, build, fragment = case
    with pytest.raises(ProfileError) as info:
        load_profile(build(tmp_path))
    assert fragment in str(info.value)


def test_there_are_enough_cases():
    assert len(CASES) + len(ARRAY_CASES) + len(PROFILE_CASES) >= 40


# --- what bad-looking inputs do that is not an error ---------------------------------------


def test_quoted_numbers_and_empty_fields_in_csv(tmp_path):
    path = _csv(tmp_path, lambda ls: _replace_cell(_replace_cell(ls, 3, 8, '"0.25"'), 4, 9, ""))
    traj = Trajectory.load(path)
    assert traj.q[1, 7] == 0.25  # row 3 of the file is sample 1 (metadata line, header)
    assert np.isnan(traj.q[2, 8])


@pytest.mark.parametrize("suffix", [".npz", ".parquet", ".h5"])
def test_datetime_time_becomes_seconds_since_the_first_sample(tmp_path, suffix):
    base = _traj()
    stamps = (
        np.datetime64("2024-05-01T12:00:00", "ns")
        + (base.time * 1e9).astype("timedelta64[ns]")
        + np.timedelta64(7, "ns")
    )
    path = tmp_path / f"dt{suffix}"
    base.save(path)
    if suffix == ".npz":
        fields = dict(np.load(path))
        fields["time"] = stamps
        np.savez(path, **fields)
    elif suffix == ".parquet":
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        table = pq.read_table(path)
        table = table.set_column(0, "time", pa.array(stamps))
        pq.write_table(table, path)
    else:
        h5py = pytest.importorskip("h5py")
        with h5py.File(path, "a") as f:
            del f["time"]
            f.create_dataset(
                "time", data=stamps.view("int64").astype(h5py.opaque_dtype(stamps.dtype))
            )
    traj = Trajectory.load(path)
    # Whole nanoseconds from the first sample: 10 ms steps exactly (1e7 ns / 1e9).
    np.testing.assert_array_equal(traj.time, np.arange(20) * 1e7 / 1e9)
    assert traj.metadata["time_origin"] == "2024-05-01T12:00:00.000000007"


def test_npz_reads_only_the_members_it_uses(tmp_path):
    # A 2 GB member that is never used is declared but holds 16 bytes: reading it would fail.
    path = _npz_forged_member(tmp_path, "camera_frames", (2**28,))
    assert path.stat().st_size < 100_000
    traj = Trajectory.load(path)
    np.testing.assert_array_equal(traj.q, _traj().q)


def test_profile_frame_rotation_and_rpy(tmp_path):
    pin = pytest.importorskip("pinocchio")
    rpy = [0.1, -0.2, 0.3]
    R = pin.rpy.rpyToMatrix(*rpy)  # independent reference: Pinocchio's URDF convention
    rows = ", ".join("[" + ", ".join(repr(float(x)) for x in row) + "]" for row in R)
    text = (
        HUMANOID + '[[frames]]\nname = "a"\nparent = "left_sole"\n'
        f"rpy = {rpy}\ntranslation = [0.01, 0.02, 0.03]\n"
        '[[frames]]\nname = "b"\nparent = "left_sole"\n'
        f"rotation = [{rows}]\ntranslation = [0.01, 0.02, 0.03]\n" + CONTACT
    )
    profile = load_profile(_profile(tmp_path, text))
    robot = profile.robot
    q = robot.neutral()
    m, d = robot.model, robot.model.createData()
    pin.framesForwardKinematics(m, d, q)
    sole = d.oMf[m.getFrameId("left_sole")]
    for name in ("a", "b"):
        placed = sole.actInv(d.oMf[m.getFrameId(name)])
        np.testing.assert_allclose(placed.rotation, R, atol=1e-12)
        np.testing.assert_allclose(placed.translation, [0.01, 0.02, 0.03], atol=1e-12)


def test_schedule_kinds_that_are_accepted(tmp_path):
    """0/1 integers and booleans in every binary kind read as the same mask; CSV stores 0/1."""
    mask = _active()
    traj = _traj(contact_active=mask)
    for kind in (bool, np.uint8, np.int64):
        path = _npz(tmp_path, contact_active=mask.astype(kind))
        np.testing.assert_array_equal(Trajectory.load(path).contact_active, mask)
    traj.save(tmp_path / "s.csv")
    lines = (tmp_path / "s.csv").read_text(encoding="utf-8").splitlines()
    header = lines[1].split(",")
    assert header[-2:] == ["active:left", "active:right"]
    assert [line.split(",")[-2:] for line in lines[2:5]] == [["1", "0"], ["0", "0"], ["1", "0"]]
    if importlib.util.find_spec("pyarrow") is not None:
        path = _parquet(tmp_path, "active:left", mask[:, 0].tolist(), traj)  # booleans
        np.testing.assert_array_equal(Trajectory.load(path).contact_active, mask)
    if importlib.util.find_spec("h5py") is not None:
        import h5py

        traj.save(tmp_path / "s.h5")
        with h5py.File(tmp_path / "s.h5") as f:
            assert f["contact_active"].dtype == np.uint8
        path = _h5(
            tmp_path,
            _h5_replace(
                "contact_active", lambda f, h, _: f.create_dataset("contact_active", data=mask)
            ),
        )
        np.testing.assert_array_equal(Trajectory.load(path).contact_active, mask)


# --- MJCF: includes confined to the model's folder, masses, sizes (issue 26) ---------------

_BODY = (
    '<body name="torso"><freejoint/>'
    '<inertial pos="0 0 0" mass="{mass}" diaginertia="1 1 1"/></body>'
)


def _mjcf(tmp: Path, body: str = "", name: str = "m.xml", inside: str = "") -> Path:
    (tmp / name).write_text(f"<mujoco><worldbody>{body}</worldbody>{inside}</mujoco>")
    return tmp / name


def _chain(n: int) -> str:
    one = (
        '<body name="b{i}"><joint name="j{i}"/><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>'
    )
    return "".join(one.format(i=i) for i in range(n)) + "</body>" * n


def _outside_include(tmp: Path) -> Path:
    (tmp / "elsewhere").mkdir()
    (tmp / "elsewhere" / "leg.xml").write_text("<mujoco><worldbody/></mujoco>")
    (tmp / "model").mkdir()
    return _mjcf(tmp / "model", inside='<include file="../elsewhere/leg.xml"/>')


def _symlinked_include(tmp: Path) -> Path:
    (tmp / "model").mkdir()
    (tmp / "model" / "link.xml").symlink_to("/etc/passwd")
    return _mjcf(tmp / "model", inside='<include file="link.xml"/>')


def _cycle(tmp: Path) -> Path:
    (tmp / "b.xml").write_text('<mujoco><include file="m.xml"/></mujoco>')
    return _mjcf(tmp, inside='<include file="b.xml"/>')


MJCF_CASES: list[tuple[str, Callable[[Path], Path], type, str]] = [
    (
        "include-absolute",
        lambda t: _mjcf(t, inside='<include file="/etc/passwd"/>'),
        OutsideInputError,
        "<include file='/etc/passwd'> leaves the model's folder",
    ),
    ("include-dotdot", _outside_include, OutsideInputError, "'../elsewhere/leg.xml'> leaves"),
    ("include-symlink", _symlinked_include, OutsideInputError, "'link.xml'> resolves to"),
    (
        "include-missing",
        lambda t: _mjcf(t, inside='<include file="nope.xml"/>'),
        ModelFileNotFoundError,
        "<include file='nope.xml'>: no such file",
    ),
    (
        "include-itself",
        lambda t: _mjcf(t, inside='<include file="m.xml"/>'),
        MJCFParseError,
        "<include file='m.xml'> includes",
    ),
    ("include-cycle", _cycle, MJCFParseError, "MuJoCo allows each file once"),
    (
        "include-no-file",
        lambda t: _mjcf(t, inside="<include/>"),
        MJCFParseError,
        "<include> without a 'file' attribute",
    ),
    (
        "mass-negative",
        lambda t: _mjcf(t, _BODY.format(mass=-2)),
        MJCFParseError,
        "body 'torso': <inertial mass='-2'> is negative",
    ),
    (
        "mass-nan",
        lambda t: _mjcf(t, _BODY.format(mass="nan")),
        MJCFParseError,
        "body 'torso': <inertial mass>: 'nan' is not finite",
    ),
    (
        "mass-text",
        lambda t: _mjcf(t, _BODY.format(mass="heavy")),
        MJCFParseError,
        "body 'torso': <inertial mass>: 'heavy' is not a list of numbers",
    ),
    (
        "inertia-negative",
        lambda t: _mjcf(t, _BODY.format(mass=1).replace('"1 1 1"', '"1 -1 1"')),
        MJCFParseError,
        "body 'torso': <inertial diaginertia> has a negative entry",
    ),
    (
        "inertia-two-numbers",
        lambda t: _mjcf(t, _BODY.format(mass=1).replace('"1 1 1"', '"1 1"')),
        MJCFParseError,
        "body 'torso': <inertial diaginertia>: expected 3 numbers",
    ),
    (
        "geom-mass-negative",
        lambda t: _mjcf(t, '<body name="arm"><geom type="sphere" size="0.1" mass="-1"/></body>'),
        MJCFParseError,
        "body 'arm': <geom mass='-1'> is negative",
    ),
    (
        "body-pos-nan",
        lambda t: _mjcf(
            t,
            _BODY.format(mass=1).replace('<body name="torso"', '<body name="torso" pos="nan 0 0"'),
        ),
        MJCFParseError,
        "body 'torso': <body pos>: 'nan 0 0' is not finite",
    ),
    (
        "joint-axis-zero",
        lambda t: _mjcf(t, '<body name="arm"><joint name="j" axis="0 0 0"/></body>'),
        MJCFParseError,
        "body 'arm': <joint name='j' axis='0 0 0'> has no direction",
    ),
    ("chain-1000", lambda t: _mjcf(t, _chain(1000)), SizeLimitError, "limit model_depth = 100"),
    (
        "bodies-1000",
        lambda t: _mjcf(t, "".join(f'<body name="b{i}"/>' for i in range(1000))),
        SizeLimitError,
        "limit model_bodies = 300",
    ),
    (
        "two-fixed-roots",
        lambda t: _mjcf(t, '<body name="a"/><body name="box"/>'),
        MJCFParseError,
        "2 bodies under <worldbody> ('a', 'box'), 0 of them with a free joint",
    ),
    ("no-body", lambda t: _mjcf(t), MJCFParseError, "no <body> under <worldbody>"),
    (
        "duplicate-body",
        lambda t: _mjcf(t, '<body name="a"><body name="a"/></body>'),
        MJCFParseError,
        "two bodies are named 'a'",
    ),
    (
        "not-mujoco",
        lambda t: (t / "r.xml").write_text("<robot/>") and t / "r.xml",
        MJCFParseError,
        "r.xml: the root element is <robot>",
    ),
]


@pytest.mark.parametrize("case", MJCF_CASES, ids=[c[0] for c in MJCF_CASES])
def test_bad_mjcf(tmp_path, case):
    from wholebody.robot import Robot

    _, build, error, fragment = case
    path = build(tmp_path)
    with pytest.raises(error) as info:
        Robot.from_mjcf(path)
    assert fragment in str(info.value)


# --- LeRobot datasets: reading confined to the folder, info.json schema, columns ------------

LEROBOT_MAP = {"q": "observation.state", "joints": ["j0", "j1"], "differentiate": True}
V2_PATH = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"


def _episode_table(n: int = 5, **columns):
    pa = pytest.importorskip("pyarrow")
    cols = {
        "timestamp": pa.array(np.arange(n) * 0.02),
        "observation.state": pa.array([[0.1 * i, -0.1 * i] for i in range(n)]),
        "episode_index": pa.array(np.zeros(n, dtype=np.int64)),
    }
    cols.update(columns)
    return pa.table({k: v for k, v in cols.items() if v is not None})


def _dataset(tmp: Path, table=None, file: str | None = None, **info) -> Path:
    """A one-episode dataset; ``info`` entries replace those of meta/info.json."""
    pq = pytest.importorskip("pyarrow.parquet")
    import json

    root = tmp / "ds"
    (root / "meta").mkdir(parents=True)
    doc = {"codebase_version": "v2.1", "fps": 50, "chunks_size": 1000, "total_episodes": 1}
    doc |= {"data_path": V2_PATH, "features": {}}
    doc.update(info)
    (root / "meta" / "info.json").write_text(json.dumps(doc))
    path = root / (file or "data/chunk-000/episode_000000.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(_episode_table() if table is None else table, path)
    return root


def _outside_episode(tmp: Path) -> Path:
    pq = pytest.importorskip("pyarrow.parquet")
    (tmp / "elsewhere").mkdir()
    pq.write_table(_episode_table(), tmp / "elsewhere" / "episode_000000.parquet")
    return _dataset(tmp, data_path="../elsewhere/episode_{episode_index:06d}.parquet")


def _symlinked_episode(tmp: Path) -> Path:
    pq = pytest.importorskip("pyarrow.parquet")
    root = _dataset(tmp, file="data/x.parquet")
    pq.write_table(_episode_table(), tmp / "outside.parquet")
    (root / "data" / "chunk-000").mkdir(parents=True)
    (root / "data" / "chunk-000" / "episode_000000.parquet").symlink_to(tmp / "outside.parquet")
    return root


def _truncated_v3(tmp: Path) -> Path:
    root = _dataset(
        tmp,
        file="data/chunk-000/file-000.parquet",
        data_path="data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
    )
    f = root / "data/chunk-000/file-000.parquet"
    f.write_bytes(f.read_bytes()[:-40])
    return root


def _list_of_lists():
    pa = pytest.importorskip("pyarrow")
    return pa.array([[[0.0, 1.0]] for _ in range(5)])


def _booleans():
    pa = pytest.importorskip("pyarrow")
    return pa.array([[True, False] for _ in range(5)])


def _struct():
    pa = pytest.importorskip("pyarrow")
    return pa.array([{"a": 0.0, "b": 1.0} for _ in range(5)])


V3 = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
LEROBOT_CASES: list[tuple[str, Callable[[Path], Path], dict, type, str]] = [
    ("data-path-dotdot", _outside_episode, {}, OutsideInputError, "'data_path' '../elsewhere"),
    (
        "data-path-absolute",
        lambda t: _dataset(t, data_path="/etc/passwd{episode_index:06d}"),
        {},
        OutsideInputError,
        "'data_path' '/etc/passwd{episode_index:06d}' leaves the dataset's folder",
    ),
    (
        "data-path-conversion",
        lambda t: _dataset(t, data_path="/etc/passwd{episode_index!s:.0}"),
        {},
        LogFormatError,
        "placeholder {episode_index!s:.0} is not one of LeRobot's",
    ),
    (
        "data-path-unknown-placeholder",
        lambda t: _dataset(t, data_path="data/{episode}.parquet"),
        {},
        LogFormatError,
        "placeholder {episode} is not one of LeRobot's",
    ),
    (
        "data-path-attribute",
        lambda t: _dataset(t, data_path="data/{episode_index.__class__}.parquet"),
        {},
        LogFormatError,
        "placeholder {episode_index.__class__} is not one of LeRobot's",
    ),
    ("data-file-symlink", _symlinked_episode, {}, OutsideInputError, "outside the dataset's"),
    (
        "info-list",
        lambda t: _dataset(t),
        {"info": [1]},
        LogFormatError,
        "must be a JSON object, got a list",
    ),
    (
        "features-list",
        lambda t: _dataset(t, features=["observation.state"]),
        {},
        LogFormatError,
        "info.json: 'features' must be an object, got a list",
    ),
    (
        "feature-shape-text",
        lambda t: _dataset(t, features={"observation.state": {"shape": "2"}}),
        {},
        LogFormatError,
        "features['observation.state']: 'shape' must be a list of integers",
    ),
    (
        "chunks-size-zero",
        lambda t: _dataset(t, chunks_size=0),
        {},
        LogFormatError,
        "info.json: 'chunks_size' must be a positive integer, got an integer 0",
    ),
    (
        "chunks-size-text",
        lambda t: _dataset(t, chunks_size="big"),
        {},
        LogFormatError,
        "'chunks_size' must be a positive integer, got a string 'big'",
    ),
    (
        "fps-negative",
        lambda t: _dataset(t, fps=-50),
        {},
        LogFormatError,
        "info.json: 'fps' must be a positive number, got -50",
    ),
    (
        "total-episodes-huge",
        lambda t: _dataset(t, total_episodes=10**12),
        {},
        SizeLimitError,
        "'total_episodes' exceeds the limit episodes",
    ),
    (
        "not-utf8",
        lambda t: _dataset(t),
        {"info_bytes": b'{"fps": "\xff"}'},
        LogFormatError,
        "info.json: not readable JSON",
    ),
    (
        "v3-truncated",
        _truncated_v3,
        {},
        LogFormatError,
        "file-000.parquet: not a readable Parquet file",
    ),
    (
        "v3-no-episode-index",
        lambda t: _dataset(
            t,
            _episode_table(episode_index=None),
            file="data/chunk-000/file-000.parquet",
            data_path=V3,
        ),
        {},
        RecordingError,
        "no column 'episode_index' (for telling episodes apart)",
    ),
    (
        "time-strings",
        lambda t: _dataset(t, _episode_table(timestamp=np.array([f"{i}" for i in range(5)]))),
        {},
        RecordingError,
        "column 'timestamp' (for time) holds string",
    ),
    (
        "state-struct",
        lambda t: _dataset(t, _episode_table(**{"observation.state": _struct()})),
        {},
        RecordingError,
        "column 'observation.state' (for q) holds struct",
    ),
    (
        "state-list-of-lists",
        lambda t: _dataset(t, _episode_table(**{"observation.state": _list_of_lists()})),
        {},
        RecordingError,
        "column 'observation.state' (for q) holds list<element: list",
    ),
    (
        "time-nan",
        lambda t: _dataset(t, _episode_table(timestamp=np.array([0.0, np.nan, 0.04, 0.06, 0.08]))),
        {},
        RecordingError,
        "column 'timestamp' (time) is not finite at 1 rows (first: row 1)",
    ),
    (
        "time-backwards",
        lambda t: _dataset(t, _episode_table(timestamp=np.array([0.0, 0.04, 0.02, 0.06, 0.08]))),
        {},
        RecordingError,
        "column 'timestamp' (time) is not strictly increasing (row 2",
    ),
    (
        "state-booleans",
        lambda t: _dataset(t, _episode_table(**{"observation.state": _booleans()})),
        {},
        RecordingError,
        "column 'observation.state' (for q) holds list<element: bool>",
    ),
    (
        "slice-past-width",
        lambda t: _dataset(t),
        {"mapping": dict(LEROBOT_MAP, q="observation.state[0:5]", joints=None)},
        RecordingError,
        "q 'observation.state[0:5]' reaches past the column's 2 values per row",
    ),
]


@pytest.mark.parametrize("case", LEROBOT_CASES, ids=[c[0] for c in LEROBOT_CASES])
def test_bad_lerobot_datasets(tmp_path, case):
    from wholebody.io.recordings import read_lerobot

    _, build, extra, error, fragment = case
    root = build(tmp_path)
    if "info" in extra:
        (root / "meta" / "info.json").write_text(repr(extra["info"]))
    if "info_bytes" in extra:
        (root / "meta" / "info.json").write_bytes(extra["info_bytes"])
    mapping = {k: v for k, v in extra.get("mapping", LEROBOT_MAP).items() if v is not None}
    with pytest.raises(error) as info:
        read_lerobot(root, mapping)
    assert fragment in str(info.value)


def test_only_mapped_columns_are_decoded(tmp_path):
    pa = pytest.importorskip("pyarrow")
    from wholebody.io.recordings import read_lerobot
    from wholebody.limits import set_limits

    big = pa.array([np.zeros(1000) for _ in range(5)], type=pa.list_(pa.float64()))
    root = _dataset(tmp_path, _episode_table(action=big))
    with set_limits(decoded_values=100):  # the unused 5000-value column is never decoded
        traj = read_lerobot(root, LEROBOT_MAP)
        np.testing.assert_array_equal(traj.q[:, 7:], [[0.1 * i, -0.1 * i] for i in range(5)])
        with pytest.raises(SizeLimitError, match="the mapped columns hold 5,015 values"):
            read_lerobot(root, dict(LEROBOT_MAP, v="action[0:2]"))


def test_total_episodes_is_not_a_loop_bound(tmp_path):
    import time

    from wholebody.io.recordings import LerobotDataset

    root = _dataset(tmp_path, total_episodes=999_999)
    start = time.perf_counter()
    assert LerobotDataset(root, LEROBOT_MAP).episodes == (0,)
    assert time.perf_counter() - start < 2.0


# --- calibration files: one strict schema step ---------------------------------------------

CAL_HEAD = 'format = "wholebody-calibration"\nversion = 1\n'
CAL_CONTACT = '[contacts.left_sole]\naxes = "contact"\nforce_offset = [1.0, 0.0, 0.0]\n'
CALIBRATION_CASES: list[tuple[str, bytes, str]] = [
    (
        "unknown-table",
        (CAL_HEAD + CAL_CONTACT + "[torque_offset]\nleft_knee = 3.0\n").encode(),
        "c.toml: unknown key 'torque_offset'; did you mean 'torque_offsets'?",
    ),
    ("version-99", CAL_HEAD.replace("1", "99").encode(), "c.toml: 'version' is 99"),
    ("format-other", b'format = "urdf"\n', "c.toml: 'format' is 'urdf'"),
    (
        "gain-true",
        (CAL_HEAD + CAL_CONTACT + "gain = true\n").encode(),
        "contacts.left_sole: 'gain' must be a number, got bool True",
    ),
    (
        "gain-nan",
        (CAL_HEAD + CAL_CONTACT + "gain = nan\n").encode(),
        "contacts.left_sole: 'gain' must be a finite number, got nan",
    ),
    (
        "gain-string",
        (CAL_HEAD + CAL_CONTACT + 'gain = "0.1"\n').encode(),
        "contacts.left_sole: 'gain' must be a number, got str '0.1'",
    ),
    (
        "offset-true",
        (CAL_HEAD + "[contacts.left_sole]\nforce_offset = [true, 0.0, 0.0]\n").encode(),
        "contacts.left_sole: 'force_offset'[0] must be a number, got bool True",
    ),
    (
        "torque-nan",
        (CAL_HEAD + "[torque_offsets]\nleft_knee = nan\n").encode(),
        "torque_offsets.left_knee must be a finite number, got nan",
    ),
    (
        "torque-true",
        (CAL_HEAD + "[torque_offsets]\nleft_knee = true\n").encode(),
        "torque_offsets.left_knee must be a number, got bool True",
    ),
    ("not-utf8", CAL_HEAD.encode() + b"# \xff\xfe\n", "c.toml: not UTF-8 text"),
    ("contacts-number", (CAL_HEAD + "contacts = 5\n").encode(), "'contacts' must be a table"),
    (
        "entry-not-table",
        (CAL_HEAD + "[contacts]\nleft_sole = 3\n").encode(),
        "contacts.left_sole must be a table ([contacts.left_sole]), got int 3",
    ),
    (
        "unknown-contact-key",
        (CAL_HEAD + CAL_CONTACT + "offset = [1, 2, 3]\n").encode(),
        "contacts.left_sole: unknown key 'offset'",
    ),
    (
        "axes-other",
        (CAL_HEAD + '[contacts.left_sole]\naxes = "sensor"\n').encode(),
        "contacts.left_sole: 'axes' must be 'contact' or 'world', got 'sensor'",
    ),
    ("torques-number", (CAL_HEAD + "torque_offsets = 2\n").encode(), "'torque_offsets' must be"),
    (
        "gain-minus-one",
        (CAL_HEAD + CAL_CONTACT + "gain = -1.0\n").encode(),
        "contacts.left_sole: 'gain' must be > -1 (a relative error), got -1.0",
    ),
]


@pytest.mark.parametrize("case", CALIBRATION_CASES, ids=[c[0] for c in CALIBRATION_CASES])
def test_bad_calibration_files(tmp_path, case):
    from wholebody.io.calibration import Calibration

    _, content, fragment = case
    (tmp_path / "c.toml").write_bytes(content)
    with pytest.raises(ProfileError) as info:
        Calibration.load(tmp_path / "c.toml")
    assert fragment in str(info.value)


def test_a_written_calibration_reads_back(tmp_path):
    from wholebody.io.calibration import Calibration, ContactCalibration

    cal = Calibration(
        {"left_sole": ContactCalibration([1.0, 2.0, 3.0], [0.1, 0.2, 0.3], 0.05, axes="world")},
        {"left_knee": 0.3},
        {"left_sole": "left_ankle"},
    )
    cal.save(tmp_path / "c.toml")
    back = Calibration.load(tmp_path / "c.toml")
    np.testing.assert_array_equal(
        back.contacts["left_sole"].offset, cal.contacts["left_sole"].offset
    )
    assert back.torque_offsets == {"left_knee": 0.3} and back.frames == {"left_sole": "left_ankle"}


# --- ROS 2 bags: message definitions, grid size, the bag's own files -----------------------


def _joint_state_bag(tmp: Path, definition: str | None = None, name: str = "bag") -> Path:
    """A 5-message JointState bag (MCAP storage); ``definition`` replaces the standard one."""
    pytest.importorskip("rosbags")
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    standard = get_typestore(Stores.LATEST)
    store = get_typestore(Stores.EMPTY)
    msgtype = "sensor_msgs/msg/JointState"
    store.register({k: v for k, v in standard.fielddefs.items() if k != msgtype})
    store.register(
        get_types_from_msg(definition, msgtype)
        if definition
        else {msgtype: standard.fielddefs[msgtype]}
    )
    T = store.types
    path = tmp / name
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        con = w.add_connection("/js", msgtype, typestore=store)
        for i in range(5):
            ns = 10**18 + i * 10_000_000
            head = T["std_msgs/msg/Header"](
                stamp=T["builtin_interfaces/msg/Time"](sec=ns // 10**9, nanosec=ns % 10**9),
                frame_id="",
            )
            fields = (
                {"q": np.zeros(2)}
                if definition
                else {
                    "name": ["a", "b"],
                    "position": np.full(2, 0.1 * i),
                    "velocity": np.zeros(2),
                    "effort": np.zeros(2),
                }
            )
            w.write(con, ns, store.serialize_cdr(T[msgtype](header=head, **fields), msgtype))
    return path


def test_a_bag_defining_joint_state_with_other_fields_is_named(tmp_path):
    from wholebody.io.recordings import read_rosbag

    path = _joint_state_bag(tmp_path, "std_msgs/Header header\nfloat64[] q\n")
    with pytest.raises(RecordingError) as info:
        read_rosbag(path, {"joint_states": "/js"})
    assert "topic '/js': the bag defines sensor_msgs/msg/JointState with field 'name'" in str(
        info.value
    )
    assert info.value.name == "/js"


def test_a_huge_rate_is_refused_before_the_grid_is_built(tmp_path):
    import time

    from wholebody.io.recordings import read_rosbag

    path = _joint_state_bag(tmp_path)
    assert len(read_rosbag(path, {"joint_states": "/js", "rate": 1000.0})) == 41
    start = time.perf_counter()
    with pytest.raises(SizeLimitError) as info:
        read_rosbag(path, {"joint_states": "/js", "rate": 1e12})
    assert time.perf_counter() - start < 5.0
    assert "[recording] rate: rate = 1e+12 Hz over 0.04 s is a time grid of" in str(info.value)
    assert "limit grid_samples" in str(info.value)


def test_a_bag_reads_only_its_own_files(tmp_path):
    import shutil

    from wholebody.io.recordings import read_rosbag

    path = _joint_state_bag(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    shutil.move(path / "bag.mcap", tmp_path / "elsewhere" / "bag.mcap")
    meta = (path / "metadata.yaml").read_text().replace("bag.mcap", "../elsewhere/bag.mcap")
    (path / "metadata.yaml").write_text(meta)
    with pytest.raises(OutsideInputError) as info:
        read_rosbag(path, {"joint_states": "/js"})
    assert "metadata.yaml: lists '../elsewhere/bag.mcap', outside the bag's folder" in str(
        info.value
    )


def test_text_files_are_bounded_before_they_are_read(tmp_path):
    from wholebody.io.recordings import read_lerobot
    from wholebody.limits import set_limits
    from wholebody.robot import Robot

    root = _dataset(tmp_path)
    model = _mjcf(tmp_path, _BODY.format(mass=1))
    with set_limits(text_bytes=50):
        with pytest.raises(SizeLimitError, match=r"info.json: a file of [\d,]+ bytes"):
            read_lerobot(root, LEROBOT_MAP)
        with pytest.raises(SizeLimitError, match=r"m.xml: a file of [\d,]+ bytes .*text_bytes"):
            Robot.from_mjcf(model)


@pytest.mark.parametrize("secret", ["SECRET line one\nhunter2 password\n", "a,b\n1,hunter2\n"])
def test_a_csv_linked_to_a_file_outside_is_refused_without_quoting_it(tmp_path, secret):
    """Issue 37: a .csv log that is a symbolic link to a file outside its folder (no log)
    gets an error naming the path, line and column number, never the file's content."""
    outside, logs = tmp_path / "outside", tmp_path / "logs"
    outside.mkdir()
    logs.mkdir()
    (outside / "secret.txt").write_text(secret)
    (logs / "run.csv").symlink_to(outside / "secret.txt")
    with pytest.raises(LogFormatError) as info:
        Trajectory.load(logs / "run.csv")
    message = str(info.value)
    assert message.startswith(f"{logs / 'run.csv'}: line 2, column ")
    for word in ("SECRET", "hunter2", "password", "line one", "a,b"):
        assert word not in message, message

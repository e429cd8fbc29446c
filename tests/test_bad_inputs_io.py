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

from wholebody.errors import LogFileError, LogFormatError, OutputError, ProfileError
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
        "line 4, column 'active:left': 'yes' is not a number",
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
        "bad.csv: not UTF-8 text (byte 0xe9 on line 1)",
    ),
    (
        "csv-dup-column",
        lambda t: _csv(t, lambda ls: [ls[0], ls[1] + ",q:j0"] + [x + ",0" for x in ls[2:]]),
        LOAD,
        LogFormatError,
        "column 'q:j0' appears twice",
    ),
    (
        "csv-quoted-text",
        lambda t: _csv(t, lambda ls: _replace_cell(ls, 3, 8, '"abc"')),
        LOAD,
        LogFormatError,
        "line 4, column 'q:j0': 'abc' is not a number",
    ),
    (
        "csv-text",
        lambda t: _csv(t, lambda ls: _replace_cell(ls, 5, 2, "1.2.3")),
        LOAD,
        LogFormatError,
        "line 6, column 'base_y': '1.2.3' is not a number",
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
        "column 'time'",
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
    ("parquet-dup-column", _parquet_dup, LOAD, LogFormatError, "column 'q:j0' appears twice"),
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
        "give 'robot' (a name) or 'urdf' (a path), not both",
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

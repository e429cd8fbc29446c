"""Reading and writing logs: ``.npz`` and ``.csv`` in the core, ``.parquet`` and ``.h5`` with
the ``parquet`` / ``hdf5`` extras. The schema is in ``docs/log-format.md``.

A file-level problem (missing file, truncated file, missing field, wrong shape, unknown
suffix) raises :class:`~wholebody.trajectory.LogFormatError` naming the file and the field;
sample-level problems (NaN rows) are left in the arrays for the checks to flag.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require
from ..trajectory import LogFormatError, Trajectory

__all__ = ["read_log", "write_log", "SUFFIXES"]

SUFFIXES = (".npz", ".csv", ".parquet", ".h5", ".hdf5")
REQUIRED = ("time", "q", "v", "joint_names", "contact_names", "contact_wrenches")
BASE_Q = ("base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz", "base_qw")
BASE_V = ("base_vx", "base_vy", "base_vz", "base_wx", "base_wy", "base_wz")
BASE_A = tuple("base_d" + c[5:] for c in BASE_V)
WRENCH = ("fx", "fy", "fz", "tx", "ty", "tz")


def read_log(path: str | Path) -> Trajectory:
    """Read a log file into a :class:`Trajectory`."""
    path = Path(path)
    if not path.is_file():
        raise LogFormatError(f"{path}: no such log file")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return _from_fields(_read_npz(path), str(path))
    if suffix == ".csv":
        return _from_table(_read_csv(path), str(path))
    if suffix == ".parquet":
        return _from_table(_read_parquet(path), str(path))
    if suffix in (".h5", ".hdf5"):
        return _from_fields(_read_h5(path), str(path))
    raise LogFormatError(f"{path}: unknown log format {suffix!r}; known: {', '.join(SUFFIXES)}")


def write_log(traj: Trajectory, path: str | Path) -> None:
    """Write a :class:`Trajectory`; the format follows the suffix."""
    path = Path(path)
    suffix = path.suffix.lower()
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".npz":
        np.savez_compressed(path, **_to_fields(traj))
    elif suffix == ".csv":
        header, table = _to_table(traj)
        np.savetxt(path, table, delimiter=",", header=",".join(header), comments="", fmt="%.17g")
    elif suffix == ".parquet":
        pd = _pandas()
        header, table = _to_table(traj)
        df = pd.DataFrame(table, columns=header)
        df.attrs["wholebody"] = json.dumps(_meta(traj))
        df.to_parquet(path)
    elif suffix in (".h5", ".hdf5"):
        h5py = _h5py()
        with h5py.File(path, "w") as f:
            for key, value in _to_fields(traj).items():
                if value.dtype.kind == "U":
                    f.create_dataset(key, data=value.astype("S"))
                else:
                    f.create_dataset(key, data=value)
    else:
        raise LogFormatError(f"{path}: unknown log format {suffix!r}; known: {', '.join(SUFFIXES)}")


# --- field-based formats (npz, h5) ----------------------------------------------------------


def _meta(traj: Trajectory) -> dict[str, Any]:
    return {"accelerations_estimated": traj.accelerations_estimated, **traj.metadata}


def _to_fields(traj: Trajectory) -> dict[str, np.ndarray]:
    fields = {
        "time": traj.time, "q": traj.q, "v": traj.v,
        "joint_names": np.array(traj.joint_names, dtype=str),
        "contact_names": np.array(traj.contact_names, dtype=str),
        "contact_wrenches": traj.contact_wrenches,
        "metadata": np.array(json.dumps(_meta(traj))),
    }
    if traj.a is not None:
        fields["a"] = traj.a
    if traj.tau is not None:
        fields["tau"] = traj.tau
    if traj.external_wrenches is not None:
        fields["external_frames"] = np.array(traj.external_frames, dtype=str)
        fields["external_wrenches"] = traj.external_wrenches
    return fields


def _read_npz(path: Path) -> dict[str, Any]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise LogFormatError(f"{path}: cannot read as .npz (truncated or not a NumPy archive): {exc}") from None


def _read_h5(path: Path) -> dict[str, Any]:
    h5py = _h5py()
    try:
        with h5py.File(path, "r") as f:
            out = {}
            for k in f:
                value = f[k][()]
                if isinstance(value, np.ndarray) and value.dtype.kind == "S":
                    value = value.astype(str)
                elif isinstance(value, bytes):
                    value = value.decode()
                out[k] = value
            return out
    except OSError as exc:
        raise LogFormatError(f"{path}: cannot read as HDF5 (truncated or not HDF5): {exc}") from None


def _from_fields(fields: dict[str, Any], source: str) -> Trajectory:
    missing = [k for k in REQUIRED if k not in fields]
    if missing:
        raise LogFormatError(f"{source}: missing field(s) {missing}; present: {sorted(fields)}")
    meta: dict[str, Any] = {}
    if "metadata" in fields:
        try:
            meta = json.loads(str(fields["metadata"]))
        except json.JSONDecodeError as exc:
            raise LogFormatError(f"{source}: field 'metadata' is not JSON: {exc}") from None
    estimated = bool(meta.pop("accelerations_estimated", False))
    ext_frames = tuple(str(x) for x in fields.get("external_frames", ()))
    return Trajectory(
        time=fields["time"], q=fields["q"], v=fields["v"], a=fields.get("a"), tau=fields.get("tau"),
        joint_names=tuple(str(x) for x in np.atleast_1d(fields["joint_names"])),
        contact_names=tuple(str(x) for x in np.atleast_1d(fields["contact_names"])),
        contact_wrenches=fields["contact_wrenches"], external_frames=ext_frames,
        external_wrenches=fields.get("external_wrenches"), accelerations_estimated=estimated,
        metadata=meta, source=source,
    )


# --- table-based formats (csv, parquet) -------------------------------------------------------


def _to_table(traj: Trajectory) -> tuple[list[str], np.ndarray]:
    j = list(traj.joint_names)
    header = ["time", *BASE_Q, *(f"q:{n}" for n in j), *BASE_V, *(f"v:{n}" for n in j)]
    cols = [traj.time[:, None], traj.q, traj.v]
    if traj.a is not None:
        header += [*BASE_A, *(f"a:{n}" for n in j)]
        cols.append(traj.a)
    if traj.tau is not None:
        header += [f"tau:{n}" for n in j]
        cols.append(traj.tau)
    for k, name in enumerate(traj.contact_names):
        header += [f"contact:{name}:{c}" for c in WRENCH]
        cols.append(traj.contact_wrenches[:, k])
    for k, name in enumerate(traj.external_frames):
        header += [f"external:{name}:{c}" for c in WRENCH]
        cols.append(traj.external_wrenches[:, k])
    return header, np.concatenate(cols, axis=1)


def _read_csv(path: Path) -> tuple[list[str], np.ndarray]:
    lines = path.read_text().splitlines()
    if not lines:
        raise LogFormatError(f"{path}: empty file")
    header = [h.strip() for h in lines[0].split(",")]
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) != len(header):
            raise LogFormatError(f"{path}: line {number} has {len(fields)} fields, the header {len(header)} "
                                 "(truncated file?)")
        try:
            rows.append([float(x) if x.strip() else np.nan for x in fields])
        except ValueError as exc:
            raise LogFormatError(f"{path}: line {number}: {exc}") from None
    return header, np.array(rows, dtype=float).reshape(len(rows), len(header))


def _read_parquet(path: Path) -> tuple[list[str], np.ndarray]:
    pd = _pandas()
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for damaged files
        raise LogFormatError(f"{path}: cannot read as Parquet (truncated?): {exc}") from None
    return list(df.columns), df.to_numpy(dtype=float)


def _from_table(data: tuple[list[str], np.ndarray], source: str) -> Trajectory:
    header, table = data
    col = {h: i for i, h in enumerate(header)}

    def take(names: list[str] | tuple[str, ...], what: str) -> np.ndarray:
        missing = [n for n in names if n not in col]
        if missing:
            raise LogFormatError(f"{source}: missing column(s) {missing[:6]} for {what}")
        return table[:, [col[n] for n in names]]

    if "time" not in col:
        raise LogFormatError(f"{source}: missing column 'time'")
    joints = [h[2:] for h in header if h.startswith("q:")]
    time = table[:, col["time"]]
    q = np.concatenate([take(BASE_Q, "the base pose"), take([f"q:{n}" for n in joints], "q")], axis=1)
    v = np.concatenate([take(BASE_V, "the base velocity"), take([f"v:{n}" for n in joints], "v")], axis=1)
    a = None
    if any(h.startswith("a:") for h in header) or BASE_A[0] in col:
        a = np.concatenate([take(BASE_A, "the base acceleration"), take([f"a:{n}" for n in joints], "a")], axis=1)
    tau = take([f"tau:{n}" for n in joints], "tau") if any(h.startswith("tau:") for h in header) else None
    contacts = list(dict.fromkeys(h.split(":")[1] for h in header if h.startswith("contact:")))
    W = np.stack([take([f"contact:{c}:{x}" for x in WRENCH], f"contact {c!r}") for c in contacts], axis=1) \
        if contacts else np.zeros((len(time), 0, 6))
    ext = list(dict.fromkeys(h.split(":")[1] for h in header if h.startswith("external:")))
    E = np.stack([take([f"external:{e}:{x}" for x in WRENCH], f"external {e!r}") for e in ext], axis=1) \
        if ext else None
    return Trajectory(time, q, v, a, tau, tuple(joints), tuple(contacts), W, tuple(ext), E, source=source)


def _pandas() -> Any:
    require("pyarrow", "parquet", "Parquet logs")
    return require("pandas", "parquet", "Parquet logs")


def _h5py() -> Any:
    return require("h5py", "hdf5", "HDF5 logs")



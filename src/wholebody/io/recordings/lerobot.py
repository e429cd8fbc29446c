"""LeRobot-style Parquet datasets as :class:`~wholebody.trajectory.Trajectory` objects, one per
episode, through ``pyarrow`` (``pip install 'wholebody[parquet]'``).

A dataset is a folder with ``meta/info.json`` (``features``: per column its ``shape`` and
``names``; ``data_path``: the file template; ``chunks_size``) and Parquet files under
``data/``: one per episode (``data/chunk-000/episode_000000.parquet``, LeRobot v2), or several
episodes per file told apart by the ``episode_index`` column (a template without
``{episode_index}``, LeRobot v3). Columns hold one number or a list per frame; the profile's
``[lerobot]`` section (:class:`~wholebody.io.recordings.mapping.LerobotMapping`) says which slice
of which column is which field.

Example
-------
>>> from wholebody.io.recordings import LerobotDataset
>>> data = LerobotDataset("my_dataset", {"q": "observation.state[0:12]",
...                                      "v": "observation.velocity[0:12]"})  # doctest: +SKIP
>>> first = data.read(0); every = list(data)  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...errors import LogFileError, LogFormatError, ProfileError, RecordingError, require
from ...limits import check_file_size, check_limit
from ...robot.core import Robot
from ...trajectory import Trajectory
from ._assemble import AlignedWrench, assemble, contact_frames_of, twist_in_base
from ._lerobot_files import check_columns, check_info, check_template, confined, template_files
from .mapping import ColumnSlice, LerobotMapping
from .timing import base_twist_from_poses, differentiate

__all__ = ["LerobotDataset", "read_lerobot", "lerobot_episodes", "DEFAULT_DATA_PATH"]

Array = NDArray[np.float64]

#: The file template of LeRobot v2 datasets, used when ``meta/info.json`` has no ``data_path``.
DEFAULT_DATA_PATH = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"


def _mapping(mapping: Any) -> tuple[LerobotMapping, Any]:
    from ..profile import RobotProfile, load_profile

    profile = load_profile(mapping) if isinstance(mapping, (str, Path)) else mapping
    if isinstance(profile, RobotProfile):
        m = getattr(profile, "lerobot", None)
        if m is None:
            raise ProfileError(f"{profile.source}: no [lerobot] section")
        return m, profile
    if isinstance(profile, LerobotMapping):
        return profile, None
    if isinstance(profile, Mapping):
        return LerobotMapping.from_dict(profile), None
    raise ProfileError(f"mapping must be a profile or a [lerobot] table, got {mapping!r}")


class LerobotDataset:
    """A LeRobot-style dataset opened for reading episode by episode.

    Parameters
    ----------
    path : str or Path
        The dataset's folder (holding ``meta/info.json`` and ``data/``).
    mapping : RobotProfile, LerobotMapping, mapping, str or Path
        A profile (its ``[lerobot]`` section, robot and contacts), a profile's path, a
        :class:`LerobotMapping`, or a mapping with the ``[lerobot]`` keys.
    robot : Robot, optional
        Needed to convert wrenches from sensor frames (default: the profile's robot).

    Attributes
    ----------
    path : Path
        The folder.
    info : dict
        ``meta/info.json``.
    mapping : LerobotMapping
        The column mapping.

    Raises
    ------
    LogFileError
        The folder does not exist.
    LogFormatError
        No readable ``meta/info.json``.
    MissingDependencyError
        ``pyarrow`` is not installed.
    """

    def __init__(self, path: str | Path, mapping: Any, robot: Robot | None = None):
        self._pq = require("pyarrow.parquet", "parquet", "LeRobot datasets")
        self.path = Path(path)
        self.mapping, self._profile = _mapping(mapping)
        self._robot = robot or getattr(self._profile, "robot", None)
        if not self.path.is_dir():
            raise LogFileError(f"{self.path}: no such dataset folder")
        info = self.path / "meta" / "info.json"
        if not info.is_file():
            raise LogFormatError(f"{self.path}: not a LeRobot dataset (no meta/info.json)")
        confined(self.path, "meta/info.json", str(self.path))
        check_file_size(info)
        try:
            raw = json.loads(info.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            raise LogFormatError(f"{info}: not readable JSON: {exc}") from exc
        except RecursionError as exc:
            raise LogFormatError(f"{info}: not readable JSON: nested too deeply") from exc
        self.info: dict[str, Any] = check_info(raw, str(info))
        self._template = str(self.info.get("data_path") or DEFAULT_DATA_PATH)
        self._fields = check_template(self._template, str(info))
        self._per_episode = "episode_index" in self._fields
        self._chunks = int(self.info.get("chunks_size", 1000))
        self._files: dict[int, list[Path]] | None = None

    # --- episodes ---------------------------------------------------------------------------

    def _index(self) -> dict[int, list[Path]]:
        """Episode -> files holding it: the files matching the template (one walk of the
        data folder, never a look-up per declared episode)."""
        if self._files is None:
            files: dict[int, list[Path]] = {}
            where = f"{self.path / 'meta' / 'info.json'}: 'data_path'"
            for file, numbers in template_files(self.path, self._template, where):
                if self._per_episode:
                    files.setdefault(numbers["episode_index"], []).append(file)
                else:
                    for ep in self._episodes_of(file):
                        files.setdefault(ep, []).append(file)
                check_limit("episodes", len(files), str(self.path), f"{len(files):,} episodes")
            self._files = dict(sorted(files.items()))
        return self._files

    def _episodes_of(self, file: Path) -> list[int]:
        check_columns(file, self._pq, {"episode_index": "telling episodes apart"})
        try:
            col = self._pq.read_table(file, columns=["episode_index"]).column(0)
            return [int(e) for e in np.unique(col.to_numpy())]
        except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
            raise LogFormatError(f"{file}: not a readable Parquet file: {exc}") from exc

    def _episode_files(self, episode: int) -> list[Path]:
        if self._per_episode:  # the one file the template names, confined to the folder
            rel = self._template.format(
                episode_chunk=episode // self._chunks, episode_index=episode
            )
            file = confined(self.path, rel, f"{self.path / 'meta' / 'info.json'}: 'data_path'")
            return [file] if file.is_file() else []
        return self._index().get(episode, [])

    @property
    def episodes(self) -> tuple[int, ...]:
        """The episode indices with data files, increasing."""
        return tuple(self._index())

    def __len__(self) -> int:
        return len(self._index())

    def __iter__(self) -> Iterator[Trajectory]:
        for ep in self.episodes:
            yield self.read(ep)

    # --- one episode ------------------------------------------------------------------------

    def _needed(self) -> dict[str, str]:
        """The columns the mapping uses (only these are decoded) -> the field they fill."""
        m = self.mapping
        out: dict[str, str] = {}
        for key in ("time", "q", "v", "tau", "base_position", "base_orientation"):
            value = getattr(m, key)
            if value is not None:
                out.setdefault(value if isinstance(value, str) else value.column, key)
        for key in ("base_linear_velocity", "base_angular_velocity"):
            value = getattr(m, key)
            if value is not None:
                out.setdefault(value.column, key)
        for w in m.wrenches:
            column = ColumnSlice.parse(w.source, "[lerobot]", "column").column
            out.setdefault(column, w.label)
        return out

    def _table(self, episode: int) -> Any:
        if isinstance(episode, bool) or not isinstance(episode, (int, np.integer)):
            raise RecordingError(f"{self.path}: episode must be an integer, got {episode!r}")
        files = self._episode_files(int(episode))
        if not files:
            raise RecordingError(
                f"{self.path}: no episode {episode} (episodes: {list(self.episodes)[:20]})",
                str(episode),
            )
        needed = self._needed()
        if not self._per_episode:
            needed.setdefault("episode_index", "telling episodes apart")
        columns = list(needed)
        for f in files:
            check_columns(f, self._pq, needed)
        try:
            tables = [self._pq.read_table(f, columns=columns) for f in files]
            pa = require("pyarrow", "parquet", "LeRobot datasets")
            table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
            if not self._per_episode:  # v3 files hold several episodes
                mask = np.asarray(table.column("episode_index").to_numpy()) == episode
                table = table.filter(pa.array(mask))
        except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
            raise LogFormatError(f"{files[0]}: not a readable Parquet file: {exc}") from exc
        return table

    def _column(self, table: Any, sel: ColumnSlice, width: int | None, what: str) -> Array:
        arr = table.column(sel.column).combine_chunks()
        if arr.null_count:
            raise RecordingError(
                f"{self.path}: column {sel.column!r} has {arr.null_count} null rows", sel.column
            )
        n = len(arr)
        if hasattr(arr, "flatten"):  # list or fixed-size list: one list per row
            lengths = np.asarray(arr.value_lengths().to_numpy(zero_copy_only=False))
            if lengths.size and (lengths != lengths[0]).any():
                raise RecordingError(
                    f"{self.path}: column {sel.column!r} has lists of lengths "
                    f"{sorted(set(lengths.tolist()))[:5]}; they must be equal",
                    sel.column,
                )
            k = int(lengths[0]) if lengths.size else 0
            values = np.asarray(arr.flatten().to_numpy(zero_copy_only=False), dtype=float)
            X = values.reshape(n, k)
        else:
            X = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=float).reshape(n, 1)
        total = X.shape[1]
        for bound in (sel.start, sel.stop):
            if bound is not None and not -total <= bound <= total:
                raise RecordingError(
                    f"{self.path}: {what} {str(sel)!r} reaches past the column's {total} "
                    "values per row",
                    sel.column,
                )
        X = X[:, sel.start : sel.stop]
        if X.shape[1] == 0 or (width is not None and X.shape[1] != width):
            need = f"{width}" if width is not None else "at least 1"
            raise RecordingError(
                f"{self.path}: {what} {str(sel)!r} selects {X.shape[1]} of the column's {total} "
                f"values per row; {what} needs {need}",
                sel.column,
            )
        return X

    def _names(self, sel: ColumnSlice, n: int) -> tuple[str, ...]:
        m = self.mapping
        if m.joints is not None:
            names: Any = list(m.joints)
        else:
            feature = self.info.get("features", {}).get(sel.column, {})
            names = feature.get("names") if isinstance(feature, dict) else None
            if isinstance(names, dict) and len(names) == 1:  # {"motors": [...]}
                names = next(iter(names.values()))
            if not isinstance(names, list):
                raise RecordingError(
                    f"{self.path}: meta/info.json gives no names for column {sel.column!r}; "
                    "give the joint names as 'joints'",
                    sel.column,
                )
            names = names[sel.start : sel.stop]
        if len(names) != n:
            raise RecordingError(
                f"{self.path}: {n} joint positions in {str(sel)!r} but {len(names)} joint names",
                sel.column,
            )
        return tuple(str(x) for x in names)

    def read(self, episode: int) -> Trajectory:
        """One episode as a Trajectory.

        Returns
        -------
        Trajectory
            ``time`` [s] from the ``time`` column; ``q`` base position (world) and quaternion
            x-y-z-w, joints; ``v`` base twist in the base frame, joints; ``tau``; contact
            wrenches in world axes at the contact frames' origins [N, N m];
            ``metadata["episode_index"]``.

        Raises
        ------
        RecordingError
            No such episode; a mapped column missing (``.name`` is the column, the message
            lists the columns); a slice of the wrong width; no joint names.
        """
        m = self.mapping
        table = self._table(episode)
        if table.num_rows == 0:
            raise RecordingError(f"{self.path}: episode {episode} has no rows", str(episode))
        t = self._column(table, ColumnSlice(m.time), 1, "time")[:, 0]
        bad = np.flatnonzero(~np.isfinite(t))
        if bad.size:
            raise RecordingError(
                f"{self.path}: episode {episode}: column {m.time!r} (time) is not finite at "
                f"{bad.size} rows (first: row {int(bad[0])})",
                m.time,
            )
        back = np.flatnonzero(np.diff(t) <= 0)
        if back.size:
            k = int(back[0]) + 1
            raise RecordingError(
                f"{self.path}: episode {episode}: column {m.time!r} (time) is not strictly "
                f"increasing (row {k}: {t[k]!r} after {t[k - 1]!r})",
                m.time,
            )
        qj = self._column(table, m.q, None, "q")
        nj = qj.shape[1]
        names = self._names(m.q, nj)
        estimated = []
        if m.v is not None:
            vj = self._column(table, m.v, nj, "v")
        elif m.differentiate:
            vj, estimated = differentiate(t, qj), ["joint velocities"]
        else:
            raise RecordingError(
                f"{self.path}: no 'v' column mapped; map it or set differentiate = true", "v"
            )
        tau = None if m.tau is None else self._column(table, m.tau, nj, "tau")
        base = None
        if m.base_position is not None and m.base_orientation is not None:
            pos = self._column(table, m.base_position, 3, "base_position")
            quat = self._column(table, m.base_orientation, 4, "base_orientation")
            if m.quaternion_order == "wxyz":
                quat = quat[:, [1, 2, 3, 0]]
            quat = quat / np.linalg.norm(quat, axis=1, keepdims=True)
            if m.base_linear_velocity is not None and m.base_angular_velocity is not None:
                lin = self._column(table, m.base_linear_velocity, 3, "base_linear_velocity")
                ang = self._column(table, m.base_angular_velocity, 3, "base_angular_velocity")
                twist = twist_in_base(np.concatenate([lin, ang], axis=1), quat, m.twist_axes)
            elif m.differentiate:
                twist = base_twist_from_poses(t, pos, quat)
                estimated.append("base twist")
            else:
                raise RecordingError(
                    f"{self.path}: no base velocity columns mapped; map base_linear_velocity "
                    "and base_angular_velocity or set differentiate = true",
                    "base_linear_velocity",
                )
            base = (pos, quat, twist)
        wrenches = []
        for w in m.wrenches:
            sel = ColumnSlice.parse(w.source, "[lerobot]", "column")
            values = self._column(table, sel, 6, w.label)
            wrenches.append(AlignedWrench(w, values, w.frame))
        metadata: dict[str, Any] = {
            "recording": "lerobot",
            "source": str(self.path),
            "episode_index": int(episode),
        }
        if "fps" in self.info:
            metadata["fps"] = self.info["fps"]
        if estimated:
            metadata["estimated"] = estimated
        return assemble(
            t,
            names,
            qj,
            vj,
            tau,
            base,
            wrenches,
            robot=self._robot,
            contact_frames=contact_frames_of(self._profile),
            metadata=metadata,
            source=f"{self.path}#episode={episode}",
        )


def read_lerobot(
    path: str | Path, mapping: Any, episode: int = 0, robot: Robot | None = None
) -> Trajectory:
    """One episode of a LeRobot-style dataset (:meth:`LerobotDataset.read`).

    Parameters
    ----------
    path : str or Path
        The dataset's folder.
    mapping : RobotProfile, LerobotMapping, mapping, str or Path
        As for :class:`LerobotDataset`.
    episode : int
        The episode index (``episode_index``).
    robot : Robot, optional
        Needed to convert wrenches from sensor frames.
    """
    return LerobotDataset(path, mapping, robot).read(episode)


def lerobot_episodes(
    path: str | Path, mapping: Any, robot: Robot | None = None
) -> Iterator[Trajectory]:
    """Every episode of a LeRobot-style dataset, in increasing index, one Trajectory at a time
    (only one episode is held in memory)."""
    return iter(LerobotDataset(path, mapping, robot))

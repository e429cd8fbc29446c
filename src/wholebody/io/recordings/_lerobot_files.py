"""The strict step between a LeRobot dataset's files and the reader: ``meta/info.json``
checked against a schema, the ``data_path`` template restricted to LeRobot's placeholders and
confined to the dataset's folder, data files found by matching the template (no look-up per
declared episode), Parquet columns checked by type and size before any is decoded."""

from __future__ import annotations

import math
import os
import re
import string
import warnings
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from ...errors import LogFormatError, OutsideInputError, RecordingError, StateWarning
from ...limits import check_limit

#: LeRobot v2 (one file per episode) and v3 (several episodes per file) placeholders.
PLACEHOLDERS_V2 = ("episode_chunk", "episode_index")
PLACEHOLDERS_V3 = ("chunk_index", "file_index")
_SPEC = re.compile(r"^(0?[1-9]\d?)?d$")


def _kind(value: Any) -> str:
    return {
        bool: "a boolean",
        str: "a string",
        int: "an integer",
        float: "a number",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _count(info: Mapping[str, Any], key: str, where: str, positive: bool = False) -> None:
    if key not in info:
        return
    v = info[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < (1 if positive else 0):
        need = "a positive integer" if positive else "an integer >= 0"
        raise LogFormatError(f"{where}: {key!r} must be {need}, got {_kind(v)} {v!r}")


def _optional_str(info: Mapping[str, Any], key: str, where: str) -> None:
    if key in info and info[key] is not None and not isinstance(info[key], str):
        raise LogFormatError(f"{where}: {key!r} must be a string, got {_kind(info[key])}")


def _feature(name: str, entry: Any, where: str) -> None:
    at = f"{where}: features[{name!r}]"
    if not isinstance(entry, dict):
        raise LogFormatError(f"{at} must be an object, got {_kind(entry)} {entry!r}")
    shape = entry.get("shape")
    if shape is not None and (
        not isinstance(shape, list)
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
    ):
        raise LogFormatError(f"{at}: 'shape' must be a list of integers >= 0, got {shape!r}")
    if "dtype" in entry and not isinstance(entry["dtype"], str):
        raise LogFormatError(f"{at}: 'dtype' must be a string, got {_kind(entry['dtype'])}")
    names = entry.get("names")
    if isinstance(names, dict):
        lists = list(names.values())
    else:
        lists = [names]
    for x in lists:
        if x is not None and (not isinstance(x, list) or not all(isinstance(n, str) for n in x)):
            raise LogFormatError(
                f"{at}: 'names' must be null, a list of strings or an object of such lists, "
                f"got {names!r}"
            )


#: Keys of ``meta/info.json`` that LeRobot writes (v2.0 to v3.0); others are ignored with a
#: warning that names them.
INFO_KEYS = (
    "codebase_version",
    "robot_type",
    "total_episodes",
    "total_frames",
    "total_tasks",
    "total_videos",
    "total_chunks",
    "chunks_size",
    "data_files_size_in_mb",
    "video_files_size_in_mb",
    "fps",
    "splits",
    "data_path",
    "video_path",
    "features",
)


def check_info(info: Any, where: str) -> dict[str, Any]:
    """``meta/info.json`` checked: types and ranges of the keys the reader uses; a key
    LeRobot does not write is named in a :class:`~wholebody.errors.StateWarning`.

    Raises
    ------
    LogFormatError
        A value of the wrong type or out of range; the message names the key and the file.
    SizeLimitError
        ``total_episodes`` above :data:`wholebody.limits.LIMITS` ``.episodes``.
    """
    if not isinstance(info, dict):
        raise LogFormatError(f"{where}: must be a JSON object, got {_kind(info)}")
    unknown = [k for k in info if k not in INFO_KEYS]
    if unknown:
        warnings.warn(
            f"{where}: keys {unknown} are not LeRobot's; ignored", StateWarning, stacklevel=3
        )
    for key in ("total_episodes", "total_frames", "total_tasks", "total_videos", "total_chunks"):
        _count(info, key, where)
    _count(info, "chunks_size", where, positive=True)
    if "total_episodes" in info:
        check_limit("episodes", info["total_episodes"], where, "'total_episodes'")
    if "fps" in info:
        fps = info["fps"]
        ok = isinstance(fps, (int, float)) and not isinstance(fps, bool)
        if not ok or not math.isfinite(fps) or fps <= 0:
            raise LogFormatError(f"{where}: 'fps' must be a positive number, got {fps!r}")
    for key in ("codebase_version", "robot_type", "video_path"):
        _optional_str(info, key, where)
    if "data_path" in info and (not isinstance(info["data_path"], str) or not info["data_path"]):
        raise LogFormatError(
            f"{where}: 'data_path' must be a non-empty string, got {_kind(info['data_path'])}"
        )
    features = info.get("features", {})
    if not isinstance(features, dict):
        raise LogFormatError(f"{where}: 'features' must be an object, got {_kind(features)}")
    for name, entry in features.items():
        _feature(name, entry, where)
    return info


def check_template(template: str, where: str) -> tuple[str, ...]:
    """The placeholders of a ``data_path`` template, checked: only LeRobot's (v2:
    ``episode_chunk``, ``episode_index``; v3: ``chunk_index``, ``file_index``), no conversion
    or attribute access, an integer format at most (``:03d``); a relative path without
    ``..``.

    Raises
    ------
    LogFormatError
        A placeholder or format that is not LeRobot's (named).
    OutsideInputError
        An absolute path or one with ``..``: it would leave the dataset's folder.
    """
    fields: list[str] = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise LogFormatError(f"{where}: 'data_path' {template!r} is not a template: {exc}") from exc
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if (
            name not in PLACEHOLDERS_V2 + PLACEHOLDERS_V3
            or conversion
            or (spec and not _SPEC.match(spec))
        ):
            shown = (
                "{"
                + name
                + (f"!{conversion}" if conversion else "")
                + (f":{spec}" if spec else "")
                + "}"
            )
            raise LogFormatError(
                f"{where}: 'data_path' placeholder {shown} is not one of LeRobot's: "
                f"{{episode_chunk}}, {{episode_index}} (v2) or {{chunk_index}}, {{file_index}} "
                "(v3), with an integer format such as :03d"
            )
        fields.append(name)
    if set(fields) & set(PLACEHOLDERS_V2) and set(fields) & set(PLACEHOLDERS_V3):
        raise LogFormatError(f"{where}: 'data_path' {template!r} mixes v2 and v3 placeholders")
    literal = "".join(part[0] for part in parsed)
    pure = PurePosixPath(template.replace("\\", "/"))
    if (
        pure.is_absolute()
        or PureWindowsPath(template).drive
        or ".." in pure.parts
        or ".." in PurePosixPath(literal).parts
    ):
        raise OutsideInputError(
            f"{where}: 'data_path' {template!r} leaves the dataset's folder; it must be a "
            "relative path inside it, without '..'; refusing to read it",
            template,
        )
    return tuple(fields)


def confined(root: Path, relative: str, where: str) -> Path:
    """``root / relative``, refused unless it stays inside ``root`` once symbolic links are
    resolved."""
    path = root / relative
    if not path.resolve().is_relative_to(root.resolve()):
        raise OutsideInputError(
            f"{where}: {relative!r} resolves to {path.resolve()}, outside the dataset's "
            f"folder {root} (a symbolic link); refusing to read it",
            str(path),
        )
    return path


def template_files(root: Path, template: str, where: str) -> list[tuple[Path, dict[str, int]]]:
    """Files under ``root`` whose relative path matches the template, with the numbers of
    their placeholders; found by walking the folder the template's fixed part names."""
    pattern, groups = "", set()
    for literal, name, _spec, _conv in string.Formatter().parse(template):
        pattern += re.escape(literal)
        if name is not None:
            pattern += f"(?P={name})" if name in groups else f"(?P<{name}>\\d+)"
            groups.add(name)
    regex = re.compile(pattern)
    first = template.split("{", 1)[0]
    start = root / first.rsplit("/", 1)[0] if "/" in first else root
    if not start.is_dir():
        return []
    out = []
    for folder, dirs, files in os.walk(start):
        dirs.sort()
        for f in sorted(files):
            path = Path(folder) / f
            rel = path.relative_to(root).as_posix()
            m = regex.fullmatch(rel)
            if m:
                confined(root, rel, where)
                out.append((path, {k: int(v) for k, v in m.groupdict().items()}))
    return out


def _numeric(kind: Any) -> bool:
    from pyarrow import types

    return bool(types.is_integer(kind) or types.is_floating(kind))


def check_columns(file: Path, pq: Any, needed: Mapping[str, str]) -> None:
    """The needed columns of a Parquet file exist, hold numbers or lists of numbers, and
    decode to at most :data:`~wholebody.limits.LIMITS` ``.decoded_values`` values; only the
    footer is read. ``needed``: column -> the field it fills (for messages).

    Raises
    ------
    RecordingError
        A missing column (the message lists those there are) or one of another type (a
        string, a struct, a list of lists), naming the column.
    LogFormatError
        Not a readable Parquet file.
    SizeLimitError
        Too many values.
    """
    try:
        meta = pq.ParquetFile(file).metadata
        schema = meta.schema.to_arrow_schema()
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ...
        raise LogFormatError(f"{file}: not a readable Parquet file: {exc}") from exc
    names = list(schema.names)
    values = 0
    for column, field in needed.items():
        if column not in names:
            raise RecordingError(
                f"{file}: no column {column!r} (for {field}); columns: {', '.join(names)}",
                column,
            )
        kind = schema.field(column).type
        text = str(kind)
        inner = getattr(kind, "value_type", None)
        if not (_numeric(kind) or (inner is not None and _numeric(inner))):
            raise RecordingError(
                f"{file}: column {column!r} (for {field}) holds {text}; a mapped column must "
                "hold numbers or lists of numbers of one length",
                column,
            )
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            for j in range(rg.num_columns):
                path = rg.column(j).path_in_schema
                if path == column or path.startswith(column + "."):
                    values += rg.column(j).num_values
    check_limit(
        "decoded_values",
        values,
        str(file),
        f"the mapped columns hold {values:,} values",
        f"{values * 8 / 1e9:.3g} GB as float64",
    )

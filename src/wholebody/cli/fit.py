"""``wholebody fit LOG... --config PROFILE [--mass] [--com] [--inertia] [--offsets] [--lag]
-o OUT/``.

Fits mass, CoM and rotational-inertia corrections (and sensor offsets, per log, and each
log's wrench lag) to logs and writes, in ``OUT/``: the corrected model,
``<robot>.corrected.urdf`` (only the changed ``<inertial>`` elements rewritten) or, for a
robot loaded from MJCF, ``<model>.corrected.xml`` (a copy with includes inlined and the
changed links' ``<inertial>`` elements written; see :mod:`wholebody.robot.mjcf_writer`),
``calibration.toml`` (with several logs and per-log offsets also ``calibration-<log>.toml``
for each), ``fit.json`` and ``fit.txt`` (the report), and ``profile.toml``: the profile with
the corrected model and the calibration, for ``wholebody check --config``, its paths relative
to itself. When the fitted model predicts held-out time windows worse than the URDF, the
profile is written as ``profile.not-recommended.toml`` instead and the report says so. A
changed link that cannot be written into the MJCF (see the writer) ends the command with a
:class:`~wholebody.errors.ModelError` naming it, after the report is written and before any
model or profile is. A robot from no model file (built in memory) has its ``--mass``/``--com``
/``--inertia`` refused before the fit. :func:`run_fit` is the same in Python.
:func:`add_fit_command` adds the subcommand to the CLI's parser.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidArgumentError, ModelError, OutputError
from ._values import positive_int, tolerance

if TYPE_CHECKING:  # the parser is built on every command: identify is imported by run_fit only
    from ..identify import IdentificationResult
    from ..io.calibration import Calibration
    from ..robot.core import Robot

__all__ = ["add_fit_command", "run_fit", "FitOutputs"]


@dataclass(frozen=True)
class FitOutputs:
    """Files written by :func:`run_fit` and the fit itself."""

    result: IdentificationResult
    urdf: Path | None
    calibration: Path
    report_json: Path
    report_text: Path
    profile: Path | None
    calibrations: tuple[Path, ...] = ()
    notes: tuple[str, ...] = ()
    mjcf: Path | None = None  # the corrected MJCF of a robot loaded from MJCF (urdf is None)


def _parameters(mass: bool, com: bool, inertia: bool = False) -> str | None:
    parts = [n for n, on in (("mass", mass), ("com", com), ("inertia", inertia)) if on]
    return "_".join(parts) or None


def run_fit(
    logs: Sequence[str | Path],
    config: str | Path,
    out: str | Path,
    *,
    mass: bool = True,
    com: bool = False,
    offsets: bool = False,
    links: Sequence[str] | None = None,
    use_torques: bool | None = None,
    prior_weight: float = 1.0,
    inertia: bool = False,
    density: bool = False,
    lags: bool = False,
    max_lag: float = 0.02,
    per_log_offsets: bool = True,
    folds: int = 5,
) -> FitOutputs:
    """Fit the logs with the profile's robot and contacts and write the outputs to ``out``.

    Parameters
    ----------
    logs : paths of log files
    config : path of the robot profile (TOML)
    out : folder (created)
    mass, com, inertia, offsets : what to fit (per-link masses, CoM shifts, rotational
        inertias about the CoM, contact sensor offsets in the contacts' axes)
    links : restrict mass, CoM and inertia to these links
    use_torques, prior_weight, density, lags, max_lag, folds : as in
        :func:`wholebody.identify.fit_inertial_parameters`
    per_log_offsets : each log its own sensor offsets (else shared by all logs)

    Returns
    -------
    FitOutputs
    """
    from ..identify import fit_inertial_parameters
    from ..identify.calibrate import SensorModel
    from ..io.profile import load_profile
    from ..trajectory import Trajectory

    profile = load_profile(config)
    robot = profile.robot
    parameters = _parameters(mass, com, inertia)
    if parameters is None and not offsets:
        raise InvalidArgumentError("nothing to fit: give --mass, --com, --inertia and/or --offsets")
    kind = _model_kind(robot.source)
    if parameters is not None and kind is None:
        # Refused before the fit: its corrected model could not be written.
        raise InvalidArgumentError(
            f"--mass/--com/--inertia: the robot of {config} comes from "
            f"{robot.source or 'memory'}, not a URDF or MJCF file; wholebody writes corrected "
            "inertias into the model file: give the profile a `urdf` or `mjcf`, or fit "
            "--offsets alone"
        )
    trajs = [Trajectory.load(p) for p in logs]
    sensors = SensorModel(offsets=True, per_log=per_log_offsets) if offsets else None
    result = fit_inertial_parameters(
        robot,
        trajs,
        profile.contacts,
        parameters=parameters,
        links=links,
        sensors=sensors,
        use_torques=use_torques,
        prior_weight=prior_weight,
        density=density,
        lags=lags,
        max_lag=max_lag,
        folds=folds,
    )
    return _write_outputs(result, robot, Path(config), Path(out), parameters is not None)


def _write_outputs(
    result: IdentificationResult, robot: Robot, config: Path, folder: Path, model: bool
) -> FitOutputs:
    """Write a fit's outputs into ``folder``: the calibrations, the JSON and text reports,
    the corrected model (with ``model``, when masses, CoMs or inertias were fitted) and the
    profile pointing at them (``profile.not-recommended.toml`` when the fit predicts
    held-out windows worse than the URDF)."""
    kind = _model_kind(robot.source)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder {folder}: {exc}") from exc
    notes: list[str] = []
    calibration: Calibration = result.calibration
    cal_path = folder / "calibration.toml"
    calibration.save(cal_path)
    per_log_paths: list[Path] = []
    per_log = len(result.calibrations) > 1 and any(
        ":" in p.name for p in result.parameters if p.kind.endswith("offset")
    )
    if per_log:
        for log, cal in result.calibrations.items():
            path = folder / f"calibration-{log}.toml"
            cal.save(path)
            per_log_paths.append(path)
        notes.append(
            "each log has its own sensor offsets: calibration-<log>.toml; calibration.toml "
            f"and the profile carry the first log's ({next(iter(result.calibrations))})"
        )
    json_path, text_path = folder / "fit.json", folder / "fit.txt"
    result.to_json(json_path)
    if result.recommended:
        profile_path = folder / "profile.toml"
    else:
        profile_path = folder / "profile.not-recommended.toml"
        notes.append(
            "NOT RECOMMENDED: the fitted model predicts held-out time windows worse than the "
            f"URDF; the profile is written as {profile_path.name}, not profile.toml"
        )
    report = result.format_report() + "\n"
    try:
        text_path.write_text(report + "".join(n + "\n" for n in notes))
    except OSError as exc:
        raise OutputError(f"cannot write to {folder}: {exc}") from exc
    # The model last but one: a link the MJCF cannot take ends the command with the report
    # on disk and no profile pointing at a model that was not written.
    model_path = None
    if model and kind is not None and robot.source is not None:
        model_path = folder / f"{Path(str(robot.source)).stem}.corrected.{kind}"
        if kind == "urdf":
            result.write_urdf(model_path)
        else:
            try:
                notes += result.write_mjcf(model_path).notes
            except ModelError as exc:
                raise ModelError(f"{exc} (the fit's report is in {text_path})") from exc
    try:
        text_path.write_text(report + "".join(n + "\n" for n in notes))
        profile_path.write_text(_corrected_profile(config, model_path, cal_path, folder))
    except OSError as exc:
        raise OutputError(f"cannot write to {folder}: {exc}") from exc
    return FitOutputs(
        result,
        model_path if kind == "urdf" else None,
        cal_path,
        json_path,
        text_path,
        profile_path,
        tuple(per_log_paths),
        tuple(notes),
        model_path if kind == "xml" else None,
    )


def _model_kind(source: str | None) -> str | None:
    """``"urdf"`` (a ``.urdf`` file), ``"xml"`` (a file with a ``<mujoco>`` root) or None
    (no model file)."""
    from ..robot.mjcf import is_mjcf

    if source is not None and source.endswith(".urdf"):
        return "urdf"
    return "xml" if is_mjcf(source) else None


def _relative(path: Path, folder: Path) -> str:
    """``path`` relative to ``folder`` (where the profile is), with forward slashes."""
    return Path(os.path.relpath(path.resolve(), folder.resolve())).as_posix()


def _corrected_profile(config: Path, model: Path | None, calibration: Path, folder: Path) -> str:
    """The profile's text with ``urdf`` or ``mjcf`` pointing at the corrected model and a
    ``calibration`` key, both relative to the written profile's folder (``folder``)."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    text = config.read_text()
    data = tomllib.loads(text)
    lines = [f"# written by wholebody fit from {config.name}; paths relative to this file"]
    if model is not None:
        key = "urdf" if model.suffix == ".urdf" else "mjcf"
        lines.append(f'{key} = "{_relative(model, folder)}"')
    elif "urdf" in data:
        lines.append(f'urdf = "{_relative(config.parent / data["urdf"], folder)}"')
    elif "mjcf" in data:  # an MJCF robot: the profile points at the same model
        lines.append(f'mjcf = "{_relative(config.parent / data["mjcf"], folder)}"')
    else:
        lines.append(f'robot = "{data["robot"]}"')
    if "floating_base" in data:
        lines.append(f"floating_base = {str(data['floating_base']).lower()}")
    lines.append(f'calibration = "{_relative(calibration, folder)}"')
    # The tables ([[frames]], [[contacts]]) as they were.
    body = text[text.index("[[") :] if "[[" in text else ""
    return "\n".join(lines) + "\n\n" + body


def _fit(args: argparse.Namespace) -> int:
    outputs = run_fit(
        args.logs,
        args.config,
        args.output,
        mass=args.mass or not (args.com or args.offsets or args.inertia),
        com=args.com,
        offsets=args.offsets,
        links=args.link,
        use_torques=args.torques,
        prior_weight=args.prior_weight,
        inertia=args.inertia,
        density=args.density,
        lags=args.lag,
        max_lag=args.max_lag / 1e3,
        per_log_offsets=not args.shared_offsets,
        folds=args.folds,
    )
    print(outputs.result.format_report())
    for note in outputs.notes:
        print(note)
    written = [
        p
        for p in (
            outputs.urdf,
            outputs.mjcf,
            outputs.calibration,
            *outputs.calibrations,
            outputs.report_json,
            outputs.report_text,
            outputs.profile,
        )
        if p is not None
    ]
    print("written: " + ", ".join(str(p) for p in written))
    return 0


def add_fit_command(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``fit`` to the CLI's subparsers; its handler returns the exit code."""
    fit = subparsers.add_parser(
        "fit",
        help="fit mass/CoM corrections and sensor offsets to logs",
        description="Fit per-link mass, CoM and inertia corrections and sensor offsets to "
        "logs. Writes to OUT/ the corrected model (<robot>.corrected.urdf; for a robot from "
        "MJCF <model>.corrected.xml: a copy with includes inlined and the changed links' "
        "<inertial> written, a link welded to others changed on its heaviest body, a link "
        "that cannot be written refused by name with exit 2), calibration.toml, fit.json, "
        "fit.txt and profile.toml (paths relative to itself; profile.not-recommended.toml "
        "when the fit predicts held-out data worse than the model).",
    )
    fit.add_argument(
        "logs", nargs="+", help="log files (.npz, .csv, .parquet, .h5), fitted together"
    )
    fit.add_argument("--config", required=True, help="robot profile (TOML)")
    fit.add_argument(
        "--mass",
        action="store_true",
        help="per-link mass corrections (default when nothing is chosen)",
    )
    fit.add_argument("--com", action="store_true", help="per-link CoM shifts")
    fit.add_argument(
        "--inertia", action="store_true", help="per-link rotational inertias (about the CoM)"
    )
    fit.add_argument(
        "--density",
        action="store_true",
        help="a link's rotational inertia scales with its mass (default: mass alone)",
    )
    fit.add_argument(
        "--lag",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="estimate each log's wrench lag behind the motion first and fit the logs shifted "
        "back (default; --no-lag: take the logs as timed)",
    )
    fit.add_argument(
        "--max-lag", type=tolerance, default=20.0, help="largest lag searched [ms] (default 20)"
    )
    fit.add_argument(
        "--shared-offsets",
        action="store_true",
        help="one set of sensor offsets for all logs (default: each log its own)",
    )
    fit.add_argument(
        "--folds",
        type=positive_int,
        default=5,
        help="time windows per log for the held-out comparison with the URDF (default 5; "
        "1: no comparison)",
    )
    fit.add_argument("--offsets", action="store_true", help="6D offsets of each contact's sensor")
    fit.add_argument(
        "--link",
        action="append",
        help="restrict --mass/--com/--inertia to this link (repeat); an MJCF robot's links "
        "are named after their joints",
    )
    fit.add_argument(
        "--torques",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="use the joint-torque rows (default: when every log has torques)",
    )
    fit.add_argument(
        "--prior-weight",
        type=tolerance,
        default=1.0,
        help="weight of the prior toward the URDF (>= 0)",
    )
    fit.add_argument("--output", "-o", required=True, help="output folder")
    fit.set_defaults(func=_fit)
    return fit

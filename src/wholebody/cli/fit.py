"""``wholebody fit LOG... --config PROFILE [--mass] [--com] [--offsets] -o OUT/``.

Fits mass and CoM corrections (and sensor offsets) to logs and writes, in ``OUT/``:
``<robot>.corrected.urdf`` (only the changed ``<inertial>`` elements rewritten),
``calibration.toml``, ``fit.json`` and ``fit.txt`` (the report), and ``profile.toml``: the
profile with the corrected URDF and the calibration, for ``wholebody check --config``.
:func:`run_fit` is the same in Python. :func:`add_fit_command` adds the subcommand to the
CLI's parser.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidArgumentError, OutputError
from ..identify import IdentificationResult, fit_inertial_parameters
from ..identify.calibrate import Calibration, SensorModel
from ..io.profile import load_profile
from ..trajectory import Trajectory

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


def _parameters(mass: bool, com: bool) -> str | None:
    if mass and com:
        return "mass_com"
    if mass:
        return "mass"
    if com:
        return "com"
    return None


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
) -> FitOutputs:
    """Fit the logs with the profile's robot and contacts and write the outputs to ``out``.

    Parameters
    ----------
    logs : paths of log files
    config : path of the robot profile (TOML)
    out : folder (created)
    mass, com, offsets : what to fit (per-link mass scales, CoM shifts, contact sensor
        offsets in the contacts' axes)
    links : restrict mass and CoM to these links
    use_torques, prior_weight : as in :func:`wholebody.identify.fit_inertial_parameters`

    Returns
    -------
    FitOutputs
    """
    profile = load_profile(config)
    robot = profile.robot
    trajs = [Trajectory.load(p) for p in logs]
    parameters = _parameters(mass, com)
    if parameters is None and not offsets:
        raise InvalidArgumentError("nothing to fit: give --mass, --com and/or --offsets")
    sensors = SensorModel(offsets=True) if offsets else None
    result = fit_inertial_parameters(
        robot,
        trajs,
        profile.contacts,
        parameters=parameters,
        links=links,
        sensors=sensors,
        use_torques=use_torques,
        prior_weight=prior_weight,
    )
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder {folder}: {exc}") from exc
    urdf_path = None
    if parameters is not None and robot.source is not None and str(robot.source).endswith(".urdf"):
        urdf_path = folder / f"{Path(robot.source).stem}.corrected.urdf"
        result.write_urdf(urdf_path)
    calibration: Calibration = result.calibration
    cal_path = folder / "calibration.toml"
    calibration.save(cal_path)
    json_path, text_path = folder / "fit.json", folder / "fit.txt"
    result.to_json(json_path)
    text_path.write_text(result.format_report() + "\n")
    profile_path = folder / "profile.toml"
    profile_path.write_text(_corrected_profile(Path(config), urdf_path, cal_path))
    return FitOutputs(result, urdf_path, cal_path, json_path, text_path, profile_path)


def _corrected_profile(config: Path, urdf: Path | None, calibration: Path) -> str:
    """The profile's text with ``urdf`` pointing at the corrected file and a ``calibration``
    key (profile paths are relative to the profile: absolute ones are written)."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    text = config.read_text()
    data = tomllib.loads(text)
    lines = [f"# written by wholebody fit from {config}"]
    if urdf is not None:
        lines.append(f'urdf = "{urdf.resolve()}"')
    elif "urdf" in data:
        lines.append(f'urdf = "{(config.parent / data["urdf"]).resolve()}"')
    else:
        lines.append(f'robot = "{data["robot"]}"')
    if "floating_base" in data:
        lines.append(f"floating_base = {str(data['floating_base']).lower()}")
    lines.append(f'calibration = "{calibration.resolve()}"')
    # The tables ([[frames]], [[contacts]]) as they were.
    body = text[text.index("[[") :] if "[[" in text else ""
    return "\n".join(lines) + "\n\n" + body


def _fit(args: argparse.Namespace) -> int:
    outputs = run_fit(
        args.logs,
        args.config,
        args.output,
        mass=args.mass or not (args.com or args.offsets),
        com=args.com,
        offsets=args.offsets,
        links=args.link,
        use_torques=args.torques,
        prior_weight=args.prior_weight,
    )
    print(outputs.result.format_report())
    written = [
        p
        for p in (
            outputs.urdf,
            outputs.calibration,
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
    fit = subparsers.add_parser("fit", help="fit mass/CoM corrections and sensor offsets to logs")
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
    fit.add_argument("--offsets", action="store_true", help="6D offsets of each contact's sensor")
    fit.add_argument("--link", action="append", help="restrict --mass/--com to this link (repeat)")
    fit.add_argument(
        "--torques",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="use the joint-torque rows (default: when every log has torques)",
    )
    fit.add_argument(
        "--prior-weight", type=float, default=1.0, help="weight of the prior toward the URDF"
    )
    fit.add_argument("--output", "-o", required=True, help="output folder")
    fit.set_defaults(func=_fit)
    return fit

"""``wholebody contacts LOG --config PROFILE.toml``: infer a contact schedule and write it.

Two functions for ``cli.py``: :func:`add_contacts_command` adds the subcommand to the
parser's subparsers, :func:`run_contacts_command` runs it (returns the exit code).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ProfileError

__all__ = ["add_contacts_command", "run_contacts_command"]

# The force trigger's default thresholds as shares of the weight (schedule.force's FORCE_ON
# and FORCE_OFF; not imported here, to keep the parser's imports light).
FORCE_ON_SHARE = 0.02
FORCE_OFF_SHARE = 0.01

CONTACTS_DESCRIPTION = """\
Infer which contacts carry load at each sample of a log (a contact schedule), from the
contact frames' kinematics, from the dynamics, or from the log's contact forces, and write it
as a ContactSchedule (.npz) with a summary (and a timeline figure with --plot).
Units are SI throughout: heights [m], speeds [m/s], durations [s], forces [N].
"""

CONTACTS_EPILOG = """\
examples (from a clone of the repository: its demo log and profile):
  wholebody contacts data/humanoid_squat.npz --config models/humanoid.toml \\
      --method combined --height-on 0.01 --min-contact 0.05 -o schedule.npz --plot schedule.png

  wholebody contacts data/humanoid_squat.npz --robot humanoid \\
      --contact left_sole:surface:0.12:0.05:0.8 --contact right_sole:surface:0.12:0.05:0.8

Exit codes: 0 success; 2 bad input (a log or profile unreadable, bad arguments); 3 nothing to
infer (no sample with finite joint angles and velocities); 4 internal error.
"""


def add_contacts_command(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``contacts`` to ``subparsers`` (from ``parser.add_subparsers()``); its handler is
    :func:`run_contacts_command` (``set_defaults(func=...)``)."""
    p = subparsers.add_parser(
        "contacts",
        help="infer which contacts are active per sample (a contact schedule)",
        description=CONTACTS_DESCRIPTION,
        epilog=CONTACTS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "log",
        help="log file (.npz, .csv, .parquet, .h5; ROS 2 bags / MCAP and LeRobot datasets with "
        "a --config that maps them); SI units: q [m, rad], v [m/s, rad/s], wrenches [N, N m]",
    )
    p.add_argument(
        "--config",
        metavar="PROFILE.toml",
        help="robot profile (TOML): robot, frames, contacts, log mapping (docs/profile.md)",
    )
    p.add_argument(
        "--robot",
        help="robot name (e.g. humanoid, g1), URDF or MJCF path; without --config, give the "
        "contacts with --contact",
    )
    p.add_argument(
        "--contact",
        action="append",
        metavar="SPEC",
        help="a contact, repeat per contact: FRAME:surface:HALF_LENGTH:HALF_WIDTH:MU[:CX:CY] "
        "(a rectangular sole; half sizes and centre CX, CY in the frame's x-y plane [m], MU "
        "friction coefficient [-]) or FRAME:point:MU [-]",
    )
    p.add_argument(
        "--method",
        choices=("auto", "kinematic", "dynamic", "combined", "force"),
        default="auto",
        help="kinematic: height and normal speed of each contact frame; dynamic: the subset "
        "of contacts whose wrenches explain the motion (Newton-Euler, or all equations with "
        "torques); combined: kinematic where dynamically consistent, else the consistent "
        "subset; force: the log's normal forces (Schmitt trigger) gated by the kinematics; "
        "auto: force when the log has the contacts' wrenches, else combined "
        "(default: %(default)s)",
    )
    for flag, kind, default, metavar, help_ in _FORCE_OPTIONS:
        p.add_argument(flag, type=kind, default=default, metavar=metavar, help=help_)
    p.add_argument(
        "--no-torques",
        action="store_true",
        help="dynamic and combined methods: Newton-Euler rows only, even if the log has "
        "joint torques (default: use the torques when logged)",
    )
    for flag, kind, default, metavar, help_ in _THRESHOLDS:
        p.add_argument(flag, type=kind, default=default, metavar=metavar, help=help_)
    p.add_argument(
        "--output",
        "-o",
        default="schedule.npz",
        metavar="FILE.npz",
        help="schedule file to write (.npz) (default: %(default)s)",
    )
    p.add_argument(
        "--plot",
        default=None,
        metavar="FIGURE",
        help=f"also save the timeline figure ({', '.join(FIGURE_SUFFIXES)}; needs "
        "the extra wholebody[plot]) (default: none)",
    )
    p.set_defaults(func=run_contacts_command)
    return p


#: Figure formats ``--plot`` writes (matplotlib's, without a backend of their own).
FIGURE_SUFFIXES = (
    ".png",
    ".pdf",
    ".svg",
    ".svgz",
    ".jpg",
    ".jpeg",
    ".eps",
    ".ps",
    ".tif",
    ".tiff",
    ".webp",
)


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _finite(text: str) -> float:
    return _number(text)


def _non_negative(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _positive(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


#: The force method's thresholds: flag, type, default, metavar, help.
_FORCE_OPTIONS = (
    (
        "--force-on",
        _finite,
        None,
        "N",
        "force method: normal force [N] above which a contact starts (default: "
        f"{100 * FORCE_ON_SHARE:g}%% of the robot's weight m |g|)",
    ),
    (
        "--force-off",
        _finite,
        None,
        "N",
        "force method: normal force [N] below which a contact ends (default: "
        f"{100 * FORCE_OFF_SHARE:g}%% of the robot's weight m |g|)",
    ),
)
#: The ground, the kinematic thresholds, the durations and the dynamic tolerance.
_THRESHOLDS = (
    (
        "--ground-height",
        _finite,
        0.0,
        "Z",
        "height of the ground plane, world z [m] (default: %(default)s m)",
    ),
    (
        "--height-on",
        _non_negative,
        0.005,
        "H",
        "a contact frame below this height above the ground may be in contact [m] "
        "(default: %(default)s m)",
    ),
    (
        "--height-off",
        _non_negative,
        0.01,
        "H",
        "a contact frame above this height above the ground is not in contact [m] "
        "(default: %(default)s m)",
    ),
    (
        "--lift-speed",
        _non_negative,
        0.05,
        "V",
        "rising speed along the normal that ends a contact above --height-on [m/s] "
        "(default: %(default)s m/s)",
    ),
    (
        "--min-contact",
        _non_negative,
        None,
        "T",
        "shortest contact kept [s] (default: 0.02 s; 0 s for the force method)",
    ),
    (
        "--min-flight",
        _non_negative,
        None,
        "T",
        "shortest gap between contacts kept [s] (default: 0.02 s; 0 s for the force method)",
    ),
    (
        "--residual-tolerance",
        _positive,
        None,
        "N",
        "dynamic and combined methods: largest force misfit of a consistent subset of "
        "contacts [N] (default: 1%% of the robot's weight m |g|)",
    ),
)


def _outputs(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """The schedule and figure paths, refused before any work when they cannot be written
    as named (``-o`` a folder writes FOLDER/schedule.npz; any other name must end in .npz)."""
    from ..errors import OutputError

    out = Path(args.output)
    if out.is_dir():
        raise OutputError(
            f"--output {args.output!r}: is a directory; name the .npz file to write (e.g. "
            f"{out / 'schedule.npz'})"
        )
    if out.suffix.lower() != ".npz":
        raise OutputError(
            f"--output {args.output!r}: a schedule is written as .npz; name a .npz file"
        )
    plot = None
    if args.plot is not None:
        plot = Path(args.plot)
        if plot.suffix.lower() not in FIGURE_SUFFIXES:
            raise OutputError(
                f"--plot {args.plot!r}: unknown figure format {plot.suffix!r}; known: "
                f"{', '.join(FIGURE_SUFFIXES)}"
            )
    for path, option in ((out, "--output"), (plot, "--plot")):
        if path is None:
            continue
        folder = path.parent if str(path.parent) else Path(".")
        if not folder.is_dir():
            raise OutputError(f"{option} {str(path)!r}: the folder {folder} does not exist")
        if path.is_dir():
            raise OutputError(f"{option} {str(path)!r}: is a directory")
    return out, plot


def _setup(args: argparse.Namespace) -> tuple[Any, list[Any]]:
    from ..io.profile import load_profile, parse_contact_spec
    from ._values import load_robot

    if args.config:
        profile = load_profile(args.config)
        return profile.robot, list(profile.contacts)
    if not args.robot or not args.contact:
        raise ProfileError("give --config PROFILE.toml, or --robot and at least one --contact")
    return load_robot(args.robot), [parse_contact_spec(s) for s in args.contact]


def _logged_wrenches(traj: Any, contacts: list[Any]) -> Any:
    """The log's wrenches (N, k, 6) in ``contacts`` order, or None when it lacks some."""
    names = [c.name for c in contacts]
    if traj.contact_wrenches is None or not set(names) <= set(traj.contact_names):
        return None
    return np.asarray(traj.contact_wrenches)[:, [traj.contact_names.index(n) for n in names]]


def run_contacts_command(args: argparse.Namespace) -> int:
    """Infer the schedule of ``args.log`` and write it to ``args.output`` (and the figure to
    ``args.plot``); print a summary. Returns 0, or 3 when no sample has finite joint angles
    and velocities (nothing to infer)."""
    from ..io.logs import read_log
    from ..schedule import infer_contact_schedule, infer_schedule_force, plot_schedule

    output, plot = _outputs(args)
    robot, contacts = _setup(args)
    traj = read_log(args.log, mapping=args.config, robot=robot)
    traj = traj.at_frame_origins(robot, contacts)  # wrenches stated at other points
    q, v, a, tau = traj.for_robot(robot)
    usable = np.isfinite(q).all(axis=1) & np.isfinite(v).all(axis=1)
    if not usable.any():
        print(
            f"wholebody: error: {args.log}: nothing to infer: every sample has a NaN or "
            "infinite joint angle, base pose or velocity",
            file=sys.stderr,
        )
        return 3
    wrenches = _logged_wrenches(traj, contacts)
    if args.method == "auto":
        args.method = "force" if wrenches is not None else "combined"
    options = _method_options(args, traj, contacts, wrenches, tau)
    if args.method == "force":
        schedule = infer_schedule_force(robot, q, v, contacts, time=traj.time, **options)
    else:
        if a is None and args.method in ("dynamic", "combined"):
            a = traj.with_accelerations().for_robot(robot)[2]
        schedule = infer_contact_schedule(
            robot, q, v, a, contacts, time=traj.time, method=args.method, **options
        )
    schedule.save(output)
    print(schedule.summary())
    if wrenches is not None:  # the force and kinematic evidence side by side, per contact
        both = schedule
        if schedule.method != "force":
            kinematics = {k: getattr(args, k) for k in _KINEMATIC_OPTIONS}
            both = infer_schedule_force(
                robot, q, v, contacts, time=traj.time, wrenches=wrenches, **kinematics
            )
        agreement = both.parameters["agreement"]
        for j, name in enumerate(both.contact_names):
            force_state = both.evidence["force_state"][:, j]
            kin_state = both.evidence["kinematic_state"][:, j]
            print(
                f"evidence  {name}: force and kinematics agree on {100 * agreement[name]:.1f} % "
                f"of samples (force only {int((force_state & ~kin_state).sum())}, kinematics "
                f"only {int((kin_state & ~force_state).sum())})"
            )
    print(f"written to {output}")
    if plot is not None:
        forces = None
        if traj.contact_wrenches is not None and set(schedule.contact_names) <= set(
            traj.contact_names
        ):
            cols = [traj.contact_names.index(n) for n in schedule.contact_names]
            forces = np.asarray(traj.contact_wrenches)[:, cols, 2]
        plot_schedule(schedule, normal_forces=forces, path=str(plot))
        print(f"figure written to {plot}", file=sys.stdout)
    return 0


#: The kinematic evidence's options (the kinematic, combined and force methods).
_KINEMATIC_OPTIONS = ("ground_height", "height_on", "height_off", "lift_speed")


def _method_options(
    args: argparse.Namespace, traj: Any, contacts: list[Any], wrenches: Any, tau: Any
) -> dict[str, Any]:
    """The keyword arguments of the schedule inference for ``args.method`` (``auto`` already
    resolved): the minimum durations (0 s for the force method, else 0.02 s by default), the
    force thresholds and logged wrenches, the kinematic thresholds, the dynamic tolerance,
    torques and known external wrenches."""
    dwell = 0.0 if args.method == "force" else 0.02
    if args.min_contact is None:
        args.min_contact = dwell
    if args.min_flight is None:
        args.min_flight = dwell
    options: dict[str, Any] = {"min_contact": args.min_contact, "min_flight": args.min_flight}
    if args.method == "force":
        if wrenches is None:
            raise ProfileError(
                f"{args.log}: --method force needs the log's contact wrenches for "
                f"{[c.name for c in contacts]}"
            )
        options |= {"wrenches": wrenches, "force_on": args.force_on, "force_off": args.force_off}
    if args.method in ("kinematic", "combined", "force"):
        options |= {k: getattr(args, k) for k in _KINEMATIC_OPTIONS}
    if args.method in ("dynamic", "combined"):
        options["residual_tolerance"] = args.residual_tolerance
        options["tau"] = None if args.no_torques else tau
        if traj.external_wrenches is not None and len(traj.external_frames):
            options["external_wrenches"] = {
                f: traj.external_wrenches[:, j] for j, f in enumerate(traj.external_frames)
            }
    return options

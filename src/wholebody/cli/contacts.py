"""``wholebody contacts LOG --config PROFILE.toml``: infer a contact schedule and write it.

Two functions for ``cli.py``: :func:`add_contacts_command` adds the subcommand to the
parser's subparsers, :func:`run_contacts_command` runs it (returns the exit code).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

__all__ = ["add_contacts_command", "run_contacts_command"]


def add_contacts_command(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``contacts`` to ``subparsers`` (from ``parser.add_subparsers()``); its handler is
    :func:`run_contacts_command` (``set_defaults(func=...)``)."""
    p = subparsers.add_parser(
        "contacts", help="infer which contacts are active per sample (a contact schedule)"
    )
    p.add_argument("log", help="log file (npz, csv, parquet, h5)")
    p.add_argument("--config", help="robot profile (TOML): robot, frames, contacts")
    p.add_argument("--robot", help="robot name or URDF (without --config)")
    p.add_argument(
        "--contact",
        action="append",
        metavar="SPEC",
        help="FRAME:surface:HALF_LENGTH:HALF_WIDTH:MU[:CX:CY] or FRAME:point:MU (repeat)",
    )
    p.add_argument("--method", choices=("kinematic", "dynamic", "combined"), default="combined")
    p.add_argument(
        "--no-torques",
        action="store_true",
        help="dynamics from Newton-Euler rows only, even if the log has torques",
    )
    p.add_argument("--ground-height", type=float, default=0.0, help="ground plane z [m]")
    p.add_argument("--height-on", type=float, default=0.005, help="contact below this [m]")
    p.add_argument("--height-off", type=float, default=0.01, help="no contact above this [m]")
    p.add_argument(
        "--lift-speed",
        type=float,
        default=0.05,
        help="rising speed that ends a contact above --height-on [m/s]",
    )
    p.add_argument("--min-contact", type=float, default=0.02, help="shortest contact [s]")
    p.add_argument("--min-flight", type=float, default=0.02, help="shortest gap [s]")
    p.add_argument(
        "--residual-tolerance",
        type=float,
        default=None,
        help="largest misfit of a consistent subset [N] (default 1%% of the weight)",
    )
    p.add_argument("--output", "-o", default="schedule.npz", help="schedule file (npz)")
    p.add_argument("--plot", default=None, help="also save the timeline figure (png, pdf)")
    p.set_defaults(func=run_contacts_command)
    return p


def _setup(args: argparse.Namespace) -> tuple[Any, list[Any]]:
    from ..io.profile import ProfileError, load_profile, parse_contact_spec
    from ..models.loading import load
    from ..robot.core import Robot

    if args.config:
        profile = load_profile(args.config)
        return profile.robot, list(profile.contacts)
    if not args.robot or not args.contact:
        raise ProfileError("give --config PROFILE.toml, or --robot and at least one --contact")
    robot = (
        Robot.from_urdf(args.robot, validate="warn")
        if args.robot.endswith(".urdf")
        else load(args.robot)
    )
    return robot, [parse_contact_spec(s) for s in args.contact]


def run_contacts_command(args: argparse.Namespace) -> int:
    """Infer the schedule of ``args.log`` and write it to ``args.output`` (and the figure to
    ``args.plot``); print a summary. Returns 0."""
    from ..io.logs import read_log
    from ..schedule import infer_contact_schedule, plot_schedule

    robot, contacts = _setup(args)
    traj = read_log(args.log, mapping=args.config, robot=robot)
    traj = traj.at_frame_origins(robot, contacts)  # wrenches stated at other points
    q, v, a, tau = traj.for_robot(robot)
    options: dict[str, Any] = {"min_contact": args.min_contact, "min_flight": args.min_flight}
    if args.method in ("kinematic", "combined"):
        options |= {
            "ground_height": args.ground_height,
            "height_on": args.height_on,
            "height_off": args.height_off,
            "lift_speed": args.lift_speed,
        }
    if args.method in ("dynamic", "combined"):
        if a is None:
            a = traj.with_accelerations().for_robot(robot)[2]
        options["residual_tolerance"] = args.residual_tolerance
        options["tau"] = None if args.no_torques else tau
        if traj.external_wrenches is not None and len(traj.external_frames):
            options["external_wrenches"] = {
                f: traj.external_wrenches[:, j] for j, f in enumerate(traj.external_frames)
            }
    schedule = infer_contact_schedule(
        robot, q, v, a, contacts, time=traj.time, method=args.method, **options
    )
    schedule.save(args.output)
    print(schedule.summary())
    print(f"written to {args.output}")
    if args.plot:
        forces = None
        if traj.contact_wrenches is not None and set(schedule.contact_names) <= set(
            traj.contact_names
        ):
            cols = [traj.contact_names.index(n) for n in schedule.contact_names]
            forces = np.asarray(traj.contact_wrenches)[:, cols, 2]
        plot_schedule(schedule, normal_forces=forces, path=args.plot)
        print(f"figure written to {args.plot}", file=sys.stdout)
    return 0

"""Command line: ``wholebody info | check | estimate | demo``.

Exit codes: 0 success (every log consistent), 1 an inconsistent log, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

from .errors import WholebodyError
from .loading import available_robots, load
from .robot import Robot

EXIT_OK, EXIT_INCONSISTENT, EXIT_BAD_INPUT = 0, 1, 2


def _robot(spec: str) -> Robot:
    if spec.endswith(".urdf") or Path(spec).is_file():
        return Robot.from_urdf(spec, validate="warn")
    return load(spec)


def _progress(args: argparse.Namespace) -> bool:
    return sys.stderr.isatty() if args.progress is None else bool(args.progress)


def _setup(args: argparse.Namespace):
    """Robot and contacts from --config, or from --robot and --contact."""
    from .profile import ProfileError, load_profile, parse_contact_spec

    if args.config:
        profile = load_profile(args.config)
        return profile.robot, list(profile.contacts)
    if not args.robot or not args.contact:
        raise ProfileError("give --config PROFILE.toml, or --robot and at least one --contact")
    return _robot(args.robot), [parse_contact_spec(s) for s in args.contact]


def _info(args: argparse.Namespace) -> int:
    robot = _robot(args.robot)
    print(robot.summary())
    if args.frames:
        print("frame names:", ", ".join(robot.frame_names))
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    from .many import check_many, format_table

    robot, contacts = _setup(args)
    options = {"force_tolerance": args.force_tolerance, "moment_tolerance": args.moment_tolerance}
    client = None
    if args.dask:
        from dask.distributed import Client

        client = Client(args.dask)
    if len(args.logs) == 1 and client is None:
        # One log: its samples are shared between the workers.
        options |= {"workers": args.workers, "progress": _progress(args)}
        workers = 1
    else:
        workers = args.workers
    rows = check_many(args.logs, robot, contacts, workers=workers, client=client, out_dir=args.out,
                      plot=args.plot, options=options)
    if args.json:
        print(json.dumps([{k: v for k, v in r.items() if k != "text"} for r in rows], default=float))
    else:
        for r in rows:
            print(r["text"])
            if len(rows) > 1:
                print()
        if len(rows) > 1:
            print(format_table(rows))
    if any(r.get("error") for r in rows):
        if len(rows) == 1:
            print(f"wholebody: error: {rows[0]['error']}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK if all(r["consistent"] for r in rows) else EXIT_INCONSISTENT


def _estimate(args: argparse.Namespace) -> int:
    from .analysis import estimate_trajectory
    from .trajectory import Trajectory

    robot, contacts = _setup(args)
    traj = Trajectory.load(args.log)
    est = estimate_trajectory(robot, traj, contacts, use_torques=not args.no_torques, solver=args.solver,
                              progress=_progress(args))
    est.save(args.output)
    print(f"estimated {len(contacts)} contacts over {len(traj)} samples ({est.metadata['estimation_mode']}): "
          f"{est.metadata['estimation_status']}; written to {args.output}")
    return EXIT_OK


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(out_dir=Path(args.out))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wholebody", description="Whole-body dynamics and contact-wrench checks on Pinocchio.",
        epilog="Exit codes: 0 consistent, 1 inconsistent log, 2 bad input.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="print a robot's mass, sizes, joints and frames")
    info.add_argument("robot", help=f"a URDF path or a name: {', '.join(available_robots())}")
    info.add_argument("--frames", action="store_true", help="also list every frame name")
    info.set_defaults(func=_info)

    def setup_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", help="robot profile (TOML): robot, frames, contacts")
        p.add_argument("--robot", help="robot name or URDF (without --config)")
        p.add_argument("--contact", action="append", metavar="SPEC",
                       help="FRAME:surface:HALF_LENGTH:HALF_WIDTH:MU or FRAME:point:MU (repeat)")
        p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="progress bar (tqdm; default: on when stderr is a terminal)")

    check = sub.add_parser("check", help="check logs' contact wrenches against motion and friction")
    check.add_argument("logs", nargs="+", help="log files (.npz, .csv, .parquet, .h5)")
    setup_args(check)
    check.add_argument("--out", help="folder for report.json, report.csv (and --plot)")
    check.add_argument("--plot", action="store_true", help="also write a figure per log")
    check.add_argument("--json", action="store_true", help="print the summary as JSON")
    check.add_argument("--force-tolerance", type=float, default=0.01, help="relative to m g (default 0.01)")
    check.add_argument("--moment-tolerance", type=float, default=0.01, help="moment / m g [m] (default 0.01)")
    check.add_argument("--workers", type=int, default=1,
                       help="processes: over the samples of one log, or over the logs of many")
    check.add_argument("--dask", metavar="ADDRESS", help="run on a Dask scheduler (tcp://host:8786)")
    check.set_defaults(func=_check)

    estimate = sub.add_parser("estimate", help="estimate contact wrenches of a log by QP")
    estimate.add_argument("log")
    setup_args(estimate)
    estimate.add_argument("--output", "-o", required=True, help="log file to write, with '<name>:estimated' contacts")
    estimate.add_argument("--no-torques", action="store_true", help="Newton-Euler mode even if the log has torques")
    estimate.add_argument("--solver", help="qpsolvers backend (default daqp)")
    estimate.set_defaults(func=_estimate)

    demo = sub.add_parser("demo", help="check the shipped humanoid log and show a diagnosis")
    demo.add_argument("--out", default="out/demo", help="folder for the report and plots")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            return int(args.func(args))
    except (WholebodyError, KeyError, FileNotFoundError) as exc:
        print(f"wholebody: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (``wholebody check ... | head``): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

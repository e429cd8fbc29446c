"""Command line: ``wholebody info ROBOT`` and ``wholebody demo``.

Exit codes: 0 success (a consistent log), 1 an inconsistent log, 2 bad input.
"""

from __future__ import annotations

import argparse
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


def _info(args: argparse.Namespace) -> int:
    robot = _robot(args.robot)
    print(robot.summary())
    if args.frames:
        print("frame names:", ", ".join(robot.frame_names))
    return EXIT_OK


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(out_dir=Path(args.out))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wholebody", description="Whole-body dynamics and contact-wrench checks on Pinocchio."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="print a robot's mass, sizes, joints and frames")
    info.add_argument("robot", help=f"a URDF path or a name: {', '.join(available_robots())}")
    info.add_argument("--frames", action="store_true", help="also list every frame name")
    info.set_defaults(func=_info)
    demo = sub.add_parser("demo", help="run the demonstration on the shipped humanoid")
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


if __name__ == "__main__":
    sys.exit(main())

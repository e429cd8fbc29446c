"""Command line: ``wholebody [--traceback] info | check | estimate | contacts | fit | demo``.

Every error is one line on stderr, ``wholebody: error: ...``, printed once, never a traceback
(``--traceback`` shows it). Arguments are validated before any work.

Exit codes:

===  =====================================================================================
0    every log consistent (``info``, ``estimate``, ``demo``: success)
1    some log inconsistent
2    bad input: a log unreadable, a bad argument, profile, robot, contact or output path,
     an unreachable Dask scheduler
3    nothing could be checked: a log whose verdict is "unchecked" (every sample flagged),
     and no log inconsistent; ``estimate`` or ``contacts`` on a log with no usable sample
4    internal error (a bug: rerun with ``--traceback`` and report it)
5    inconclusive: nothing inconsistent found, but too little evidence for "consistent" (too
     small a share checked, too many samples waived, or an achieved bound wider than the
     tolerance; ``--min-checked-share``, ``--max-waived-share``), and no log inconsistent
130  interrupted (Ctrl-C)
===  =====================================================================================

With several logs of mixed outcomes: 2 if any is unreadable, else 1 if any is inconsistent,
else 3 if any is unchecked, else 5 if any is inconclusive, else 0. Codes 0 and 1 keep their
meaning; 5 is new, so a script that tests ``== 0`` for "consistent" stays right.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import os
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from ..errors import OutputError, ProfileError, WholebodyError, WholebodyWarning
from ..models.loading import available_robots
from ..robot.core import Robot
from ._values import (
    add_robot_arguments,
    finite,
    load_robot,
    positive,
    positive_int,
    robot_and_contacts,
    share,
    tolerance,
)

EXIT_OK, EXIT_INCONSISTENT, EXIT_BAD_INPUT, EXIT_UNCHECKED, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_INCONCLUSIVE = 5
EXIT_INTERRUPTED = 130

EXIT_CODES_HELP = (
    "Exit codes: 0 every log consistent (or success); 1 some log inconsistent; 2 bad input "
    "(a log unreadable, bad arguments); 3 nothing could be checked (a log whose every sample is "
    "flagged, none inconsistent); 4 internal error; 5 inconclusive (too little evidence: "
    "too small a share checked, too many samples waived, a bound wider than the tolerance); "
    "130 interrupted. With several logs: 2 if any unreadable, else 1 if any inconsistent, "
    "else 3 if any unchecked, else 5 if any inconclusive, else 0."
)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``wholebody: error: ... (see 'wholebody check --help')``,
    and "did you mean" for a misspelt command, choice or option."""

    #: The command being parsed (``build_parser``'s), whose options a misspelling is matched to.
    command: str | None = None

    def error(self, message: str) -> NoReturn:
        hint = _did_you_mean(self, message)
        print(f"wholebody: error: {message}{hint} (see '{self.prog} --help')", file=sys.stderr)
        self.exit(EXIT_BAD_INPUT)


def _did_you_mean(parser: _Parser, message: str) -> str:
    """``"; did you mean 'check'?"`` for the closest known words to those ``message`` refuses
    (an invalid choice: the choices it lists; unknown options: the command's options)."""
    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if choice:
        typed = [choice.group(1)]
        known = [w.strip().strip("'") for w in choice.group(2).split(",")]
    elif message.startswith("unrecognized arguments: "):
        typed = [w.split("=")[0] for w in message.split()[2:] if w.startswith("-")]
        known = list(parser._option_string_actions)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) and parser.command in action.choices:
                known += list(action.choices[parser.command]._option_string_actions)
    else:
        return ""
    close = [m for w in typed for m in difflib.get_close_matches(w, known, n=1, cutoff=0.6)]
    return f"; did you mean {' or '.join(repr(m) for m in close)}?" if close else ""


# --- argument types: bad values are refused before any work ---------------------------------


def _workers(text: str) -> int | str:
    """argparse type: ``auto`` or a positive integer."""
    return "auto" if text == "auto" else positive_int(text)


def _dask_address(text: str) -> str:
    """argparse type: a scheduler address ``[scheme://]host:port`` (``tcp://host:8786``)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text if "://" in text else f"tcp://{text}")
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or not port or parts.path or parts.query or parts.fragment:
        raise argparse.ArgumentTypeError(
            f"expected a scheduler address [scheme://]host:port (port 1-65535), e.g. "
            f"tcp://scheduler:8786, got {text!r}"
        )
    return text


def _writable_file(path: Path) -> None:
    """Refuse an output path that cannot be written, before the work that would fill it."""
    from ..io.logs import SUFFIXES

    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory")
    if path.suffix.lower() not in SUFFIXES:
        raise OutputError(
            f"cannot write {path}: unknown log format {path.suffix!r}; known: {', '.join(SUFFIXES)}"
        )
    _writable_dir(path.parent, for_file=path)
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(f"cannot write {path}: the file is not writable")


def _writable_dir(folder: Path, for_file: Path | None = None, create: bool = False) -> None:
    what = f"cannot write {for_file}" if for_file is not None else f"cannot write to {folder}"
    folder = folder if str(folder) else Path(".")
    if not folder.exists():
        for parent in folder.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise OutputError(f"{what}: {parent} is a file, not a directory")
                break
        if not create:
            raise OutputError(f"{what}: the directory {folder} does not exist")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{what}: cannot create the directory: {exc}") from exc
    if not folder.is_dir():
        raise OutputError(f"{what}: {folder} is a file, not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{what}: the directory {folder} is not writable")


# --- commands ---------------------------------------------------------------------------------


def _progress(args: argparse.Namespace) -> bool:
    """``--progress`` (a missing tqdm is then said once), ``--no-progress``, or by default a
    bar when stderr is a terminal and tqdm is installed."""
    if args.progress is None:
        return sys.stderr.isatty() and importlib.util.find_spec("tqdm") is not None
    return bool(args.progress)


def _info(args: argparse.Namespace) -> int:
    robot = load_robot(args.robot)
    print(robot.summary())
    if args.frames:
        print("frame names:", ", ".join(robot.frame_names))
    if args.links:
        from ._info import format_links

        print(format_links(robot))
    return EXIT_OK


def _recorded_robot(robot: Robot, logs: Sequence[str]) -> Robot:
    """``robot`` with the inertias the logs' recorder repaired (``masses="repair"``,
    ``metadata["robot_inertias"]``: :func:`wholebody.sim.robot_for_log`), said in a warning;
    ``robot`` when no log records any. Logs recorded with different repairs are refused."""
    from ..io.logs import SUFFIXES, open_log
    from ..sim import ROBOT_INERTIAS, robot_for_log

    recorded: dict[str, Any] = {}
    for path in logs:
        if Path(path).suffix.lower() not in SUFFIXES or not Path(path).is_file():
            continue  # a recording (its own reader) or a path the check refuses by name
        try:
            with open_log(path) as log:
                recorded[path] = log.metadata.get(ROBOT_INERTIAS) or None
        except WholebodyError:
            continue  # the check names it
    kinds = {json.dumps(r, sort_keys=True) for r in recorded.values()}
    if len(kinds) > 1:
        raise ProfileError(
            f"the logs were recorded with different repaired inertias ({ROBOT_INERTIAS} in "
            f"their metadata): check {', '.join(p for p, r in recorded.items() if r)} apart "
            "from the others"
        )
    inertias = next(iter(recorded.values()), None)
    if not inertias:
        return robot
    warnings.warn(
        f"the log records the inertias its recorder repaired (masses='repair') on bodies "
        f"{sorted(inertias)}: checked with them, not the robot file's",
        WholebodyWarning,
        stacklevel=2,
    )
    return robot_for_log(robot, {ROBOT_INERTIAS: inertias})


def exit_code(rows: Sequence[dict[str, Any]]) -> int:
    """The exit code of ``check`` for its rows (see the module docstring)."""
    verdicts = {r["verdict"] for r in rows}
    if "error" in verdicts:
        return EXIT_BAD_INPUT
    if "inconsistent" in verdicts:
        return EXIT_INCONSISTENT
    if "unchecked" in verdicts:
        return EXIT_UNCHECKED
    if "inconclusive" in verdicts:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    from ..check import CheckOptions
    from ..check.analysis import check_file, error_row

    if args.out is not None:
        _writable_dir(Path(args.out), create=True)
    if args.html is not None:
        _writable_dir(Path(args.html).parent, for_file=Path(args.html))
    robot, contacts, calibration = robot_and_contacts(args)
    robot = _recorded_robot(robot, args.logs)
    options = CheckOptions(
        preset=args.preset,
        force_tolerance=args.force_tolerance,
        moment_tolerance=args.moment_tolerance,
        cone_tolerance=args.cone_tolerance,
        t_start=args.t_start,
        t_stop=args.t_stop,
        sensor_noise=args.sensor_noise,
        **{
            name: getattr(args, name)
            for name in ("min_checked_share", "max_waived_share")
            if getattr(args, name) is not None
        },
    )
    client = None
    if args.dask:
        from ..check.many import connect

        client = connect(args.dask, timeout=args.dask_timeout)
    try:
        if len(args.logs) == 1 and client is None:
            # One log, checked here: its samples are shared between the workers (the row is
            # the one check_many gives; the many-file runner is not imported).
            options = options.replace(workers=args.workers, progress=_progress(args))
            try:
                row = check_file(
                    robot,
                    args.logs[0],
                    contacts,
                    options,
                    args.out,
                    args.plot,
                    calibration,
                    args.config,
                    args.episode,
                    args.html is not None,
                )
            except Exception as exc:  # the log's row says it, as check_many's would
                row = error_row(args.logs[0], f"{type(exc).__name__}: {exc}")
            rows = [row]
        else:
            from ..check.many import check_many

            rows = check_many(
                args.logs,
                robot,
                contacts,
                workers=args.workers,
                client=client,
                calibration=calibration,
                recording=args.config,
                episode=args.episode,
                out_dir=args.out,
                plot=args.plot,
                options=options,
                html=args.html is not None,
            )
    finally:
        if client is not None:
            client.close()
    if args.html is not None:
        from ..check.report_html import many_html

        many_html(rows, args.html, sections=[r.pop("html", None) for r in rows])
    if args.json:
        print(json.dumps(rows, default=float))
    else:
        shown = [r for r in rows if r["verdict"] != "error"]
        for r in shown:
            print(r["text"])
            if len(rows) > 1:
                print()
        if len(rows) > 1:
            from ..check.many import format_table

            print(format_table(rows))
    for r in rows:
        if r["verdict"] == "error":
            error = r["error"] if r["path"] in r["error"] else f"{r['path']}: {r['error']}"
            print(f"wholebody: error: {_one_line(error)}", file=sys.stderr)
    return exit_code(rows)


def _estimate(args: argparse.Namespace) -> int:
    from ..check.analysis import estimate_trajectory
    from ..io.logs import read_log

    _writable_file(Path(args.output))
    robot, contacts, calibration = robot_and_contacts(args)
    traj = read_log(args.log, mapping=args.config, robot=robot, episode=args.episode)
    robot = _recorded_robot(robot, [args.log])
    if calibration is not None:
        traj = calibration.apply(traj, robot)
    est = estimate_trajectory(
        robot,
        traj,
        contacts,
        use_torques=not args.no_torques,
        solver=args.solver,
        progress=_progress(args),
        ground=args.ground_height,
    )
    try:
        est.save(args.output)
    except OSError as exc:
        if isinstance(exc, WholebodyError):
            raise
        raise OutputError(f"cannot write {args.output}: {exc}") from exc
    from ..check.estimate_report import format_estimate_report

    print(format_estimate_report(est, contacts, args.output))
    status = est.metadata.get("estimation_status")
    if isinstance(status, dict) and status and set(status) == {"flagged"}:
        reasons = "; ".join(est.metadata.get("estimation_flagged", {}))
        print(
            f"wholebody: error: {args.log}: nothing could be estimated: every sample is flagged "
            f"({reasons})",
            file=sys.stderr,
        )
        return EXIT_UNCHECKED
    return EXIT_OK


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    _writable_dir(Path(args.out), create=True)
    return run_demo(out_dir=Path(args.out))


def _command(argv: Sequence[str] | None) -> str | None:
    """The command named in ``argv`` (its first word that is not an option), or None."""
    words = sys.argv[1:] if argv is None else argv
    return next((w for w in words if not w.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``wholebody`` argument parser (errors are one line, exit code 2).

    Parameters
    ----------
    command : str, optional
        Parse only this command's arguments: the commands whose arguments live in modules of
        their own (``fit``, ``contacts``) are then named without them, and their modules are
        not imported (``wholebody check`` needs neither). None (default): every command in
        full.
    """
    parser = _Parser(
        prog="wholebody",
        description="Whole-body dynamics and contact-wrench checks on Pinocchio.",
        epilog=EXIT_CODES_HELP,
    )
    parser.command = command
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="on an error, show the Python traceback instead of one line",
    )
    import wholebody

    parser.add_argument("--version", action="version", version=f"wholebody {wholebody.__version__}")
    # Also accepted after the command; SUPPRESS keeps a value given before it.
    common = _Parser(add_help=False)
    common.add_argument(
        "--traceback",
        action="store_true",
        default=argparse.SUPPRESS,
        help="on an error, show the Python traceback instead of one line",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_info_command(sub, common)
    _add_check_command(sub, common)
    _add_estimate_command(sub, common)
    # The commands of modules of their own: in full when named (or for every command), else
    # named only (the usage lists them; their arguments are never parsed by this parser).
    if command in (None, "fit"):
        from .fit import add_fit_command

        add_fit_command(sub)
    else:
        sub.add_parser("fit")
    if command in (None, "contacts"):
        from .contacts import add_contacts_command

        add_contacts_command(sub)
    else:
        sub.add_parser("contacts")
    demo = sub.add_parser(
        "demo", parents=[common], help="check the shipped humanoid log and show a diagnosis"
    )
    demo.add_argument("--out", default="out/demo", help="folder for the report and plots")
    demo.set_defaults(func=_demo)
    return parser


def _add_info_command(sub: Any, common: argparse.ArgumentParser) -> None:
    info = sub.add_parser(
        "info",
        parents=[common],
        epilog=EXIT_CODES_HELP,
        help="print a robot's mass, sizes, joints and frames",
    )
    info.add_argument(
        "robot", help=f"a URDF or MJCF path, or a name: {', '.join(available_robots())}"
    )
    info.add_argument("--frames", action="store_true", help="also list every frame name")
    info.add_argument("--links", action="store_true", help="also list links' mass and CoM")
    info.set_defaults(func=_info)


def _add_setup_arguments(p: argparse.ArgumentParser) -> None:
    """--config, or --robot and --contact; --episode and --progress (check and estimate)."""
    add_robot_arguments(p)
    p.add_argument(
        "--episode",
        type=int,
        default=0,
        help="episode of a LeRobot dataset (default 0)",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar (tqdm; default: on when stderr is a terminal)",
    )


def _add_check_command(sub: Any, common: argparse.ArgumentParser) -> None:
    check = sub.add_parser(
        "check",
        parents=[common],
        epilog=EXIT_CODES_HELP,
        help="check logs' contact wrenches against motion and friction",
    )
    check.add_argument(
        "logs",
        nargs="+",
        help="log files (.npz, .csv, .parquet, .h5); ROS 2 bags / MCAP and LeRobot datasets "
        "with a --config mapping them (docs/recordings.md)",
    )
    _add_setup_arguments(check)
    check.add_argument("--out", help="folder for report.json, report.csv (and --plot)")
    check.add_argument("--plot", action="store_true", help="also write a figure per log")
    check.add_argument(
        "--html",
        metavar="FILE",
        help="also write the report as one HTML page that opens offline",
    )
    check.add_argument(
        "--json", action="store_true", help="print the rows (one per log, fixed keys) as JSON"
    )
    check.add_argument(
        "--preset",
        choices=("physical", "simulation", "measured"),
        default=None,
        help="default tolerances: physical (1 %% m g, 1 cm), simulation (the engine's floor "
        "for its dtype) or measured (from the log's measured noise); default: simulation for a "
        "log whose metadata names its simulator, else physical (docs/diagnosis.md)",
    )
    check.add_argument(
        "--force-tolerance",
        type=tolerance,
        default=None,
        help="residual force, relative to m g (physical preset: 0.01)",
    )
    check.add_argument(
        "--moment-tolerance",
        type=tolerance,
        default=None,
        help="residual moment / m g [m] (physical preset: 0.01)",
    )
    check.add_argument(
        "--cone-tolerance",
        type=tolerance,
        default=None,
        help="cone margin below which a contact violates, relative to m g "
        "(physical and simulation presets: 1e-4)",
    )
    for flag, default, what in (
        ("--min-checked-share", 0.5, "below this share of samples checked (not flagged)"),
        ("--max-waived-share", 0.1, "beyond this share of checked samples waived"),
    ):
        help_ = f"{what} the verdict is inconclusive (default {default:g})"
        check.add_argument(flag, type=share, default=None, metavar="SHARE", help=help_)
    check.add_argument(
        "--t-start",
        type=finite,
        default=None,
        metavar="SECONDS",
        help="check only the samples from this time on",
    )
    check.add_argument(
        "--t-stop",
        type=finite,
        default=None,
        metavar="SECONDS",
        help="check only the samples up to this time",
    )
    check.add_argument(
        "--workers",
        type=_workers,
        default="auto",
        help="processes: over the samples of one log, or over the logs of many (default "
        "auto: one for a log under 50,000 samples or logs under 40 MB in all, where workers "
        "would only cost time; else one per chunk or log up to the CPUs)",
    )
    check.add_argument(
        "--dask",
        type=_dask_address,
        metavar="ADDRESS",
        help="run on a Dask scheduler (tcp://host:8786)",
    )
    check.add_argument(
        "--dask-timeout",
        type=positive,
        default=10.0,
        metavar="SECONDS",
        help="seconds to wait for the Dask scheduler (default 10)",
    )
    check.set_defaults(func=_check)


def _add_estimate_command(sub: Any, common: argparse.ArgumentParser) -> None:
    estimate = sub.add_parser(
        "estimate", parents=[common], help="estimate contact wrenches of a log by QP"
    )
    estimate.add_argument("log", help="a log file, a ROS 2 bag / MCAP or a LeRobot dataset")
    _add_setup_arguments(estimate)
    estimate.add_argument(
        "--output",
        "-o",
        required=True,
        help="log file to write: the log with '<name>:estimated' contacts beside its own, or, "
        "for a log without contact wrenches, with the estimates as its contacts",
    )
    estimate.add_argument(
        "--ground-height",
        type=finite,
        default=0.0,
        metavar="Z",
        help="height of the ground along world z, for the schedule from the kinematics [m] "
        "(default: %(default)s m)",
    )
    estimate.add_argument(
        "--no-torques", action="store_true", help="Newton-Euler mode even if the log has torques"
    )
    estimate.add_argument("--solver", help="qpsolvers backend (default daqp)")
    estimate.set_defaults(func=_estimate)


def _one_line(text: object) -> str:
    return " ".join(str(text).split()) or "(no message)"


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    print(f"wholebody: warning: {_one_line(message)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (see the module docstring)."""
    try:
        args = build_parser(_command(argv)).parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad argument (2, already printed)
        if exc.code is None:
            return EXIT_OK
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = _show_warning
            return int(args.func(args))
    except KeyboardInterrupt:
        if args.traceback:
            raise
        print("wholebody: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``wholebody check ... | head``): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (WholebodyError, OSError) as exc:
        if args.traceback:
            raise
        print(f"wholebody: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:
        if args.traceback:
            raise
        print(
            f"wholebody: internal error: {type(exc).__name__}: {_one_line(exc)} "
            "(rerun with --traceback for details)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())

"""Bad inputs on the command line: one line on stderr, printed once, the right exit code.

Each case is a ``wholebody`` invocation with its expected exit code and a fragment of the one
line it must print on stderr (``wholebody: error: ...``). They run in this process through
``wholebody.cli.main``; a few run again as subprocesses to show that no traceback reaches the
user. Exit codes: 0 consistent, 1 inconsistent, 2 bad input, 3 nothing checked, 4 internal
error, 130 interrupted.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import wholebody.cli.commands as cli
from wholebody.cli import main
from wholebody.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
LOG = str(ROOT / "data" / "humanoid_squat.npz")
PROFILE = str(ROOT / "models" / "humanoid.toml")
FEET = [
    "--robot",
    "humanoid",
    "--contact",
    "left_sole:surface:0.12:0.05:1.0",
    "--contact",
    "right_sole:surface:0.12:0.05:1.0",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    """Paths the cases refer to by ``{name}``."""
    tmp = tmp_path_factory.mktemp("bad_inputs")
    (tmp / "folder").mkdir()
    (tmp / "folder.npz").mkdir()
    (tmp / "plain").write_text("a regular file\n")
    traj = Trajectory.load(LOG)
    assert traj.a is not None and traj.tau is not None
    short = Trajectory(
        traj.time[:20],
        traj.q[:20],
        traj.v[:20],
        traj.a[:20],
        traj.tau[:20],
        traj.joint_names,
        traj.contact_names,
        traj.contact_wrenches[:20],
    )
    short.save(tmp / "short.npz")
    dataclasses.replace(traj, q=np.full_like(traj.q, np.nan)).save(tmp / "all_nan.npz")
    (tmp / "bad_include.xml").write_text('<mujoco><include file="nowhere.xml"/></mujoco>')
    (tmp / "outside.xml").write_text('<mujoco><include file="/etc/passwd"/></mujoco>')
    # A URDF whose robot name is Latin-1, not UTF-8.
    (tmp / "latin1.urdf").write_bytes(b'<?xml version="1.0"?>\n<robot name="r\xe9"></robot>\n')
    return {
        "tmp": str(tmp),
        "folder": str(tmp / "folder"),
        "folder_npz": str(tmp / "folder.npz"),
        "plain": str(tmp / "plain"),
        "short": str(tmp / "short.npz"),
        "all_nan": str(tmp / "all_nan.npz"),
        "log": LOG,
        "profile": PROFILE,
    }


# (id, argv, exit code, fragment of the one stderr line)
CASES = [
    ("profile-missing", ["check", "{log}", "--config", "{tmp}/nope.toml"], 2, "nope.toml"),
    ("profile-is-a-directory", ["check", "{log}", "--config", "{folder}"], 2, "{folder}"),
    ("no-profile-no-robot", ["check", "{log}"], 2, "give --config PROFILE.toml, or --robot"),
    ("unknown-robot-info", ["info", "talo"], 2, "robot 'talo' not found; did you mean 'talos'"),
    (
        "unknown-robot-check",
        ["check", "{log}", "--robot", "talo", "--contact", "a:point:1"],
        2,
        "robot 'talo' not found",
    ),
    (
        "unknown-frame-in-contact",
        [
            "check",
            "{log}",
            "--robot",
            "humanoid",
            "--contact",
            "lft_sole:point:1",
            "--contact",
            "right_sole:point:1",
        ],
        2,
        "lft_sole",
    ),
    (
        "malformed-contact",
        ["check", "{log}", "--robot", "humanoid", "--contact", "left_sole:box:1"],
        2,
        "expected FRAME:surface",
    ),
    (
        "workers-0",
        ["check", "{log}", "--config", "{profile}", "--workers", "0"],
        2,
        "argument --workers: must be a positive integer, got '0'",
    ),
    (
        "workers-0-many-logs",
        ["check", "{log}", "{log}", "--config", "{profile}", "--workers", "0"],
        2,
        "argument --workers: must be a positive integer",
    ),
    (
        "workers-negative",
        ["check", "{log}", "--config", "{profile}", "--workers", "-2"],
        2,
        "got '-2'",
    ),
    (
        "workers-not-a-number",
        ["check", "{log}", "--config", "{profile}", "--workers", "two"],
        2,
        "got 'two'",
    ),
    (
        "force-tolerance-nan",
        ["check", "{log}", "--config", "{profile}", "--force-tolerance", "nan"],
        2,
        "argument --force-tolerance: must be a finite number >= 0",
    ),
    (
        "force-tolerance-inf",
        ["check", "{log}", "--config", "{profile}", "--force-tolerance", "inf"],
        2,
        "got 'inf'",
    ),
    (
        "force-tolerance-negative",
        ["check", "{log}", "--config", "{profile}", "--force-tolerance=-0.01"],
        2,
        "got '-0.01'",
    ),
    (
        "moment-tolerance-negative",
        ["check", "{log}", "--config", "{profile}", "--moment-tolerance=-1"],
        2,
        "argument --moment-tolerance: must be a finite number >= 0, got '-1'",
    ),
    (
        "cone-tolerance-negative",
        ["check", "{log}", "--config", "{profile}", "--cone-tolerance=-1e-4"],
        2,
        "argument --cone-tolerance",
    ),
    (
        "dask-timeout-zero",
        ["check", "{log}", "--config", "{profile}", "--dask", "x:1", "--dask-timeout", "0"],
        2,
        "argument --dask-timeout: must be a positive number of seconds, got '0'",
    ),
    ("unknown-command", ["chek", "{log}"], 2, "invalid choice: 'chek'"),
    (
        "unknown-option",
        ["check", "{log}", "--config", "{profile}", "--forse-tolerance", "1"],
        2,
        "unrecognized arguments: --forse-tolerance",
    ),
    ("log-missing", ["check", "{tmp}/nope.npz", "--config", "{profile}"], 2, "nope.npz"),
    ("log-is-a-directory", ["check", "{folder_npz}", "--config", "{profile}"], 2, "{folder_npz}"),
    (
        "log-unreadable-among-many",
        ["check", "{log}", "{tmp}/nope.npz", "--config", "{profile}"],
        2,
        "nope.npz",
    ),
    (
        "check-out-under-a-file",
        ["check", "{log}", "--config", "{profile}", "--out", "{plain}/reports"],
        2,
        "{plain} is a file, not a directory",
    ),
    (
        "estimate-into-missing-directory",
        ["estimate", "{short}", "--config", "{profile}", "-o", "{tmp}/missing/est.npz"],
        2,
        "the directory {tmp}/missing does not exist",
    ),
    (
        "estimate-onto-a-directory",
        ["estimate", "{short}", "--config", "{profile}", "-o", "{folder_npz}"],
        2,
        "{folder_npz}: it is a directory",
    ),
    (
        "estimate-under-a-regular-file",
        ["estimate", "{short}", "--config", "{profile}", "-o", "{plain}/est.npz"],
        2,
        "{plain} is a file, not a directory",
    ),
    (
        "estimate-unknown-format",
        ["estimate", "{short}", "--config", "{profile}", "-o", "{tmp}/est.txt"],
        2,
        "unknown log format '.txt'",
    ),
    # The output is validated before anything else: the log does not even exist here.
    (
        "estimate-output-checked-first",
        ["estimate", "{tmp}/nope.npz", "--config", "{profile}", "-o", "{tmp}/missing/est.npz"],
        2,
        "missing does not exist",
    ),
    # contacts: options and outputs refused before any work, naming the option (issue 26).
    (
        "contacts-plot-format",
        ["contacts", "{short}", "--config", "{profile}", "-o", "{tmp}/s.npz", "--plot", "x.xyz"],
        2,
        "--plot 'x.xyz': unknown figure format '.xyz'",
    ),
    (
        "contacts-min-contact-negative",
        ["contacts", "{short}", "--config", "{profile}", "--min-contact", "-1"],
        2,
        "argument --min-contact: must be >= 0, got '-1'",
    ),
    (
        "contacts-min-flight-nan",
        ["contacts", "{short}", "--config", "{profile}", "--min-flight", "nan"],
        2,
        "argument --min-flight: expected a finite number, got 'nan'",
    ),
    (
        "contacts-residual-zero",
        ["contacts", "{short}", "--config", "{profile}", "--residual-tolerance", "0"],
        2,
        "argument --residual-tolerance: must be > 0, got '0'",
    ),
    (
        "contacts-output-not-npz",
        ["contacts", "{short}", "--config", "{profile}", "-o", "{tmp}/schedule"],
        2,
        "--output '{tmp}/schedule': a schedule is written as .npz",
    ),
    (
        "contacts-output-folder-missing",
        ["contacts", "{short}", "--config", "{profile}", "-o", "{tmp}/missing/s.npz"],
        2,
        "the folder {tmp}/missing does not exist",
    ),
    (
        "contacts-all-nan",
        ["contacts", "{all_nan}", "--config", "{profile}", "-o", "{tmp}/s.npz"],
        3,
        "nothing to infer: every sample has a NaN or infinite joint angle",
    ),
    (
        "estimate-all-nan",
        ["estimate", "{all_nan}", "--config", "{profile}", "-o", "{tmp}/e.npz"],
        3,
        "nothing could be estimated: every sample is flagged",
    ),
    (
        "info-mjcf-missing-include",
        ["info", "{tmp}/bad_include.xml"],
        2,
        "<include file='nowhere.xml'>: no such file",
    ),
    # Issue 37: command-line values checked before any work, typed errors naming them.
    (
        "fit-folds-0",
        ["fit", "{short}", "--config", "{profile}", "-o", "{tmp}/fit", "--folds", "0"],
        2,
        "argument --folds: must be a positive integer, got '0'",
    ),
    (
        "contacts-height-on-negative",
        ["contacts", "{short}", "--config", "{profile}", "--height-on", "-1", "-o", "{tmp}/h.npz"],
        2,
        "argument --height-on: must be >= 0, got '-1'",
    ),
    (
        "contacts-output-an-existing-folder",
        ["contacts", "{short}", "--config", "{profile}", "-o", "{folder}"],
        2,
        "--output '{folder}': is a directory; name the .npz file to write",
    ),
    (
        "info-urdf-not-utf8",
        ["info", "{tmp}/latin1.urdf"],
        2,
        "latin1.urdf: not UTF-8 text (an invalid byte at offset 36)",
    ),
    (
        "check-dask-malformed-address",
        ["check", "{short}", "--config", "{profile}", "--dask", "tcp://host:port"],
        2,
        "argument --dask: expected a scheduler address [scheme://]host:port",
    ),
    (
        "check-robot-mjcf-outside",
        ["check", "{short}", "--robot", "{tmp}/outside.xml", "--contact", "left_sole:point:1"],
        2,
        "<include file='/etc/passwd'> leaves the model's folder",
    ),
]


def fill(argv: list[str], files: dict[str, str]) -> list[str]:
    return [a.format(**files) for a in argv]


@pytest.mark.parametrize(
    ("argv", "code", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_one_line_and_exit_2(files, capsys, argv, code, fragment):
    assert main(fill(argv, files)) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # exactly one line, printed once
    assert err.startswith("wholebody: error: ")
    assert fragment.format(**files) in err
    assert "Traceback" not in err


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="root writes into read-only directories (os.access says so too)",
)
def test_estimate_into_a_read_only_directory(files, capsys, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert (
            main(["estimate", files["short"], "--config", PROFILE, "-o", str(locked / "est.npz")])
            == 2
        )
    finally:
        locked.chmod(0o700)
    err = capsys.readouterr().err
    assert (
        err == f"wholebody: error: cannot write {locked / 'est.npz'}: the directory {locked} "
        "is not writable\n"
    )


def test_a_log_with_every_row_nan_is_unchecked_exit_3(files, capsys):
    assert main(["check", files["all_nan"], "--config", PROFILE]) == 3
    out = capsys.readouterr()
    assert out.err == ""  # not an error: a verdict of its own
    assert "samples   1000 in = 0 checked + 1000 flagged" in out.out
    assert out.out.rstrip().endswith("verdict   UNCHECKED (no sample could be checked)")
    assert main(["check", files["all_nan"], LOG, "--config", PROFILE]) == 3
    table = capsys.readouterr().out.splitlines()
    assert table[-3].startswith("all_nan.npz") and table[-3].endswith("UNCHECKED")
    assert table[-1] == "2 logs: 1 consistent, 0 inconsistent, 1 unchecked, 0 unreadable"


def test_an_unreachable_dask_scheduler_fails_in_time(files, capsys):
    pytest.importorskip("dask.distributed")
    t0 = time.monotonic()
    code = main(["check", LOG, "--config", PROFILE, "--dask", "127.0.0.1:1", "--dask-timeout", "1"])
    elapsed = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code == 2 and elapsed < 5.0
    assert err.count("\n") == 1
    assert err.startswith(
        "wholebody: error: cannot reach the Dask scheduler at '127.0.0.1:1' within 1 s"
    )


def test_an_internal_error_is_one_line_exit_4_and_traceback_on_request(monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("something\nbroke")

    monkeypatch.setattr(cli, "_info", broken)
    assert main(["info", "humanoid"]) == 4
    assert capsys.readouterr().err == (
        "wholebody: internal error: RuntimeError: something broke "
        "(rerun with --traceback for details)\n"
    )
    for argv in (["--traceback", "info", "humanoid"], ["info", "humanoid", "--traceback"]):
        with pytest.raises(RuntimeError, match="something"):
            main(argv)


def test_a_library_error_is_raised_with_traceback(capsys):
    from wholebody.errors import RobotNotFoundError

    with pytest.raises(RobotNotFoundError):
        main(["--traceback", "info", "talo"])


def test_an_interrupt_is_one_line_exit_130(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_info", interrupted)
    assert main(["info", "humanoid"]) == 130
    assert capsys.readouterr().err == "wholebody: interrupted\n"


def test_help_exits_0(capsys):
    assert main(["check", "--help"]) == 0
    assert "--cone-tolerance" in capsys.readouterr().out


# Each case also runs through main() above; as subprocesses (1-2 s of imports each), two by
# default and the rest with the slow tests.
SUBPROCESS_CASES = [
    "profile-is-a-directory",
    "log-is-a-directory",
    pytest.param("workers-0", marks=pytest.mark.slow),
    pytest.param("force-tolerance-nan", marks=pytest.mark.slow),
    pytest.param("estimate-onto-a-directory", marks=pytest.mark.slow),
    pytest.param("estimate-under-a-regular-file", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("case", SUBPROCESS_CASES)
def test_no_traceback_reaches_the_user(files, case):
    _, argv, code, fragment = next(c for c in CASES if c[0] == case)
    result = subprocess.run(
        [sys.executable, "-m", "wholebody.cli", *fill(argv, files)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert result.returncode == code
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("wholebody: error: ")
    assert fragment.format(**files) in result.stderr
    assert "Traceback" not in result.stderr


def test_contacts_writes_where_it_says(files, capsys, tmp_path):
    """A .npz name is written as given (no suffix appended behind the user's back); an existing
    folder is refused (``-o FOLDER``, issue 37), nothing written in it."""
    target = tmp_path / "s.npz"
    assert main(["contacts", files["short"], "--config", PROFILE, "-o", str(target)]) == 0
    assert f"written to {target}\n" in capsys.readouterr().out and target.is_file()
    assert main(["contacts", files["short"], "--config", PROFILE, "-o", str(tmp_path)]) == 2
    assert not (tmp_path / "schedule.npz").exists()


def test_misspelt_command_and_option_get_did_you_mean(files, capsys):
    assert main(["chek", files["short"]]) == 2
    assert "invalid choice: 'chek'" in capsys.readouterr().err
    # the suggestion is the closest known word (difflib), for commands, choices and options
    cases = [
        (["chek", files["short"]], "did you mean 'check'?"),
        (["check", files["short"], "--confg", PROFILE], "did you mean '--config'?"),
        (["check", files["short"], "--preset", "simul"], "did you mean 'simulation'?"),
        (["contacts", files["short"], "--hieght-on", "1"], "did you mean '--height-on'?"),
        (["info", "humanoid", "--frmes"], "did you mean '--frames'?"),
    ]
    for argv, hint in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and hint in err, (argv, err)
    assert main(["check", files["short"], "--zzzzzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err  # nothing close: no guess


def test_progress_without_tqdm_is_said_once(files, capsys, monkeypatch):
    import builtins

    from wholebody import parallel as _progress

    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name.startswith("tqdm"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    monkeypatch.setattr(_progress, "_SAID", [])
    for _ in range(2):
        assert main(["check", files["short"], "--config", PROFILE, "--progress"]) == 0
    err = capsys.readouterr().err
    assert err.count("no progress bar: tqdm is not installed (pip install tqdm") == 1, err


@pytest.mark.parametrize("kind", ["device", "fifo", "calibration-device", "urdf-device"])
def test_a_profile_or_calibration_that_is_no_regular_file_is_refused_not_read(
    tmp_path, capsys, kind
):
    # /dev/zero or a pipe would be read forever (the command hung): refused before any read,
    # naming the path.
    log = str(ROOT / "data" / "humanoid_squat.npz")
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    if kind == "device":
        config, named = "/dev/zero", "/dev/zero"
    elif kind == "fifo":
        config, named = str(fifo), str(fifo)
    else:
        text = Path(PROFILE).read_text()
        if kind == "calibration-device":
            text = 'calibration = "/dev/zero"\n' + text
            named = "/dev/zero"
        else:
            text = text.replace('robot = "humanoid"', 'urdf = "/dev/zero"')
            named = "/dev/zero"
        config = str(tmp_path / "profile.toml")
        Path(config).write_text(text)
    assert main(["check", log, "--config", config]) == 2
    err = capsys.readouterr().err
    assert err.startswith("wholebody: error: ") and named in err, err
    assert "regular file" in err, err


@pytest.mark.parametrize("command", ["estimate", "contacts"])
def test_one_nan_time_stamp_names_the_sample_and_keeps_the_log(tmp_path, capsys, command):
    """Issue 37 (a regression): one NaN time stamp rejected the whole log ("time must be
    finite and increasing"); the sample is named and the rest processed."""
    traj = Trajectory.load(LOG)
    t = traj.time.copy()
    t[500] = np.nan
    dataclasses.replace(traj, time=t).save(tmp_path / "nan_time.npz")
    out = str(tmp_path / ("e.npz" if command == "estimate" else "s.npz"))
    assert main([command, str(tmp_path / "nan_time.npz"), "--config", PROFILE, "-o", out]) == 0
    captured = capsys.readouterr()
    assert "time stamps of samples [500] are not finite" in captured.err
    assert "1000 samples" in captured.out

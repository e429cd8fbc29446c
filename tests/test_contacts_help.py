"""``wholebody contacts --help`` says each option's unit and default, and its examples run."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from wholebody.cli import build_parser, main
from wholebody.cli.contacts import FORCE_OFF_SHARE, FORCE_ON_SHARE, add_contacts_command
from wholebody.schedule.force import FORCE_OFF, FORCE_ON

ROOT = Path(__file__).resolve().parents[1]

# Every option with a physical value, and its unit (SI).
UNITS = {
    "--force-on": "[N]",
    "--force-off": "[N]",
    "--ground-height": "[m]",
    "--height-on": "[m]",
    "--height-off": "[m]",
    "--lift-speed": "[m/s]",
    "--min-contact": "[s]",
    "--min-flight": "[s]",
    "--residual-tolerance": "[N]",
    "--contact": "[m]",
}


def _contacts_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wholebody")
    return add_contacts_command(parser.add_subparsers())


def _help_of(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each option's help text as ``--help`` prints it (``%(default)s`` filled in)."""
    formatter = parser._get_formatter()
    out = {}
    for action in parser._actions:
        if action.help and action.help is not argparse.SUPPRESS:
            name = action.option_strings[0] if action.option_strings else action.dest
            out[name] = formatter._expand_help(action)
    return out


def test_help_names_every_options_unit_and_default():
    parser = _contacts_parser()
    helps = _help_of(parser)
    numeric = {
        a.option_strings[0]
        for a in parser._actions
        if a.option_strings and a.type is not None and a.type is not str
    }
    # Failing direction: a numeric option without a unit in this table fails here.
    assert numeric <= set(UNITS), f"numeric options without a stated unit: {numeric - set(UNITS)}"
    for option, unit in UNITS.items():
        assert unit in helps[option], f"{option}: {helps[option]!r} does not say {unit}"
    for action in parser._actions:
        name = action.option_strings[0] if action.option_strings else ""
        if name in ("", "-h", "--config", "--robot", "--contact"):
            continue  # no default: the log, the help, the robot (one of them is needed)
        text = helps[name]
        assert "default" in text, f"{name} does not say its default"
        if action.default not in (None, False):
            assert f"default: {action.default}" in text
    # The printed defaults of the force trigger are those of the code that applies them.
    assert (FORCE_ON_SHARE, FORCE_OFF_SHARE) == (FORCE_ON, FORCE_OFF)
    assert "2% of the robot's weight" in helps["--force-on"]
    printed = parser.format_help()
    assert "[m/s]" in printed and "examples" in printed and "Exit codes" in printed


def test_help_is_the_one_the_cli_prints(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["contacts", "--help"])
    out = capsys.readouterr().out
    for unit in set(UNITS.values()):
        assert unit in out
    assert "wholebody contacts data/humanoid_squat.npz" in out


def test_the_examples_in_the_help_run(tmp_path, monkeypatch):
    """Each example command of the epilog, run from the repository root (its demo log and
    profile), writes a schedule (the figure only where matplotlib is installed)."""
    epilog = _contacts_parser().epilog
    commands = re.findall(r"^  (wholebody contacts .*?)(?:\n\n|\Z)", epilog, re.S | re.M)
    assert len(commands) == 2
    monkeypatch.chdir(ROOT)
    for i, command in enumerate(commands):
        args = shlex.split(command.replace("\\\n", " "))[1:]
        out = tmp_path / f"schedule{i}.npz"
        if "-o" in args:
            args[args.index("-o") + 1] = str(out)
        else:
            args += ["-o", str(out)]
        if "--plot" in args:
            try:
                import matplotlib  # noqa: F401

                args[args.index("--plot") + 1] = str(tmp_path / f"schedule{i}.png")
            except ImportError:
                del args[args.index("--plot") : args.index("--plot") + 2]
        assert main(args) == 0, command
        assert out.exists()

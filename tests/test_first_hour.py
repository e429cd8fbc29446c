"""What a new user meets in the first hour: --version, info --links, one progress bar per run,
--workers auto that never makes a small log slower, a single-sample estimate that reuses its
cones."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import wholebody as wb
from wholebody import parallel
from wholebody.check import CheckOptions
from wholebody.check.analysis import check_trajectory
from wholebody.check.many import auto_log_workers
from wholebody.cli import main
from wholebody.contacts import SurfaceContact
from wholebody.estimation import estimate_contact_wrenches
from wholebody.models import data_dir, models_dir
from wholebody.trajectory import Trajectory

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
LOG = data_dir() / "humanoid_squat.npz"
FEET = [
    SurfaceContact(f, half_length=0.12, half_width=0.05, mu=1.0)
    for f in ("left_sole", "right_sole")
]


def test_version(capsys):
    with pytest.raises(SystemExit) as done:  # argparse's version action exits 0
        wb.cli.build_parser().parse_args(["--version"])
    assert done.value.code == 0
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out.strip() == f"wholebody {version}"
    assert main(["--version"]) == 0


def test_info_links_lists_mass_and_com_of_each_urdf_link(capsys):
    assert main(["info", "humanoid", "--links"]) == 0
    out = capsys.readouterr().out
    shown = {}
    for line in out.splitlines():
        m = re.match(r"(\S+)\s+(\S+)\s+([\d.e+-]+)\s+\[(\S+) (\S+) (\S+)\]$", line)
        if m:
            shown[m.group(1)] = (float(m.group(3)), [float(m.group(i)) for i in (4, 5, 6)])
    # A second source: the URDF's own <inertial> elements.
    urdf = ET.parse(models_dir() / "humanoid.urdf").getroot()
    expected = {}
    for link in urdf.iter("link"):
        inertial = link.find("inertial")
        if inertial is None or float(inertial.find("mass").get("value")) <= 0:
            continue
        origin = inertial.find("origin")
        xyz = [0.0, 0.0, 0.0] if origin is None else [float(x) for x in origin.get("xyz").split()]
        expected[link.get("name")] = (float(inertial.find("mass").get("value")), xyz)
    assert set(shown) == set(expected)
    for name, (mass, com) in expected.items():
        assert shown[name][0] == pytest.approx(mass, rel=1e-3)
        np.testing.assert_allclose(shown[name][1], com, atol=5e-5)
    total = float(re.search(r"links with mass, ([\d.]+) kg in all", out).group(1))
    assert total == pytest.approx(wb.load("humanoid").mass, abs=5e-5)


class _Bars:
    """Stands in for tqdm: records every bar made and how far it got."""

    made: list[_Bars] = []

    def __init__(self, iterable=None, total=None, **kwargs):
        self.total, self.n, self.iterable = total, 0, iterable
        _Bars.made.append(self)

    def __iter__(self):
        for x in self.iterable:
            self.n += 1
            yield x

    def update(self, n=1):
        self.n += n

    def close(self):
        pass


@pytest.mark.parametrize("workers", [1, 2])
def test_one_progress_bar_per_run_not_per_chunk(monkeypatch, humanoid, workers):
    import tqdm.auto

    monkeypatch.setattr(tqdm.auto, "tqdm", _Bars)
    _Bars.made = []
    traj = Trajectory.load(LOG)
    check_trajectory(
        humanoid, traj, FEET, CheckOptions(chunk_size=300, workers=workers, progress=True)
    )
    assert [(b.total, b.n) for b in _Bars.made] == [(len(traj), len(traj))]


def test_auto_workers_choice():
    cpus = parallel.default_workers()
    below = parallel.AUTO_MIN_SAMPLES - 1
    assert parallel.auto_workers(below, 10) == 1  # short: one process, however chunked
    assert parallel.auto_workers(10**6, 10**7) == 1  # one chunk: nothing to share
    assert parallel.auto_workers(10**6, 10**5) == min(cpus, 10)
    assert parallel.auto_workers(10**6, 5 * 10**5) == min(cpus, 2)


def test_auto_workers_never_start_processes_for_a_short_log(monkeypatch, humanoid):
    def refuse(*args, **kwargs):
        raise AssertionError("worker processes started for a short log")

    monkeypatch.setattr(parallel, "_run_on_processes", refuse)
    traj = Trajectory.load(LOG)
    auto = check_trajectory(humanoid, traj, FEET, CheckOptions(workers="auto", chunk_size=100))
    one = check_trajectory(humanoid, traj, FEET, CheckOptions(workers=1, chunk_size=100))
    np.testing.assert_array_equal(auto.residual_force, one.residual_force)
    assert auto.verdict == one.verdict == "consistent"


def test_auto_workers_over_many_logs(monkeypatch, tmp_path):
    paths = [LOG, LOG, LOG]
    assert auto_log_workers(paths) == 1  # 3 short logs: one process checks them faster
    assert auto_log_workers([LOG]) == 1
    monkeypatch.setattr("wholebody.check.many.AUTO_MIN_BYTES", 0)
    assert auto_log_workers(paths) == min(parallel.default_workers(), 3)


def test_cli_workers_auto_is_the_default(capsys):
    config = str(models_dir() / "humanoid.toml")
    assert wb.cli.build_parser().parse_args(["check", "x.npz"]).workers == "auto"
    assert main(["check", str(LOG), "--config", config, "--workers", "auto"]) == 0
    assert main(["check", str(LOG), "--config", config, "--workers", "0"]) == 2
    assert "--workers: must be a positive integer" in capsys.readouterr().err


def test_single_estimate_reuses_its_cones_by_value(monkeypatch, humanoid):
    """The contact set is built once per set of contacts; a contact changed by value gets
    its own (the cones of the new friction coefficient)."""
    import threading

    from wholebody.estimation import _samples

    built = []
    real = _samples.ContactSet

    def counting(*args, **kwargs):
        built.append(args)
        return real(*args, **kwargs)

    # The workspaces kept per thread, each with its contact set.
    monkeypatch.setattr(_samples, "ContactSet", counting)
    monkeypatch.setattr(_samples, "_LOCAL", threading.local())
    q = humanoid.q_from_named({}, base_position=[0, 0, 0.94])
    v = np.zeros(humanoid.nv)
    a = np.zeros(humanoid.nv)
    a[0] = 0.5  # accelerating forward: |f_t| / f_n = 0.05 needed, the CoPs inside the soles
    first = estimate_contact_wrenches(humanoid, q, v, a, FEET)
    again = estimate_contact_wrenches(humanoid, q, v, a, list(FEET))
    assert len(built) == 1
    np.testing.assert_array_equal(first.wrenches["left_sole"], again.wrenches["left_sole"])
    slippery = [SurfaceContact(c.frame, half_length=0.12, half_width=0.05, mu=0.02) for c in FEET]
    slip = estimate_contact_wrenches(humanoid, q, v, a, slippery)
    assert [c.mu for c in built[1][0]] == [0.02, 0.02]  # a set of its own
    assert first.status == "found" and slip.status == "infeasible"


def test_demo_figure_holds_the_clipped_utilisation(humanoid):
    """A pulling foot (utilisation inf) is drawn at the top of the axis and marked, not cut."""
    pytest.importorskip("matplotlib")
    import dataclasses

    import matplotlib.pyplot as plt

    from wholebody.check.plots import plot_report

    traj = Trajectory.load(LOG)
    W = traj.contact_wrenches.copy()
    W[:, 1] *= -1.0
    report = check_trajectory(humanoid, dataclasses.replace(traj, contact_wrenches=W), FEET)
    fig = plot_report(report)
    ax = fig.axes[1]
    assert ax.get_ylim()[1] >= 2.0
    labels = [line.get_label() for line in ax.get_lines()]
    assert "right_sole above 2 (inf: pulling)" in labels
    plt.close(fig)

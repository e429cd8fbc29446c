"""The module paths of earlier releases still import, as the same module objects as their new
homes (``wholebody._aliases``), and the package faces export what the old modules did."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from wholebody._aliases import ALIASES, resolve


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_old_path_is_the_new_module(old):
    assert importlib.import_module(old) is importlib.import_module(ALIASES[old])


def test_old_submodule_paths_and_from_imports():
    from wholebody.logfiles.fields import check_names

    from wholebody.io.logfiles import fields

    assert importlib.import_module("wholebody.logfiles.fields") is fields
    assert check_names is fields.check_names
    from wholebody.analysis import check_trajectory

    from wholebody.check import check_trajectory as new

    assert check_trajectory is new


def test_resolve_maps_only_old_paths():
    assert resolve("wholebody.recordings.rosbag") == "wholebody.io.recordings.rosbag"
    assert resolve("wholebody.check.analysis") is None
    assert resolve("wholebody.robot") is None
    assert resolve("wholebody.analysisx") is None


def test_old_path_as_attribute_of_the_package():
    import wholebody

    assert wholebody.mujoco_bridge is importlib.import_module("wholebody.sim.mujoco")
    with pytest.raises(AttributeError, match="no attribute 'no_such_module'"):
        wholebody.no_such_module  # noqa: B018


def test_faces_export_the_old_modules_names():
    from wholebody import balance, conventions, io, robot
    from wholebody.balance import core
    from wholebody.io import logs
    from wholebody.robot import core as robot_core

    for face, module in [(balance, core), (io, logs), (robot, robot_core)]:
        for name in module.__all__:
            assert getattr(face, name) is getattr(module, name), (face.__name__, name)
    assert callable(conventions.check_conventions)


def test_old_paths_import_in_a_fresh_interpreter():
    # A fresh process: no new home imported first.
    code = (
        "import wholebody.mujoco_recorder as m, wholebody.sim.mujoco_recorder as n; "
        "assert m is n; from wholebody.profile import load_profile; "
        "import wholebody._robot_contact as c; print(c.__name__); "
        # the submodule of an old package path, imported first: the same object, not a copy
        # of the file found in the new package's folder
        "import wholebody.recordings.timing as t, wholebody.io.recordings.timing as u; "
        "assert t is u, (t, u)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "wholebody.robot._contact"


def test_the_alias_finder_is_asked_last_until_an_old_package_path_is_imported():
    # Last: the imports of modules that exist never run it (a check imports no old path).
    code = (
        "import sys, wholebody, wholebody.check; "
        "print(type(sys.meta_path[-1]).__name__, 'wholebody._aliases' in sys.modules); "
        "from wholebody._aliases import _AliasFinder; "
        "import wholebody.recordings; print(isinstance(sys.meta_path[0], _AliasFinder), "
        "sum(isinstance(f, _AliasFinder) for f in sys.meta_path))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["_OldPaths", "False", "True", "1"]


def test_console_entry_point_and_module_run():
    from wholebody.cli import main

    assert main(["info", "pendulum"]) == 0
    out = subprocess.run(
        [sys.executable, "-m", "wholebody.cli", "info", "pendulum"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "pendulum" in out.stdout


def test_an_old_path_leaves_the_module_its_own_spec():
    # The import system sets __spec__ to the alias's when it loads an old path; the module
    # must keep its own (else __spec__.parent != __package__: an ImportWarning at every
    # relative import inside its functions, and reload or pickling by the wrong name).
    code = (
        "import warnings; warnings.simplefilter('error', ImportWarning); "
        "import wholebody.profile as p, wholebody.io.profile as q; assert p is q; "
        "print(q.__spec__.name, q.__spec__.parent == q.__package__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["wholebody.io.profile", "True"]


def test_top_level_lists_the_first_hour_names_and_still_resolves_earlier_ones():
    # Issue 25: the top level lists about 15 names; the names earlier releases exported there
    # still resolve, to the very object of their one home, without being listed.
    import wholebody as wb

    assert len(wb.__all__) <= 18, wb.__all__
    for name in wb.__all__:
        assert getattr(wb, name) is not None, name
    earlier = wb._EARLIER
    assert not set(earlier) & set(wb.__all__)
    for name, home in earlier.items():
        module = importlib.import_module(f"wholebody.{home}")
        assert getattr(wb, name) is getattr(module, name), name
        assert name not in dir(wb), name
    with pytest.raises(AttributeError, match="no attribute 'zmpp'"):
        wb.zmpp  # noqa: B018

"""The shipped models: they load, match their generator, and have the promised frames."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest

import wholebody as wb
from wholebody.models import SHIPPED, path


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_committed_urdf_is_what_the_generator_writes(name):
    assert path(name).read_text() == SHIPPED[name](), "run: python -m wholebody.models"


# SHA-256 of the shipped files as main ee921d1 wrote them (one writer call per element, before
# the builders became tables): the table-driven builders write them byte for byte.
SHIPPED_SHA256 = {
    "pendulum": "97fc18e4ddf572ecae8ffbbaedaa60b86543a32d58d8139c81ffeceb34bc1c38",
    "two_link_arm": "14d966910f746e97cedf66d77c61ee436ce31a389e2158417def643a3a7a3eac",
    "humanoid": "ac01b3d10432f68eae61d2fcdc690e9655f4ddb3bd775454e53aa626a7facb27",
    "human_dempster": "b96dea33b1c8f51f921b83961d26932574953c4de89c67714f91dd719b82c7a7",
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_urdf_bytes_are_pinned(name):
    assert hashlib.sha256(path(name).read_bytes()).hexdigest() == SHIPPED_SHA256[name]


def test_humanoid_mass_sizes_and_soles(humanoid):
    assert 50.0 <= humanoid.mass <= 80.0
    assert humanoid.mass == pytest.approx(65.7, abs=1e-9)
    assert (humanoid.nq, humanoid.nv) == (26, 25)
    q = humanoid.neutral()
    q[2] = wb.models.HUMANOID_STANDING_HEIGHT
    for side, y in (("left", 0.09), ("right", -0.09)):
        placement = humanoid.placements(q, f"{side}_sole").se3()
        np.testing.assert_allclose(placement.translation, [0.03, y, 0.0], atol=1e-12)
        np.testing.assert_allclose(placement.rotation, np.eye(3), atol=1e-15)


def test_pendulum_and_arm_are_fixed_base(pendulum, two_link_arm):
    assert not pendulum.has_floating_base and pendulum.nv == 1 and pendulum.mass == 70.0
    assert two_link_arm.nv == 2 and two_link_arm.mass == pytest.approx(0.05 * 70.0)


@pytest.mark.parametrize("name", ["g1", "talos", "icub", "romeo", "human"])
def test_example_robot_data_humanoids_load(name):
    pytest.importorskip("cmeel")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = wb.load(name)
    assert robot.has_floating_base and robot.mass > 20.0
    M = robot.mass_matrix(robot.random_configuration(0))
    assert np.linalg.eigvalsh(M)[0] > 0


def test_humanoid_simulates_in_mujoco(humanoid):
    mujoco = pytest.importorskip("mujoco")
    from wholebody.sim.mujoco import mujoco_spec_for_robot

    model = mujoco_spec_for_robot(humanoid, solver_tolerance=None, timestep=0.002).compile()
    data = mujoco.MjData(model)
    data.qpos[2] = wb.models.HUMANOID_STANDING_HEIGHT + 0.01
    for _ in range(200):
        mujoco.mj_step(model, data)
    assert data.ncon >= 4  # the sole boxes touch the floor
    assert np.isfinite(data.qpos).all()


def test_public_api_names_resolve():
    for name in wb.__all__:
        assert getattr(wb, name) is not None, name
    assert wb.SurfaceContact is __import__("wholebody.contacts", fromlist=["x"]).SurfaceContact
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        wb.nothing  # noqa: B018

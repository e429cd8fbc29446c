"""The run of a check over a log's chunks: read, evaluate, merge; then the evidence behind
the verdict and the diagnosis.

Each chunk of ``chunk_size`` samples is

- **read** (:meth:`_Run.read`): its samples, with the neighbours that the differences of
  ``v`` need; their states checked once (:meth:`~wholebody.robot.Robot.check_batch`), the
  sample-level flags (non-finite times, wrenches beyond physical magnitudes), the storage
  resolution and the readings repeated bit for bit. What the evaluation needs is a
  :class:`ChunkJob`;
- **evaluated** (:func:`evaluate`, on worker processes when ``workers > 1``): one Pinocchio
  pass per sample, the Newton-Euler residual about the CoM and each contact's cone, where
  each contact is (:mod:`wholebody.conventions.placement`) and, when the log has torques, the
  joint rows (:mod:`wholebody.balance.joint_rows`: one ``rnea`` more per sample);
- **merged** (:meth:`_Run.merge`) into the log's per-sample results; the chunk's convention
  checks run then, on the pass's CoM and contact origins.

Several chunks are read before they are evaluated together: all of an in-memory log (its
chunks are views), ``workers`` of a file. Once every chunk is merged, :func:`_finish` flags
what is no evidence (non-finite residuals, held streams), builds the
:class:`~wholebody.check.Report`, bounds the residual's error
(:mod:`~wholebody.check.evidence`) and runs the diagnosis on the samples it keeps: at most
:data:`wholebody.diagnosis.MAX_SAMPLES`, with their kinematics (the check's own pass when it kept
them, else a pass of their own) and the wrench rows its lag search reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from ..balance.joint_rows import joint_rows, joint_tolerances, joint_weights, passive_joints
from ..balance.newton_euler import (
    MAX_WRENCH_RELATIVE,
    beyond_physical_magnitude,
    newton_euler_residual_arrays,
    wrench_sum,
)
from ..balance.placement import SolePlacement, Soles, sole_placement
from ..contacts import Contact, SurfaceContact, ground_aligned_rotations
from ..conventions import ConventionCheck, ConventionReport, Ground, run_conventions
from ..conventions.noise import measure_stamps, segments_between_gaps
from ..conventions.placement import placement_check
from ..diagnosis import MAX_SAMPLES, DiagnosisData, Finding, diagnose
from ..diagnosis.causes_placement import PlacementData
from ..diagnosis.causes_torque import MAX_TORQUE_LAG, JointRows
from ..diagnosis.core import MAX_LAG_SAMPLES
from ..diagnosis.notes import consistent_log_notes, limit_notes
from ..friction import VIOLATION_NAMES, ContactSet, normal_rotation
from ..io.logfiles.fields import is_float32
from ..parallel import ChunkFailure, Shared, advance, chunk_bounds, run_chunks, run_progress
from ..robot.batch import centroidal_frames_rows, frame_placements_rows, inverse_dynamics_rows
from ..robot.core import Robot
from ..trajectory import Trajectory
from .evidence import (
    MAX_WAIVED_SHARE,
    BiasTest,
    bias_test,
    cone_finding,
    differentiation_bounds,
    evidence_of,
    held_note,
    held_rows,
    implausible_rows,
    placement_finding,
    repeats,
    residual_resolution,
    window_edges,
)
from .noise import NOISE_SAMPLES, ResidualNoise, SignalNoise, residual_noise, signal_noise
from .options import ENGINE_FLOOR, CheckOptions, Tolerances
from .report import CONTACT_THRESHOLD, Report
from .sources import Differentiation, Source, low_pass, read_part

__all__ = ["ChunkPlan", "ChunkJob", "ChunkOutput", "evaluate", "check_source"]

Array = NDArray[np.float64]

#: Logs up to this many samples get every sample's expected error (one Pinocchio pass each).
_ALL_BOUNDS = 100_000

_PASS_BLOCK = 1000  # samples per step of the progress bar

MAX_EVENTS = 10_000  # per contact: a noisy log can chatter at every sample


# --- evaluate: one chunk's pass, residual and cones ----------------------------------------------


@dataclass(frozen=True)
class ChunkPlan:
    """What the evaluation of every chunk of a log shares.

    Attributes
    ----------
    contacts : list of Contact
        The log's contacts, in its order.
    frames : list of str
        The frames the pass places: the contacts', the external wrenches', and (with
        ``keep``) the contacts' parent joints.
    n_external : int
        Known external wrenches of the log.
    cone_slack : (float, float)
        A cone margin below ``-(slack[0] + slack[1] |f_n|)`` [N] is a violation.
    keep : bool
        Return the pass's kinematics (the diagnosis of a short log reads them).
    soles : Soles
        The contacts' soles and ground normals (where each loaded contact is).
    joint_rows : bool
        The log has torques: evaluate the joint rows.
    """

    contacts: list[Contact]
    frames: list[str]
    n_external: int
    cone_slack: tuple[float, float]
    keep: bool
    soles: Soles
    joint_rows: bool = False


@dataclass(frozen=True)
class ChunkJob:
    """One chunk's evaluation: its checked states (robot order) and logged wrenches, as
    arrays or as :class:`~wholebody.parallel.Shared` slices on their way to a worker.

    Attributes
    ----------
    plan : ChunkPlan
    q, v, a : ndarray, shape (n, nq), (n, nv), (n, nv)
    wrenches : ndarray, shape (n, k, 6)
        Contact wrenches at the contact frames' origins, world axes [N, N m].
    external : ndarray, shape (n, e, 6), or None
        Known external wrenches at their frames' origins, world axes [N, N m].
    skip : ndarray of bool, shape (n,)
        Samples flagged before the pass (no pass, NaN results).
    tau : ndarray, shape (n, nj), or None
        Logged joint torques, robot order [N m] (with ``plan.joint_rows``).
    """

    plan: ChunkPlan
    q: Any
    v: Any
    a: Any
    wrenches: Any
    external: Any
    skip: Any
    tau: Any = None


@dataclass
class ChunkOutput:
    """Per-sample results of one chunk (NaN on skipped samples; world axes, SI units)."""

    r_f: Array
    r_m: Array
    margin: Array
    util: Array
    normal: Array
    cop: Array
    violated: NDArray[np.int16]
    com: Array  # (n, 3) world [m]: the convention checks reuse it
    positions: Array  # (n, k, 3) contact frame origins, world [m], likewise
    placement: SolePlacement  # where each contact is (n, k)
    r_tau: Array | None  # (n, nj) the joint rows' residual [N m] (a log with torques)
    # With ``keep`` (for the diagnosis, Placed), else None: the momentum rate (n, 6), every
    # frame's origin (n, k + e + k, 3), the contact frames' rotations (n, k, 3, 3).
    rate: Array | None = None
    frames: Array | None = None
    rotations: Array | None = None


def evaluate(robot: Robot, job: ChunkJob) -> ChunkOutput:
    """The residual about the CoM and the cones of one chunk of samples (one Pinocchio pass
    each); with ``job.plan.keep`` also the pass's kinematics (the diagnosis reads them)."""
    plan, Q, W, E = job.plan, job.q, job.wrenches, job.external
    contacts, frames, e = plan.contacts, plan.frames, plan.n_external
    k, N = len(contacts), Q.shape[0]
    com = np.full((N, 3), np.nan)
    rate = np.full((N, 6), np.nan)
    positions = np.full((N, len(frames), 3), np.nan)
    # The joint rows turn the external wrenches into their joints' axes too.
    r = k + e if plan.joint_rows else k
    R = np.full((N, r, 3, 3), np.nan)
    rows: Any = np.flatnonzero(~job.skip).tolist()
    ids = [robot.frame_id(f) for f in frames]
    # Contacts and known external wrenches, each about its own frame origin, in one layout.
    wrenches = W if E is None else np.concatenate([W, E], axis=1)
    r_tau = None if job.tau is None else np.full(job.tau.shape, np.nan)
    for s in range(0, len(rows), _PASS_BLOCK):  # one Pinocchio pass per sample
        block = rows[s : s + _PASS_BLOCK]
        centroidal_frames_rows(
            robot, Q, job.v, job.a, block, ids, com, rate, positions, R, n_rotations=r
        )
        if r_tau is not None:
            r_tau[block] = joint_rows(
                robot,
                Q[block],
                job.v[block],
                job.a[block],
                job.tau[block],
                range(len(block)),
                ids[: k + e],
                wrenches[block],
                R[block],
            )
        advance(len(block))  # the run's bar, from this process only
    advance(N - len(rows))  # the skipped samples are done too
    R = R[:, :k]
    r_f, r_m = newton_euler_residual_arrays(
        wrenches,
        positions[:, : k + e],
        com,
        rate,
        mass=robot.mass,
        gravity=robot.gravity_vector,
    )
    # Friction, per contact, in its own frame: the one cone home.
    R_cone = R
    if any(c.ground_normal is not None for c in contacts):
        R_cone = R.copy()
        for j, c in enumerate(contacts):
            if c.ground_normal is None:
                continue
            turned = ground_aligned_rotations(R[:, j], c.ground_normal)
            # A point contact's normal is given in its frame: map it onto the ground normal.
            R_cone[:, j] = (
                turned if isinstance(c, SurfaceContact) else turned @ normal_rotation(c.normal).T
            )
    cones = ContactSet(contacts).check(W, R_cone, tol=0.0)
    margin, normal = cones.margin, cones.normal_force
    with np.errstate(invalid="ignore"):
        outside = margin < -(plan.cone_slack[0] + plan.cone_slack[1] * np.abs(normal))
    violated = np.where(outside, cones.worst, -1).astype(np.int16)
    kept = (rate, positions, R) if plan.keep else (None, None, None)
    return ChunkOutput(
        r_f,
        r_m,
        margin,
        cones.utilisation,
        normal,
        cones.cop,
        violated,
        com,
        positions[:, :k],
        sole_placement(plan.soles, positions[:, :k], R, W),
        r_tau,
        *kept,
    )


# --- read: a chunk's samples, checked once ----------------------------------------------------


@dataclass(frozen=True)
class _Checked:
    """The samples of one chunk, checked once (:meth:`Robot.check_batch`) for every reader.

    ``arrays``: ``q``, ``v``, ``a`` checked, in the robot's joint order; ``bad``: the samples
    the residual cannot use (a bad state, time or wrench) and ``reasons`` why (indices in the
    chunk); ``motion``: ``(q, v, flagged)`` as the convention checks read them. Those look at
    ``q`` and ``v`` only, so a sample flagged for its ``a``, time or wrenches keeps its ``q``
    and ``v`` there: the rows ``check_batch`` flagged are checked again on ``q`` and ``v``
    alone (the check is row by row: the same flags and renormalised ``q`` as a check of
    ``q`` and ``v`` on every row), which leaves every unflagged sample checked once.
    """

    arrays: dict[str, Array]
    bad: NDArray[np.bool_]
    reasons: dict[int, str]
    motion: tuple[Array, Array, NDArray[np.bool_]]
    tau: Array | None  # robot order [N m]; NaN where a joint's torque is not logged


def _sample_checks(robot: Robot, part: Trajectory) -> _Checked:
    """The checks of a chunk's samples (:class:`_Checked`): states, times, wrenches beyond
    physical magnitudes."""
    q, v, a, tau = part.for_robot(robot)
    assert a is not None  # read with accelerations (read_part)
    arrays, bad, reasons = robot.check_batch(q=q, v=v, a=a)
    # A stamp that is not finite is the reason its sample is flagged (its differentiated
    # accelerations follow from it), and its neighbours' differences cross it.
    stamp = ~np.isfinite(part.time)
    for i in np.flatnonzero((np.r_[stamp[1:], False] | np.r_[False, stamp[:-1]]) & bad & ~stamp):
        reasons[int(i)] += " (next to a sample whose time stamp is not finite)"
    for i in np.flatnonzero(stamp):
        reasons[int(i)] = f"time stamp is not finite ({float(part.time[i])!r})"
    bad = bad | stamp
    motion = (arrays["q"], arrays["v"], bad.copy())
    if bad.any():  # is q and v of a flagged sample usable on its own? (the conventions read it)
        again = np.flatnonzero(bad)
        alone, alone_bad, _ = robot.check_batch(q=q[again], v=v[again])
        motion = (arrays["q"].copy(), arrays["v"].copy(), motion[2])
        motion[0][again], motion[1][again], motion[2][again] = alone["q"], alone["v"], alone_bad
    N = len(part)
    W, E = part.contact_wrenches, part.external_wrenches
    # Sample-level problems are flagged before any algebra: non-finite values, and wrenches
    # beyond physical magnitudes (a diverged simulation; they would also overflow).
    checks: list[tuple[str, Any]] = []
    for label, arr in [("contact wrenches", W)] + ([] if E is None else [("external wrenches", E)]):
        checks.append(
            (f"{label} have non-finite values", ~np.isfinite(arr).reshape(N, -1).all(axis=1))
        )
        checks.append(
            (
                f"{label} are beyond physical magnitudes (> {MAX_WRENCH_RELATIVE:g} m g, "
                "a diverged simulation or wrong units)",
                beyond_physical_magnitude(arr, robot.weight),
            )
        )
    for why, rows in checks:
        for i in np.flatnonzero(rows & ~bad):
            reasons[int(i)] = why
        bad = bad | rows
    return _Checked(arrays, bad, reasons, motion, tau)


# --- the convention checks, chunk by chunk -----------------------------------------------------

#: The convention checks need this many samples; a shorter last chunk takes its predecessors.
_MIN_CONVENTION_SAMPLES = 5


class _Recent:
    """The last :data:`_MIN_CONVENTION_SAMPLES` rows of per-sample arrays over the chunks
    seen so far, in order: what a chunk shorter than the convention checks need reads before
    it (states and placements that the chunks before checked and placed)."""

    def __init__(self) -> None:
        self.rows: tuple[Any, ...] | None = None

    def before(self, count: int, *arrays: Any) -> tuple[Any, ...]:
        """``arrays`` (a chunk's rows) after the last ``count`` rows seen; then the chunk's
        rows are seen."""
        seen = self.rows if self.rows is not None else tuple(x[:0] for x in arrays)
        out = tuple(
            np.concatenate([old[len(old) - count :], x]) if count else x
            for old, x in zip(seen, arrays, strict=True)
        )
        keep = _MIN_CONVENTION_SAMPLES
        self.rows = tuple(
            np.concatenate([old, x[-keep:]])[-keep:] for old, x in zip(seen, arrays, strict=True)
        )
        return out


class _ChunkConventions:
    """The convention checks of a log, run on each chunk once its pass is done (it reuses
    the pass's CoM and contact origins and the chunk's checked states), then merged."""

    def __init__(self, robot: Robot, contacts: list[Contact], ground: Any) -> None:
        self.robot, self.contacts, self.ground = robot, contacts, ground
        # chunk start -> the checks' piece, its first sample and its checked states
        self.pending: dict[int, tuple[int, Trajectory, Any]] = {}
        self.states, self.placed = _Recent(), _Recent()  # for a chunk shorter than the checks
        self.parts: list[tuple[int, int, ConventionReport]] = []

    def read(
        self,
        source: Source,
        part: Trajectory,
        off: int,
        start: int,
        stop: int,
        motion: tuple[Array, Array, NDArray[np.bool_]],
    ) -> None:
        """Keep what the checks of chunk ``[start, stop)`` read: the samples ``[lo, stop)``
        (``lo < start`` only when the chunk is shorter than the checks need) and their
        checked states."""
        lo = min(start, max(stop - _MIN_CONVENTION_SAMPLES, 0))
        base = start - off  # the sample index of part[0]
        if lo < base:
            piece = source.read(lo, stop)
        elif lo == base and stop - base == len(part):
            piece = part
        else:
            piece = part.select(slice(lo - base, stop - base))
        self.pending[start] = (lo, piece, self.states.before(start - lo, *motion))

    def merge(self, start: int, stop: int, result: ChunkOutput | ChunkFailure) -> None:
        """Run the checks of chunk ``[start, stop)`` on its pass (NaN placements for a chunk
        that failed: the checks place those samples themselves)."""
        lo, piece, states = self.pending.pop(start)
        n, k = stop - start, len(self.contacts)
        com, origins = (
            (np.full((n, 3), np.nan), np.full((n, k, 3), np.nan))
            if isinstance(result, ChunkFailure)
            else (result.com, result.positions)
        )
        placements = self.placed.before(start - lo, com, origins)
        checks = run_conventions(
            self.robot,
            piece,
            self.contacts,
            ground=self.ground,
            placements=cast(tuple[Array, Array], placements),
            states=states,
        )
        self.parts.append((start, stop, checks))

    def report(self) -> ConventionReport | None:
        """One report from the chunks' reports: a check fails when it fails on some chunk
        (the first failing chunk's message and evidence, with the chunks that failed); one
        chunk's report is returned as it is."""
        parts = self.parts
        if len(parts) <= 1:
            return parts[0][2] if parts else None
        merged = []
        for j, first in enumerate(parts[0][2].all_checks):
            failing = [(a, b, r.all_checks[j]) for a, b, r in parts if not r.all_checks[j].passed]
            if not failing:
                merged.append(
                    ConventionCheck(
                        first.name,
                        True,
                        f"{first.message} (in each of {len(parts)} chunks; first chunk shown)",
                        evidence=first.evidence,
                    )
                )
                continue
            a, b, check = failing[0]
            spans = [[a, b - 1] for a, b, _ in failing]
            merged.append(
                ConventionCheck(
                    check.name,
                    False,
                    f"samples {a}..{b - 1}: {check.message} (fails on {len(failing)} of "
                    f"{len(parts)} chunks)",
                    check.fix,
                    check.hypotheses,
                    {**check.evidence, "failing_chunks": spans[:50], "n_chunks": len(parts)},
                )
            )
        return ConventionReport(tuple(merged))


# --- merge: the log's per-sample results ---------------------------------------------------------


@dataclass
class _Samples:
    """The per-sample results of the whole log (small: no states, no wrenches)."""

    time: Array
    r_f: Array
    r_m: Array
    margin: Array
    util: Array
    normal: Array
    cop: Array
    violated: NDArray[np.int16]
    bad: NDArray[np.bool_]
    # Contacts the log's schedule says are not touching (Trajectory.contact_active): no cone
    # to respect there (their wrenches still enter the balance: a stale force shows).
    inactive: NDArray[np.bool_]
    # Readings repeated bit for bit (held or stale streams, judged once residuals are known).
    same: NDArray[np.bool_]
    # The storage resolution of the logged values [N], [N m].
    res_f: Array
    res_m: Array
    # Where each contact is (N, k), and the CoM's elevation (N,) [m].
    placement: SolePlacement
    com_up: Array
    # The joint rows' residual (N, nj) [N m] (nj = 0 without torques).
    r_tau: Array

    @classmethod
    def empty(cls, n: int, k: int, nj: int) -> _Samples:
        nan = np.nan
        return cls(
            np.full(n, nan),
            np.full((n, 3), nan),
            np.full((n, 3), nan),
            np.full((n, k), nan),
            np.full((n, k), nan),
            np.full((n, k), nan),
            np.full((n, k, 2), nan),
            np.full((n, k), -1, dtype=np.int16),
            np.zeros(n, dtype=bool),
            np.zeros((n, k), dtype=bool),
            np.zeros((n, k), dtype=bool),
            np.zeros(n),
            np.zeros(n),
            SolePlacement(*(np.full((n, k), nan) for _ in range(5))),
            np.full(n, nan),
            np.full((n, nj), nan),
        )

    def write(self, part: ChunkOutput, start: int, stop: int, up: Array) -> None:
        for name in ("r_f", "r_m", "margin", "util", "normal", "cop", "violated"):
            getattr(self, name)[start:stop] = getattr(part, name)
        for name in ("low", "lift", "span", "tilt", "normal_force"):
            getattr(self.placement, name)[start:stop] = getattr(part.placement, name)
        self.com_up[start:stop] = part.com @ up
        if part.r_tau is not None:
            self.r_tau[start:stop] = part.r_tau


@dataclass
class _Run:
    """One log's check under way: what its chunks share, and what they have given."""

    robot: Robot
    source: Source
    contacts: list[Contact]
    options: CheckOptions
    tolerances: Tolerances
    noise: SignalNoise  # of each signal, measured on the log's first samples (head)
    head: Trajectory  # the log's first NOISE_SAMPLES samples, as read
    diff: Differentiation | None
    estimated: bool  # accelerations differentiated (here or before the log was written)
    parents: list[str]  # the contacts' parent joints (the diagnosis places them)
    plan: ChunkPlan
    bounds: list[tuple[int, int]]  # the chunks' samples [start, stop)
    placed: Placed | None  # the pass's kinematics, kept for the diagnosis of a short log
    samples: _Samples
    conventions: _ChunkConventions | None
    joint_tolerance: Array  # (nj,) [N m or N] (balance.joint_rows)
    joints_checked: NDArray[np.bool_]  # (nj,) actuated (not passive); logged is per sample
    single: bool  # float32 values (detected on the first samples)
    reasons: dict[int, str] = field(default_factory=dict)
    last_row: Array | None = None  # the last wrenches read (for repeats across chunks)
    residual: ResidualNoise | None = None  # the measured preset's residual noise
    # The measured preset's differentiation bounds (force, moment, slow force, slow moment,
    # total wrench), computed with its tolerances.
    filtered_bounds: tuple[Array, Array, Array, Array, Array] | None = None

    @property
    def tol(self) -> dict[str, float]:
        return self.tolerances.values

    @property
    def measured(self) -> bool:
        """The measured preset's filter runs on the residual."""
        return self.noise.kernel is not None

    @property
    def gap(self) -> float:
        """A step beyond this [s] is a gap of the stamps (samples dropped)."""
        return self.noise.stamps.gap

    @classmethod
    def start(
        cls, robot: Robot, source: Source, contacts: list[Contact], options: CheckOptions
    ) -> _Run:
        N, k, e = source.n, len(contacts), len(source.external_frames)
        time = source.time()
        stamps = measure_stamps(time)
        head = source.read(0, min(N, NOISE_SAMPLES))
        single = any(
            is_float32(x[:1000]) for x in (head.q, head.v, head.contact_wrenches) if x is not None
        )
        estimated = not source.has_accelerations or source.accelerations_estimated
        tolerances = options.for_log(source.metadata, estimated=estimated, float32=single)
        measured = tolerances.preset == "measured"
        noise = signal_noise(robot, head, stamps, filtered=measured)
        diff = (
            None
            if source.has_accelerations
            else Differentiation.from_time(time, options.savgol, stamps.gap, stamps.jitters)
        )
        model = robot.model
        parents = [model.names[model.frames[robot.frame_id(c.frame)].parentJoint] for c in contacts]
        frames = [c.frame for c in contacts] + list(source.external_frames)
        # A log of at most MAX_SAMPLES samples: the diagnosis keeps every sample the checks
        # pass, so the chunks' pass also places what it reads (the contacts' parent joints)
        # and its kinematics are kept for it (one pass per sample); a longer log's diagnosis
        # places the MAX_SAMPLES it keeps in a pass of its own rather than the log's
        # kinematics being held.
        placed = Placed.empty(N, k, e) if options.diagnose_causes and N <= MAX_SAMPLES else None
        if placed is not None:
            frames += parents
        tol = tolerances.values
        slack = (tol["cone_tolerance"] * robot.weight, tol["cone_tolerance_relative"])
        conventions = options.conventions and N >= 3
        ground = options.ground
        if ground is not None and not isinstance(ground, Ground):
            ground = Ground(float(ground))
        soles = Soles.of(contacts, ground, robot.gravity_vector)
        nj = len(robot.joint_names) if source.has_torques else 0
        return cls(
            robot,
            source,
            contacts,
            options,
            tolerances,
            noise,
            head,
            diff,
            estimated,
            parents,
            ChunkPlan(contacts, frames, e, slack, placed is not None, soles, nj > 0),
            chunk_bounds(N, int(options.chunk_size)),
            placed,
            _Samples.empty(N, k, nj),
            _ChunkConventions(robot, contacts, options.ground) if conventions else None,
            joint_tolerances(robot, tol["force_tolerance"], tol["moment_tolerance"])[:nj],
            ~passive_joints(robot)[:nj],
            single,
        )

    def read(self, start: int, stop: int, key: str, shared: dict[str, Any]) -> ChunkJob:
        """Read and check chunk ``[start, stop)``; its arrays go to ``shared`` (named
        ``key`` + field) and the job holds their :class:`~wholebody.parallel.Shared` slices."""
        part, off = read_part(self.source, start, stop, self.diff)
        here = slice(off, off + stop - start)
        piece = part if (off == 0 and len(part) == stop - start) else part.select(here)
        checked = _sample_checks(self.robot, piece)  # the chunk's one state check
        if self.conventions is not None:  # checked once the chunk's pass is done (it reuses it)
            self.conventions.read(self.source, part, off, start, stop, checked.motion)
        self._note(piece, checked, start, stop)
        arrays = {
            "q": checked.arrays["q"],
            "v": checked.arrays["v"],
            "a": checked.arrays["a"],
            "wrenches": piece.contact_wrenches,
            "external": piece.external_wrenches,
            "skip": checked.bad,
            "tau": checked.tau if self.plan.joint_rows else None,
        }
        refs: dict[str, Shared | None] = {}
        for name, x in arrays.items():
            refs[name] = None if x is None else Shared(f"{key}{name}", 0, stop - start)
            if x is not None:
                shared[f"{key}{name}"] = x
        return ChunkJob(self.plan, **refs)

    def _note(self, piece: Trajectory, checked: _Checked, start: int, stop: int) -> None:
        """What the read gives the log's per-sample results: times, schedule, flags,
        repeated readings, storage resolution."""
        s = self.samples
        s.time[start:stop] = piece.time
        if piece.contact_active is not None:
            s.inactive[start:stop] = ~piece.contact_active
        s.bad[start:stop] = checked.bad
        self.reasons.update({start + i: r for i, r in checked.reasons.items()})
        if len(self.contacts) and len(piece.contact_wrenches):
            s.same[start:stop] = repeats(piece.contact_wrenches, self.last_row)
            self.last_row = np.array(piece.contact_wrenches[-1])
        forces = np.abs(np.nan_to_num(piece.contact_wrenches[..., :3])).sum(axis=-1)
        s.res_f[start:stop], s.res_m[start:stop] = residual_resolution(
            piece.contact_wrenches, forces.sum(axis=1), self.single, self.robot.weight
        )

    def merge(self, start: int, stop: int, result: ChunkOutput | ChunkFailure) -> None:
        """Write chunk ``[start, stop)``'s results (a failed chunk's samples flagged with its
        error) and run its convention checks."""
        if isinstance(result, ChunkFailure):
            self.samples.bad[start:stop] = True  # marked below, the checks' own flags kept
            self.reasons.update(
                {
                    i: f"chunk {start}..{stop - 1} failed: {result.error}"
                    for i in range(start, stop)
                    if i not in self.reasons
                }
            )
        else:
            self.samples.write(result, start, stop, self.plan.soles.up)
            if self.placed is not None:
                p = self.placed
                p.com[start:stop], p.rate[start:stop] = result.com, result.rate
                p.positions[start:stop] = result.frames
                p.rotations[start:stop] = result.rotations
        if self.conventions is not None:
            self.conventions.merge(start, stop, result)


def check_source(
    robot: Robot, source: Source, contacts: list[Contact], options: CheckOptions
) -> Report:
    """:func:`~wholebody.check.check_trajectory` and :func:`~wholebody.check.check_log`: the
    log worked through in chunks (read, evaluate, merge), with one progress bar for the
    whole log (not one per chunk), then finished into its report."""
    with run_progress(source.n, options.progress, desc="checking", unit="samples"):
        run = _Run.start(robot, source, contacts, options)
        bounds, workers = run.bounds, options.workers_for(source.n)
        # Several chunks go to the workers at once: all of an in-memory log (its chunks are
        # views), ``workers`` of a file.
        group = len(bounds) if (workers > 1 and source.in_memory) else workers
        for g in range(0, len(bounds), group):
            shared: dict[str, Any] = {}
            jobs = [
                ((start, stop), (run.read(start, stop, str(c), shared),))
                for c, (start, stop) in enumerate(bounds[g : g + group])
            ]
            results = run_chunks(robot, evaluate, jobs, workers, shared=shared)
            del shared
            for ((start, stop), _), result in zip(jobs, results, strict=True):
                run.merge(start, stop, result)
        return _finish(run)


# --- finish: flags, the report, its evidence, the diagnosis --------------------------------------


def _finish(run: _Run) -> Report:
    s, N = run.samples, run.source.n
    # The samples the diagnosis may keep are chosen among those the sample checks passed.
    checked_ok = ~s.bad | _failed_chunk_rows(run.reasons, N)
    held = _flag_no_evidence(run)
    _noise_tolerances(run)
    report = _report(run)
    bias = _evidence(run, report)
    report.diagnosis = _findings(run, report, checked_ok, held, bias)
    return report


def _flag_no_evidence(run: _Run) -> dict[int, str]:
    """Flag the samples that are no evidence: a residual that is not finite, a held stream
    (returned: row -> reason); NaN their results, and the cones of inactive contacts."""
    s, tol, weight = run.samples, run.tol, run.robot.weight
    bad = s.bad
    # A residual that is not finite on a checked sample (a model with NaN inertia, values
    # that overflow) is not evidence: flag it, never count it as balanced.
    not_finite = ~bad & ~(np.isfinite(s.r_f).all(axis=1) & np.isfinite(s.r_m).all(axis=1))
    why = "the residual is not finite (NaN in the model, or values that overflow)"
    for i in np.flatnonzero(not_finite):
        run.reasons[int(i)] = why
    bad |= not_finite
    # A held or stale stream: its samples are no evidence (flagged with the reason); the
    # verdict rests on the rest.
    held = held_rows(
        s.same & ~bad[:, None],
        np.where(bad[:, None], np.nan, s.r_f),
        s.time,
        [c.name for c in run.contacts],
        tol["force_tolerance"] * weight,
    )
    for row, reason in held.items():
        run.reasons[row] = reason
        bad[row] = True
    run.reasons = dict(sorted(run.reasons.items()))
    for name in ("r_f", "r_m", "margin", "util", "normal", "cop", "r_tau", "com_up"):
        getattr(s, name)[bad] = np.nan
    for name in ("low", "lift", "span", "tilt", "normal_force"):
        getattr(s.placement, name)[bad] = np.nan
    s.r_tau[:, ~run.joints_checked] = np.nan  # passive joints: no torque to check
    s.margin[s.inactive] = np.nan
    s.util[s.inactive] = np.nan
    s.violated[s.inactive] = -1
    return held


def _joints_not_checked(run: _Run) -> dict[str, str]:
    """The joints whose rows are not checked, and why (passive, or torques not logged on
    some or all of the checked samples)."""
    s, out = run.samples, {}
    ok = ~s.bad
    logged = np.isfinite(s.r_tau[ok]).sum(axis=0)
    for j, name in enumerate(run.robot.joint_names[: s.r_tau.shape[1]]):
        if not run.joints_checked[j]:
            out[name] = "passive (the model gives it no effort): no torque to check"
        elif ok.any() and logged[j] == 0:
            out[name] = "its torque is not logged (NaN)"
        elif logged[j] < ok.sum():
            out[name] = f"its torque is not logged on {int(ok.sum() - logged[j])} checked samples"
    return out


def _report(run: _Run) -> Report:
    s, tol, robot, contacts = run.samples, run.tol, run.robot, run.contacts
    names = [c.name for c in contacts]
    nj = s.r_tau.shape[1]
    return Report(
        robot=robot.name,
        source=run.source.source,
        time=s.time,
        residual_force=s.r_f,
        residual_moment=s.r_m,
        flagged=s.bad,
        reasons=run.reasons,
        weight=robot.weight,
        force_tolerance=tol["force_tolerance"],
        moment_tolerance=tol["moment_tolerance"],
        contact_names=names,
        cone_margin=s.margin,
        violated_row=np.array(("",) + VIOLATION_NAMES, dtype=object)[s.violated + 1],
        utilisation=s.util,
        normal_force=s.normal,
        cop=s.cop,
        accelerations_estimated=run.estimated,
        cone_tolerance=tol["cone_tolerance"],
        events=_contact_events(s.time, s.normal, names, robot.weight, s.bad),
        sole_half_sizes={
            c.name: (c.half_length, c.half_width) for c in contacts if isinstance(c, SurfaceContact)
        },
        conventions=None if run.conventions is None else run.conventions.report(),
        preset=run.tolerances.preset,
        tolerance_basis=run.tolerances.basis,
        cone_tolerance_relative=tol["cone_tolerance_relative"],
        sole_centers={c.name: c.center for c in contacts if isinstance(c, SurfaceContact)},
        joint_names=list(robot.joint_names[:nj]),
        joint_residual=s.r_tau,
        joint_tolerance=run.joint_tolerance,
        joint_weights=joint_weights(robot)[:nj],
        joints_not_checked=_joints_not_checked(run) if nj else {},
        placement=placement_check(
            run.plan.soles, s.placement, s.com_up, s.time, names, robot.weight
        ),
    )


def _noise_tolerances(run: _Run) -> None:
    """The residual's measured noise in the tolerances (:mod:`wholebody.check.noise`).

    The measured preset only (a residual that looks like noise, a simulator's readout
    mistake or a log of unrelated states, would be read as noise under the engine's floor or
    the physical tolerances). With logged accelerations the noise is measured on the residual
    itself (it holds no motion). The measured preset filters the residual
    (:func:`~wholebody.check.sources.low_pass`: the filter is linear, so it is the same filter
    on every term of the balance) and takes its tolerances from the noise of the filtered
    residual: with differentiated accelerations measured on the momentum and the wrenches
    (:func:`~wholebody.check.noise.residual_noise`), plus the differentiation's own error on
    most samples; the profile's sensor noise a floor; the engine's floor for the log's
    number type the least.
    """
    s, N, w = run.samples, run.source.n, run.robot.weight
    kernel = run.noise.kernel
    if kernel is None:
        return
    ok = ~s.bad
    if not run.estimated:
        r = np.where(ok[:, None], np.c_[s.r_f, s.r_m], np.nan)
        run.residual = ResidualNoise.of_residual(r, kernel, run.noise.stamps.step)
    else:
        run.residual = residual_noise(
            run.robot, run.head, run.contacts, kernel, run.noise.stamps.step
        )
    segments = segments_between_gaps(s.time, run.gap)
    s.r_f = low_pass(s.r_f, kernel, ok, segments)
    s.r_m = low_pass(s.r_m, kernel, ok, segments)
    stated = run.options.sensor_noise or {}
    root = float(np.sqrt(max(len(run.contacts), 1)))
    run.residual = replace(
        run.residual,
        floor=(stated.get("force_noise", 0.0) * root, stated.get("moment_noise", 0.0) * root),
    )
    f, m = run.residual.tolerance(1, N)
    rests = (
        "the sensors' stated noise" if any(run.residual.floor) else "the noise measured in the log"
    )
    basis = (
        f"measured: {f:.3g} N, {m:.3g} N m per sample from {rests} (through the filter at "
        f"{run.noise.cutoff:.3g} Hz)"
    )
    if run.estimated and N >= 3:
        # The differentiation's own error (filtered) on most samples: in the tolerance too.
        need = ~s.bad
        run.filtered_bounds = differentiation_bounds(
            run.robot,
            run.source,
            run.bounds,
            run.contacts,
            _Tolerance(f / w, m / w, N),
            need,
            run.diff,
            kernel,
        )
        d_f, d_m = run.filtered_bounds[:2]
        ok = need & np.isfinite(d_f) & np.isfinite(d_m)
        if ok.any():
            share = 100 * (1 - MAX_WAIVED_SHARE / 2)
            extra_f = float(np.percentile(d_f[ok], share))
            extra_m = float(np.percentile(d_m[ok], share))
            f, m = f + extra_f, m + extra_m
            basis += (
                f", plus the differentiation's error on {share:g} % of the samples "
                f"({extra_f:.3g} N, {extra_m:.3g} N m)"
            )
    floor_rel = ENGINE_FLOOR["float32" if run.single else "float64"]
    run.tolerances = run.tolerances.with_noise(max(f / w, floor_rel), max(m / w, floor_rel), basis)


@dataclass(frozen=True)
class _Tolerance:
    """What :func:`differentiation_bounds` reads of a report before it is made."""

    force_tolerance: float
    moment_tolerance: float
    n_samples: int


def _noise_scale(run: _Run, residual: ResidualNoise) -> Array:
    """(N, 2) the measured filter's noise at each sample over its noise inside a segment,
    force and moment: near a segment's ends (the log's, a gap's) from the cut kernel
    (:meth:`~wholebody.check.noise.ResidualNoise.edge_scales`), near flagged samples from
    :func:`_edge_excess`."""
    N = run.source.n
    edges = residual.edge_scales()
    L = len(edges) - 1
    distance = np.full(N, L)
    for lo, hi in segments_between_gaps(run.samples.time, run.gap):
        i = np.arange(lo, hi)
        distance[lo:hi] = np.minimum(np.minimum(i - lo, hi - 1 - i), L)
    scale = edges[distance]
    return np.asarray(np.fmax(scale, 1.0 + _edge_excess(run)[:, None]))


def _edge_excess(run: _Run) -> Array:
    """(N,) how much more noise the measured filter leaves where its kernel is cut (the log's
    ends, flagged samples, gaps), relative to a whole kernel (white noise: the renormalised
    weights' norm over the whole kernel's), less one."""
    assert run.noise.kernel is not None
    h = run.noise.kernel
    ok = ~run.samples.bad
    segments = segments_between_gaps(run.samples.time, run.gap)
    # sum_j h_j w_j over the kernel (the renormalisation) and sum_j h_j^2 w_j.
    mean = _window_sum(ok, h, segments)
    square = _window_sum(ok, h * h, segments)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.sqrt(square) / mean / np.sqrt(np.sum(h * h))
    return np.asarray(np.where(np.isfinite(ratio), np.maximum(ratio - 1.0, 0.0), 0.0))


def _window_sum(ok: NDArray[np.bool_], kernel: Array, segments: list[tuple[int, int]]) -> Array:
    from scipy.ndimage import correlate1d

    out = np.zeros(len(ok))
    for lo, hi in segments:
        out[lo:hi] = correlate1d(ok[lo:hi].astype(float), kernel, mode="constant")
    return out


def _evidence(run: _Run, report: Report) -> BiasTest | None:
    """The achieved bounds (storage resolution; with differentiated accelerations their
    expected error, the waived samples and the bias test; with the measured filter the
    noise's excess where its kernel is cut) and the report's evidence."""
    s, N, robot, tol = run.samples, run.source.n, run.robot, run.tol
    over = report.over_tolerance
    e_f, e_m = s.res_f.copy(), s.res_m.copy()
    w = robot.weight
    bias = None
    tolerance_at = noise_scale = None
    if run.measured:
        residual = run.residual
        assert residual is not None
        scale = _noise_scale(run, residual)
        e_f += (scale[:, 0] - 1.0) * tol["force_tolerance"] * w
        e_m += (scale[:, 1] - 1.0) * tol["moment_tolerance"] * w
        noise_scale = scale.max(axis=1)

        floor = ENGINE_FLOOR["float32" if run.single else "float64"] * w

        def tolerance_at(M: int) -> tuple[float, float]:
            f, m = residual.tolerance(M, N)
            return max(f, floor), max(m, floor)

    if (run.estimated or run.measured) and N >= 3:
        # Every sample's bound when the log is not long (the report's CSV gives it), else
        # those the waivers and the bias test read.
        need = over.copy() if N > _ALL_BOUNDS else np.ones(N, dtype=bool)
        need[window_edges(N)] = True
        need &= ~s.bad
        if run.filtered_bounds is not None:
            d_f, d_m, slow_f, slow_m, total = run.filtered_bounds
        elif run.estimated:
            d_f, d_m, slow_f, slow_m, total = differentiation_bounds(
                robot, run.source, run.bounds, run.contacts, report, need, run.diff
            )
        else:  # logged accelerations, filtered: no differentiation error
            d_f = slow_f = d_m = slow_m = np.zeros(N)
            total = np.zeros((N, 6))
        e_f += d_f
        e_m += d_m
        with np.errstate(invalid="ignore"):
            report.unreliable = over & (
                (report.force_norm <= report.force_tolerance * w + e_f)
                & (report.moment_norm <= report.moment_tolerance * w + e_m)
            )
        bias = bias_test(
            s.time,
            s.r_f,
            s.r_m,
            slow_f + s.res_f,
            slow_m + s.res_m,
            total,
            s.bad,
            tol["force_tolerance"] * w,
            tol["moment_tolerance"] * w,
            tolerance_at,
            noise_scale,
        )
        report.systematic = bias.systematic
    report.bound_force, report.bound_moment = e_f, e_m
    report.implausible = implausible_rows(run.reasons, N)
    report.evidence = evidence_of(report, bias, bool(run.single), s.res_f, s.res_m)
    report.evidence.min_checked_share = float(run.options.min_checked_share)
    report.evidence.max_waived_share = float(run.options.max_waived_share)
    report.evidence.noise = run.noise.as_dict()
    report.evidence.noise_lines = run.noise.lines()
    report.evidence.filter = run.noise.filter_line()
    return bias


def _findings(
    run: _Run,
    report: Report,
    checked_ok: NDArray[np.bool_],
    held: dict[int, str],
    bias: BiasTest | None,
) -> list[Finding]:
    """The report's findings (failed convention checks, the ranked causes, the cone line)
    and its notes."""
    findings: list[Finding] = []
    conventions = report.conventions
    if conventions is not None:
        findings += [
            Finding(
                f"convention:{c.name}",
                # Measured: the share of the check's disagreement its named fix repairs (0
                # when it names none).
                float(c.evidence.get("explained", 0.0)) if c.hypotheses else 0.0,
                c.message + (f"; fix: {c.fix}" if c.fix else ""),
                {"hypotheses": list(c.hypotheses), "evidence": c.evidence},
            )
            # A named mistake first (degrees explain contacts that seem to move).
            for c in sorted(conventions.findings, key=lambda c: not c.hypotheses)
        ]
    inconsistent = report.inconsistent_samples
    smoothing = 1 if bias is None else bias.smoothing
    diagnose_causes = run.options.diagnose_causes
    failed = inconsistent.any() or report.joint_inconsistent.any() or report.placement_failed
    if diagnose_causes and (failed or findings):
        # The diagnosis ranks the failed convention checks with the causes (a cause that
        # explains the check's disagreement too comes first).
        data = _diagnosis_data(run, report, checked_ok, inconsistent, smoothing)
        findings = diagnose(replace(data, conventions=findings)) or findings
    if diagnose_causes and not inconsistent.any() and run.contacts and report.n_checked >= 8:
        # A log within tolerance whose small residual one parameter removes: a note.
        report.notes = consistent_log_notes(
            _diagnosis_data(run, report, checked_ok, inconsistent, smoothing, False)
        )
    report.notes += limit_notes(conventions)
    if held:
        report.notes.insert(0, held_note(held, run.samples.time))
    # Which contact, how far, when: lines of their own.
    findings += [f for f in (cone_finding(report), placement_finding(report)) if f is not None]
    return findings


def _diagnosis_data(
    run: _Run,
    report: Report,
    checked_ok: NDArray[np.bool_],
    inconsistent: NDArray[np.bool_],
    smoothing: int,
    with_links: bool = True,
) -> DiagnosisData:
    """What the diagnosis reads: the valid samples it keeps (at most MAX_SAMPLES, evenly
    spread), their kinematics and wrenches, and the log's flags and bounds."""
    robot, source, s, tol = run.robot, run.source, run.samples, run.tol
    bad = s.bad
    valid = np.flatnonzero(checked_ok)
    keep = (
        valid
        if len(valid) <= MAX_SAMPLES
        else valid[np.linspace(0, len(valid) - 1, MAX_SAMPLES).astype(int)]
    )
    rows = keep[~bad[keep]]
    kept = kept_samples(
        robot, source, run.bounds, run.contacts, run.parents, rows, bad, run.diff, run.placed
    )
    kernel = run.noise.kernel if len(valid) <= MAX_SAMPLES else None
    if kernel is not None:  # every sample kept: the diagnosis reads them filtered too
        _filter_kept(kept, rows, source.n, kernel, segments_between_gaps(s.time, run.gap))
    euler = False
    if run.estimated:  # is v an Euler integrator's? (the lag fit's basis)
        from ..diagnosis.causes_timing import semi_implicit_euler

        head, _ = read_part(source, 0, min(source.n, 2000), None)
        euler = semi_implicit_euler(*head.for_robot(robot)[:2])
    links = link_motion_at(robot, source, run.bounds, rows, run.diff) if with_links else None
    joints = (
        joint_rows_at(run, report, rows) if with_links and report.joint_inconsistent.any() else None
    )
    return DiagnosisData(
        robot=robot,
        states=states_at(robot, source, run.bounds, run.diff, kernel, run.gap),
        weight=robot.weight,
        mass=robot.mass,
        gravity=robot.gravity_vector,
        time=s.time[rows],
        wrenches=kept.wrenches,
        positions=kept.positions,
        rotations=kept.rotations,
        joint_centres=kept.joints,
        com=kept.com,
        momentum_rate=kept.rate,
        external=kept.ext,
        names=[c.name for c in run.contacts],
        over=inconsistent[rows],
        log_wrenches=cast(Array, kept.log_wrenches),
        rows=rows,
        log_time=s.time,
        tolerance=_diagnosis_tolerance(run, smoothing),
        contacts=run.contacts,
        cone_tolerance=tol["cone_tolerance"] * robot.weight,
        accelerations_estimated=run.estimated,
        euler_velocities=euler,
        links=links,
        bound=np.stack([report.bound_force[rows], report.bound_moment[rows]], axis=1),
        smoothing=kept_smoothing(smoothing, source.n, len(rows)),
        log_flagged=bad.copy(),
        joints=joints,
        placement=placement_at(run, report, rows) if with_links else None,
    )


def _diagnosis_tolerance(run: _Run, smoothing: int) -> tuple[float, float]:
    """The tolerances [N], [N m] of the residuals the diagnosis scores: the check's; with
    the residual's measured noise, that of the residual averaged over the diagnosis' window
    (``smoothing`` samples of the log) where it is tighter: what is left of the noise
    there."""
    w = run.robot.weight
    tol = (run.tol["force_tolerance"] * w, run.tol["moment_tolerance"] * w)
    if run.residual is None or smoothing <= 1:
        return tol
    # The diagnosis averages the unfiltered residual over its window.
    f, m = run.residual.tolerance(smoothing, run.source.n, np.ones(1))
    return min(tol[0], f), min(tol[1], m)


def _filter_kept(
    kept: Kept, rows: NDArray[np.intp], n: int, kernel: Array, segments: list[tuple[int, int]]
) -> None:
    """The measured preset's filter on what the diagnosis keeps of every sample (``rows``
    of a log of ``n`` samples): the wrenches, the momentum rate, the external wrench and the
    wrench rows of the lag search, so that its residual is the check's filtered one (the
    filter is linear)."""
    ok = np.zeros(n, dtype=bool)
    ok[rows] = True
    for name in ("wrenches", "rate", "ext"):
        x = getattr(kept, name)
        full = np.zeros((n,) + x.shape[1:])
        full[rows] = x
        setattr(kept, name, low_pass(full, kernel, ok, segments)[rows])
    log = kept.log_wrenches
    full = np.zeros((n,) + log.values.shape[1:])
    full[log.index] = log.values
    near = np.zeros(n, dtype=bool)
    near[log.index] = True
    kept.log_wrenches = RowsOf(n, log.index, low_pass(full, kernel, near, segments)[log.index])


# --- what the diagnosis keeps -------------------------------------------------------------------


class RowsOf:
    """Rows of an (N, k, 6) array known at some indices only: the wrench rows the
    diagnosis' lag search reads (``len`` is N; indexing by an array of known rows)."""

    def __init__(self, n: int, index: NDArray[np.intp], values: Array):
        self.n, self.index, self.values = n, index, values
        self.shape = (n,) + values.shape[1:]

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, rows: Any) -> Array:
        rows = np.asarray(rows)
        pos = np.minimum(np.searchsorted(self.index, rows), max(len(self.index) - 1, 0))
        if not len(self.index) or np.any(self.index[pos] != rows):
            raise IndexError("wrench rows beyond those kept for the diagnosis")
        return self.values[pos]


@dataclass
class Kept:
    wrenches: Array
    positions: Array
    rotations: Array
    joints: Array
    com: Array
    rate: Array
    ext: Array
    log_wrenches: RowsOf


@dataclass
class Placed:
    """The kinematics of the check's own pass, per sample of the log (NaN where it made
    none), kept for the diagnosis when it keeps every sample: CoM (N, 3), momentum rate at
    the CoM (N, 6), origins of the contact frames, the external wrenches' frames and the
    contacts' parent joints (N, k + e + k, 3), contact frame rotations (N, k, 3, 3); world
    axes, SI units."""

    com: Array
    rate: Array
    positions: Array
    rotations: Array

    @classmethod
    def empty(cls, n: int, k: int, e: int) -> Placed:
        nan = np.nan
        return cls(
            np.full((n, 3), nan),
            np.full((n, 6), nan),
            np.full((n, 2 * k + e, 3), nan),
            np.full((n, k, 3, 3), nan),
        )


def kept_samples(
    robot: Robot,
    source: Source,
    bounds: list[tuple[int, int]],
    contacts: list[Contact],
    parents: list[str],
    rows: NDArray[np.intp],
    bad: NDArray[np.bool_],
    diff: Differentiation | None,
    placed: Placed | None = None,
) -> Kept:
    """The kinematics of the samples the diagnosis keeps and the wrench rows within the lag
    search's reach (flagged samples' rows zeroed), read chunk by chunk. The kinematics are
    the check's own pass's (``placed``) when it kept them; else one more Pinocchio pass per
    kept sample, with the contacts' parent joints."""
    N, k = source.n, len(contacts)
    e = len(source.external_frames)
    reach = min(MAX_LAG_SAMPLES, N // 4) + 1
    frames = [c.frame for c in contacts] + list(source.external_frames) + parents
    S = len(rows)
    kept = Kept(
        np.empty((S, k, 6)),
        np.empty((S, k, 3)),
        np.empty((S, k, 3, 3)),
        np.empty((S, k, 3)),
        np.empty((S, 3)),
        np.empty((S, 6)),
        np.zeros((S, 6)),
        RowsOf(N, np.zeros(0, np.intp), np.zeros((0, k, 6))),
    )
    index_parts, value_parts = [], []
    for start, stop in bounds:
        sel = np.flatnonzero((rows >= start) & (rows < stop))
        if not len(sel):
            continue
        # Accelerations only for a pass of its own (the wrenches do not depend on them).
        part, off = read_part(source, start, stop, diff if placed is None else None, reach)
        lo = start - off
        local = rows[sel] - lo
        if placed is None:
            kin = kept_pass(robot, part, local, frames)
        else:
            at = rows[sel]
            kin = Placed(
                placed.com[at], placed.rate[at], placed.positions[at], placed.rotations[at]
            )
        kept.positions[sel] = kin.positions[:, :k]
        kept.rotations[sel] = kin.rotations[:, :k]
        kept.joints[sel] = kin.positions[:, k + e :]
        kept.com[sel] = kin.com
        kept.rate[sel] = kin.rate
        kept.wrenches[sel] = part.contact_wrenches[local]
        if part.external_wrenches is not None:
            kept.ext[sel] = np.concatenate(
                wrench_sum(part.external_wrenches[local], kin.positions[:, k : k + e], kin.com),
                axis=1,
            )
        near = np.unique(np.clip(rows[sel][:, None] + np.arange(-reach, reach + 1), 0, N - 1))
        values = part.contact_wrenches[near - lo].copy()
        values[bad[near]] = 0.0
        index_parts.append(near)
        value_parts.append(values)
    if index_parts:
        index = np.concatenate(index_parts)
        index, first = np.unique(index, return_index=True)
        kept.log_wrenches = RowsOf(N, index, np.concatenate(value_parts)[first])
    return kept


def kept_pass(robot: Robot, part: Trajectory, local: NDArray[np.intp], frames: list[str]) -> Placed:
    """One Pinocchio pass per sample ``local`` of ``part`` (samples the check passed; checked
    again for the renormalised ``q``): the kinematics of :class:`Placed`."""
    from ..balance import kinematics_batch  # for a log longer than the check's kept pass

    q, v, a, _ = part.for_robot(robot)
    assert a is not None  # read with accelerations
    arrays, _, _ = robot.check_batch(q=q[local], v=v[local], a=a[local])
    kin = kinematics_batch(
        robot,
        arrays["q"],
        arrays["v"],
        arrays["a"],
        frames,
        np.zeros(len(local), bool),
        rotations=True,
    )
    assert kin.rotations is not None
    return Placed(kin.com, kin.momentum_rate, kin.positions, kin.rotations)


def joint_rows_at(run: _Run, report: Report, rows: NDArray[np.intp]) -> JointRows:
    """The joint rows at the diagnosis' kept ``rows`` (:class:`~wholebody.diagnosis.
    causes_torque.JointRows`): one pass per kept sample (the rows, the frames' Jacobians) and
    the logged torques within the lag search's reach, read chunk by chunk."""
    robot, source = run.robot, run.source
    frames = [c.frame for c in run.contacts] + list(source.external_frames)
    ids = [robot.frame_id(f) for f in frames]
    S, nj, N = len(rows), len(report.joint_names), source.n
    reach = min(MAX_TORQUE_LAG, N // 4) + 1
    T, J = np.full((S, robot.nv), np.nan), np.full((S, len(ids), 6, robot.nv), np.nan)
    tau, vel = np.full((S, nj), np.nan), np.full((S, nj), np.nan)
    index_parts, value_parts = [], []
    for start, stop in run.bounds:
        sel = np.flatnonzero((rows >= start) & (rows < stop))
        if not len(sel):
            continue
        part, off = read_part(source, start, stop, run.diff, reach)
        local = rows[sel] - start + off
        q, v, a, t = part.for_robot(robot)
        assert a is not None and t is not None  # read with accelerations, a log with torques
        arrays, _, _ = robot.check_batch(q=q[local], v=v[local], a=a[local])
        W = part.contact_wrenches[local]
        if part.external_wrenches is not None:
            W = np.concatenate([W, part.external_wrenches[local]], axis=1)
        R = np.empty((len(sel), len(ids), 3, 3))
        frame_placements_rows(robot, arrays["q"], range(len(sel)), ids, rotations=R)
        out, jac = np.empty((len(sel), robot.nv)), np.empty((len(sel), len(ids), 6, robot.nv))
        every = range(len(sel))
        inverse_dynamics_rows(
            robot, arrays["q"], arrays["v"], arrays["a"], every, ids, W, R, out, jac
        )
        T[sel], J[sel], tau[sel], vel[sel] = out, jac, t[local], v[local, 6:]
        near = np.unique(np.clip(rows[sel][:, None] + np.arange(-reach, reach + 1), 0, N - 1))
        index_parts.append(near)
        value_parts.append(t[near - start + off])
        T[sel] += np.einsum("smrj,smr->sj", jac, np.nan_to_num(W))  # M a + h
    index, first = np.unique(np.concatenate(index_parts), return_index=True)
    over = report.joint_over[rows] & ~report.joint_waived[rows]
    residual = report.joint_residual[rows]
    return JointRows(
        list(report.joint_names),
        np.asarray(report.joint_tolerance, dtype=float),
        residual,
        tau,
        vel,
        T[:, 6:],
        J[..., 6:],
        np.asarray(over.any(axis=1)),
        RowsOf(N, index, np.concatenate(value_parts)[first]),
    )


def placement_at(run: _Run, report: Report, rows: NDArray[np.intp]) -> PlacementData | None:
    """Where the loaded contacts are at the kept ``rows`` (None when every contact is
    placed)."""
    p = report.placement
    if p is None or not p.failing:
        return None
    return PlacementData(
        run.plan.soles,
        np.asarray(p.evidence["ground_level_m"], dtype=float),
        float(p.evidence["height_tolerance_m"]),
        p.loaded[rows],
        p.violated[rows],
        list(p.failing),
        [c.frame for c in run.contacts],
    )


def link_motion_at(
    robot: Robot,
    source: Source,
    bounds: list[tuple[int, int]],
    rows: NDArray[np.intp],
    diff: Differentiation | None,
) -> Any:
    """The motion of the links without ``<inertial>`` at ``rows`` (None when there are none)."""
    from ._links import link_motion  # a diagnosis' cause only

    names = robot.links_without_inertia  # read when the URDF was loaded
    if not names or not len(rows):
        return None

    def read(start: int, stop: int) -> tuple[Array, Array, Array, int]:
        part, off = read_part(source, start, stop, diff)
        q, v, a, _ = part.for_robot(robot)
        assert a is not None  # read with accelerations (read_part)
        return q, v, a, off

    return link_motion(robot, read, bounds, rows, names)


def states_at(
    robot: Robot,
    source: Source,
    bounds: list[tuple[int, int]],
    diff: Differentiation | None,
    kernel: Array | None = None,
    gap: float = np.inf,
) -> Any:
    """``states(rows) -> (q, v, a)``: the log's states at ``rows`` (log rows, in the robot's
    layout; ``a`` as the check used it, differentiated when the log has none, and through
    the measured preset's filter ``kernel``), read chunk by chunk over the check's
    ``bounds``."""

    def states(rows: Any) -> tuple[Array, Array, Array]:
        rows = np.asarray(rows, dtype=np.intp)
        q = np.full((len(rows), robot.nq), np.nan)  # NaN at rows outside the log
        v, a = np.full((len(rows), robot.nv), np.nan), np.full((len(rows), robot.nv), np.nan)
        for start, stop in bounds:
            inside = np.flatnonzero((rows >= start) & (rows < stop))
            if not len(inside):
                continue
            margin = 0 if kernel is None else len(kernel) // 2 + 2
            part, off = read_part(source, start, stop, diff, margin)
            pq, pv, pa, _ = part.for_robot(robot)
            assert pa is not None  # read with accelerations (read_part)
            if kernel is not None:
                ok = np.asarray(np.isfinite(pa).all(axis=1))
                pa = low_pass(pa, kernel, ok, segments_between_gaps(part.time, gap))
            at = rows[inside] - start + off
            q[inside], v[inside], a[inside] = pq[at], pv[at], pa[at]
        return q, v, a

    return states


def kept_smoothing(smoothing: int, n: int, kept: int) -> int:
    """The bias test's averaging window in samples, in the diagnosis' kept samples (spread
    evenly over the log), at most an eighth of them."""
    if smoothing <= 1 or kept < 16:
        return 1
    return int(max(1, min(round(smoothing * kept / max(n, 1)), kept // 8)))


def _failed_chunk_rows(reasons: dict[int, str], n: int) -> NDArray[np.bool_]:
    """Samples flagged only because their chunk failed (the sample checks passed them)."""
    rows = np.zeros(n, dtype=bool)
    for i, why in reasons.items():
        if why.startswith("chunk ") and " failed: " in why:
            rows[i] = True
    return rows


def _contact_events(
    time: Array, normal: Array, names: list[str], weight: float, bad: NDArray[np.bool_]
) -> list[tuple[float, str, str]]:
    """(time, contact, "make" | "break") where the normal force crosses 2 % of the weight
    (the first :data:`MAX_EVENTS` of each contact)."""
    events = []
    threshold = CONTACT_THRESHOLD * weight
    for j, name in enumerate(names):
        closed = np.where(bad, np.nan, normal[:, j]) > threshold
        change = np.flatnonzero(closed[1:] != closed[:-1])[:MAX_EVENTS]
        for i in change:
            events.append((float(time[i + 1]), name, "make" if closed[i + 1] else "break"))
    return sorted(events)

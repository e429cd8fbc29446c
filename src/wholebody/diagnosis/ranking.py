"""One ranking of the causes a diagnosis tested: scored on held-out windows, compared by the
evidence criterion, ties stated with what makes them ties and what data would separate them.

**Held-out windows.** The kept samples are cut into consecutive windows dealt in turn to
:data:`HELD_OUT_WINDOWS` folds. Every cause that fits values from the log (a gain, offsets, a
lag, a payload, a tilt, ...) is fitted again on all folds but one and its correction applied
to that fold's windows; the corrections of the held-out folds, put together, are judged like
any correction (:meth:`~wholebody.diagnosis.core.DiagnosisData.judge`): that share is
:attr:`~wholebody.diagnosis.core.Finding.held_out`. A cause with values to spare (offsets where
a gain is the truth, noise fitted as a fault) fits its training windows better than it
predicts the held-out ones; the truth predicts them as well as it fits. Causes that fit
nothing (a sign, a convention, a swap) and the descriptive causes (a wrench free per sample)
keep their in-sample share.

**The criterion** (lower is better): per residual family ``f`` the cause is scored on (the
Newton-Euler wrench balance; loaded contacts that move; the joint rows of a log with torques;
loaded contacts off the ground or tilted), ``n_f log(max(1 - held_out, floor_f))``
(:class:`Family`), plus ``p log(n)`` for the ``p`` values of a cause that could not be
refitted on held-out windows (a refitted cause has paid for its values there), less its
structural evidence. A cause judged on several families (a wrench cause corrects the joint
rows too: :attr:`~wholebody.diagnosis.core.Finding.shares`) adds their terms; a family it
does not explain adds nothing. Families share one scale (nats of evidence), so causes of
different residuals compete in one ranking.

**Named, ties, runner-up.** The best cause by the criterion is named when it explains
:data:`EXPLAINED_THRESHOLD` of the residual; a cause within one parameter's price (``log n``)
of it is a tie: the first finding says "A or B, indistinguishable in this log because ...
(what would separate them)" (:data:`SEPARATING`, else how alike the two corrections are).
The runner-up is the next cause in the ranking that explains anything. Failed convention
checks head unless the named cause explains them all (a fall explains loaded contacts that
move; swapped joint columns explain them and ``v`` against ``dq/dt``).

**The ranking** (:class:`Ranking`) is one object, on the first finding
(``findings[0].ranking``): the order, the named cause, the runner-up, the ties and whether
the residual is unexplained; the report's text, JSON and HTML read it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .core import WEIGHTS, DiagnosisData, Finding, Hypothesis

__all__ = [
    "Family",
    "RankedCause",
    "Tie",
    "Ranking",
    "HELD_OUT_WINDOWS",
    "SEPARATING",
    "held_out_shares",
    "tie_reason",
]

Array = NDArray[np.float64]
#: The kept samples are cut into this many consecutive windows for the held-out scoring.
HELD_OUT_WINDOWS = 5
#: Held-out scoring needs at least this many folds (else the parameters pay ``log n`` each).
MIN_FOLDS = 3
#: Windows per fold (dealt in turn: fold k holds out windows k, k + 5, k + 10, ...).
BLOCKS_PER_FOLD = 5
#: Parameters that say which variant of a cause a finding is (matched across refits).
_IDENTITY = ("contacts", "contact", "point", "frame", "matrix", "axes", "variant")

#: Known equivalences: {cause, cause} -> (why the log cannot tell them apart, what would).
SEPARATING: dict[frozenset[str], tuple[str, str]] = {
    frozenset({"mass_error", "force_gain"}): (
        "a common gain of all contact readings and a mass error change the balance the same "
        "way (every contact wrench against the whole gravito-inertial wrench)",
        "a known load separates them: the robot weighed, a log with a known added mass or a "
        "known push, or the sensors calibrated against a reference",
    ),
    frozenset({"com_offset", "wrong_point"}): (
        "with the soles parallel to each other and the contact forces close to vertical, a "
        "CoM offset and the same moment-point offset on every sole add the same moment f x d",
        "a stance with the soles turned against each other, or horizontal contact forces "
        "(a lean, a push) separate them",
    ),
    frozenset({"sensor_offset", "force_gain"}): (
        "the contact loads hardly change in this log, so a constant offset and a gain change "
        "the readings alike",
        "a log whose loads change (weight shifted between the feet, a squat, a step) "
        "separates them",
    ),
    frozenset({"gravity_tilt", "sensor_offset"}): (
        "the CoM hardly moves against the contacts, so a constant force through the CoM "
        "(gravity tilted) and constant offsets at the contacts balance alike",
        "a log in which the CoM moves against the feet (a squat, a lean) separates them",
    ),
    frozenset({"payload", "com_offset"}): (
        "the link carrying the payload hardly moves, so its mass acts as a CoM shift",
        "a log in which that link moves (the arm swings, the robot bends) separates them",
    ),
    frozenset({"payload", "mass_error"}): (
        "the link carrying the payload hardly moves, so its mass acts as a mass error",
        "a log in which that link moves (the arm swings, the robot bends) separates them",
    ),
    frozenset({"swapped_contacts", "sign_flip"}): (
        "the two contacts carry mirror-image wrenches in this stance",
        "a log with the load shifted to one contact separates them",
    ),
    frozenset({"torque_offset", "torque_coulomb"}): (
        "the joint turns one way throughout the log, so Coulomb friction acts as a constant offset",
        "a log in which the joint turns both ways separates them",
    ),
    frozenset({"torque_offset", "torque_gain"}): (
        "the joint's torque hardly changes in this log, so a constant offset and a gain "
        "change it alike",
        "a log whose load on the joint changes (a squat, a step, a swing) separates them",
    ),
    frozenset({"torque_viscous", "torque_coulomb"}): (
        "the joint turns at a nearly constant speed, so viscous and Coulomb friction take alike",
        "a log in which the joint's speed changes separates them",
    ),
    frozenset({"placement_base_tilt", "placement_joint_offset"}): (
        "one loaded contact carries the load, so the base's orientation and a joint of its "
        "leg turn it alike",
        "a log with both feet loaded (or the base's orientation measured) separates them",
    ),
}


@dataclass(frozen=True)
class Family:
    """A residual the causes are scored on.

    Attributes
    ----------
    name : str
        ``"wrench"`` (the Newton-Euler balance), ``"contact_motion"`` (loaded contacts that
        move), ``"torque"`` (the joint rows), ``"contact_placement"`` (loaded contacts off
        the ground or tilted).
    n : float
        Independent samples scored.
    floor : float
        The smallest remaining share told apart (a tenth of the tolerance, relative).
    """

    name: str
    n: float
    floor: float


@dataclass(frozen=True)
class RankedCause:
    """One entry of the ranking: a tested cause, best first."""

    cause: str
    message: str
    explained: float
    held_out: float
    n_parameters: int
    criterion: float
    family: str = "wrench"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Tie:
    """Causes the log cannot tell apart: why, and what data would."""

    causes: tuple[str, ...]
    because: str
    separate: str

    def to_dict(self) -> dict[str, Any]:
        return {"causes": list(self.causes), "because": self.because, "separate": self.separate}


@dataclass(frozen=True)
class Ranking:
    """The one ranking of a diagnosis (text, JSON and HTML read it).

    Attributes
    ----------
    entries : tuple of RankedCause
        Every cause tested, in the order of the findings (best first).
    named : str
        The named cause (``"unexplained"`` when none explains the residual).
    runner_up : RankedCause or None
        The next entry after the named one, of another cause, that explains anything.
    margin : float
        The runner-up's criterion minus the named cause's (NaN when not comparable).
    ties : tuple of Tie
        Causes indistinguishable from the named one in this log.
    unexplained : bool
        No cause explains the residual; the first entry is the best attempt.
    """

    entries: tuple[RankedCause, ...]
    named: str
    runner_up: RankedCause | None
    margin: float
    ties: tuple[Tie, ...]
    unexplained: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "named": self.named,
            "unexplained": self.unexplained,
            "runner_up": None if self.runner_up is None else self.runner_up.to_dict(),
            "margin": self.margin,
            "ties": [t.to_dict() for t in self.ties],
            "entries": [e.to_dict() for e in self.entries],
        }


def _identity(f: Finding) -> tuple[str, ...]:
    return (f.cause,) + tuple(str(f.parameters.get(k)) for k in _IDENTITY)


def held_out_windows(d: DiagnosisData) -> list[NDArray[np.bool_]]:
    """Masks (S,) of the held-out folds: the kept samples cut into consecutive windows (at
    least one averaging window long; :data:`BLOCKS_PER_FOLD` per fold where the log is long
    enough), dealt to the folds in turn, so that every fold's training windows span the log
    (a fault seen in one part of it is fitted from its neighbours). :data:`HELD_OUT_WINDOWS`
    folds, fewer (at least :data:`MIN_FOLDS`) on a log of few averaging windows; none when
    it has fewer than that."""
    S, M = len(d.time), max(int(d.smoothing), 1)
    length = max(M, -(-S // (HELD_OUT_WINDOWS * BLOCKS_PER_FOLD)), 2)
    n_blocks = S // length
    folds = min(HELD_OUT_WINDOWS, n_blocks)
    if folds < MIN_FOLDS:
        return []
    block = np.minimum(np.arange(S) // length, n_blocks - 1)
    return [block % folds == k for k in range(folds)]


def held_out_shares(
    d: DiagnosisData,
    produced: Sequence[tuple[Callable[[DiagnosisData], list[Finding]], list[Finding]]],
    refitted: frozenset[Callable[..., Any]],
) -> list[Finding]:
    """Every finding with its :attr:`~Finding.held_out` share: for the causes in
    ``refitted``, their fits on all windows but one applied to that one; for the others,
    their in-sample share. ``produced`` pairs each cause with the findings it gave on ``d``."""
    windows = held_out_windows(d)
    out: list[Finding] = []
    for cause, findings in produced:
        fitted = [f for f in findings if f.n_parameters > 0 and f.hypothesis is not None]
        if cause not in refitted or not windows or not fitted:
            # A cause that scores its own held-out windows (held_out_windows) keeps them.
            out += [
                f if f.held_out_windows else dataclasses.replace(f, held_out=f.explained)
                for f in findings
            ]
            continue
        M = max(int(d.smoothing), 1)
        pieces: dict[tuple[str, ...], list[tuple[NDArray[np.bool_], Hypothesis]]] = {}
        for mask in windows:
            # An averaged residual reaches M / 2 samples each way: training keeps clear of it.
            near = np.convolve(mask.astype(float), np.ones(2 * (M // 2) + 3), mode="same") > 0
            with np.errstate(all="ignore"):
                refit = cause(d.holding_out(~near))
            for g in refit:
                if g.hypothesis is not None:
                    pieces.setdefault(_identity(g), []).append((mask, g.hypothesis))
        for f in findings:
            if f not in fitted:
                out.append(dataclasses.replace(f, held_out=f.explained))
                continue
            share = _judge_pieces(d, pieces.get(_identity(f), []))
            out.append(dataclasses.replace(f, held_out=share, held_out_windows=len(windows)))
    return out


def _judge_pieces(d: DiagnosisData, pieces: list[tuple[NDArray[np.bool_], Hypothesis]]) -> float:
    """The share explained by the held-out corrections put together (a window without one
    keeps the logged residual)."""
    r, W = d.base_residual.copy(), d.wrenches.copy()
    excluded = np.zeros(len(r), dtype=bool)
    for mask, h in pieces:
        r[mask], W[mask] = h.residual[mask], h.wrenches[mask]
        if h.excluded is not None:
            excluded[mask] = np.asarray(h.excluded, dtype=bool)[mask]
    with np.errstate(all="ignore"):
        return d.judge(Hypothesis(r, W, excluded if excluded.any() else None))[0]


def tie_reason(d: DiagnosisData, a: Finding, b: Finding) -> tuple[str, str]:
    """Why ``a`` and ``b`` are indistinguishable in this log, and what data would separate
    them: a known equivalence, else how alike their corrections are here."""
    known = SEPARATING.get(frozenset({a.cause, b.cause}))
    if known is not None and a.cause != b.cause:
        return known
    alike = _alike(d, a, b)
    differ = (
        f" (their corrections differ by {100 * alike:.2g} % of it)" if np.isfinite(alike) else ""
    )
    floor = d.floor if a.family == b.family == "wrench" else 0.0
    if max(1.0 - a.held_out, 1.0 - b.held_out) <= floor:
        because = f"both leave less residual than a tenth of the tolerance resolves{differ}"
    else:
        because = (
            "both explain the residual alike, within one parameter's price on the evidence "
            f"criterion{differ}"
        )
    return because, (
        "a log in which they differ separates them: more varied motion, loads shifted "
        "between the contacts, another stance, or a tighter tolerance"
    )


def _alike(d: DiagnosisData, a: Finding, b: Finding) -> float:
    """``|r_a - r_b| / |r_logged|`` over the scored samples (NaN without both corrections)."""
    if a.hypothesis is None or b.hypothesis is None:
        return float("nan")
    rows = d.score_rows
    diff = d.smoothed(a.hypothesis.residual - b.hypothesis.residual)[rows] * WEIGHTS
    base = d.smoothed(d.base_residual)[rows] * WEIGHTS
    with np.errstate(all="ignore"):
        return float(np.sqrt(np.nansum(diff**2) / max(np.nansum(base**2), 1e-300)))


# --- the ranking ------------------------------------------------------------------------------

#: A correction must remove this share of the residual to be named (the best by the
#: criterion, which reads the held-out share).
EXPLAINED_THRESHOLD = 0.8
#: A residual read as more missing-force events than this is not named as missing forces
#: (many events describe a residual that nothing fits; "unexplained" says so).
MAX_MISSING_EVENTS = 3
#: Causes whose wrench is free per sample (the residual itself, read as what is missing): named
#: only when no fitted cause explains the residual, in this order.
DESCRIPTIVE_CAUSES = ("missing_contact", "missing_force")
#: How the first finding names a cause in a tie ("A or B, indistinguishable ...").
CAUSE_WORDS = {
    "mass_error": "a mass error",
    "force_gain": "a gain of the readings",
    "com_offset": "a CoM offset",
    "wrong_point": "moments about other points",
    "sensor_offset": "constant sensor offsets",
    "time_offset": "a time offset",
    "swapped_contacts": "two contacts swapped",
    "sign_flip": "a sign flip",
    "axes": "an axis convention",
    "gravity_tilt": "gravity tilted against the log's vertical",
    "sensor_rotation": "a force sensor's frame turned",
    "payload": "an unmodelled payload",
    "inertialess_links": "masses at the links without <inertial>",
    "gravity_sign": "gravity's sign",
    "stale_state": "a stale state",
    "swapped_joints": "two joint columns swapped",
    "falling": "a fall",
    "torque_sign": "a torque sign flip",
    "torque_gain": "a torque gain",
    "torque_offset": "a torque offset",
    "torque_viscous": "viscous joint friction",
    "torque_coulomb": "Coulomb joint friction",
    "torque_lag": "a torque lag",
    "torque_order": "torque columns of other joints",
    "placement_joint_offset": "a joint offset",
    "placement_base_height": "the base height",
    "placement_base_tilt": "the base orientation",
}


def _physical(events: list[dict]) -> bool:
    """Whether missing-force events name forces the log could lack: at most
    :data:`MAX_MISSING_EVENTS`, each a force (not a moment alone, which no single contact or
    push makes) whose size keeps its sign (a contact pushes, a rope pulls)."""
    return len(events) <= MAX_MISSING_EVENTS and all(
        e.get("point_on_line") is not None and not e.get("two_sided") for e in events
    )


def _words(cause: str) -> str:
    return CAUSE_WORDS.get(cause, cause.replace("_", " "))


def _criterion(d: DiagnosisData, f: Finding, families: dict[str, Family]) -> float:
    """The evidence criterion of a finding, on its family's residual (see the module): a
    cause refitted on held-out windows has paid for its values there; one that could not be
    pays ``log n`` per value."""
    p = 0 if f.held_out_windows else f.n_parameters
    others = sum(
        families[name].n * np.log(max(1.0 - float(share), families[name].floor))
        for name, share in f.shares.items()
        if name in families and name != f.family
    )
    if f.family == "wrench":
        return d.criterion(f.held_out, p, f.structural_evidence) + float(others)
    fam = families.get(f.family)
    if fam is None:
        return float("nan")
    n_all = sum(x.n for x in families.values())
    remaining = max(1.0 - float(f.held_out), fam.floor)
    return float(fam.n * np.log(remaining) + p * np.log(max(n_all, 2.0)) + others)


def rank(d: DiagnosisData, findings: list[Finding], families: dict[str, Family]) -> list[Finding]:
    """The findings in ranking order, the first carrying the :class:`Ranking` (see the module
    docstring): the named cause (with its ties said), or ``"unexplained"`` and the best
    attempt; the convention checks that failed head unless the named cause explains them."""
    findings = [dataclasses.replace(f, criterion=_criterion(d, f, families)) for f in findings]
    order = {id(f): i for i, f in enumerate(findings)}
    # Best first by the criterion; among equals (both within the floor), the one explaining
    # more, leaving fewer cone violations, the simpler, then list order.
    findings.sort(
        key=lambda f: (
            round(f.criterion, 6) if np.isfinite(f.criterion) else np.inf,
            -round(f.held_out, 6) if np.isfinite(f.held_out) else 0.0,
            round(f.cone_violations, 2),
            f.n_parameters,
            order[id(f)],
        )
    )
    # One ranking across residual families: the first fitted cause is the best, whatever
    # residual it explains (a fall explains loaded contacts that move; a torque cause would
    # explain the joint rows).
    fitted = [f for f in findings if f.cause not in DESCRIPTIVE_CAUSES]
    missing = next((f for f in findings if f.cause == "missing_force"), None)
    described = sorted(
        (
            f
            for f in findings
            if f.cause in DESCRIPTIVE_CAUSES
            and f.explained >= EXPLAINED_THRESHOLD
            and _physical(f.parameters.get("events", []))
        ),
        key=lambda f: DESCRIPTIVE_CAUSES.index(f.cause),
    )
    best = fitted[0] if fitted else (described[0] if described else missing)
    if best is not None and best.explained < EXPLAINED_THRESHOLD and described:
        best = described[0]
    # A cause of another residual (a torque cause on the joint rows) does not outrank a
    # description of the wrench residual that the criterion, over both residuals, prefers.
    if best is not None and described and best.family != described[0].family:
        if described[0].criterion < best.criterion:
            best = described[0]
    if best is None:  # nothing explains the failed checks: they head, then what was tried
        return list(d.conventions) + [dataclasses.replace(f, hypothesis=None) for f in findings]
    ties: list[Finding] = []
    if best.cause not in DESCRIPTIVE_CAUSES and best.explained >= EXPLAINED_THRESHOLD:
        price = float(np.log(max(sum(x.n for x in families.values()), 2.0)))
        ties = [
            f
            for f in fitted
            if f is not best
            and f.cause != best.cause
            and f.cause not in DESCRIPTIVE_CAUSES
            and f.criterion - best.criterion <= price + 1e-9
            and f.held_out > 0
            and f.held_out >= EXPLAINED_THRESHOLD * best.held_out
        ]
        ties = [f for i, f in enumerate(ties) if f.cause not in {g.cause for g in ties[:i]}][:3]
    rest = [f for f in findings if f is not best]
    reasons = [Tie((best.cause, t.cause), *tie_reason(d, best, t)) for t in ties]
    return _ordered(d, _named(best, ties, reasons), rest, reasons)


def _named(best: Finding, ties: list[Finding], reasons: list[Tie]) -> Finding:
    """The named cause's finding, its ties said ("A or B, indistinguishable in this log
    because ...", with what data would separate them)."""
    if not ties:
        return best
    names = " or ".join([_words(best.cause)] + [_words(t.cause) for t in ties])
    message = (
        f"{names}, indistinguishable in this log because {reasons[0].because} "
        f"({reasons[0].separate}): {best.message}"
    )
    return dataclasses.replace(
        best,
        message=message,
        alternatives=[t.message for t in ties],
        parameters={
            **best.parameters,
            "alternative_causes": [t.cause for t in ties],
            "ties": [r.to_dict() for r in reasons],
        },
    )


def _entry(f: Finding) -> RankedCause:
    return RankedCause(
        f.cause, f.message, f.explained, f.held_out, f.n_parameters, f.criterion, f.family
    )


def _ordered(
    d: DiagnosisData, best: Finding, rest: list[Finding], ties: list[Tie]
) -> list[Finding]:
    """The findings in order, the first carrying the ranking: the failed convention checks
    head (a named mistake first) unless the named cause explains every one of them; an
    ``"unexplained"`` finding heads when no cause explains the residual."""
    conventions = sorted(d.conventions, key=lambda c: not c.parameters.get("hypotheses"))
    failed = {c.cause.split(":", 1)[-1] for c in conventions}
    named_ok = best.explained >= EXPLAINED_THRESHOLD or best.cause in DESCRIPTIVE_CAUSES
    covers = named_ok and failed <= set(best.parameters.get("explains_conventions", ()))
    ordered = [best] + conventions + rest if covers else conventions + [best] + rest
    head = ordered[0]
    unexplained = not named_ok and not head.cause.startswith("convention:")
    if unexplained:
        runner: Finding | None = head
    else:
        runner = next((f for f in ordered[1:] if f.cause != head.cause and f.explained > 0), None)
    comparable = (
        runner is not None
        and not unexplained
        and head.cause not in DESCRIPTIVE_CAUSES
        and np.isfinite(head.criterion)
        and np.isfinite(runner.criterion)
    )
    margin = float(runner.criterion - head.criterion) if comparable else float("nan")  # type: ignore[union-attr]
    ranking = Ranking(
        entries=tuple(_entry(f) for f in ordered),
        named="unexplained" if unexplained else head.cause,
        runner_up=None if runner is None else _entry(runner),
        margin=margin,
        ties=tuple(ties) if head is best else (),
        unexplained=unexplained,
    )
    if unexplained:
        missing = next((f for f in ordered if f.cause == "missing_force"), None)
        as_missing = f"; read as missing forces: {missing.message}" if missing is not None else ""
        ordered.insert(
            0,
            Finding(
                "unexplained",
                best.explained,
                "no known cause explains this residual (the best, "
                f"{best.cause.replace('_', ' ')}, explains {100 * best.explained:.0f} %, "
                f"{100 * best.held_out:.0f} % on held-out windows){as_missing}",
                {"best_cause": best.cause},
                held_out=best.held_out,
            ),
        )
    first = dataclasses.replace(
        ordered[0],
        runner_up="" if runner is None else runner.cause,
        margin=margin,
        ranking=ranking,
        hypothesis=None,
    )
    return [first] + [dataclasses.replace(f, hypothesis=None) for f in ordered[1:]]

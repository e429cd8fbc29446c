"""Held and stale streams, found before the verdict: a contact whose reading repeats one
value, bit for bit, while the balance needs it to change carries no evidence about the
motion. Its samples are flagged with the reason and the verdict rests on the rest (a topic
that ended before the others, held by a resampler, is never read as a missing force)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..diagnosis.core import Finding

Array = NDArray[np.float64]

#: A reading repeated (bit for bit, not zeros) this many samples in a row may be held.
MIN_HELD_SAMPLES = 5
#: The share of the force tolerance the residual must change by over a hold (below it, a
#: hold changes nothing the verdict sees; the notes of a consistent log still list it).
FLOOR = 0.1
#: How many standard errors of its noise the residual's change over a hold must exceed.
NOISE_FACTOR = 4.0


def repeats(wrenches: Array, previous: Array | None) -> NDArray[np.bool_]:
    """Per sample and contact: the reading equals the previous sample's bit for bit and is
    not all zeros (a foot in the air reads zeros, not a hold).

    Parameters
    ----------
    wrenches : ndarray, shape (n, k, 6)
        A block of logged contact wrenches.
    previous : ndarray, shape (k, 6), or None
        The sample before the block (None: the log's first block).

    Returns
    -------
    ndarray of bool, shape (n, k)
    """
    W = np.asarray(wrenches)
    before = np.concatenate([W[:1] if previous is None else previous[None], W[:-1]])
    same = (W == before).all(axis=-1) & (np.abs(W).max(axis=-1) > 0)
    if previous is None and len(same):
        same[0] = False
    return np.asarray(same, dtype=bool)


def _runs(mask: NDArray[np.bool_]) -> list[tuple[int, int]]:
    edges = np.diff(np.r_[0, mask.astype(np.int8), 0])
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True))


def held_rows(
    same: NDArray[np.bool_],
    residual: Array,
    time: Array,
    names: list[str],
    tolerance: float,
) -> dict[int, str]:
    """Samples of held readings: runs of at least :data:`MIN_HELD_SAMPLES` repeats in which
    the residual force changes by more than ``FLOOR`` times ``tolerance`` plus its noise
    (the mean over the run's last quarter against its first, beyond ``NOISE_FACTOR``
    standard errors): the balance needs the reading to change and it does not.

    Parameters
    ----------
    same : ndarray of bool, shape (N, k)
        :func:`repeats` over the log.
    residual : ndarray, shape (N, 3)
        Residual force per sample, world [N] (NaN where not checked).
    time : ndarray, shape (N,)
        Sample times [s].
    names : list of str
        Contact names (k).
    tolerance : float
        Force tolerance [N].

    Returns
    -------
    dict
        Log row -> reason.
    """
    out: dict[int, str] = {}
    for j, name in enumerate(names):
        for a, b in _runs(same[:, j]):
            if b - a < MIN_HELD_SAMPLES:
                continue
            r = residual[a:b]
            r = r[np.isfinite(r).all(axis=1)]
            if len(r) < 4:
                continue
            h = max(2, len(r) // 4)
            first, last = r[:h], r[-h:]
            change = float(np.linalg.norm(last.mean(axis=0) - first.mean(axis=0)))
            noise = float(np.sqrt((first.var(axis=0) / h + last.var(axis=0) / h).sum()))
            if not change > FLOOR * tolerance + NOISE_FACTOR * noise:
                continue
            why = (
                f"contact {name!r} holds its reading of {float(time[a - 1]):.4f} s while the "
                "balance needs it to change (a held or stale stream: not evidence)"
            )
            for i in range(a, b):
                out.setdefault(i, why)
    return out


def held_note(held: dict[int, str], time: Array) -> Finding:
    """The note that says which samples :func:`held_rows` flagged (``parameters["flagged"]``:
    log row -> reason; ``windows``: per run its reason, first and last time, samples)."""
    rows = np.array(sorted(held))
    breaks = np.flatnonzero(
        (np.diff(rows) != 1)
        | (
            np.array([held[int(i)] for i in rows[1:]])
            != np.array([held[int(i)] for i in rows[:-1]])
        )
    )
    starts = np.r_[0, breaks + 1]
    stops = np.r_[breaks + 1, len(rows)]
    windows = [
        {
            "reason": held[int(rows[a])],
            "start": float(time[rows[a]]),
            "end": float(time[rows[b - 1]]),
            "samples": int(b - a),
        }
        for a, b in zip(starts, stops, strict=True)
    ]
    text = "; ".join(
        f"{w['start']:.3f} .. {w['end']:.3f} s ({w['samples']} samples): {w['reason']}"
        for w in windows[:4]
    )
    more = f" (+{len(windows) - 4} more)" if len(windows) > 4 else ""
    return Finding(
        "held_stream",
        0.0,
        f"{len(rows)} samples flagged, their readings held: {text}{more}; the verdict rests "
        "on the other samples",
        {"flagged": dict(held), "windows": windows, "note": True},
    )

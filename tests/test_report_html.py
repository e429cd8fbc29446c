"""The HTML report's parts against closed forms, and its words: what a person reads on the page
holds no Python representation, names are in words with units, the causes are ranked by the
evidence criterion, the runner-up is the terminal's. The page in a real browser:
``tests/test_report_html_browser.py``."""

from __future__ import annotations

import dataclasses
import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest

from wholebody.check import _report_cells as rc
from wholebody.check import _report_figure as rf
from wholebody.check import report_html as rh
from wholebody.check.analysis import check_trajectory
from wholebody.io.profile import load_profile
from wholebody.models import data_dir, models_dir
from wholebody.trajectory import Trajectory

# What no person should read on the page: brackets and braces of Python or numpy reprs, nan
# and inf, numbers of six significant digits or more, subnormal left-overs, Python literals.
RAW = re.compile(
    r"[\[\]{}]|\b(?:nan|inf|infinity)\b|[1-9](?:\.?\d){5,}|e-3\d\d|(?-i:\b(?:None|True|False)\b)",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def profile():
    return load_profile(models_dir() / "humanoid.toml")


@pytest.fixture(scope="module")
def squat():
    return Trajectory.load(data_dir() / "humanoid_squat.npz")


def sign_flipped(traj: Trajectory) -> Trajectory:
    """The demo's faulty log: the right foot's wrench with the wrong sign."""
    W = traj.contact_wrenches.copy()
    W[:, 1] *= -1.0
    return dataclasses.replace(traj, contact_wrenches=W, source="squat, right foot sign-flipped")


def unloaded_with_nan(traj: Trajectory, repeats: int = 1) -> Trajectory:
    """The sign-flipped squat ``repeats`` times over, 40 samples with a NaN quaternion and the
    left foot without normal force (tangential noise only) for 100 samples."""
    n = len(traj.time)

    def tile(x):
        return np.concatenate([x] * repeats)

    q, W = tile(traj.q), tile(sign_flipped(traj).contact_wrenches)
    q[700:740, 3:7] = np.nan
    W[500:600, 0] = 0.0
    W[500:600, 0, :2] = np.random.default_rng(0).normal(scale=0.5, size=(100, 2))
    return dataclasses.replace(
        traj,
        time=np.arange(n * repeats) * float(traj.time[1] - traj.time[0]),
        q=q,
        v=tile(traj.v),
        a=tile(traj.a),
        tau=None if traj.tau is None else tile(traj.tau),
        contact_wrenches=W,
        contact_active=None,
        source="squat, unreadable samples, left foot unloaded",
    )


@pytest.fixture(scope="module")
def flipped_report(profile, squat):
    return check_trajectory(profile.robot, sign_flipped(squat), profile.contacts)


@pytest.fixture(scope="module")
def unloaded_report(profile, squat):
    return check_trajectory(profile.robot, unloaded_with_nan(squat), profile.contacts)


class _Shown(HTMLParser):
    """The text a browser shows (every <details> open): text outside <script> and <style>,
    per element kind."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.text: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data):
        if not {"script", "style", "title"} & set(self.stack) and data.strip():
            self.text.append((self.stack[-1] if self.stack else "", data.strip()))


def shown(page: str) -> list[tuple[str, str]]:
    parser = _Shown()
    parser.feed(page)
    return parser.text


# --- the parts ---------------------------------------------------------------------------------


def test_cop_margin_closed_form(flipped_report):
    rep = dataclasses.replace(flipped_report)
    rep.cop = np.full_like(rep.cop, np.nan)
    rep.sole_half_sizes = {"left_sole": (0.12, 0.05)}
    rep.sole_centers = {"left_sole": (0.02, 0.0)}
    rep.cop[:3, 0] = [[0.02, 0.0], [0.13, 0.01], [0.20, 0.0]]
    m = rh.cop_margin(rep)
    # centre: the half-width; 0.11 from the centre along x: 0.01 to the front edge; outside.
    np.testing.assert_allclose(m[:3, 0], [0.05, 0.01, -0.06], atol=1e-15)
    assert np.isnan(m[3:, 0]).all() and np.isnan(m[:, 1]).all()  # no CoP / not a surface


def test_reduced_curves_keep_the_worst_value():
    n = 10 * rf.MAX_POINTS + 7
    x = np.zeros(n)
    x[12345] = 5.0
    x[777] = np.nan
    red = rf.Reducer(n)
    assert red.step == 11 and len(red.max(x)) <= rf.MAX_POINTS
    assert np.nanmax(red.max(x)) == 5.0
    assert np.nanmin(red.min(-x)) == -5.0
    assert not np.isnan(red.max(x)).any()  # one NaN in a span does not hide the span
    assert rf.Reducer(100).step == 1


def test_spans_and_their_merge():
    mask = np.zeros(20, bool)
    mask[[0, 1, 5, 9, 10, 19]] = True
    assert rf.spans(mask) == [(0, 1), (5, 5), (9, 10), (19, 19)]
    assert rf.merged(rf.spans(mask), 2) == [(0, 10), (19, 19)]


def test_figure_json_is_compact_and_safe():
    fig = {"t": np.array([0.0, 0.002, 1 / 3]), "y": np.array([1 / 3, np.nan, np.inf, 2e-17])}
    fig["label"] = "</script><b>"
    text = rf.figure_json(fig)
    assert text.startswith('{"t":[0.0,0.002,0.3333333333333333],"y":[0.3333,null,null,2e-17]')
    assert "</script>" not in text and "<\\/script>" in text


def test_excused_samples_are_shaded_with_their_reasons(flipped_report):
    rep = dataclasses.replace(flipped_report)
    rep.flagged = rep.flagged.copy()
    rep.flagged[100:110] = True
    rep.reasons = {i: "quaternion norm 0.5" for i in range(100, 110)}
    rep.unreliable = np.zeros(rep.n_samples, bool)
    rep.unreliable[500:520] = True
    shades = {s["label"]: s for s in rf.figure(rep)["shades"]}
    t = rep.time
    dt = t[1] - t[0]
    (flagged,) = shades["flagged"]["spans"]
    np.testing.assert_allclose(flagged[:2], [t[100] - dt / 2, t[109] + dt / 2], atol=1e-12)
    assert flagged[2] == "flagged: samples 100 to 109 (0.200 to 0.218 s): quaternion norm 0.5"
    assert [s[2] for s in shades["unreliable"]["spans"]] == [
        "unreliable: samples 500 to 519 (1.000 to 1.038 s)"
    ]
    assert shades["flagged"]["count"] == 10 and shades["unreliable"]["count"] == 20


def test_utilisation_axis_reaches_the_clipped_values(flipped_report):
    """The pulling foot (utilisation inf) is drawn at the top of the axis, marked, and its
    hover value says "not applicable" (exact: None)."""
    plots = rf.figure(flipped_report)["plots"]
    (util,) = [p for p in plots if p["title"].startswith("friction utilisation")]
    assert util["range"][1] >= 2.0
    marked = [s for s in util["series"] if s.get("points")]
    assert [s["label"] for s in marked] == ["right_sole above 2"]
    assert np.isnan(marked[0]["exact"]).all() and (marked[0]["y"] == 2.0).all()
    assert len(plots) == 6 + bool(flipped_report.joint_names)  # the joint rows with torques


# --- words -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "offset 'left_sole' [ 1.95e+00 -8.34e-01 -3.11e+02  5.60e-03] N",
            "offset 'left_sole' (1.95, -0.834, -311, 0.0056) N",
        ),
        ("at [  50.5   52.8 -278. ] mm", "at (50.5, 52.8, -278) mm"),
        ("gains [1.0000000000000009, -1.0]", "gains (1, -1)"),
        ("contacts ['left_sole', 'right_sole'] swapped", "contacts left_sole, right_sole swapped"),
        ("windows [(0.0, 1.998), (2.5, 3.0)]", "windows (0.0, 1.998), (2.5, 3.0)"),
        ("lag 0.30000000000000004 s, 4.00 +- 1.05 ms", "lag 0.3 s, 4.00 ± 1.05 ms"),
        ("bound 2.96e-323 N m", "bound 0 N m"),
        ("offset (world axes, (f [N], tau [N m]))", "offset (world axes, (f in N, tau in N m))"),
    ],
)
def test_words_write_out_number_lists(message, expected):
    assert rc.words(message) == expected


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (0.875, "%", "87.5\u00a0%"),
        (0.01, "% of m g", "1\u00a0% of m g"),
        (668.123456789, "N", "668\u00a0N"),
        (2.96e-323, "N m", "0\u00a0N m"),
        (float("inf"), "", "infinite"),
        (True, "", "yes"),
        (3, "", "3"),
        (float("nan"), "N", "-"),
        ([], "", "-"),
        (["too few samples", "a flat cost"], "", "too few samples; a flat cost"),
    ],
)
def test_text_of_a_value(value, unit, expected):
    assert rc.text(value, unit) == expected


def test_labels_in_words_with_units():
    assert rc.label("evidence.bound_force") == (
        "achieved bound on the residual force (median)",
        "N",
    )
    assert rc.label("residual_moment_Nm.p95") == ("residual moment, 95th percentile", "N m")
    # Keys the table does not know: read from their spelling.
    assert rc.label("evidence.noise_floor_Nm") == ("noise floor", "N m")
    assert rc.label("evidence.share_held") == ("share held", "%")
    assert rc.label("lag_seconds") == ("lag", "s")


def test_unknown_summary_fields_are_shown(flipped_report, monkeypatch):
    """Evidence fields the page does not know (a new verdict's) appear in its table, in
    words with their units; empty ones do not."""
    summary = flipped_report.summary()
    summary["evidence"] = {"share_checked": 0.875, "bound_N": 12.5, "held": [], "x": None}
    monkeypatch.setattr(type(flipped_report), "summary", lambda self: summary)
    text = rh.report_section(flipped_report)
    assert re.search(r"<th>share of the samples checked</th><td[^>]*>87.5\xa0%<", text)
    assert re.search(
        r'<th>bound</th><td class="num" data-key="evidence.bound_N"[^>]*>12.5\xa0N<', text
    )
    assert 'data-key="evidence.held"' not in text and 'data-key="evidence.x"' not in text


def test_new_report_fields_are_shown(flipped_report):
    """A scalar field added to Report (not yet in its summary) appears in the evidence."""
    import dataclasses as dc

    from wholebody.check.report import Report

    Extended = dc.make_dataclass(
        "Extended", [("noise_floor_N", float, dc.field(default=3.25))], bases=(Report,)
    )
    rep = Extended(**{f.name: getattr(flipped_report, f.name) for f in dc.fields(Report)})
    text = rh.report_section(rep)
    assert re.search(
        r'<th>noise floor</th><td class="num" data-key="noise_floor_N"[^>]*>3.25\xa0N<', text
    )


@pytest.mark.parametrize("which", ["flipped_report", "unloaded_report"])
def test_no_raw_representation_on_the_page(which, request):
    """Everything a person reads (tables, diagnosis, banner; every <details> open) holds no
    Python or numpy representation: on the demo's sign-flip log and on a log with NaN samples
    and a foot without normal force."""
    report = request.getfixturevalue(which)
    texts = shown(rh.report_html(report))
    raw = [t for _, t in texts if RAW.search(t)]
    assert raw == []
    # Names in words: no dotted or snake-case keys in the table headers (contact names apart).
    heads = [t for tag, t in texts if tag == "th"]
    for name in report.contact_names:
        heads = [h.replace(name, "") for h in heads]
    assert [h for h in heads if "_" in h or "." in h] == []


def test_unloaded_contact_utilisation_is_not_applicable(unloaded_report):
    page = rh.report_html(unloaded_report)
    util = unloaded_report.utilisation[:, 0]
    n_without = int(np.isinf(util).sum())
    # About half of the 100 unloaded samples: the noise tips the force to either side of the
    # sole's plane (the other half has a tiny normal force and a large utilisation).
    assert n_without >= 40
    finite = rc.number(np.nanmax(util[np.isfinite(util)]))
    assert "<th>left_sole: largest friction utilisation</th>" in page
    assert f">{finite} (not applicable in {n_without} samples without normal force)<" in page


def test_banner_says_why(flipped_report, unloaded_report):
    page = rh.report_html(flipped_report)
    reason = re.search(r"<div class='reason'>(.*?)</div>", page).group(1)
    assert reason == (
        "1000 of 1000 checked samples over tolerance (residual force up to 669 N, 104 % of m "
        "g); joint rows over tolerance in 1000 samples (right_knee up to 90.4 N m, 9.5e+05 x its "
        "tolerance, right_ankle_pitch up to 34.7 N m, 5.01e+05 x its tolerance, right_hip_pitch "
        "up to 51.2 N m, 4.23e+05 x its tolerance); &#x27;right_sole&#x27; outside its friction "
        "cone in 1000 samples, mostly pulling (negative normal force); most likely: contact "
        "&#x27;right_sole&#x27; has the wrong sign"
    )


def test_causes_ranked_by_evidence_and_runner_up_as_the_terminal(flipped_report):
    """The table of causes follows the evidence criterion (lower first); the runner-up is the
    cause the terminal's summary names, and the JSON's ranking's."""
    page = rh.report_html(flipped_report)
    terminal = re.search(r"runner-up: (.+?) \(explains", flipped_report.format_summary()).group(1)
    runner = re.search(r"data-key='diagnosis.runner_up' data-value='&quot;(\w+)&quot;'", page)
    assert runner.group(1).replace("_", " ") == terminal == "sensor offset"
    ranking = json.loads(json.dumps(flipped_report.summary()))["ranking"]
    assert ranking["named"] == "sign_flip" and ranking["runner_up"]["cause"] == "sensor_offset"
    also = re.search(r"also tested: (.+)", flipped_report.format_summary()).group(1).split(", ")
    causes = [
        e["cause"] for e in ranking["entries"] if e["cause"] not in ("sign_flip", "unexplained")
    ]
    listed = [c.replace("_", " ") for c in dict.fromkeys(causes)][: len(also) - 1]
    assert [a.rsplit(" ", 2)[0] for a in also[:-1]] == listed  # the text's order, the JSON's
    ranked = [f for f in flipped_report.diagnosis if f.cause != "cone_violation"]
    order = [int(i) for i in re.findall(r'data-key="diagnosis.(\d+).explained_percent"', page)]
    assert [ranked[i].criterion for i in order] == sorted(f.criterion for f in ranked)
    behind = re.findall(r'data-key="diagnosis.\d+.behind"[^>]*>([^<]*)<', page)
    assert behind[0] == "best"
    assert behind[1] == rc.number(ranked[order[1]].criterion - ranked[order[0]].criterion)


def test_page_is_self_contained_and_small(profile, squat, tmp_path):
    """A 4,000-sample log's page: at most 2 MB, nothing loaded from anywhere, the words before
    any script (they paint before the plotting code loads)."""
    traj = unloaded_with_nan(squat, repeats=4)
    report = check_trajectory(profile.robot, traj, profile.contacts)
    text = report.to_html(tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == text
    assert len(text.encode("utf-8")) <= 2_000_000
    assert not re.search(r"<script[^>]*\bsrc=|<link\b|<img\b|<iframe\b|@import|url\(", text)
    first_script = text.index("<script")
    for words in ('class="banner', "<h2>Diagnosis", "<h2>Evidence"):
        assert text.index(words) < first_script
    assert "uPlot" in text and "Permission is hereby granted" in text  # its licence kept
    assert "data-value='&quot;inconsistent&quot;'" in text

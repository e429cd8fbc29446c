"""The HTML report: its parts against closed forms, and the page in a real browser.

The browser test opens the page in headless Chromium (Debian's ``chromium`` package, which
``make test`` installs) through Playwright, with the network cut: it must render without a
console error and show the verdict and the figures ``wholebody check --json`` prints. Its
screenshot is kept in ``out/test-artifacts/`` (or ``$WHOLEBODY_TEST_ARTIFACTS``).
It skips only where Chromium or Playwright is missing, unless ``WHOLEBODY_REQUIRE_BROWSER``
is set (``.ci/run`` sets it): then it fails.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from wholebody.check.analysis import check_trajectory
from wholebody.cli import main
from wholebody.io.profile import load_profile
from wholebody.models import data_dir, models_dir
from wholebody.trajectory import Trajectory

plotly = pytest.importorskip("plotly", reason="the html extra (plotly) is not installed")

from wholebody.check import _report_figure as rf  # noqa: E402
from wholebody.check import report_html as rh  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
# Flags Chromium needs as root in a container, and to stay off the network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def profile():
    return load_profile(models_dir() / "humanoid.toml")


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """The shipped squat log, and the same log with the right foot's wrench sign-flipped."""
    folder = tmp_path_factory.mktemp("logs")
    good = data_dir() / "humanoid_squat.npz"
    traj = Trajectory.load(good)
    W = traj.contact_wrenches.copy()
    W[:, 1] *= -1.0
    flipped = folder / "squat_right_flipped.npz"
    dataclasses.replace(traj, contact_wrenches=W).save(flipped)
    broken = folder / "broken.npz"
    broken.write_bytes(b"not a log")
    return {"good": good, "flipped": flipped, "broken": broken}


@pytest.fixture(scope="module")
def flipped_report(profile, logs):
    return check_trajectory(profile.robot, Trajectory.load(logs["flipped"]), profile.contacts)


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


def test_page_is_self_contained(flipped_report, tmp_path):
    text = flipped_report.to_html(tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == text
    # Plotly's script is inline; nothing is loaded from anywhere.
    assert not re.search(r"<script[^>]*\bsrc=", text)
    assert not re.search(r"<link[^>]*\bhref=", text)
    assert "Plotly" in text and len(text) > 1_000_000
    assert "data-value='&quot;inconsistent&quot;'" in text


def test_unknown_summary_fields_are_shown(flipped_report, monkeypatch):
    """Evidence fields the page does not know (a new verdict's) appear in its table."""
    summary = flipped_report.summary()
    summary["evidence"] = {"share_checked": 0.875, "bound_N": 12.5}
    summary["verdict"] = "inconclusive"
    monkeypatch.setattr(type(flipped_report), "summary", lambda self: summary)
    text = rh.report_section(flipped_report)
    assert 'data-key="evidence.share_checked"' in text and ">0.875<" in text
    assert 'data-key="evidence.bound_N"' in text and ">12.5<" in text


def test_new_report_fields_are_shown(flipped_report):
    """A scalar field added to Report (not yet in its summary) appears in the evidence."""
    import dataclasses as dc

    from wholebody.check.report import Report

    Extended = dc.make_dataclass(
        "Extended", [("noise_floor_N", float, dc.field(default=3.25))], bases=(Report,)
    )
    rep = Extended(**{f.name: getattr(flipped_report, f.name) for f in dc.fields(Report)})
    text = rh.report_section(rep)
    assert 'data-key="noise_floor_N"' in text and ">3.25<" in text


def test_excused_samples_are_shaded_with_their_reasons(flipped_report):
    rep = dataclasses.replace(flipped_report)
    rep.flagged = rep.flagged.copy()
    rep.flagged[100:110] = True
    rep.reasons = {i: "quaternion norm 0.5" for i in range(100, 110)}
    rep.unreliable = np.zeros(rep.n_samples, bool)
    rep.unreliable[500:520] = True
    fig = rf.figure(rep)
    texts = [t for tr in fig.data if tr.hovertext is not None for t in tr.hovertext]
    assert any("flagged: samples 100..109" in t and "quaternion norm 0.5" in t for t in texts)
    assert any(t.startswith("unreliable: samples 500..519") for t in texts)
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    t = rep.time
    dt = t[1] - t[0]
    assert any(
        abs(s.x0 - (t[100] - dt / 2)) < 1e-12 and abs(s.x1 - (t[109] + dt / 2)) < 1e-12
        for s in rects
    )


def test_utilisation_axis_reaches_the_clipped_values(flipped_report):
    """The pulling foot (utilisation inf) is drawn at the top of the axis, not off it."""
    fig = rf.figure(flipped_report)
    top = fig.layout.yaxis4.range[1]
    assert top >= 2.0
    marked = [tr for tr in fig.data if tr.name and "above 2" in tr.name]
    assert [tr.name.split(":")[0] for tr in marked] == ["right_sole"]


# --- in a browser ------------------------------------------------------------------------------


def _need(reason: str):
    if os.environ.get("WHOLEBODY_REQUIRE_BROWSER"):
        pytest.fail(f"{reason} (WHOLEBODY_REQUIRE_BROWSER is set: the browser test must run)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        _need(f"{CHROMIUM} is missing: `make test` installs it (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _need("playwright is not installed (it is in the test extra)")
    profile_dir = tempfile.mkdtemp(prefix="wholebody-chromium-")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile_dir,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile_dir, ignore_errors=True)


def _artifacts() -> Path:
    out = Path(os.environ.get("WHOLEBODY_TEST_ARTIFACTS", ROOT / "out" / "test-artifacts"))
    out.mkdir(parents=True, exist_ok=True)
    return out


def _open(context, path: Path):
    """The page, with every request off this file refused and every console error kept."""
    page = context.new_page()
    errors: list[str] = []
    fetched: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            fetched.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri())
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
    return page, errors, fetched


def _cli_json(capsys, argv: list[str]) -> list[dict]:
    capsys.readouterr()
    main(argv)
    return json.loads(capsys.readouterr().out)


def _shown_figures(page, prefix: str = "") -> dict[str, tuple[str, str]]:
    """data-key -> (data-value, text shown) of every figure on the page."""
    cells = page.eval_on_selector_all(
        "[data-key]",
        "els => els.map(e => [e.dataset.key, e.dataset.value, e.innerText.trim()])",
    )
    return {k[len(prefix) :]: (v, t) for k, v, t in cells if k.startswith(prefix)}


def _expected_text(key: str, value) -> str:
    if value is None:
        return "-"
    if key.endswith("fraction_over_tolerance"):
        return f"{100 * value:.2f} %"
    return str(value) if isinstance(value, int) else f"{value:.3g}"


def test_report_in_chromium_matches_json(browser, logs, capsys, tmp_path):
    page_path = tmp_path / "report.html"
    config = str(models_dir() / "humanoid.toml")
    argv = ["check", str(logs["flipped"]), "--config", config, "--json"]
    (row,) = _cli_json(capsys, argv + ["--html", str(page_path)])
    assert row["verdict"] == "inconsistent"
    page, errors, fetched = _open(browser, page_path)
    page.screenshot(path=str(_artifacts() / "report_html_flipped.png"))
    page.screenshot(path=str(_artifacts() / "report_html_flipped_full.png"), full_page=True)
    assert errors == [] and fetched == []
    # The verdict, then every figure of the --json row, as shown and exactly.
    banner = page.locator(".banner .verdict")
    assert json.loads(banner.get_attribute("data-value")) == row["verdict"]
    assert banner.inner_text() == "INCONSISTENT"
    shown = _shown_figures(page)
    for key, _, _, _ in rh._ROW_FIGURES:
        value, text = shown[key]
        assert json.loads(value) == row[key], key
        assert text == _expected_text(key, row[key]), key
    # The cause, on the first screen: the banner and the diagnosis inside the viewport.
    best = page.locator(".cause.best .message")
    assert best.inner_text() == row["diagnosis"]
    for locator in (page.locator(".banner"), page.locator(".cause.best")):
        box = locator.bounding_box()
        assert box is not None and box["y"] + box["height"] <= 900
    # One figure with its six linked plots (one shared time axis).
    layout = page.evaluate(
        "() => { const g = document.querySelector('.js-plotly-plot'); "
        "const L = g._fullLayout; "
        "return {axes: Object.keys(L).filter(k => /^yaxis\\d*$/.test(k)).length, "
        "matches: ['xaxis', 'xaxis2', 'xaxis3', 'xaxis4', 'xaxis5'].map(k => L[k].matches), "
        "traces: g.data.length}; }"
    )
    # 2 residuals; per foot normal force, utilisation, schedule; the left CoP margin (the
    # pulling right foot has no CoP), the right foot's clipped utilisation; over tolerance.
    assert layout["axes"] == 6 and layout["traces"] == 2 + 2 * 3 + 1 + 1 + 1
    assert layout["matches"] == ["x6"] * 5  # zoom one, all follow


def test_many_logs_page_in_chromium(browser, logs, capsys, tmp_path):
    page_path = tmp_path / "many.html"
    config = str(models_dir() / "humanoid.toml")
    paths = [str(logs[k]) for k in ("good", "flipped", "broken")]
    rows = _cli_json(
        capsys, ["check", *paths, "--config", config, "--json", "--html", str(page_path)]
    )
    assert [r["verdict"] for r in rows] == ["consistent", "inconsistent", "error"]
    page, errors, fetched = _open(browser, page_path)
    page.screenshot(path=str(_artifacts() / "report_html_many.png"))
    assert errors == [] and fetched == []
    assert page.locator("table.files tr.file").count() == 3
    assert page.locator(".js-plotly-plot").count() == 2  # the unreadable log has no section
    for i, row in enumerate(rows):
        shown = _shown_figures(page, f"rows.{i}.")
        assert json.loads(shown["verdict"][0]) == row["verdict"]
        for key, _, _, _ in rh._ROW_FIGURES:
            value, text = shown[key]
            assert json.loads(value) == row[key], (i, key)
            assert text == _expected_text(key, row[key]), (i, key)
    # Each readable log's link leads to its section, whose banner says the same verdict.
    for i, row in enumerate(rows[:2]):
        target = page.locator("table.files tr.file a").nth(i).get_attribute("href")
        verdict = page.locator(f"{target} .banner .verdict").get_attribute("data-value")
        assert json.loads(verdict) == row["verdict"]

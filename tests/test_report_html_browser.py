"""The HTML report in a real browser: headless Chromium (Debian's ``chromium`` package, which
``make test`` installs) through Playwright, with the network cut.

Each page must render without a console error or a request, show the verdict and the figures
``wholebody check --json`` prints, paint the verdict in its first contentful paint, stay within
400 px at a 400 px window, and link its time plots (zoom one, all follow). How fast the page
paints is measured by ``benchmarks/bench_report_html.py``, not here. Screenshots are kept in
``out/test-artifacts/`` (or ``$WHOLEBODY_TEST_ARTIFACTS``). The tests skip only where Chromium
or Playwright is missing, unless ``WHOLEBODY_REQUIRE_BROWSER`` is set (``.ci/run`` sets it):
then they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from wholebody.check import report_html as rh
from wholebody.check.analysis import check_trajectory
from wholebody.cli import main
from wholebody.io.profile import load_profile
from wholebody.models import data_dir, models_dir
from wholebody.trajectory import Trajectory

from .test_report_html import RAW, sign_flipped, unloaded_with_nan

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
CONFIG = str(models_dir() / "humanoid.toml")

# The first contentful paint and the verdict banner's paint (Element Timing: the banner has
# elementtiming="verdict"), in ms since navigation, once the plots are drawn.
PAINTS = """() => new Promise(resolve => {
  const seen = {};
  new PerformanceObserver(list => list.getEntries().forEach(e => {
    seen[e.identifier] = e.renderTime || e.loadTime; })).observe({type: 'element', buffered: true});
  const fcp = () => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime;
  const start = performance.now();
  const wait = () => (document.body.dataset.drawn && fcp() !== undefined
      && seen.verdict !== undefined) || performance.now() - start > 20000
    ? resolve({fcp: fcp(), verdict: seen.verdict}) : setTimeout(wait, 20);
  wait();
})"""


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


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """The shipped squat log, the demo's sign-flipped copy, an unreadable file."""
    folder = tmp_path_factory.mktemp("logs")
    good = data_dir() / "humanoid_squat.npz"
    flipped = folder / "squat_right_flipped.npz"
    sign_flipped(Trajectory.load(good)).save(flipped)
    broken = folder / "broken.npz"
    broken.write_bytes(b"not a log")
    return {"good": good, "flipped": flipped, "broken": broken}


def _artifacts() -> Path:
    out = Path(os.environ.get("WHOLEBODY_TEST_ARTIFACTS", ROOT / "out" / "test-artifacts"))
    out.mkdir(parents=True, exist_ok=True)
    return out


def _open(context, path: Path, width: int = 1400):
    """The page at ``width`` px, plots drawn, with every request off this file refused and
    every console error kept."""
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": 900})
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
    page.wait_for_function("document.body.dataset.drawn", timeout=30_000)
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


def _expected_text(value, unit: str) -> str:
    """A --json figure as the page writes it (three significant digits, its unit)."""
    if value is None:
        return "-"
    if unit == "%":
        return f"{100 * value:.3g}\u00a0%"
    shown = str(value) if isinstance(value, int) else f"{value:.3g}"
    return f"{shown}\u00a0{unit}" if unit else shown


def _axes(page, figure: str) -> list[list[float]]:
    return page.evaluate(
        f"document.getElementById('{figure}').plots.map(u => [u.scales.x.min, u.scales.x.max])"
    )


def _words_shown(page) -> str:
    """Everything a person reads outside the plots: the banner, the diagnosis, every table
    (every <details> opened)."""
    page.eval_on_selector_all("details", "els => els.forEach(e => e.open = true)")
    return "\n".join(page.locator(".banner, .cause, table:not(.u-legend)").all_inner_texts())


def _legend(page, figure: str, plot: int) -> dict[str, str]:
    """The values a plot's legend shows at the cursor, by series."""
    return dict(
        page.locator(f"#{figure} .plot")
        .nth(plot)
        .locator(".u-series")
        .evaluate_all(
            "rows => rows.map(r => [r.querySelector('.u-label').innerText, "
            "r.querySelector('.u-value').innerText])"
        )
    )


def test_report_in_chromium_matches_json(browser, logs, capsys, tmp_path):
    page_path = tmp_path / "report.html"
    argv = ["check", str(logs["flipped"]), "--config", CONFIG, "--json"]
    (row,) = _cli_json(capsys, argv + ["--html", str(page_path)])
    assert row["verdict"] == "inconsistent"
    page, errors, fetched = _open(browser, page_path)
    page.screenshot(path=str(_artifacts() / "report_html_flipped.png"))
    page.screenshot(path=str(_artifacts() / "report_html_flipped_full.png"), full_page=True)
    # The verdict and its reason, then every figure of the --json row, as shown and exactly.
    banner = page.locator(".banner .verdict")
    assert json.loads(banner.get_attribute("data-value")) == row["verdict"]
    assert banner.inner_text() == "INCONSISTENT"
    assert (
        page.locator(".banner .reason")
        .inner_text()
        .startswith("1000 of 1000 checked samples over tolerance")
    )
    shown = _shown_figures(page)
    for key, _, _, unit in rh._ROW_FIGURES:
        value, text = shown[key]
        assert json.loads(value) == row[key], key
        assert text == _expected_text(row[key], unit), key
    # The cause, on the first screen: the banner and the diagnosis inside the viewport.
    best = page.locator(".cause.best .message")
    assert best.inner_text() == row["diagnosis"]
    for locator in (page.locator(".banner"), page.locator(".cause.best")):
        box = locator.bounding_box()
        assert box is not None and box["y"] + box["height"] <= 900
    # Seven plots on one time axis (the log has torques: the worst joint rows are the
    # seventh): a drag across the first zooms all; a double click on another zooms all back
    # out.
    figure = page.locator("div.plots").get_attribute("id")
    assert page.locator(f"#{figure} .plot").count() == 7
    full = _axes(page, figure)
    assert full == [[0.0, 1.998]] * 7
    over = page.locator(f"#{figure} .u-over").first
    over.scroll_into_view_if_needed()
    box = over.bounding_box()
    page.mouse.move(box["x"] + 0.25 * box["width"], box["y"] + 20)
    page.mouse.down()
    page.mouse.move(box["x"] + 0.5 * box["width"], box["y"] + 20, steps=5)
    page.mouse.up()
    zoomed = _axes(page, figure)
    assert all(z == zoomed[0] for z in zoomed)
    assert 0.4 < zoomed[0][0] < 0.6 and 0.9 < zoomed[0][1] < 1.1
    page.locator(f"#{figure} .u-over").nth(3).dblclick()
    assert _axes(page, figure) == full
    # The shaded samples say why under the cursor: every sample is over tolerance here.
    over.hover(position={"x": box["width"] / 2, "y": 20})
    tip = page.locator(f"#{figure} .plot").first.locator(".tip")
    assert tip.inner_text() == "over tolerance: samples 0 to 999 (0.000 to 1.998 s)"
    assert RAW.search(_words_shown(page)) is None
    assert errors == [] and fetched == []


def test_page_opens_at_once(browser, tmp_path):
    """A 4,000-sample log with unreadable samples and a foot without normal force: at most
    2 MB, the verdict in the first contentful paint, within 400 px at a 400 px window (plot
    titles whole, tables inside their boxes), the unloaded foot's utilisation "not
    applicable", no Python representation on the page."""
    profile = load_profile(models_dir() / "humanoid.toml")
    traj = unloaded_with_nan(Trajectory.load(data_dir() / "humanoid_squat.npz"), repeats=4)
    report = check_trajectory(profile.robot, traj, profile.contacts)
    page_path = tmp_path / "long.html"
    report.to_html(page_path)
    assert page_path.stat().st_size <= 2_000_000
    page, errors, fetched = _open(browser, page_path)
    paints = page.evaluate(PAINTS)
    assert paints["fcp"] is not None and paints["verdict"] is not None
    assert paints["verdict"] <= paints["fcp"]  # painted in the first contentful paint
    page.close()
    page, errors_400, fetched_400 = _open(browser, page_path, width=400)
    page.screenshot(path=str(_artifacts() / "report_html_400px.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    titles = page.eval_on_selector_all(
        ".plot h3", "els => els.map(e => [e.scrollWidth, e.clientWidth, e.innerText])"
    )
    assert len(titles) == 7 and all(sw <= cw for sw, cw, _ in titles)  # joint rows: 7th
    widths = page.eval_on_selector_all(".plot canvas", "els => els.map(e => e.clientWidth)")
    assert max(widths) <= 400
    # The cursor where the left foot carries no normal force (samples 500 to 599).
    util = page.locator("#log-figure .u-over").nth(3)
    util.scroll_into_view_if_needed()
    x = page.evaluate("document.getElementById('log-figure').plots[3].valToPos(1.1, 'x')")
    util.hover(position={"x": x, "y": 10})
    legend = _legend(page, "log-figure", 3)
    assert abs(float(legend["time"].removesuffix(" s")) - 1.1) < 0.05  # a pixel: 0.03 s
    assert legend["left_sole"] == "n/a"
    words = _words_shown(page)
    assert "not applicable in" in words
    assert RAW.search(words) is None
    assert all(RAW.search(v) is None for v in legend.values())
    assert errors + errors_400 == [] and fetched + fetched_400 == []


def test_many_logs_page_in_chromium(browser, logs, capsys, tmp_path):
    page_path = tmp_path / "many.html"
    paths = [str(logs[k]) for k in ("good", "flipped", "broken")]
    rows = _cli_json(
        capsys, ["check", *paths, "--config", CONFIG, "--json", "--html", str(page_path)]
    )
    assert [r["verdict"] for r in rows] == ["consistent", "inconsistent", "error"]
    page, errors, fetched = _open(browser, page_path)
    page.screenshot(path=str(_artifacts() / "report_html_many.png"))
    assert errors == [] and fetched == []
    assert page.locator("table.files tr.file").count() == 3
    assert page.locator("div.plots").count() == 2  # the unreadable log has no section
    for i, row in enumerate(rows):
        shown = _shown_figures(page, f"rows.{i}.")
        assert json.loads(shown["verdict"][0]) == row["verdict"]
        for key, _, _, unit in rh._ROW_FIGURES:
            value, text = shown[key]
            assert json.loads(value) == row[key], (i, key)
            assert text == _expected_text(row[key], "%" if unit == "%" else ""), (i, key)
    # Each readable log's link leads to its section, whose banner says the same verdict.
    for i, row in enumerate(rows[:2]):
        target = page.locator("table.files tr.file a").nth(i).get_attribute("href")
        verdict = page.locator(f"{target} .banner .verdict").get_attribute("data-value")
        assert json.loads(verdict) == row["verdict"]
    assert RAW.search(_words_shown(page)) is None
    # At 400 px the table of files scrolls inside its own box; the page does not widen.
    page.set_viewport_size({"width": 400, "height": 900})
    page.wait_for_timeout(100)
    assert page.evaluate("document.documentElement.scrollWidth") <= 400
    box = page.locator("div.scroll:has(table.files)")
    assert box.evaluate("e => e.scrollWidth > e.clientWidth && e.clientWidth <= 400")

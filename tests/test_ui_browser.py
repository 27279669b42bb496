"""`jacked ui` in a real headless Chromium (Debian's `chromium`), driven by Playwright for Python.

No browser download: Playwright launches the system Chromium through `executable_path`. The
tests skip, with the reason, only when Chromium or Playwright is absent; `.ci/run` installs
both so they run in CI.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import REAL

CHROMIUM = os.environ.get("JACKED_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WORKTREES = "ef958aa1-0e93-49f0-bb71-150f63befcd1"

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = expect = None  # type: ignore[assignment]

pytestmark = [
    pytest.mark.skipif(sync_playwright is None, reason="Playwright for Python is not installed "
                       "(pip install -e '.[test]'; .ci/run does it)"),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM} "
                       "(apt-get install chromium; .ci/run does it)"),
]


def jacked_cmd() -> list[str]:
    script = Path(sys.executable).parent / "jacked"
    return [str(script)] if script.exists() else [sys.executable, "-m", "jacked.surfaces.cli.main"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The fixtures scanned into a temp home and served on a free port in this process."""
    from jacked.catalog import Catalog
    from jacked.config import load_settings
    from jacked.ingest.scan import scan
    from jacked.surfaces.ui.server import make_server, serve_in_thread

    home = tmp_path_factory.mktemp("ui-browser-home")
    settings = load_settings(REAL, jacked_home=str(home), user_name="tester")
    cat = Catalog(settings.catalog_path)
    scan(cat, settings.claude_dir)
    cat.close()
    server = make_server(settings, "127.0.0.1", 0)
    serve_in_thread(server)
    yield {"base": f"http://127.0.0.1:{server.server_address[1]}/", "home": home}
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as p:  # type: ignore[misc]
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Page:
    """A fresh page that records every console error, page error and failed request."""

    def __init__(self, browser: Any) -> None:
        self.ctx = browser.new_context(viewport={"width": 1300, "height": 1000})
        self.page = self.ctx.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}"))
        self.page.on("response", lambda r: self.errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)

    def close(self) -> None:
        self.ctx.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    p = Page(browser)
    yield p
    p.close()


def cli_turns(home: Path, session: str) -> dict[str, Any]:
    """`jacked turns SESSION --json`, as a user runs it, on the same home."""
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(REAL), JACKED_HOME=str(home), JACKED_USER_NAME="tester")
    out = subprocess.run(jacked_cmd() + ["turns", session, "--json"], capture_output=True, text=True, env=env,
                         check=True, timeout=120)
    return json.loads(out.stdout)


def screenshot_dir(tmp_path: Path) -> Path:
    """Where screenshots go: JACKED_UI_SCREENSHOTS when set (to refresh docs/), else the test's tmp dir."""
    d = Path(os.environ.get("JACKED_UI_SCREENSHOTS") or tmp_path)
    d.mkdir(parents=True, exist_ok=True)
    return d


def test_session_page_matches_turns_json(site: dict[str, Any], page: Page, tmp_path: Path) -> None:
    data = cli_turns(site["home"], WORKTREES)
    want_turns = len(data["turns"])
    want_batches = sum(1 for t in data["turns"] for n in Counter(i["sequence"] for i in t["invocations"]).values()
                       if n > 1)
    want_calls = sum(len(t["invocations"]) for t in data["turns"])
    pg = page.page
    pg.goto(site["base"] + f"#/session/{WORKTREES}")
    pg.wait_for_selector("section.turn")
    pg.wait_for_load_state("networkidle")
    assert pg.locator("section.turn").count() == want_turns == 3
    assert pg.locator("[data-parallel-batch]").count() == want_batches == 9
    assert pg.locator(".seq .call").count() == want_calls
    sizes = [int(x) for x in pg.locator("[data-parallel-batch]").evaluate_all("els => els.map(e => e.dataset.parallelBatch)")]
    assert all(n > 1 for n in sizes)
    shot = screenshot_dir(tmp_path) / "ui-session.png"
    pg.screenshot(path=str(shot), full_page=False)
    assert shot.stat().st_size > 10_000
    # a subagent box opens onto its report
    sub = pg.locator("details.subagent").first
    sub.locator("summary").click()
    assert sub.locator("pre").first.inner_text().strip()
    assert page.errors == []


def test_sessions_list_and_stats_render_without_errors(site: dict[str, Any], page: Page, tmp_path: Path) -> None:
    pg = page.page
    pg.goto(site["base"])
    pg.wait_for_selector("tr[data-session-id]")
    assert pg.locator("tr[data-session-id]").count() == 27  # every listed session (summary-only and empty files are none)
    pg.fill("input[type=search]", "experiment")
    pg.wait_for_selector(".notice")  # no index here: the page says the text filter is a plain match
    # (predicates run as page script would be blocked by the page's own CSP: poll locators instead)
    expect(pg.locator("tr[data-session-id]")).not_to_have_count(27)
    assert pg.locator(f'tr[data-session-id="{WORKTREES}"]').count() == 1
    pg.goto(site["base"] + "#/stats")
    pg.wait_for_selector(".chart svg rect")
    pg.wait_for_load_state("networkidle")
    assert pg.locator(".chart").count() >= 7
    pg.screenshot(path=str(screenshot_dir(tmp_path) / "ui-stats.png"), full_page=True)
    assert page.errors == []


def test_composer_previews_and_meters_the_retrieve(site: dict[str, Any], page: Page) -> None:
    pg = page.page
    pg.goto(site["base"])
    pg.wait_for_selector(f'tr[data-session-id="{WORKTREES}"]')
    pg.locator(f'tr[data-session-id="{WORKTREES}"] input[type=checkbox]').check()
    assert pg.inner_text("#basket-count") == "1"
    pg.click("a[data-nav=compose]")
    expect(pg.locator("pre.preview")).to_contain_text(WORKTREES)
    assert "tokens used" in pg.inner_text(".compose")
    pg.fill("input.budget", "300")
    pg.wait_for_selector(".omitted li:not(.muted)")
    assert "did not fit" in pg.inner_text(".omitted") or "left out" in pg.inner_text(".omitted")
    assert page.errors == []


def test_session_page_shows_decisions_and_feedback(site: dict[str, Any], page: Page) -> None:
    from kit import DEEP

    data = cli_turns(site["home"], DEEP)
    want = sum(len(t.get("decisions") or []) for t in data["turns"])
    pg = page.page
    pg.goto(site["base"] + f"#/session/{DEEP}")
    pg.wait_for_selector("section.turn")
    pg.wait_for_load_state("networkidle")
    assert want > 0 and pg.locator(".placed.decision").count() == want
    assert pg.locator(".badge.decision").count() == sum(1 for t in data["turns"] if t.get("decisions"))
    assert page.errors == []


@pytest.fixture(scope="module")
def indexed_site(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> Iterator[dict[str, Any]]:
    """Two real projects indexed (model and Edge shard), served: the list's search is hybrid."""
    import shutil

    from jacked.config import load_settings
    from jacked.service import Jacked
    from jacked.surfaces.ui.server import make_server, serve_in_thread

    claude = tmp_path_factory.mktemp("ui-indexed-claude")
    for project in ("-experiments-worktrees", "-experiments-ideas"):
        shutil.copytree(REAL / "projects" / project, claude / "projects" / project)
    settings = load_settings(claude, jacked_home=str(tmp_path_factory.mktemp("ui-indexed-home")), user_name="tester")
    assert Jacked(settings).backfill().errors == []
    server = make_server(settings, "127.0.0.1", 0)
    serve_in_thread(server)
    yield {"base": f"http://127.0.0.1:{server.server_address[1]}/"}
    server.shutdown()
    server.server_close()


def test_search_shows_its_confidence_and_admits_a_miss(indexed_site: dict[str, Any], page: Page) -> None:
    """As `jacked search` does: the answer's confidence and each result's, and "nothing matched well"
    above the closest sessions of a query about nothing there."""
    pg = page.page
    pg.goto(indexed_site["base"] + "#/sessions?q=" + "sourdough bread recipe with rye flour".replace(" ", "%20"))
    expect(pg.locator(".notice.weak")).to_contain_text("nothing matched well")
    expect(pg.locator("h1 .muted")).to_contain_text("confidence low")
    rows = pg.locator("tr[data-session-id]")
    assert rows.count() >= 1 and pg.locator("tr[data-session-id] .badge.conf").count() == rows.count()
    assert pg.locator(".badge.conf").first.inner_text() == "low confidence"
    pg.fill("input[type=search]", "teammates researching in separate git worktrees")
    expect(pg.locator("h1 .muted")).to_contain_text("confidence high")
    assert pg.locator(".notice.weak").count() == 0
    expect(pg.locator(f'tr[data-session-id="{WORKTREES}"] .badge.conf')).to_have_text("high confidence")
    assert pg.locator("tr[data-session-id]").first.get_attribute("data-session-id") == WORKTREES


def test_parallel_reads_show_the_end_of_their_paths(site: dict[str, Any], page: Page) -> None:
    """In a batch of parallel Reads each box shows its file's name (and folder), not the same "/Users/…"."""
    sid = "9e953218-585f-4692-89df-9e0747a31c68"
    data = cli_turns(site["home"], sid)
    paths = [i["file_path"] for t in data["turns"] for i in t["invocations"]
             if i["tool_name"] == "Read" and i["parallel_group"] > 0]
    assert len(paths) >= 3
    pg = page.page
    pg.goto(site["base"] + f"#/session/{sid}")
    pg.wait_for_selector("section.turn")
    pg.wait_for_load_state("networkidle")
    shown = pg.locator("[data-parallel-batch] .call[data-tool=Read] summary").evaluate_all("""els => els.map(s => {
        const full = s.querySelector('[title]:not(.x)');
        // the elements of the summary whose whole text is on screen (not cut by an ellipsis)
        const whole = [...s.querySelectorAll('span')].filter(e => e.scrollWidth <= e.clientWidth + 1)
                                                      .map(e => e.textContent);
        return [full ? full.title : null, whole]; })""")
    assert [title for title, _ in shown] == paths
    for path, (_, whole) in zip(paths, shown):
        name = "/".join(path.split("/")[-2:])  # its folder and file name
        assert any(text.endswith(name) for text in whole), (path, whole)
    assert page.errors == []

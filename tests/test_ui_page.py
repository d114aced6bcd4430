"""The page of ``snapshotter ui`` in a real headless browser: Debian's chromium
and chromium-driver, driven by selenium (``.ci/run`` installs them; without
them these tests skip and say why).

Every check that something was written reads the workspace's bytes; every
refusal checks that nothing was. A screenshot of the timeline is kept as a test
artefact in ``$SNAPSHOTTER_TEST_ARTEFACTS`` (default ``test-artefacts/``), not
compared by pixels.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import contents
from ui_helpers import APP, CLAUDE, SECRET, make_history, serving

from snapshotter import Snapshotter

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra has it)")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="Debian's chromium and chromium-driver are not installed (`apt-get install chromium chromium-driver`)",
)
ARTEFACTS = Path(
    os.environ.get("SNAPSHOTTER_TEST_ARTEFACTS", Path(__file__).resolve().parent.parent / "test-artefacts")
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync"]
    flags += ["--disable-background-networking", "--disable-component-update", "--window-size=1400,900"]
    flags += ["--disable-dev-shm-usage"]
    for flag in flags:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER or ""), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def page(browser: Any, ws: Path, home: Path) -> Iterator[Any]:
    make_history(ws, home)
    with serving(ws, home) as running:
        browser.get(running.url)
        wait(browser, lambda d: d.execute_script("return document.body.dataset.settled === '1'"))
        browser.running = running
        yield browser


def wait(driver: Any, condition: Any, timeout: float = 15) -> Any:
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(condition)


def texts(driver: Any, selector: str) -> list[str]:
    """The text of every element ``selector`` finds, read at one moment (the page redraws)."""
    found: list[str] = driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((node) => node.innerText)", selector
    )
    return found


def click(driver: Any, selector: str, index: int = 0, containing: str = "") -> None:
    """Click the ``index``-th element ``selector`` finds whose text holds ``containing``."""
    clicked = driver.execute_script(
        "const found = [...document.querySelectorAll(arguments[0])].filter((n) => n.innerText.includes(arguments[2]));"
        "const node = found.at(arguments[1]); if (node) node.click(); return Boolean(node);",
        selector,
        index,
        containing,
    )
    assert clicked, (selector, index, containing)


def count(driver: Any, selector: str) -> int:
    return len(texts(driver, selector))


def open_claude_turn(driver: Any) -> None:
    assert len([t for t in texts(driver, ".turn-head") if "claude-code:" in t]) == 1
    click(driver, ".turn-head", containing="claude-code:")
    wait(driver, lambda d: count(d, '#detail section.file[data-path="app.py"] .hunk') == 2)


def test_the_page_shows_a_lane_for_each_session_and_the_person(page: Any) -> None:
    assert texts(page, ".lane-head") == ["you (no session)", "codex · 2222bbbb", "claude-code · 1111aaaa"]
    assert sorted(texts(page, ".turn-head")) == ["turn 1: claude-code: please tidy", "turn 1: codex: please tidy"]
    assert count(page, ".snap") == 10
    assert "1 file +2 −2" in " ".join(texts(page, ".snap .counts"))  # claude's tool call


def test_a_turns_diff_opens_side_by_side(page: Any) -> None:
    open_claude_turn(page)
    removed = texts(page, "#detail td.text.del")
    added = texts(page, "#detail td.text.add")
    assert removed == ["line 5", "line 31"] and added == ["line 5 by claude", "line 31 by claude"]
    assert "README.md" not in texts(page, "#detail")[0]  # the other session's turn is not in it


def test_reverting_one_hunk_through_the_page_writes_only_that_hunk(page: Any, ws: Path) -> None:
    before = contents(ws)
    open_claude_turn(page)
    click(page, "#detail .revert-hunk")
    wait(page, lambda d: count(d, "dialog[open] .plan-part"))
    shown = texts(page, "dialog[open]")[0]
    assert "take back" in shown and "app.py" in shown and "-line 5" in shown
    assert contents(ws) == before  # the dry run wrote nothing
    click(page, "#confirm-ok")
    wait(page, lambda d: count(d, "#detail .done"))
    expected = APP.replace("line 31\n", "line 31 by claude\n")
    assert (ws / "app.py").read_bytes() == expected.encode()
    assert (ws / "README.md").read_bytes() == b"# demo\n\nhello\nadded by codex\n"
    assert (ws / "notes.txt").read_bytes() == b"the person's notes\n"
    assert (ws / ".env").read_bytes() == (SECRET + "\n").encode()
    wait(page, lambda d: "post-revert" in texts(d, ".snap .label"))  # what it wrote is recorded, and listed


def test_cancelling_a_confirmation_writes_nothing(page: Any, ws: Path) -> None:
    before = contents(ws)
    click(page, ".snap", index=-1)  # the first snapshot
    wait(page, lambda d: count(d, "#detail .actions button"))
    wait(page, lambda d: "The oldest snapshot kept: nothing earlier" in texts(d, "#detail")[0])
    click(page, "#detail .actions button", containing="Restore this snapshot")
    wait(page, lambda d: count(d, "dialog[open] .plan-part"))
    shown = texts(page, "dialog[open]")[0]
    assert "delete 1" in shown and "notes.txt" in shown  # the plan: exactly what it would write
    click(page, "#confirm-cancel")
    wait(page, lambda d: not count(d, "dialog[open]"))
    assert contents(ws) == before


def test_two_snapshots_picked_are_compared(page: Any) -> None:
    click(page, ".snap input[type=checkbox]", index=-1)  # the first snapshot
    click(page, ".snap input[type=checkbox]", index=0)  # the newest
    wait(page, lambda d: count(d, "#detail section.file") == 3)
    assert texts(page, "#detail h2")[0].startswith("from ")
    assert sorted(texts(page, "#detail section.file .path")) == ["README.md", "app.py", "notes.txt"]
    assert "added" in texts(page, '#detail section.file[data-path="notes.txt"]')[0]


def test_blame_colours_lines_by_session(page: Any) -> None:
    open_claude_turn(page)
    click(page, '#detail section.file[data-path="app.py"] .file-head button', containing="blame")
    wait(page, lambda d: count(d, "#detail tr.blame") == 40)
    assert texts(page, "#detail tr.blame.session td.text") == ["line 5 by claude", "line 31 by claude"]
    colours = page.execute_script(
        "const head = document.querySelector(`.lane-head[data-lane='${arguments[0]}']`);"
        "const lane = head.style.getPropertyValue('--lane');"
        "return [lane, ...[...document.querySelectorAll('#detail tr.blame.session')]"
        ".map((row) => row.style.getPropertyValue('--lane'))];",
        CLAUDE,
    )
    assert colours[0] and colours[1:] == [colours[0], colours[0]]
    assert count(page, "#detail tr.blame.person") == 0 and count(page, "#detail tr.blame.boundary") == 38


def test_the_page_without_its_token_gets_nothing(browser: Any, ws: Path, home: Path) -> None:
    make_history(ws, home)
    before = contents(ws)
    with serving(ws, home) as running:
        browser.get(running.url.split("?")[0])
        assert "missing or wrong token" in texts(browser, "body")[0]
        assert not count(browser, ".snap")
    assert contents(ws) == before


def test_a_snapshot_recorded_elsewhere_appears_by_itself(page: Any, ws: Path, home: Path) -> None:
    (ws / "notes.txt").write_text("more\n")
    with Snapshotter(ws, home=home) as other:
        made = other.snapshot("recorded by a hook").id
    wait(page, lambda d: count(d, f'.snap[data-id="{made}"]'), timeout=15)
    assert texts(page, "#live") == ["live"]


def test_a_screenshot_of_the_timeline_is_kept(page: Any) -> None:
    open_claude_turn(page)
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTEFACTS / "ui-timeline.png"
    page.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_binary_mode_symlink_and_deleted_files_are_said_plainly(browser: Any, ws: Path, home: Path) -> None:
    make_history(ws, home)
    (ws / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x01\x02" * 50)
    (ws / "README.md").unlink()
    (ws / "app.py").chmod(0o755)
    (ws / "link").symlink_to("notes.txt")
    with Snapshotter(ws, home=home) as snap:
        snap.snapshot("odd files")
    with serving(ws, home) as running:
        browser.get(running.url)
        wait(browser, lambda d: d.execute_script("return document.body.dataset.settled === '1'"))
        click(browser, ".snap", index=0)
        wait(browser, lambda d: count(d, "#detail section.file") == 4)
        shown = {
            path: texts(browser, f'#detail section.file[data-path="{path}"]')[0]
            for path in texts(browser, "#detail .path")
        }
    assert "binary" in shown["logo.png"] and "Binary file" in shown["logo.png"]
    assert "deleted" in shown["README.md"] and "-added by codex" not in shown["README.md"]
    assert "mode 100644 → 100755" in shown["app.py"]
    assert "symlink: points to notes.txt" in shown["link"]

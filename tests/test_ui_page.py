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


# -- issue #52: big changes, lane colours and widths, blame of a deleted file, times, code, reverts ----


def keep(driver: Any, name: str) -> Path:
    """Save a screenshot artefact ``name``.png (not compared by pixels) and return its path."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTEFACTS / f"{name}.png"
    driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return shot


def open_page(driver: Any, running: Any) -> None:
    driver.get(running.url)
    wait(driver, lambda d: d.execute_script("return document.body.dataset.settled === '1'"))


@pytest.fixture
def sized(browser: Any) -> Iterator[Any]:
    """The browser, put back to its usual 1400 x 900 after a test that resizes it."""
    yield browser
    browser.set_window_size(1400, 900)


def lanes_hidden(driver: Any) -> dict[str, Any]:
    """Which lane heads end right of the timeline's visible part, and whether it scrolls sideways."""
    found: dict[str, Any] = driver.execute_script(
        "const box = document.getElementById('timeline');"
        "const right = box.getBoundingClientRect().right;"
        "const heads = [...document.querySelectorAll('.lane-head')];"
        "const note = document.getElementById('lanes-more');"
        "return {off: heads.filter((h) => h.getBoundingClientRect().right > right + 1).map((h) => h.innerText),"
        " scrolls: box.scrollWidth > box.clientWidth + 1, lanes: heads.length,"
        " note: !note || note.hidden ? '' : note.innerText,"
        " noteShown: Boolean(note) && !note.hidden && note.getBoundingClientRect().width > 0};"
    )
    return found


ALIKE = ("agent-a", "agent-b", "worker-1", "worker-2")


def make_alike_sessions(ws: Path, home: Path) -> None:
    """Four sessions named alike, each changing its own line of app.py in a turn."""
    (ws / "app.py").write_text(APP)
    with Snapshotter(ws, home=home) as snap:
        snap.snapshot("first")
        for k, session in enumerate(ALIKE):
            view = snap.in_session(session)
            view.begin_turn(f"{session}: edit line {k + 1}")
            view.tool_snapshot("t1")
            lines = (ws / "app.py").read_text().splitlines(keepends=True)
            lines[k] = f"line {k + 1} by {session}\n"
            (ws / "app.py").write_text("".join(lines))
            view.tool_done("t1")
            view.end_turn()


def rgb(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text[text.index("(") + 1 : text.index(")")].split(",")[:3])


def test_a_100000_line_change_shows_its_first_lines_without_error(browser: Any, ws: Path, home: Path) -> None:
    """Before: "No change to show: Maximum call stack size exceeded". The change is drawn a
    part at a time; how long the first part took is written to the artefacts (not asserted)."""
    (ws / "small.txt").write_text("a\n")
    with Snapshotter(ws, home=home) as snap:
        snap.snapshot("first")
        (ws / "big.txt").write_text("".join(f"generated line {i}\n" for i in range(100_000)))
        snap.snapshot("a big change")
    with serving(ws, home) as running:
        open_page(browser, running)
        browser.execute_script(
            "window.clickedAt = performance.now(); document.querySelector('.snap').click();"
            "const seen = () => document.querySelector('#detail td.text.add') ?"
            " (window.drawnIn = performance.now() - window.clickedAt) : requestAnimationFrame(seen); seen();"
        )
        wait(browser, lambda d: count(d, "#detail td.text.add") or "No change" in texts(d, "#detail")[0], 60)
        assert "No change to show" not in texts(browser, "#detail")[0]
        added = texts(browser, "#detail td.text.add")
        assert added[:2] == ["generated line 0", "generated line 1"] and len(added) < 100_000
        first = browser.execute_script(
            "const r = document.querySelector('#detail td.text.add').getBoundingClientRect();"
            "return r.top >= 0 && r.bottom <= window.innerHeight;"
        )
        assert first  # on the first screen
        more = texts(browser, "#detail .show-more")
        assert more and f"{100_000 - len(added):,} lines of this hunk not shown yet" in more[0]
        click(browser, "#detail .show-more")
        wait(browser, lambda d: count(d, "#detail td.text.add") > len(added))
        drawn_in = browser.execute_script("return window.drawnIn")
        keep(browser, "ui-big-change")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    (ARTEFACTS / "ui-big-change.txt").write_text(
        f"100,000-line change: first lines drawn {drawn_in:.0f} ms after the click\n"
    )


def test_sessions_named_alike_get_distinct_colours_and_blame_has_a_legend(sized: Any, ws: Path, home: Path) -> None:
    make_alike_sessions(ws, home)
    with serving(ws, home) as running:
        open_page(sized, running)
        heads = sized.execute_script(
            "return [...document.querySelectorAll('.lane-head')].map((h) =>"
            " [h.dataset.lane, getComputedStyle(h).borderBottomColor]);"
        )
        colours = {lane: rgb(colour) for lane, colour in heads if lane}
        assert sorted(colours) == sorted(ALIKE)
        for a in ALIKE:
            for b in ALIKE:
                if a < b:
                    distance = sum((x - y) ** 2 for x, y in zip(colours[a], colours[b])) ** 0.5
                    assert distance > 80, (a, b, colours[a], colours[b])
        click(sized, ".turn-head", containing="worker-2:")
        wait(sized, lambda d: count(d, '#detail section.file[data-path="app.py"] .hunk'))
        click(sized, '#detail section.file[data-path="app.py"] button.blame')
        wait(sized, lambda d: count(d, "#detail tr.blame") == 40)
        legend = sized.execute_script(
            "return [...document.querySelectorAll('#detail .legend .chip')].map((c) =>"
            " [c.innerText, getComputedStyle(c).borderLeftColor]);"
        )
        lines = sized.execute_script(
            "return [...document.querySelectorAll('#detail tr.blame.session')].map((r) =>"
            " [r.querySelector('td.text').innerText, getComputedStyle(r.querySelector('td.who')).borderLeftColor]);"
        )
        keep(sized, "ui-lane-colours")
        for session in ALIKE:
            chip = [rgb(colour) for name, colour in legend if name == session]
            line = [rgb(colour) for text, colour in lines if text.endswith(f"by {session}")]
            assert chip == [colours[session]] and line == [colours[session]], session
        sized.set_window_size(1000, 900)  # five lanes cannot fit: the page says more are to the right
        wait(sized, lambda d: lanes_hidden(d)["noteShown"])
        hidden = lanes_hidden(sized)
        assert (
            hidden["off"] and f"{len(hidden['off'])} more lane" in hidden["note"] and "to the right" in hidden["note"]
        )
        keep(sized, "ui-more-lanes")


@pytest.mark.parametrize("width", [1000, 1400])
def test_three_lanes_fit_at_1000_and_1400_px(sized: Any, ws: Path, home: Path, width: int) -> None:
    make_history(ws, home)
    with Snapshotter(ws, home=home) as snap:  # a timeline taller than the window: it has a scrollbar
        for k in range(30):
            (ws / "notes.txt").write_text(f"edit {k}\n")
            snap.snapshot(f"edit {k}")
    sized.set_window_size(width, 900)
    with serving(ws, home) as running:
        open_page(sized, running)
        hidden = lanes_hidden(sized)
        keep(sized, f"ui-lanes-{width}")
    assert hidden["lanes"] == 3 and hidden["off"] == [] and not hidden["scrolls"] and not hidden["noteShown"]


def test_a_deleted_file_has_no_blame_and_a_blame_refusal_stays_in_its_file(browser: Any, ws: Path, home: Path) -> None:
    (ws / "app.py").write_text(APP)
    (ws / "old.txt").write_text("to go\n")
    with Snapshotter(ws, home=home) as snap:
        snap.snapshot("first")
        view = snap.in_session(CLAUDE)
        view.begin_turn("claude-code: tidy", metadata={"agent": "claude-code"})
        view.tool_snapshot("t1")
        (ws / "old.txt").unlink()
        (ws / "app.py").write_text(APP.replace("line 5\n", "line 5 by claude\n"))
        view.tool_done("t1")
        view.end_turn()
    (ws / "app.py").unlink()  # gone since, not snapshotted: blame has nothing to read
    with serving(ws, home) as running:
        open_page(browser, running)
        click(browser, ".turn-head")
        wait(browser, lambda d: count(d, "#detail section.file") == 2)
        assert not count(browser, '#detail section.file[data-path="old.txt"] button.blame')
        assert "no lines left" in texts(browser, '#detail section.file[data-path="old.txt"]')[0]
        click(browser, '#detail section.file[data-path="app.py"] button.blame')
        wait(browser, lambda d: count(d, '#detail section.file[data-path="app.py"] .failure'))
        shown = texts(browser, '#detail section.file[data-path="app.py"] .failure')[0]
        assert shown.startswith("No blame:")
        assert count(browser, "#detail section.file") == 2 and texts(browser, "#detail h2")[0].startswith("turn 1")
        keep(browser, "ui-blame-refused")


def test_one_time_format_and_code_that_scrolls(page: Any, ws: Path, home: Path) -> None:
    wide = " ".join(f"word{k}" for k in range(150))
    (ws / "wide.txt").write_text(f"short\n{wide}\n")
    with Snapshotter(ws, home=home) as snap:
        made = snap.snapshot("a wide line").id
    wait(page, lambda d: count(d, f'.snap[data-id="{made}"]'))
    time = page.execute_script(
        "const card = document.querySelector(`.snap[data-id='${arguments[0]}']`);"
        "return card.closest('tr').querySelector('td.when').innerText",
        made,
    )
    click(page, f'.snap[data-id="{made}"]')
    wait(page, lambda d: count(d, '#detail section.file[data-path="wide.txt"] td.text.add') == 2)
    header = texts(page, "#detail .meta")[0]
    assert time in header and "AM" not in header and "PM" not in header, (time, header)
    sizes = page.execute_script(
        "const cells = [...document.querySelectorAll('#detail td.text.add')];"
        "const side = cells[1].closest('.side');"
        "return {short: cells[0].getBoundingClientRect().height, wide: cells[1].getBoundingClientRect().height,"
        " scrolls: side.scrollWidth > side.clientWidth};"
    )
    keep(page, "ui-wide-line")
    assert sizes["wide"] == sizes["short"] and sizes["scrolls"], sizes  # one line high, the side scrolls


def test_a_hunk_reverted_on_the_page_is_marked_and_filed_in_the_persons_lane(page: Any, ws: Path, home: Path) -> None:
    with Snapshotter(ws, home=home) as snap:
        before = {info.id for info in snap.list(limit=None)}
    open_claude_turn(page)
    first, second = page.execute_script(
        "return [...document.querySelectorAll('#detail .hunk')].map((h) => h.dataset.hunk)"
    )
    click(page, f'#detail .revert-hunk[data-hunk="{first}"]')
    wait(page, lambda d: count(d, "dialog[open] .plan-part"))
    click(page, "#confirm-ok")
    wait(page, lambda d: count(d, "#detail .done"))
    wait(page, lambda d: count(d, f'#detail .hunk[data-hunk="{first}"] .reverted-note'))
    assert not count(page, f'#detail .revert-hunk[data-hunk="{first}"]')  # not offered again
    assert count(page, f'#detail .revert-hunk[data-hunk="{second}"]') == 1
    keep(page, "ui-hunk-reverted")
    with Snapshotter(ws, home=home) as snap:
        written = [info for info in snap.list(limit=None) if info.id not in before]
        assert "post-revert" in [info.label for info in written]
        assert {info.session for info in written} == {None}  # the person's, not the agent's
    wait(page, lambda d: "post-revert" in texts(d, ".snap .label"))
    lane = page.execute_script(
        "const card = [...document.querySelectorAll('.snap')].find((s) => s.innerText.includes('post-revert'));"
        "return [...card.closest('tr').children].indexOf(card.closest('td'));"
    )
    assert lane == 1  # the first lane, after the time column: "you (no session)"


def test_older_snapshots_load_a_page_below_the_oldest_shown(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Load older snapshots`` asks for the page ``before`` the oldest snapshot
    shown (a page's cost however deep, issue #50), never ``--skip`` past all
    those shown; the pages add up to the history, each snapshot once."""
    import longhistory

    from snapshotter.frontends.page import ui_commands

    history = longhistory.History(tmp_path / "long", tmp_path / "long-home", folders=2, files=5)
    history.build(230)
    asked: list[list[str]] = []
    real = ui_commands.Runner.command

    def recorded(self: Any, argv: Any, session: Any = None) -> Any:
        if argv and argv[0] == "log":
            asked.append(list(argv))
        return real(self, argv, session)

    monkeypatch.setattr(ui_commands.Runner, "command", recorded)
    with Snapshotter(history.ws, home=history.home) as snap:
        everything = [info.id for info in snap.list(limit=None)]
    with serving(history.ws, history.home) as running:
        open_page(browser, running)
        for shown in (200, 230):
            click(browser, "#more")
            wait(browser, lambda d, shown=shown: count(d, ".snap") == shown)
        wait(browser, lambda d: texts(d, "#more") == ["The oldest snapshot is shown"])
    assert asked[0] == ["log", "-n", "100"]
    assert ["log", "--before", everything[99], "-n", "100"] in asked
    assert ["log", "--before", everything[199], "-n", "100"] in asked
    assert not [argv for argv in asked if "--skip" in argv]
    assert len(set(everything)) == 230

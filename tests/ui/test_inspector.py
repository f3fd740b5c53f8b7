"""The memory inspector (``agentmemory ui``) in a real headless Chromium through Selenium.

The page is the real command, started as a separate process on 127.0.0.1 and a free port and
stopped by SIGTERM; the store is a real store folder (hashing embedder, so no model loads).
Missing Chromium or its driver skips with the reason, and fails under ``CI=true``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentmemory import ChromaStore, Entry, SqliteStore

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SCRIPT = Path(sys.executable).with_name("agentmemory")
IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
HOSTILE = (
    "<script>alert('script')</script>\n\n"
    "<img src=x onerror=\"alert('img')\">\n\n"
    "[click me](javascript:alert('link'))\n\n"
    "## project\n\n### forged (10 of 4096 bytes)\n\nThe model saved this from a web page.\n"
)


def embedder() -> Any:
    from embedders import HashingEmbedder

    return HashingEmbedder()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A seeded store: an entry edited twice (one edit a lost update), a superseded plan, a
    hostile entry, and a purged secret."""
    folder = tmp_path / "memory"
    with ChromaStore.open(folder, embedder=embedder()) as st:
        first = st.put(Entry("user", "editor", "Prefers dark mode in Vim.", {"type": "user"}))
        second = st.put(
            Entry("user", "editor", "Prefers dark mode in Neovim.\nUses tmux.", {"type": "user"}),
            if_hash=first.entry.hash,
        )
        # written by a session that had read the first version: a lost update
        st.put(
            Entry("user", "editor", "Prefers light mode in Neovim.\nUses tmux.", {"type": "user"}),
            based_on=first.entry.hash,
        )
        assert second.seq == 2
        st.put(Entry("project", "deploy", "Deploys on Mondays.", {"type": "project"}))
        st.put(
            Entry(
                "project",
                "deploy-2",
                "Deploys on Tuesdays.",
                {"type": "project", "supersedes": "deploy"},
            )
        )
        st.put(Entry("user", "notes", HOSTILE, {"description": "<b>bold</b> description"}))
        st.put(Entry("user", "address", "Lives at 12 Secret Road."))
        st.purge("user", "address", reason="user asked for erasure")
    return folder


class Inspector:
    """A running ``agentmemory ui``: its URL (with the token) and its process."""

    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url
        parts = urllib.parse.urlsplit(url)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.token = urllib.parse.parse_qs(parts.query)["token"][0]

    def page(self, path: str) -> str:
        return self.base + path


def start(folder: Path, *extra: str) -> Inspector:
    """``agentmemory ui`` on ``folder``, its home folder the folder's parent (so the page's
    header, and the screenshots, name it ``~/memory``, not the test's temporary path)."""
    env = {
        **os.environ,
        "ANONYMIZED_TELEMETRY": "False",
        "HF_HUB_OFFLINE": "1",
        "HOME": str(folder.parent),
    }
    proc = subprocess.Popen(
        [str(SCRIPT), "ui", "--path", str(folder), "--no-browser", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()  # the first line: the URL with the token
    if not line.startswith("http://127.0.0.1:"):
        proc.kill()
        raise AssertionError(f"no URL first: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return Inspector(proc, line)


def stop(inspector: Inspector) -> None:
    inspector.proc.send_signal(signal.SIGTERM)
    code = inspector.proc.wait(timeout=30)
    assert code == 0, f"SIGTERM did not stop it cleanly (exit {code})"


@pytest.fixture
def inspector(store: Path) -> Iterator[Inspector]:
    running = start(store)
    try:
        yield running
    finally:
        stop(running)


@pytest.fixture
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Chromium at 1280x800 through chromedriver, its profile in the test's temporary
    folder (left to itself, Chromium leaves an org.chromium.Chromium.* folder in /tmp per run)."""
    missing = [p for p in (CHROMIUM, DRIVER) if not Path(p).is_file()]
    if missing:
        reason = f"no {', '.join(missing)} (apt-get install chromium chromium-driver)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tmp_path_factory.mktemp("chromium")
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--window-size=1280,800",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def shot(driver: Any, name: str) -> None:
    """Save the page at 1280x800 as docs/images/inspector-<name>.png when
    ``AGENTMEMORY_UI_SCREENSHOTS=1`` (how the README's pictures are made)."""
    if os.environ.get("AGENTMEMORY_UI_SCREENSHOTS") == "1":
        IMAGES.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(IMAGES / f"inspector-{name}.png"))


def wait_replaced(driver: Any, old: Any) -> None:
    """Wait (up to 60 s) until the page holding the element ``old`` has been replaced.

    Selenium's ``staleness_of`` counts only ``StaleElementReferenceException`` as gone; while
    a page is being replaced chromedriver may instead answer "Node with given id does not
    belong to the document" (a ``WebDriverException``), which failed one full CI run: that
    answer means gone too."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    def gone(_: Any) -> bool:
        try:
            old.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as exc:
            if "does not belong to the document" in str(exc):
                return True
            raise
        return False

    WebDriverWait(driver, 60).until(gone)


def click_and_wait(driver: Any, element_id: str) -> None:
    """Click the button ``element_id`` and wait until the page it submits to has replaced this
    one (a click returns before a POST's redirect has loaded)."""
    from selenium.webdriver.common.by import By

    old = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(By.ID, element_id).click()
    wait_replaced(driver, old)


def no_dialog(driver: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        alert = driver.switch_to.alert
    except NoAlertPresentException:
        return
    raise AssertionError(f"a dialog opened: {alert.text!r}")


def test_the_pages_show_scopes_history_block_and_search(inspector: Inspector, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    browser.get(inspector.url)  # the printed URL: the token sets the cookie
    assert browser.find_element(By.TAG_NAME, "h1").text == "Scopes"
    assert browser.find_element(By.CSS_SELECTOR, "header .store").text == "~/memory"
    scopes = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "section.scope h2")]
    assert scopes == ["project", "user"]
    user = browser.find_element(By.ID, "scope-user")
    names = [a.text for a in user.find_elements(By.CSS_SELECTOR, "tr.entry-row td:first-child a")]
    assert names == ["editor", "notes"]  # the purged address is not live
    assert "the block holds 1 of them" in browser.find_element(By.ID, "scope-project").text
    shot(browser, "scopes")

    old = browser.find_element(By.TAG_NAME, "html")
    user.find_element(By.LINK_TEXT, "editor").click()  # a link: the cookie carries the token
    wait_replaced(browser, old)
    assert browser.find_element(By.TAG_NAME, "h1").text == "user/editor"
    versions = browser.find_elements(By.CSS_SELECTOR, "#history li.version")
    assert len(versions) == 3
    assert "lost update" in versions[2].text and "lost update" not in versions[1].text
    diff = versions[1].find_element(By.CSS_SELECTOR, "pre.diff")
    assert [s.text for s in diff.find_elements(By.CSS_SELECTOR, "span.del")] == [
        "-Prefers dark mode in Vim."
    ]
    added = [s.text for s in diff.find_elements(By.CSS_SELECTOR, "span.add")]
    assert added == ["+Prefers dark mode in Neovim.", "+Uses tmux."]
    shot(browser, "entry")

    browser.get(inspector.page("/entry/project/deploy"))
    assert "Superseded by deploy-2" in browser.find_element(By.TAG_NAME, "main").text
    browser.get(inspector.page("/entry/user/address"))
    main = browser.find_element(By.TAG_NAME, "main").text
    assert "Not live" in main and "reason recorded: user asked for erasure" in main
    assert "Secret Road" not in browser.page_source  # every version redacted

    browser.get(inspector.page("/block"))
    block = browser.find_element(By.ID, "block").text
    with SqliteStore(inspector_store(inspector) / "journal.sqlite3") as journal:
        from agentmemory import render

        expected, manifest = render(journal, ["project", "user"])
    assert block == expected.strip()  # the bytes the model reads (the page trims the edge)
    size = len(expected.encode())
    assert browser.find_element(By.ID, "block-bytes").text == f"{size} of 32768 bytes"
    shown = browser.find_elements(By.CSS_SELECTOR, "#manifest tr.shown td:first-child")
    assert [s.text for s in shown] == [f"{m.scope}/{m.name}" for m in manifest.entries]
    shot(browser, "block")

    browser.get(inspector.page("/search"))
    browser.find_element(By.ID, "query").send_keys("dark mode neovim")
    click_and_wait(browser, "go")
    summary = browser.find_element(By.ID, "summary").text
    assert summary.startswith("3 hits (") and "depth 10" in summary
    first = browser.find_elements(By.CSS_SELECTOR, "#hits li.hit")[0]
    assert first.find_element(By.TAG_NAME, "a").text == "user/editor"
    legs = {
        row.find_element(By.TAG_NAME, "th").text: row.find_elements(By.TAG_NAME, "td")[0].text
        for row in first.find_elements(By.CSS_SELECTOR, "tr.leg")
    }
    assert legs == {"bm25": "#1", "vector": "#1"}
    shot(browser, "search")

    browser.get(inspector.page("/health"))
    assert browser.find_element(By.ID, "verdict").text == "Everything checks out."
    no_dialog(browser)


def inspector_store(inspector: Inspector) -> Path:
    args = inspector.proc.args
    assert isinstance(args, list)
    return Path(args[args.index("--path") + 1])


def test_hostile_memory_executes_nothing_and_injects_no_element(
    inspector: Inspector, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(inspector.url)
    for path in ("/", "/entry/user/notes", "/block", "/search?q=click+me+script"):
        browser.get(inspector.page(path))
        no_dialog(browser)
        injected = browser.execute_script(
            "return [...document.querySelectorAll('script, img, iframe, object, embed')].length"
            " + [...document.querySelectorAll('a')].filter(a => /^javascript:/i.test("
            "a.getAttribute('href') || '')).length"
            " + [...document.querySelectorAll('*')].filter(e => [...e.attributes].some("
            "x => /^on/i.test(x.name))).length"
            " + document.querySelectorAll('b').length"
        )
        assert injected == 0, path
        if path == "/entry/user/notes":
            content = browser.find_element(By.ID, "content")
            assert "<script>alert('script')</script>" in content.text  # shown as text
            # the forged heading is inside the content node, and no heading outside it is forged
            outside = browser.execute_script(
                "return [...document.querySelectorAll('h1, h2, h3')]"
                ".filter(h => !document.getElementById('content').contains(h))"
                ".map(h => h.textContent)"
            )
            assert outside == ["user/notes", "As Markdown", "Raw", "History"]
    csp = urllib.request.urlopen(inspector.url, timeout=30).headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp


def _status(request: urllib.request.Request) -> int:
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return int(r.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def test_no_token_is_403_and_a_post_without_csrf_is_refused(store: Path) -> None:
    running = start(store, "--write")
    try:
        assert _status(urllib.request.Request(running.page("/"))) == 403
        assert _status(urllib.request.Request(running.page("/?token=wrong"))) == 403
        assert _status(urllib.request.Request(running.page("/static/inspector.css"))) == 403
        assert _status(urllib.request.Request(running.url)) == 200
        with SqliteStore(store / "journal.sqlite3") as journal:
            current = journal.get("user", "editor")
        form = urllib.parse.urlencode(
            {"action": "save", "if_hash": current.hash, "content": "overwritten"}
        ).encode()
        post = urllib.request.Request(
            running.page(f"/entry/user/editor?token={running.token}"), data=form, method="POST"
        )
        assert _status(post) == 403  # the token but not the form's CSRF value
        with SqliteStore(store / "journal.sqlite3") as journal:
            assert journal.get("user", "editor").hash == current.hash  # nothing written
    finally:
        stop(running)


def test_a_change_made_meanwhile_is_shown_as_a_conflict_never_overwritten(
    store: Path, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    running = start(store, "--write")
    try:
        browser.get(running.url)
        browser.get(running.page("/entry/user/editor"))
        # between the page's view and its save, another writer changes the entry
        with ChromaStore.open(store, embedder=embedder()) as st:
            st.put(Entry("user", "editor", "Prefers solarized in Helix.", {"type": "user"}))
        box = browser.find_element(By.ID, "edit")
        box.clear()
        box.send_keys("Prefers dark mode in Emacs.")
        click_and_wait(browser, "save")
        conflict = browser.find_element(By.ID, "conflict")
        assert "changed since this page showed it" in conflict.text
        assert "Prefers dark mode in Emacs." in conflict.text  # the person's text is kept
        assert "Prefers solarized in Helix." in browser.find_element(By.ID, "raw").text
        shot(browser, "conflict")
        with SqliteStore(store / "journal.sqlite3") as journal:
            assert journal.get("user", "editor").content == "Prefers solarized in Helix."
        # from the page now shown (the current version), the save lands
        box = browser.find_element(By.ID, "edit")
        box.clear()
        box.send_keys("Prefers dark mode in Emacs.")
        click_and_wait(browser, "save")
        assert browser.find_element(By.ID, "raw").text == "Prefers dark mode in Emacs."
        with SqliteStore(store / "journal.sqlite3") as journal:
            assert journal.get("user", "editor").content == "Prefers dark mode in Emacs."
    finally:
        stop(running)


def _read(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return int(r.status), r.read().decode()
    except urllib.error.HTTPError as err:
        return int(err.code), err.read().decode()


def _mcp_params(store: Path) -> Any:
    """``agentmemory mcp`` on ``store`` (scopes user and project) for the SDK's stdio client."""
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=str(SCRIPT),
        args=["mcp", "--path", str(store), "--scope", "user", "--scope", "project"],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"},
    )


def test_beside_a_running_mcp_server_reads_work_and_the_server_is_unharmed(
    store: Path, tmp_path: Path
) -> None:
    import anyio
    from mcp import Client
    from mcp.client.stdio import stdio_client

    params = _mcp_params(store)

    async def main() -> None:
        with (tmp_path / "server.err").open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as mcp:
                with anyio.fail_after(120):
                    await mcp.list_tools()  # the server holds the store now
                    running = await anyio.to_thread.run_sync(start, store)
                    try:
                        t = f"token={running.token}"
                        for path in ("/", "/entry/user/editor", "/block", "/health"):
                            code, body = await anyio.to_thread.run_sync(
                                _read, running.page(f"{path}?{t}")
                            )
                            assert code == 200, (path, body[:500])
                        code, body = await anyio.to_thread.run_sync(
                            _read, running.page(f"/search?q=neovim&{t}")
                        )
                        assert code == 200 and "user/editor" in body, body[:2000]
                        saved = await mcp.call_tool(
                            "memory_save",
                            {"scope": "project", "name": "ci", "content": "CI runs on main."},
                        )
                        assert not saved.is_error, saved  # the server still writes
                        code, body = await anyio.to_thread.run_sync(
                            _read, running.page(f"/entry/project/ci?{t}")
                        )
                        assert code == 200 and "CI runs on main." in body
                        found = await mcp.call_tool("memory_search", {"query": "CI main"})
                        assert "project/ci" in found.content[0].text  # type: ignore[union-attr]
                    finally:
                        await anyio.to_thread.run_sync(stop, running)

    anyio.run(main)


def test_a_large_scope_is_listed_a_page_at_a_time(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    folder = tmp_path / "memory"
    with ChromaStore.open(folder, embedder=embedder()) as st:
        st.put_many([Entry("notes", f"note-{i:03d}", f"Note number {i}.") for i in range(250)])
        st.put(Entry("user", "editor", "Prefers dark mode in Vim."))
    running = start(folder)
    try:
        browser.get(running.url)

        def listed() -> tuple[list[str], str]:
            section = browser.find_element(By.ID, "scope-notes")
            rows = section.find_elements(By.CSS_SELECTOR, "tr.entry-row td:first-child a")
            return [a.text for a in rows], section.find_element(By.CSS_SELECTOR, "p.pages").text

        names, pages = listed()
        assert names == [f"note-{i:03d}" for i in range(100)]
        assert pages.startswith("entries 1 to 100 of 250 (page 1 of 3)") and "previous" not in pages
        assert "250 entries" in browser.find_element(By.ID, "scope-notes").text
        assert not browser.find_element(By.ID, "scope-user").find_elements(
            By.CSS_SELECTOR, "p.pages"
        )
        for first, last in ((100, 200), (200, 250)):
            old = browser.find_element(By.TAG_NAME, "html")
            browser.find_element(By.CSS_SELECTOR, "#scope-notes a.next").click()
            wait_replaced(browser, old)
            names, pages = listed()
            assert names == [f"note-{i:03d}" for i in range(first, last)]
            assert pages.startswith(f"entries {first + 1} to {last} of 250")
        assert "next" not in pages and "previous 100" in pages
        browser.get(running.page("/?scope=notes&page=99"))  # past the end: the last page
        assert listed()[0][0] == "note-200"
        browser.get(running.page("/?scope=notes&page=x"))  # not a number: the first
        assert listed()[0][0] == "note-000"
    finally:
        stop(running)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 303 itself is the answer to look at


def _post(url: str, fields: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(fields).encode())
    try:
        with urllib.request.build_opener(_NoRedirect).open(request, timeout=60) as r:
            return int(r.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def test_writes_from_the_page_beside_a_running_mcp_server_land_and_the_server_sees_them(
    store: Path, tmp_path: Path
) -> None:
    import anyio
    from mcp import Client
    from mcp.client.stdio import stdio_client

    from agentmemory.ui.app import csrf_value

    params = _mcp_params(store)

    def current(name: str) -> Entry | None:
        with SqliteStore(store / "journal.sqlite3") as journal:
            live = {e.name: e for e in journal.list("user")}
        return live.get(name)

    async def main() -> None:
        with (tmp_path / "server.err").open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as mcp:
                with anyio.fail_after(120):
                    await mcp.list_tools()  # the server holds the store now
                    running = await anyio.to_thread.run_sync(start, store, "--write")
                    try:
                        where = running.page(f"/entry/user/editor?token={running.token}")
                        before = current("editor")
                        assert before is not None
                        edit = {
                            "csrf": csrf_value(running.token),
                            "action": "save",
                            "if_hash": before.hash,
                            "content": "Prefers zenburn in Emacs.",
                        }
                        code = await anyio.to_thread.run_sync(_post, where, edit)
                        assert code == 303, code  # landed: back to the entry's page
                        after = current("editor")
                        assert after is not None and after.content == "Prefers zenburn in Emacs."
                        assert after.meta == before.meta
                        found = await mcp.call_tool("memory_search", {"query": "zenburn emacs"})
                        text = found.content[0].text  # type: ignore[union-attr]
                        assert "user/editor" in text and "Prefers zenburn in Emacs." in text, text
                        # a stale view (the hash before the edit) is a conflict, nothing written
                        code = await anyio.to_thread.run_sync(
                            _post, where, {**edit, "content": "stale"}
                        )
                        assert code == 409 and current("editor") == after
                        gone = {"csrf": edit["csrf"], "action": "forget", "if_hash": after.hash}
                        code = await anyio.to_thread.run_sync(_post, where, gone)
                        assert code == 303 and current("editor") is None
                        saved = await mcp.call_tool(
                            "memory_save",
                            {"scope": "user", "name": "editor", "content": "Back to Vim."},
                        )
                        assert not saved.is_error, saved  # the server still writes
                        assert current("editor") is not None
                    finally:
                        await anyio.to_thread.run_sync(stop, running)

    anyio.run(main)


def _start_args(*args: str) -> Inspector:
    """``agentmemory ui`` with ``args`` (a store named by options, not by --path alone)."""
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "HF_HUB_OFFLINE": "1"}
    env.pop("AGENTMEMORY_PATH", None)
    proc = subprocess.Popen(
        [str(SCRIPT), "ui", "--no-browser", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("http://127.0.0.1:"):
        proc.kill()
        raise AssertionError(f"no URL first: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return Inspector(proc, line)


def _pages(running: Inspector) -> dict[str, str]:
    """Each page read with the token: the scopes, an entry, the block with the default policy
    and a hint, a search and the health page; each must answer 200."""
    t = f"token={running.token}"
    out = {}
    for key, path in (
        ("scopes", f"/?{t}"),
        ("entry", f"/entry/user/editor?{t}"),
        ("block", f"/block?policy=default&hint=when+do+we+deploy&{t}"),
        ("search", f"/search?q=dark+vim&{t}"),
        ("health", f"/health?{t}"),
    ):
        code, body = _read(running.page(path))
        assert code == 200, (path, body[:500])
        out[key] = body
    return out


def _seeded(st: Any) -> None:
    st.put(Entry("user", "editor", "Prefers dark mode in Vim.", {"type": "user"}))
    st.put(Entry("project", "deploy", "Deploys go out on Tuesdays.", {"type": "project"}))


def _check_pages(pages: dict[str, str]) -> None:
    assert "editor" in pages["scopes"] and "deploy" in pages["scopes"]
    assert "Prefers dark mode in Vim." in pages["entry"]
    block = pages["block"]
    assert "Per-turn part for the hint" in block
    assert 'id="part"' in block and "Deploys go out on Tuesdays." in block.split('id="part"')[1]
    assert "user/editor" in pages["search"]
    assert "Everything checks out." in pages["health"], pages["health"][-2000:]
    assert "{&#39;" not in pages["health"]  # a finding with parts reads as text, not a dict
    assert "1 entry, " in pages["scopes"] and "1 entries" not in pages["scopes"]


def test_a_markdown_folder_is_inspected_and_ctrl_c_stops_it_cleanly(tmp_path: Path) -> None:
    from agentmemory import FileStore

    folder = tmp_path / "notes"
    with FileStore(folder, embedder=embedder()) as st:
        _seeded(st)
    running = start(folder)
    try:
        _check_pages(_pages(running))
    finally:
        running.proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
        assert running.proc.wait(timeout=30) == 0, "Ctrl-C did not stop it cleanly"


def test_a_postgres_journal_with_a_chroma_server_is_inspected(
    pg_dsn: str, chroma_port: int
) -> None:
    from agentmemory import open_store

    chroma = f"http://127.0.0.1:{chroma_port}"
    with open_store(dsn=pg_dsn, chroma_url=chroma, embedder="hashing") as st:
        _seeded(st)
    running = _start_args("--dsn", pg_dsn, "--chroma-url", chroma, "--embedder", "hashing")
    try:
        pages = _pages(running)
        _check_pages(pages)
    finally:
        stop(running)

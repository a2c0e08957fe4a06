"""The console in a real browser: Playwright driving Debian's chromium (no browser download) against
`sentinel web` as the operator starts it, with runs made and checked through the CLI.

The inbox screenshot is kept at <pytest tmp dir>/test_the_done_when_scenario_in_chromium0/inbox.png."""

from __future__ import annotations

import shutil
import time

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--disable-gpu"]

pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian's chromium is not installed")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    yield context.new_page()
    context.close()


def _paused_run(cli, task: str = "write that it ran to ran.txt") -> dict:
    return cli.json("run", task, "--json", check=3)


def _card(page, approval_id: str):
    return page.locator(f'.approval[data-id="{approval_id}"]')


def _wait_status(cli, run_id: str, status: str, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while (shown := cli.json("show", run_id, "--json", check=0))["status"] != status:
        assert time.monotonic() < deadline, shown["status"]
        time.sleep(0.2)
    return shown


def _open(page, web) -> None:
    page.goto(web.url)
    # a selector, not wait_for_function: polling a string predicate is an eval, which the console's CSP refuses
    # (it only shows when the page is not live at the first check, i.e. on a loaded machine)
    page.locator("body[data-live='open']").wait_for()


def test_the_done_when_scenario_in_chromium(page, paused, web_process, cli, sentinel_home, tmp_path):
    run = _paused_run(cli)
    web = web_process()
    _open(page, web)
    assert page.url == web.console.base + "/"  # the token left the address bar
    card = _card(page, run["approval_id"])
    card.wait_for()
    assert card.locator(".tool").inner_text() == "bash"
    assert "echo ran >> ran.txt" in card.inner_text() and run["id"] in card.inner_text()
    page.screenshot(path=str(tmp_path / "inbox.png"), full_page=True)
    assert (tmp_path / "inbox.png").stat().st_size > 10_000
    card.locator("button.approve").click()
    card.locator(".note").filter(has_text="approved").wait_for()
    shown = _wait_status(cli, run["id"], "done")
    assert shown["output"] == "All done." and shown["decisions"][0]["approval"]["approved"] is True
    assert (sentinel_home / "workspace" / "ran.txt").read_text() == "ran\n"
    card.wait_for(state="detached")
    assert page.locator("#no-approvals").is_visible()


def test_a_stale_digest_is_refused_and_a_decision_from_the_cli_clears_the_card(page, paused, web_process, cli):
    run = _paused_run(cli)
    web = web_process()
    _open(page, web)
    card = _card(page, run["approval_id"])
    card.evaluate("el => { el.dataset.digest = '0'.repeat(64); }")  # the page shows a call the store does not have
    card.locator("button.approve").click()
    card.locator(".note.error").filter(has_text="reload and decide again").wait_for()
    assert [a["id"] for a in cli.json("approvals", "--json", check=0)] == [run["approval_id"]]

    cli("deny", run["approval_id"], "--reason", "decided in the terminal", check=1)  # its only call denied: the run failed
    card.wait_for(state="detached", timeout=10_000)  # cleared live, without a reload
    page.locator("#flash").filter(has_text="resolved elsewhere").wait_for()
    assert page.locator("#pending-count").inner_text() == "0"

    second = _paused_run(cli, "another task")
    _card(page, second["approval_id"]).wait_for(timeout=10_000)  # a new approval appears live
    assert page.locator("#pending-count").inner_text() == "1"


def test_without_the_session_cookie_the_browser_gets_nothing(browser, paused, web_process, cli):
    run = _paused_run(cli)
    web = web_process()
    operator = browser.new_context()
    stranger = browser.new_context()
    try:
        _open(operator.new_page(), web)  # the link is spent by the operator's browser
        page = stranger.new_page()
        for path in ("/", "/runs", f"/runs/{run['id']}", "/watchers"):
            answer = page.goto(web.console.base + path)
            assert answer.status == 401 and "not signed in" in page.inner_text("body"), path
            assert run["approval_id"] not in page.content()
        assert page.goto(web.url).status == 403
        status = page.evaluate(f"""fetch("{web.console.base}/approvals/{run['approval_id']}/approve",
            {{method: "POST", headers: {{"Content-Type": "application/json"}}, body: "{{}}"}}).then(r => r.status)""")
        assert status == 401
    finally:
        operator.close()
        stranger.close()
    assert [a["id"] for a in cli.json("approvals", "--json", check=0)] == [run["approval_id"]]

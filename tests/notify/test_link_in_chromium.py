"""The done-when scenario in a real browser: with `notify: [{type: webhook, url: …}]`, a run that pauses posts one
notification within a second; following its link in headless chromium (Debian's, no download) and approving
lets the run finish; replaying the link is refused. `sentinel web` and `sentinel run` are real processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import httpx
import pytest
from freeport import free_port  # a port below the ephemeral range (tests/freeport.py)

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--disable-gpu"]

pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian's chromium is not installed")




@pytest.fixture
def page():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = chromium.new_context()
        yield context.new_page()
        context.close()
        chromium.close()


@pytest.fixture
def web(sentinel_home):
    procs = []

    def start(port: int) -> subprocess.Popen:
        env = {**os.environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "test-key"}
        proc = subprocess.Popen([sys.executable, "-m", "sentinel", "web", "--port", str(port)], env=env,
                                cwd=sentinel_home, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout.readline().startswith(f"http://127.0.0.1:{port}/s/")
        return proc

    yield start
    for proc in procs:
        proc.terminate()
        err = proc.communicate(timeout=10)[1]
        assert "Traceback" not in err, err


def test_the_done_when_scenario_approve_from_the_link_in_chromium(notify_config, webhook, cli, web, page,
                                                                   sentinel_home):
    port = free_port()
    hook = webhook()
    notify_config([{"type": "webhook", "url": hook.url, "one_tap": True, "on": ["approval"]}], port=port)
    web(port)
    run = cli.json("run", "write that it ran to ran.txt", "--json", check=3)
    paused_at = time.time()
    (got,) = hook.wait(1, timeout=5)
    assert got["t"] - paused_at < 1.0, f"the notification took {got['t'] - paused_at:.2f} s"
    link = got["json"]["decide_url"]
    assert link.startswith(f"http://127.0.0.1:{port}/s/") and run["id"] in got["json"]["message"]

    page.goto(link)
    card = page.locator(f'.approval[data-id="{run["approval_id"]}"]')
    assert card.locator(".tool").inner_text() == "bash" and "echo ran >> ran.txt" in card.inner_text()
    page.locator("button.approve").click()
    page.locator(".note.decided").filter(has_text="approved").wait_for()
    deadline = time.monotonic() + 30
    while (shown := cli.json("show", run["id"], "--json", check=0))["status"] != "done":
        assert time.monotonic() < deadline, shown["status"]
        time.sleep(0.2)
    assert shown["output"] == "All done." and (sentinel_home / "workspace" / "ran.txt").read_text() == "ran\n"

    again = page.goto(link)                                   # replayed in the browser
    assert again.status == 410 and "already used" in page.inner_text("body")
    replay = httpx.post(link, data={"decision": "approve"}, headers={"origin": f"http://127.0.0.1:{port}"})
    assert replay.status_code == 410                          # and replayed by hand
    assert len(hook.received) == 1

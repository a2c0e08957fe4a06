"""Driving the real `sentinel chat` in a pseudo-terminal (pexpect) against the scripted model server."""

from __future__ import annotations

import os
import re
import sys
import time

import pexpect
import pytest

PROMPT = "›"


ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|[\r\x08]")


class Chat:
    """One `sentinel chat` process on a pty: send lines and keys, expect what a person would see (the screen's
    text with the terminal's escape sequences taken out)."""

    def __init__(self, child: pexpect.spawn):
        self.child = child
        self.raw = ""
        self.pos = 0  # how much of the text earlier expects consumed

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw)

    def unseen(self) -> str:
        return self.text[self.pos:]

    def expect(self, pattern: str, timeout: float = 30) -> re.Match:
        deadline = time.monotonic() + timeout
        while True:
            match = re.compile(pattern).search(self.text, self.pos)
            if match:
                self.pos = match.end()
                return match
            if time.monotonic() > deadline:
                raise AssertionError(f"never saw {pattern!r}; the screen after the last match:\n{self.unseen()[-3000:]}")
            try:
                self.raw += self.child.read_nonblocking(65536, timeout=0.1)
            except pexpect.TIMEOUT:
                pass

    def prompt(self) -> None:
        self.expect(PROMPT)

    def say(self, line: str) -> None:
        self.prompt()
        self.child.sendline(line)

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def quit(self) -> int:
        """Ctrl-D at the next prompt; the exit status."""
        self.prompt()
        return self.leave()

    def leave(self) -> int:
        """Ctrl-D now (at a prompt already on screen)."""
        self.child.sendeof()
        self.child.expect(pexpect.EOF, timeout=30)
        self.child.close()
        return self.child.exitstatus

    def killed(self) -> None:
        self.child.expect(pexpect.EOF, timeout=30)


@pytest.fixture
def chat_env(sentinel_home):
    return {**os.environ, "SENTINEL_HOME": str(sentinel_home), "FAKE_KEY": "test-key", "SENTINEL_MODE": "local",
            "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm"}


@pytest.fixture
def pty_chat(chat_env, tmp_path):
    """spawn(*args) -> Chat: `sentinel ARGS` (default `chat`) on a 50x160 pty, from a directory that is not the
    workspace; killed after the test."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    children: list[pexpect.spawn] = []

    def spawn(*args: str) -> Chat:
        child = pexpect.spawn(sys.executable, ["-m", "sentinel", *(args or ("chat",))], env=chat_env,
                              cwd=str(elsewhere), encoding="utf-8", timeout=30, dimensions=(50, 160))
        children.append(child)
        return Chat(child)

    yield spawn
    for child in children:
        if child.isalive():
            child.terminate(force=True)


@pytest.fixture
def model(scripted_server, configure):
    """model(script, **server_kw) -> the scripted server the chat's default model talks to."""

    def start(script, **kw):
        server = scripted_server(script, **kw)
        configure(server=server)
        return server

    return start

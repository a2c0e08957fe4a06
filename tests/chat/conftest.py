"""Driving the real `sentinel chat` in a pseudo-terminal (pexpect) against the scripted model server."""

from __future__ import annotations

import os

import pytest
from screen import Screen, Terminals

PROMPT = "›"


class Chat(Screen):
    """One `sentinel chat` process on a pty: send lines and keys, expect what a person would see."""

    def prompt(self) -> None:
        self.expect(PROMPT)

    def say(self, line: str) -> None:
        self.prompt()
        self.child.sendline(line)

    def quit(self) -> int:
        """Ctrl-D at the next prompt; the exit status."""
        self.prompt()
        return self.leave()


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
    terminals = Terminals(chat_env, elsewhere, (50, 160), Chat, default=("chat",))
    yield terminals
    terminals.close()


@pytest.fixture
def model(scripted_server, configure):
    """model(script, **server_kw) -> the scripted server the chat's default model talks to."""

    def start(script, **kw):
        server = scripted_server(script, **kw)
        configure(server=server)
        return server

    return start

"""A `sentinel` process on a real pseudo-terminal (pexpect): what a person at that terminal would see.

    terminals = Terminals(env, cwd, (rows, cols))
    screen = terminals("run", "task")   # `sentinel run task` on its own pty
    screen.expect(r"regex")             # waits, in the screen's text with the terminal's escape sequences taken out
    screen.text                         # everything shown so far
    terminals.close()                   # kills what still runs (a fixture's teardown)
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

import pexpect

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|[\r\x08]")


class Screen:
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
        ended = False
        while True:
            match = re.compile(pattern).search(self.text, self.pos)
            if match:
                self.pos = match.end()
                return match
            if ended or time.monotonic() > deadline:
                why = "the process ended" if ended else "timed out"
                raise AssertionError(f"never saw {pattern!r} ({why}); the screen after the last match:\n"
                                     f"{self.unseen()[-3000:]}")
            try:
                self.raw += self.child.read_nonblocking(65536, timeout=0.1)
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF:
                ended = True

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def leave(self) -> int:
        """Ctrl-D now (at a prompt already on screen)."""
        self.child.sendeof()
        return self.wait()

    def wait(self, timeout: float = 30) -> int:
        """Everything the process still prints, then its exit status."""
        deadline = time.monotonic() + timeout
        while self.child.isalive() and time.monotonic() < deadline:
            try:
                self.raw += self.child.read_nonblocking(65536, timeout=0.2)
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF:
                break
        self.child.expect(pexpect.EOF, timeout=max(1.0, deadline - time.monotonic()))
        self.raw += self.child.before or ""
        self.child.close()
        return self.child.exitstatus

    def killed(self) -> None:
        self.child.expect(pexpect.EOF, timeout=30)


class Terminals:
    def __init__(self, env: dict[str, str], cwd: Path, dimensions: tuple[int, int], screen: type[Screen] = Screen,
                 default: tuple[str, ...] = ()):
        self.env, self.cwd, self.dimensions = env, cwd, dimensions
        self.screen, self.default = screen, default
        self.children: list[pexpect.spawn] = []
        self.preexec_fn: Any = None  # run in the child before the exec (e.g. to start it with SIGINT ignored)

    def __call__(self, *args: str) -> Any:
        child = pexpect.spawn(sys.executable, ["-m", "sentinel", *(args or self.default)], env=self.env,
                              cwd=str(self.cwd), encoding="utf-8", timeout=30, dimensions=self.dimensions,
                              preexec_fn=self.preexec_fn)
        self.children.append(child)
        return self.screen(child)

    def close(self) -> None:
        for child in self.children:
            if child.isalive():
                child.terminate(force=True)

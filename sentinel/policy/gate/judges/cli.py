"""The `claude` and `copilot` CLIs as judges, run as subprocesses.

The child gets SENTINEL_GATE_JUDGE=1: if that CLI runs this repository's hooks
itself, `sentinel hook` sees the guard and passes at once, so a judge call never
re-enters the gate. Claude gets the schema via `--json-schema`; Copilot only via the
prompt, so its answer is parsed leniently and checked against the schema afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess

from sentinel.jsontypes import JSON
from sentinel.policy.gate import GUARD_ENV
from sentinel.policy.gate.judges.base import JudgeError, Request, past_deadline
from sentinel.policy.gate.prompts import parse_json_text


class CliJudge:
    gpu = False

    def __init__(self, kind: str, command: str):
        self.name = kind
        self.command = command

    def prompt(self, request: Request) -> str:
        schema = json.dumps(request.body_schema())
        return f"{request.system}\n\n{request.user}\n\nRespond ONLY with one JSON object matching this schema: {schema}"

    def argv(self, request: Request) -> list[str]:
        text = self.prompt(request)
        if self.name == "claude":
            return [self.command, "-p", text, "--model", request.model, "--output-format", "json",
                    "--max-turns", "1", "--json-schema", json.dumps(request.body_schema())]
        return [self.command, "-p", text, "-s", "--model", request.model]

    def complete(self, request: Request) -> JSON:
        """The CLI from `/`, never the repository (its project files, `./node_modules/.bin`, a `claude` the agent
        wrote there), found on PATH's absolute directories, without PYTHONPATH/NODE_OPTIONS and the like; HOME
        and the rest of the operator's environment stay (the CLI's login lives there)."""
        from sentinel.leash import plain
        from sentinel.mcp.launch import which

        exe = which(self.command, dict(os.environ))
        if exe is None:
            raise JudgeError(f"{self.name}: cannot run {self.command!r}: not an absolute executable nor on PATH's "
                             "absolute directories")
        env = plain.operator_env(os.environ, {GUARD_ENV: "1"})
        try:
            proc = plain.run([exe, *self.argv(request)[1:]], text=True, env=env, cwd="/",
                             timeout=max(0.001, request.remaining()))
        except subprocess.TimeoutExpired:  # run() kills the child: a wall-clock bound on the whole call
            raise past_deadline(self.name, request) from None
        except OSError as exc:
            raise JudgeError(f"{self.name}: cannot run {self.command!r} ({exc.strerror or exc})") from None
        if proc.returncode != 0:
            last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise JudgeError(f"{self.name}: exit {proc.returncode}: {last[0][:200]}")
        try:
            return self.answer(proc.stdout)
        except ValueError as exc:
            raise JudgeError(f"{self.name}: {exc}") from None

    def answer(self, stdout: str) -> JSON:
        data = parse_json_text(stdout)
        if self.name == "claude" and isinstance(data, dict) and data.get("type") == "result":
            structured = data.get("structured_output")
            if isinstance(structured, dict):
                return structured
            if data.get("is_error"):
                raise ValueError(f"error result: {str(data.get('result'))[:120]}")
            return parse_json_text(str(data.get("result") or ""))
        return data

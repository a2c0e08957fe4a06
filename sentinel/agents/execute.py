"""Running one authored-tool call: out of process, as the agent's user, under the Leash tool profile.

    run_code(code, limits, args, ctx, settings) -> str     the tool's string, or "error: ..."
    warm(ctx, limits, settings)                            start a spare for such calls now

The worker never executes authored code. It sends the pinned text of tool.py (the exact bytes the
decision hashed) with the JSON arguments to a fresh interpreter (`python -I -S`, standard library
only; usually a spare launched ahead of the call, see sentinel/agents/spares.py) running
sentinel/agents/toolrun.py, under the same Landlock, seccomp and egress rules as the
worker's other tools, plus the tool's CPU-time, wall-clock, memory (cgroup and RLIMIT_AS) and process
limits, each capped by the operator's maxima (`tools.authored` in config.yaml). Every failure comes
back as one `error: ...` string for the model; nothing here raises into the run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
import signal
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from sentinel.agents import spares
from sentinel.agents.settings import AuthoredToolSettings
from sentinel.errors import SentinelError
from sentinel.jsontypes import JSONObject
from sentinel.tools import ToolContext

if TYPE_CHECKING:
    from sentinel.leash.profile import Profile

MIB = 1024 * 1024
FRAME = "\x1eSENTINEL "


class Limits(BaseModel):
    """What a tool's tool.yaml asks for (`limits:`); missing values take the operator's defaults."""

    model_config = ConfigDict(extra="forbid")

    cpu_s: int | None = Field(None, ge=1)
    timeout_s: float | None = Field(None, gt=0)
    memory_mb: int | None = Field(None, ge=32)


@dataclass(frozen=True)
class CallLimits:
    cpu_s: int
    timeout_s: float
    memory_mb: int
    processes: int


def limits_for(asked: Limits, settings: AuthoredToolSettings) -> CallLimits:
    return CallLimits(min(asked.cpu_s or settings.cpu_s, settings.max_cpu_s),
                      min(asked.timeout_s or settings.timeout_s, settings.max_timeout_s),
                      min(asked.memory_mb or settings.memory_mb, settings.max_memory_mb),
                      settings.processes)


@cache
def runner_source() -> str:
    return (Path(__file__).with_name("toolrun.py")).read_text(encoding="utf-8")


def run_code(code: str, asked: Limits, args: JSONObject, ctx: ToolContext, settings: AuthoredToolSettings) -> str:
    """Run `code` (the pinned text of tool.py) on `args`; never raises for anything the tool does."""
    import marshal

    limits = limits_for(asked, settings)
    nonce = secrets.token_hex(8)
    spec = {"code": code, "args": args, "nonce": nonce, "max_chars": ctx.output_max_chars,
            "cpu_s": limits.cpu_s, "memory_bytes": limits.memory_mb * MIB}
    try:
        body = marshal.dumps(spec)
    except ValueError:
        return "error: the arguments cannot be passed to the tool (only JSON values can)"
    payload = b"%d\n" % len(body) + body
    if ctx.tools_mode == "plain":
        exit_code, output, timed_out = _plain(_argv(), payload, ctx.workspace, limits)
    else:
        outcome = _leashed(payload, ctx, limits, settings.spare_idle_s)
        if isinstance(outcome, str):
            return outcome
        exit_code, output, timed_out = outcome
    return result(output, nonce, exit_code, timed_out, limits)


def warm(ctx: ToolContext, asked: Limits, settings: AuthoredToolSettings) -> None:
    """Start a spare for calls with these limits in this context now, before the first call needs one."""
    if ctx.tools_mode == "plain" or not settings.spare_idle_s:
        return
    try:
        call = _call(ctx, limits_for(asked, settings))
    except SentinelError:
        return  # a bad Leash policy: the first call says so
    _spare(call, settings.spare_idle_s)


def _spare(call: spares.Call, idle_s: float) -> None:
    try:
        spares.start(call, idle_s)
    except SentinelError:
        pass  # Leash refuses this launch: the next call launches cold and reports why


def _argv() -> list[str]:
    return [sys.executable, "-I", "-S", "-c", runner_source()]


def _leashed(payload: bytes, ctx: ToolContext, limits: CallLimits, idle_s: float) -> tuple[int | None, str, bool] | str:
    from sentinel.leash.errors import LaunchFailed, SandboxUnavailable
    from sentinel.leash.launch import launch

    try:
        call = _call(ctx, limits)
        res = spares.hand_over(call.key, payload) if idle_s else None
        if res is None:
            res = launch(call.argv, call.prof, cwd=call.cwd, env=call.env, timeout_s=call.timeout_s, who=call.who,
                         sandbox=call.sandbox, output_max_chars=call.capture, stdin=payload)
    except (SandboxUnavailable, LaunchFailed) as exc:
        return f"error: the sandbox could not start the tool ({exc})"
    except SentinelError as exc:
        return f"error: {exc}"
    if idle_s:
        _spare(call, idle_s)  # for the next call, which is likely this tool again
    return res.exit_code, res.output, res.timed_out


def _call(ctx: ToolContext, limits: CallLimits) -> spares.Call:
    from sentinel.leash import settings_cache
    from sentinel.leash.launch import base_env, identity
    from sentinel.leash.profile import tool_profile

    who = identity(ctx.agent or None)
    policy = settings_cache.policy_for(ctx.agent or None, system=who.system)
    prof = tool_profile(ctx.workspace, policy, proxy=settings_cache.proxy())
    _tighten(prof, limits)
    capture = ctx.output_max_chars * 3 + 8192  # room for the whole frame (and a truncation note) in the tail
    argv, env = _argv(), base_env(ctx.workspace)
    shape = [argv, dataclasses.asdict(prof), str(ctx.workspace), env, limits.timeout_s, dataclasses.astuple(who),
             ctx.sandbox, capture]
    key = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()
    return spares.Call(argv, prof, ctx.workspace, env, limits.timeout_s, who, ctx.sandbox, capture, key)


def _tighten(prof: Profile, limits: CallLimits) -> None:
    """The tool's limits, never looser than what the agent's Leash policy already sets."""
    # RLIMIT_CPU one second above the limit: the runner sets the soft limit, so SIGXCPU (not SIGKILL) says why
    for key, value in (("RLIMIT_CPU", limits.cpu_s + 1), ("RLIMIT_AS", limits.memory_mb * MIB),
                       ("RLIMIT_NPROC", limits.processes)):
        prof.rlimits[key] = min(prof.rlimits.get(key, value), value)
    prof.memory_bytes = min(prof.memory_bytes or limits.memory_mb * MIB, limits.memory_mb * MIB)
    prof.pids_max = min(prof.pids_max or limits.processes, limits.processes)


def _plain(argv: list[str], payload: bytes, workspace: Path, limits: CallLimits) -> tuple[int | None, str, bool]:
    """`leash.tools: plain`: a plain subprocess in its own session; the runner sets its own rlimits."""
    from sentinel.leash import plain

    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(workspace), "LANG": "C.UTF-8"}
    try:
        proc = plain.run(argv, cwd=workspace, env=env, input=payload, timeout=limits.timeout_s,
                         stderr=subprocess.STDOUT, new_session=True, workspace=True)
        return proc.returncode, proc.stdout.decode("utf-8", errors="replace"), False
    except subprocess.TimeoutExpired as exc:
        return None, (exc.stdout or b"").decode("utf-8", errors="replace"), True


def result(output: str, nonce: str, code: int | None, timed_out: bool, limits: CallLimits) -> str:
    """The tool's answer from the runner's frame, or an `error: ...` saying why there is none."""
    if timed_out:
        return f"error: the tool timed out after {limits.timeout_s:g}s (its wall-clock limit) and was killed"
    marker = f"{FRAME}{nonce} "
    at = output.find(marker)
    if at >= 0:
        header, _, payload = output[at + len(marker):].partition("\n")
        status, _, length = header.partition(" ")
        if length.isdigit() and int(length) <= len(payload) and status in ("ok", "error"):
            text = payload[:int(length)]
            return text if status == "ok" else f"error: {text}"
    return _failure(code, output, limits)


def _failure(code: int | None, output: str, limits: CallLimits) -> str:
    if code == -signal.SIGXCPU:
        return f"error: the tool used up its CPU time ({limits.cpu_s}s) and was killed"
    if code == -signal.SIGKILL:
        return (f"error: the tool was killed (at its memory limit of {limits.memory_mb} MB, its CPU limit of "
                f"{limits.cpu_s}s or its limit of {limits.processes} processes)")
    detail = " ".join(output.strip().split())[-300:]
    if code is not None and code < 0:
        return f"error: the tool was killed by signal {-code}" + (f": {detail}" if detail else "")
    return f"error: the tool process exited with code {code} before returning a result" + (
        f": {detail}" if detail else "")

"""Leash is the only launcher: no module outside sentinel/leash/ starts a process or changes credentials, the
confinement order the docs state is the order a launch applies, and the plain profile's children get the
environment and working directory they were given, nothing of the parent's.
"""

from __future__ import annotations

import ast
import os
import pwd
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sentinel.leash import plain

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "sentinel"

# What starts a process or changes credentials, per standard module; any call of these outside sentinel/leash/ fails.
LAUNCHES = {
    "os": {"fork", "forkpty", "execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe",
           "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "posix_spawn",
           "posix_spawnp", "system", "popen", "setuid", "seteuid", "setreuid", "setresuid", "setgid", "setegid",
           "setregid", "setresgid", "setgroups", "initgroups", "unshare", "setns"},
    "subprocess": {"Popen", "run", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
}
# Whatever object they are called on (ctypes' libc, a binding): only Leash makes these calls.
CREDENTIAL_WORDS = re.compile(r"^(set(e|re|res)?[ug]id|setgroups|prctl|.*landlock.*|.*seccomp.*)$")
FORBIDDEN_MODULES = {"pty", "multiprocessing", "prctl", "seccomp", "pyseccomp", "landlock", "concurrent.futures.process"}


def _imports(tree: ast.AST) -> dict[str, str]:
    """Local name -> what it names (a module, or module.attr for `from m import a`), lazy imports included."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.expr) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = _imports(tree)
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"{where}:{node.lineno} imports {m}" for m in modules if m in FORBIDDEN_MODULES]
        if not isinstance(node, ast.Call):
            continue
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        dotted = _dotted(node.func)
        full = ".".join([names.get(dotted[0], dotted[0]), *dotted[1:]]) if dotted else f"(...).{called}"
        if full.startswith("sentinel.leash."):
            continue  # through Leash
        module, _, attr = full.rpartition(".")
        if attr in LAUNCHES.get(module, ()) or CREDENTIAL_WORDS.match(attr or called):
            found.append(f"{where}:{node.lineno} calls {full}")
    return found


def test_no_module_outside_leash_starts_a_process_or_changes_credentials():
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if "leash" not in p.relative_to(PACKAGE).parts[:1]]
    found = [v for path in outside for v in violations(path)]
    assert found == [], "launch through sentinel/leash/ (plain.py for an unconfined one):\n" + "\n".join(found)


def test_the_scan_sees_each_way_of_launching(tmp_path):
    """The scan fails on the old code's forms (readable.py's fork and setresuid, a bare subprocess.run, a
    prctl binding) and passes the same call made through Leash."""
    bad = tmp_path / "probe.py"
    body = ("import os, subprocess\nfrom os import setresuid as s\nimport prctl\nimport ctypes\n"
            "def f():\n    os.fork(); s(1, 1, 1); subprocess.run(['x']); prctl.set_pdeathsig(9)\n"
            "    ctypes.CDLL(None).prctl(1)\n    import asyncio\n    asyncio.create_subprocess_exec('x')\n")
    good = ("from sentinel.leash import plain, privs\nfrom sentinel.leash.privs import set_pdeathsig\n"
            "def f():\n    plain.run(['x'], cwd='/', env={}); privs.prctl(4, 0); set_pdeathsig(9)\n")
    bad.write_text(body)
    found = violations(bad)
    bad.write_text(good)
    assert violations(bad) == []
    assert len(found) == 6, found
    assert any("(...).prctl" in v for v in found)
    assert any("os.fork" in v for v in found) and any("os.setresuid" in v for v in found)
    assert any("imports prctl" in v for v in found) and any("create_subprocess_exec" in v for v in found)


# -- the documented order ---------------------------------------------------------------------------

# A phrase of each documented step -> the layer name a launch reports when it applies that step.
STEPS = {"cgroup": "cgroup", "keyring": "keyring", "bounding set": "caps", "IPC namespace": "ipc-ns",
         "read-only mounts": "mount-ro", "everything is read-only": "mount-ro", "rlimits": "rlimits",
         "setresuid": "uid", "uid and capabilities": "uid", "remaining capabilities": "caps-cleared",
         "NO_NEW_PRIVS": "no_new_privs", "no_new_privs": "no_new_privs", "seccomp": "seccomp", "Landlock": "landlock"}


def _layer_of(text: str) -> str | None:
    hits = {layer for phrase, layer in STEPS.items() if phrase in text}
    assert len(hits) <= 1, f"a documented step names several layers: {text!r} -> {hits}"
    return hits.pop() if hits else None


def documented_architecture() -> list[str]:
    text = (REPO / "docs" / "architecture.md").read_text()
    block = text.split("through one sequence", 1)[1].split("in this order:", 1)[1].split("\n\n", 2)[1]
    items = re.findall(r"^\d+\. (.+?)(?=^\d+\. |\Z)", block, re.S | re.M)
    assert len(items) >= 12, block
    return [layer for item in items if (layer := _layer_of(item))]


def documented_leash() -> list[str]:
    text = (REPO / "docs" / "leash.md").read_text()
    listed = re.search(r"applies the layers in order \(((?:[^()]|\([^()]*\))*)\)", text)
    assert listed, "docs/leash.md no longer states the order"
    return [layer for part in re.split(r",\s*", listed.group(1)) if (layer := _layer_of(part))]


def documented_confine() -> list[str]:
    from sentinel.leash import confine

    arrows = (confine.__doc__ or "").split("states it:", 1)[1].split("\n\n", 2)[1]
    return [layer for step in arrows.split("->") if (layer := _layer_of(" ".join(step.split())))]


def applied_order(applied: list[str]) -> list[str]:
    out: list[str] = []
    for name in applied:
        name = "cgroup" if name.startswith("cgroup") else "landlock" if name.startswith("landlock") else name
        if name not in out:
            out.append(name)
    return out


def test_the_docs_state_one_order_and_a_launch_applies_it(tmp_path):
    from sentinel.leash.launch import run_tool

    arch = documented_architecture()
    assert arch == ["cgroup", "keyring", "caps", "ipc-ns", "mount-ro", "rlimits", "uid", "caps-cleared",
                    "no_new_privs", "seccomp", "landlock"]
    assert documented_leash() == arch and documented_confine() == arch
    ws = tmp_path / "ws"
    ws.mkdir()
    res = run_tool(["/bin/true"], cwd=ws, workspace=ws, timeout_s=30, agent=None)
    assert res.exit_code == 0, res.output
    got = applied_order(res.applied)
    assert got == [layer for layer in arch if layer in got]
    if os.geteuid() == 0:  # every layer applies to root's launch
        assert got == arch


# -- the plain profile ------------------------------------------------------------------------------

INJECTED = {"LD_PRELOAD": "/nonexistent/evil.so", "PYTHONPATH": "/nonexistent/agent", "BASH_ENV": "/tmp/x",
            "SENTINEL_TEST_SECRET": "sk-operator"}


def _env_of(output: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


def test_a_plain_child_gets_its_explicit_environment_and_nothing_of_the_parents(monkeypatch, tmp_path):
    for key, value in INJECTED.items():
        monkeypatch.setenv(key, value)
    given = plain.env({"SENTINEL_X": "1"})
    done = plain.run(["/usr/bin/env"], cwd=tmp_path, env=given, text=True, timeout=30)
    assert done.returncode == 0 and _env_of(done.stdout) == given
    proc = plain.popen(["/usr/bin/env"], cwd=tmp_path, env=given, stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=30)
    assert _env_of(out) == given
    # the operator's own tools keep the operator's environment, never its loader variables
    kept = plain.operator_env(os.environ)
    assert kept["SENTINEL_TEST_SECRET"] == "sk-operator" and not {"LD_PRELOAD", "PYTHONPATH", "BASH_ENV"} & set(kept)


@pytest.mark.parametrize("env", [{"LD_PRELOAD": "/x.so"}, {"LD_LIBRARY_PATH": "/x"}, {"PYTHONPATH": "/x"},
                                 {"NODE_OPTIONS": "--require /x"}, {"PATH": "bin:/usr/bin"}, {"PATH": ":/usr/bin"}])
def test_a_plain_launch_refuses_an_environment_that_loads_code_from_elsewhere(env, tmp_path):
    with pytest.raises(plain.PlainRefused) as refused:
        plain.run(["/bin/true"], cwd=tmp_path, env=plain.env(env), timeout=30)
    assert "plain launch" in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(plain.PlainRefused):
        plain.run(["/bin/true"], cwd=tmp_path, env=os.environ, timeout=30)


def test_a_plain_launch_takes_the_loader_settings_its_caller_names(tmp_path):
    """The legitimate neighbours: this install's own interpreter path, and an MCP server's declared `env:`."""
    code = "import os; print(os.environ['PYTHONPATH'], os.environ['NODE_OPTIONS'])"
    done = plain.run([sys.executable, "-c", code], cwd=tmp_path, env=plain.env({"NODE_OPTIONS": "--x"}), text=True,
                     timeout=30, python_path="/opt/own", declared={"NODE_OPTIONS": "--x"})
    assert done.stdout.split() == ["/opt/own", "--x"]


def test_a_plain_launch_starts_only_in_a_directory_no_one_else_can_write(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    for cwd in (shared, Path("/tmp"), tmp_path / "missing"):
        with pytest.raises(plain.PlainRefused) as refused:
            plain.run(["/bin/pwd"], cwd=cwd, env=plain.env(), timeout=30)
        assert str(cwd.resolve()) in str(refused.value)
    link = tmp_path / "link"
    link.symlink_to(shared)
    with pytest.raises(plain.PlainRefused):  # resolved: a link to it is the same directory
        plain.run(["/bin/pwd"], cwd=link, env=plain.env(), timeout=30)
    own = tmp_path / "own"
    own.mkdir(mode=0o755)
    done = plain.run(["/bin/pwd"], cwd=own, env=plain.env(), text=True, timeout=30)
    assert done.stdout.strip() == str(own.resolve())
    # a tool under `leash.tools: plain` runs in its workspace, which is the agent's by definition
    assert plain.run(["/bin/pwd"], cwd=shared, env=plain.env(), timeout=30, workspace=True).returncode == 0


@pytest.mark.root
def test_a_plain_launch_refuses_a_directory_an_agent_user_owns(tmp_path, leashed_user):
    agents = tmp_path / "agent-owned"
    agents.mkdir(mode=0o755)
    os.chown(agents, leashed_user.pw_uid, leashed_user.pw_gid)
    with pytest.raises(plain.PlainRefused) as refused:
        plain.run(["/bin/true"], cwd=agents, env=plain.env(), timeout=30)
    assert f"owner uid {leashed_user.pw_uid}" in str(refused.value)


def test_a_timeout_kills_the_plain_launch_and_everything_it_started(tmp_path):
    marker = tmp_path / "pid"
    with pytest.raises(subprocess.TimeoutExpired) as late:
        plain.run(["/bin/sh", "-c", f"echo started; sleep 60 & echo $! > {marker}; wait"], cwd=tmp_path,
                  env=plain.env(), timeout=1, new_session=True)
    assert b"started" in late.value.stdout
    pid = int(marker.read_text())
    assert _gone(pid), "the background child outlived its launch"


def _gone(pid: int) -> bool:
    """Dead (gone, or a zombie its new parent has not reaped yet); the kill is sent before run() raises, so
    this waits only for the kernel to finish the exit."""
    for _ in range(400):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.01)
    return False


@pytest.mark.root
def test_a_check_runs_as_the_user_it_names(shared_dir, leashed_user):
    """supervisor/readable.py's check, now Leash's: as the user, with its groups; the caller stays root."""
    from sentinel.supervisor.readable import can_read

    secret, public = shared_dir / "secret", shared_dir / "public"
    secret.write_text("x")
    public.write_text("x")
    os.chmod(secret, 0o600)
    os.chmod(public, 0o644)
    assert can_read(leashed_user, public) and not can_read(leashed_user, secret)
    assert can_read(pwd.getpwuid(0), secret) and os.geteuid() == 0
    assert plain.check_as(leashed_user, lambda: None) and not plain.check_as(leashed_user, lambda: os.setuid(0))


# -- the call sites -------------------------------------------------------------------------------

def test_a_plain_mode_tool_gets_the_sandboxed_tools_environment_not_the_operators(monkeypatch, tmp_path):
    """`leash.tools: plain` used to hand the agent's bash the operator's whole environment (API keys included)."""
    from sentinel.tools import ToolContext
    from sentinel.tools.builtin import run_argv

    for key, value in INJECTED.items():
        monkeypatch.setenv(key, value)
    ws = tmp_path / "ws"
    ws.mkdir()
    out = run_argv(["/bin/sh", "-c", "/usr/bin/env; pwd"], ToolContext(workspace=ws, tools_mode="plain"))
    assert out.startswith("exit code: 0")
    seen = _env_of(out)
    assert not set(INJECTED) & set(seen) and seen["HOME"] == str(ws) and str(ws) in out.splitlines()


def test_the_hook_reachability_check_runs_without_the_parents_loader_variables(monkeypatch, tmp_path):
    """It runs the installed hook command as the agent would (the operator's environment) less loader variables."""
    from sentinel.hooks.trust import reachable

    for key, value in INJECTED.items():
        monkeypatch.setenv(key, value)
    seen = tmp_path / "seen"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\n/usr/bin/env > {seen}\npwd >> {seen}\ncat >/dev/null\n")
    hook.chmod(0o755)
    project = tmp_path / "project"
    project.mkdir(mode=0o755)
    ok, _, why = reachable("claude-code", str(project), str(hook))
    assert ok, why
    env = _env_of(seen.read_text())
    assert env["SENTINEL_GATE_JUDGE"] == "1" and env["SENTINEL_TEST_SECRET"] == "sk-operator"
    assert not {"LD_PRELOAD", "PYTHONPATH", "BASH_ENV"} & set(env) and str(project) in seen.read_text().splitlines()
    os.chmod(project, 0o777)  # a project anyone can write: refused, with the reason
    ok, _, why = reachable("claude-code", str(project), str(hook))
    assert not ok and "failed to run" in why

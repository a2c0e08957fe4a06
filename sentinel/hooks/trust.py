"""Is the gate really there? Per agent: installed, trusted, reachable, its judges answering - and the
step that is missing.

    take_steps(agent, root, command) -> [str]   trust steps taken non-interactively, or the exact
                                               step the user must take (printed by `hook install`)
    check(agent, root, judging) -> Check        `sentinel hook status` (and `sentinel status`)
    Judging(root, timeout_s)                    the repository's rules and whether each judge answers
    installed_agents(root) -> [str]

Several clients skip an untrusted project hook silently, so a gate the user believes in can be
absent. What can be taken safely is taken: the Codex hook hash of Sentinel's own hooks, read from
Codex itself (`codex app-server`, `hooks/list`, then `config/value/write`), once the user trusts
the project. Trusting a whole folder or project (Codex, Gemini CLI, Copilot CLI, Cursor) enables
everything else it configures too, so that step is left to the user and named exactly.

A hook that runs is still no gate when its rules' judge does not answer (every rule is then
skipped, fail_open), so `Judging` asks each judge one short real question.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field

from sentinel.hooks.common import obj
from sentinel.jsontypes import JSON, JSONObject

CODEX_TIMEOUT_S = 20


class Check:
    def __init__(self, agent: str, installed: bool, trusted: bool | None, reachable: bool | None,
                 missing: list[str], latency_ms: float | None = None, judges: bool | None = None):
        self.agent = agent
        self.installed = installed
        self.trusted = trusted          # None: the client keeps no trust state Sentinel can read
        self.reachable = reachable
        self.missing = missing
        self.latency_ms = latency_ms
        self.judges = judges            # every rule has a judge that answers; None: not asked

    @property
    def active(self) -> bool:
        return self.installed and self.trusted is not False and self.reachable is not False \
            and self.judges is not False

    def to_dict(self) -> JSONObject:
        return {"agent": self.agent, "installed": self.installed, "trusted": self.trusted,
                "reachable": self.reachable, "judges_answer": self.judges, "active": self.active,
                "missing": [*self.missing], "latency_ms": self.latency_ms}

    def line(self) -> str:
        def word(value: bool | None, yes: str, no: str) -> str:
            return "unknown" if value is None else (yes if value else no)

        state = "GATE INACTIVE" if not self.active else "gate active" if self.judges else "hook active"
        parts = [f"{self.agent}: {state}", f"installed {word(self.installed, 'yes', 'no')}",
                 f"trusted {word(self.trusted, 'yes', 'no')}", f"reachable {word(self.reachable, 'yes', 'no')}"
                 + (f" ({self.latency_ms:.0f} ms)" if self.latency_ms is not None else "")]
        if self.judges is not None:
            parts.append(f"judges answer {word(self.judges, 'yes', 'no')}")
        elif self.installed:
            parts.append("judges not asked (`sentinel hook status` asks them)")
        return "; ".join(parts) + "".join(f"\n  step: {m}" for m in self.missing)


class Judging:
    """What the repository's gate can decide: its rules, and whether each rule's judge answers."""

    def __init__(self, root: str, timeout_s: float):
        from sentinel.policy.gate.loader import load_repo
        from sentinel.policy.gate.probe import answer_judges

        bundle = load_repo(root, use_cache=False)
        self.config_error = bundle.config_error
        self.rules = [] if bundle.config_error else bundle.rules
        self.rules_dir = os.path.relpath(bundle.paths.rules_dir, root)
        self.answers = answer_judges(bundle.config, self.rules, timeout_s=timeout_s) if self.rules else []

    @property
    def ok(self) -> bool:
        return not self.config_error and bool(self.rules) and all(a.ok for a in self.answers)

    def steps(self) -> list[str]:
        if self.config_error:
            return [f"{self.config_error}: the gate is off until it is fixed"]
        if not self.rules:
            return [f"no rules in {self.rules_dir}: the gate checks nothing (add one, e.g. "
                    "policies/rules/no-force-push.yaml from Sentinel's repository)"]
        return [a.step() for a in self.answers if not a.ok]

    def lines(self) -> list[str]:
        return [a.line() for a in self.answers]

    def to_dict(self) -> JSONObject:
        return {"rules": len(self.rules), "config_error": self.config_error or None,
                "judges": [a.to_dict() for a in self.answers]}


# -- where each agent's hook config lives, and the command inside it -----------------------------

CONFIG = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json", "gemini-cli": ".gemini/settings.json",
          "copilot-cli": ".github/hooks/sentinel.json", "cursor": ".cursor/hooks.json",
          "windsurf": ".windsurf/hooks.json", "cline": ".clinerules/hooks/PreToolUse",
          "amazon-q": ".amazonq/cli-agents/sentinel.json"}
PRE_EVENT = {"claude-code": "pre-tool-use", "codex": "pre-tool-use", "gemini-cli": "BeforeTool",
             "copilot-cli": "preToolUse", "cursor": "preToolUse", "windsurf": "pre_run_command",
             "cline": "PreToolUse", "amazon-q": "preToolUse"}


def hook_command(agent: str, root: str) -> str | None:
    """The command the agent runs, as installed (without ` hook AGENT EVENT`), or None."""
    try:
        with open(os.path.join(root, CONFIG[agent]), encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return None
    marker = f" hook {agent} "
    for line in text.splitlines() if agent == "cline" else _strings(json.loads(text or "{}")):
        head, found, _ = line.partition(marker)
        if found:
            return head.replace("exec ", "", 1).strip()
    return None


def _strings(data: JSON) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for v in data.values() for s in _strings(v)]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return []


def installed_agents(root: str) -> list[str]:
    out = []
    for agent in CONFIG:
        try:
            if hook_command(agent, root):
                out.append(agent)
        except ValueError:
            out.append(agent)  # a config that is not JSON: reported by check()
    return out


def reachable(agent: str, root: str, command: str) -> tuple[bool, float | None, str]:
    """Run the installed command as the agent would, on a payload that judges nothing (with the operator's
    environment, which is what the agent runs it with, less loader variables)."""
    from sentinel.leash import plain

    try:
        argv = shlex.split(command) + ["hook", agent, PRE_EVENT[agent]]
    except ValueError:
        return False, None, f"the hook command does not parse: {command}"
    if shutil.which(argv[0]) is None:
        return False, None, f"the hook command {argv[0]} is not there: reinstall with `sentinel hook install {agent}`"
    began = time.monotonic()
    try:
        proc = plain.run(argv, input="{}", text=True, timeout=30, cwd=root,
                         env=plain.operator_env(os.environ, {"SENTINEL_GATE_JUDGE": "1"}))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, None, f"the hook command failed to run ({exc.__class__.__name__}): {command}"
    ms = (time.monotonic() - began) * 1000
    if proc.returncode != 0:
        return False, ms, f"the hook command exits {proc.returncode}: {(proc.stderr or '').strip()[:200]}"
    return True, ms, ""


# -- trust, per client -------------------------------------------------------------------------


def _home(*parts: str) -> str:
    return os.path.join(os.path.expanduser("~"), *parts)


def _read_json(path: str) -> JSONObject:
    """A client's JSON settings file as an object; missing, unreadable or not an object: empty."""
    try:
        with open(path, encoding="utf-8") as fh:
            data: JSON = json.load(fh)
    except (OSError, ValueError):
        return {}
    return obj(data)


def _under(root: str, folder: str) -> bool:
    folder = os.path.abspath(os.path.expanduser(folder))
    return root == folder or root.startswith(folder.rstrip(os.sep) + os.sep)


def gemini_trust(root: str) -> tuple[bool | None, list[str]]:
    if os.environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True, []
    settings = _read_json(_home(".gemini", "settings.json"))
    folder_trust = obj(obj(settings.get("security")).get("folderTrust"))
    if folder_trust.get("enabled") is False:
        return True, []
    trusted = _read_json(_home(".gemini", "trustedFolders.json"))
    for folder, level in trusted.items():
        if level == "TRUST_FOLDER" and _under(root, folder) or level == "TRUST_PARENT" and \
                _under(root, os.path.dirname(os.path.abspath(folder))):
            return True, []
    return False, [f"Gemini CLI loads project hooks only in a trusted folder: run `gemini` in {root} and choose "
                   f"\"Trust folder\", or add \"{root}\": \"TRUST_FOLDER\" to ~/.gemini/trustedFolders.json"]


def copilot_trust(root: str) -> tuple[bool | None, list[str]]:
    if os.environ.get("COPILOT_ALLOW_ALL") == "true" and os.path.abspath(os.getcwd()) == root:
        return True, []  # Copilot trusts the cwd under exactly this value ("1" does not)
    config = _read_json(_home(".copilot", "config.json"))
    folders = config.get("trusted_folders") or config.get("trustedFolders") or []
    if isinstance(folders, list) and any(isinstance(f, str) and _under(root, f) for f in folders):
        return True, []
    return False, [f"Copilot CLI loads project hooks only in a trusted folder: run `copilot` in {root} and choose "
                   "to trust it (remembered in ~/.copilot/config.json trusted_folders)"]


@dataclass
class CodexState:
    """Codex's own view of this project's hooks: whether the project is trusted, and each hook as Codex lists
    it ({key, command, trustStatus, currentHash}); `verified` when Codex itself said so (its app-server)."""

    project_trusted: bool
    hooks: list[JSONObject] = field(default_factory=list)
    verified: bool = False


def codex_state(root: str) -> CodexState:
    """From `codex app-server` when codex is installed, else from ~/.codex/config.toml."""
    binary = shutil.which("codex")
    if binary:
        found = _codex_app_server(binary, root, [])
        if found is not None:
            return found

    config = _codex_config()
    state = obj(obj(config.get("hooks")).get("state"))
    prefix = os.path.join(root, ".codex", "hooks.json") + ":"
    hooks: list[JSONObject] = [
        {"key": k, "trustStatus": "trusted" if obj(v).get("trusted_hash") else "untrusted", "command": "sentinel hook"}
        for k, v in state.items() if k.startswith(prefix)]
    return CodexState(_codex_level(config, root) == "trusted", hooks)


def _codex_config() -> JSONObject:
    """~/.codex/config.toml (or $CODEX_HOME's); unreadable: empty."""
    import tomllib

    try:
        with open(os.path.join(os.environ.get("CODEX_HOME") or _home(".codex"), "config.toml"), "rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def _codex_level(config: JSONObject, root: str) -> JSON:
    return obj(obj(config.get("projects")).get(root)).get("trust_level")


def _codex_app_server(binary: str, root: str, writes: list[JSONObject]) -> CodexState | None:
    """One short `codex app-server` session: optional config writes, then hooks/list for `root`."""
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"clientInfo": {"name": "sentinel", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "initialized"}]
    lines += [{"jsonrpc": "2.0", "id": 10 + i, "method": "config/value/write", "params": w} for i, w in enumerate(writes)]
    lines.append({"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [root]}})
    from sentinel.leash import plain

    try:
        proc = plain.popen([binary, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, cwd=root, env=plain.operator_env(os.environ))
    except OSError:
        return None
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines))
        proc.stdin.flush()
        deadline = time.monotonic() + CODEX_TIMEOUT_S
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                return None
            try:
                msg: JSON = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and msg.get("id") == 2:
                return _codex_listed(msg, root)
        return None
    finally:
        proc.kill()
        proc.wait()


def _codex_listed(msg: JSONObject, root: str) -> CodexState:
    """The answer to hooks/list: the project's hooks, and whether Codex trusts the project."""
    listed = obj(msg.get("result")).get("data")
    data = obj(listed[0]) if isinstance(listed, list) and listed else {}
    entries = data.get("hooks")
    hooks = [h for h in (entries if isinstance(entries, list) else []) if isinstance(h, dict)
             and h.get("source") == "project"]
    warned = "trusted project" in json.dumps(data.get("warnings") or []) or not os.path.exists(
        os.path.join(root, ".codex"))
    return CodexState(bool(hooks) or not warned and _codex_level(_codex_config(), root) == "trusted", hooks, True)


CODEX_PROJECT_STEP = ("Codex loads .codex/hooks.json only in a trusted project: run `codex` in {root} and trust it, "
                      "or add [projects.\"{root}\"] trust_level = \"trusted\" to ~/.codex/config.toml; then run "
                      "`sentinel hook install codex` again to trust Sentinel's hooks")
CODEX_HOOK_STEP = ("Codex skips an untrusted hook silently: run `sentinel hook install codex` again (it trusts "
                   "Sentinel's own hooks through Codex), or review them with /hooks in `codex`")


def codex_trust(root: str, take: bool = False) -> tuple[bool | None, list[str]]:
    state = codex_state(root)
    if not state.project_trusted:
        return False, [CODEX_PROJECT_STEP.format(root=root)]
    ours = [h for h in state.hooks if "hook codex" in str(h.get("command"))]
    untrusted = [h for h in ours if h.get("trustStatus") != "trusted"]
    if untrusted and take and state.verified and shutil.which("codex"):
        writes: list[JSONObject] = [
            {"keyPath": "hooks.state", "mergeStrategy": "upsert",
             "value": {str(h["key"]): {"trusted_hash": h["currentHash"]}}} for h in untrusted if h.get("currentHash")]
        state = _codex_app_server(shutil.which("codex") or "codex", root, writes) or state
        ours = [h for h in state.hooks if "hook codex" in str(h.get("command"))]
        untrusted = [h for h in ours if h.get("trustStatus") != "trusted"]
    if not ours or untrusted:
        names = ", ".join(str(h.get("key", "?")).rsplit("/", 1)[-1] for h in untrusted) or "Sentinel's hooks"
        return False, [f"{CODEX_HOOK_STEP} (untrusted: {names})"]
    return True, []


OTHER_STEPS = {
    "cursor": "Cursor loads project hooks only in a trusted workspace: open {root} in Cursor and trust it",
    "amazon-q": "Amazon Q runs these hooks only in the `sentinel` agent: `q chat --agent sentinel`, or "
                "`q settings chat.defaultAgent sentinel`",
    "cline": "the Cline extension runs hooks once \"Enable Hooks\" is checked in its settings (the CLI always runs them)",
}


def trust_of(agent: str, root: str, take: bool = False) -> tuple[bool | None, list[str]]:
    if agent == "codex":
        return codex_trust(root, take)
    if agent == "gemini-cli":
        return gemini_trust(root)
    if agent == "copilot-cli":
        return copilot_trust(root)
    if agent in OTHER_STEPS:
        return None, [OTHER_STEPS[agent].format(root=root)]
    return True, []  # claude-code (no step in -p; an interactive session asks once), windsurf


def take_steps(agent: str, root: str) -> list[str]:
    """After install: what was done, and what the user still has to do (one line each)."""
    trusted, missing = trust_of(agent, root, take=True)
    if trusted and agent == "codex":
        return ["trusted Sentinel's hooks in Codex (~/.codex/config.toml hooks.state)"]
    return [f"to do: {m}" for m in missing]


def check(agent: str, root: str, judging: Judging | None = None) -> Check:
    """The agent's hook: installed, trusted, reachable; with `judging`, also whether its rules can be decided."""
    try:
        command = hook_command(agent, root)
    except ValueError:
        return Check(agent, False, None, None, [f"{CONFIG[agent]} is not valid JSON: fix it, then "
                                                f"`sentinel hook install {agent}`"])
    if not command:
        return Check(agent, False, None, None, [f"`sentinel hook install {agent}` in {root}"])
    trusted, missing = trust_of(agent, root)
    ok, ms, problem = reachable(agent, root, command)
    steps = missing + ([problem] if problem else []) + (judging.steps() if judging else [])
    return Check(agent, True, trusted, ok, steps, ms, judging.ok if judging else None)


def summary(start: str) -> JSONObject:
    """For `sentinel status`: the hook state of the repository around `start` (nothing outside one)."""
    from sentinel.policy.gate.loader import find_repo

    root = find_repo(start)
    agents = installed_agents(root) if root else []
    return {"hooks": [check(agent, root).line() for agent in agents]} if root and agents else {}

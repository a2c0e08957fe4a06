"""Can each configured judge be reached, and does it answer? For `sentinel status` and `sentinel hook status`.

    probe_judges(cfg, rules, providers=None) -> [str]    reachable? one line per backend, nothing judged
    probe_configured() -> [str]          the same for $SENTINEL_HOME's gate (config.yaml `gate:`)
    answer_judges(cfg, rules, providers=None) -> [Answer]
                                         one short real judge request per (backend, model) the rules use

A rule whose judge is unreachable is skipped (fail_open), so the operator should learn of it
before a run, not from `show` after one. Probes are cheap and bounded: an HTTP GET of the
backend's model list (Ollama `/api/tags`, OpenAI-compatible `/models`) with a short timeout, a
PATH lookup for the claude/copilot CLIs. No model is loaded and nothing is judged.

Reachable is not enough: an Ollama without the model, or a local judge whose package is missing,
answers the probe and fails every rule. `answer_judges` sends each judge one tiny verdict request
(bounded by `timeout_s`, all judges at once) and checks the answer against the schema.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import TYPE_CHECKING

from sentinel.jsontypes import JSONObject
from sentinel.policy.gate.judges.base import JudgeSource, ProviderLookup

if TYPE_CHECKING:
    from sentinel.config_stamp import Facts
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.gate.rules import Rule

TIMEOUT_S = 2.0
NO_RULES = "no gate rules: no judge to probe"


def probe_judges(cfg: GateConfig, rules: list[Rule], providers: ProviderLookup | None = None,
                 timeout_s: float = TIMEOUT_S) -> list[str]:
    backends = sorted({cfg.backend, *(r.backend for r in rules if r.backend)})
    return [probe_one(cfg, name, providers, timeout_s) for name in backends]


def probe_one(cfg: GateConfig, name: str, providers: ProviderLookup | None, timeout_s: float) -> str:
    settings = cfg.backend_settings(name)
    label = f"judge {name}/{cfg.model_for(name)}"
    if name in ("claude", "copilot"):
        command = settings.get("command") or name
        return f"{label}: {'found' if shutil.which(command) else 'NOT FOUND'} ({command} on PATH)"
    if name == "local":
        return f"{label}: in-process llama.cpp"
    if name == "ollama":
        root = (settings.get("url") or "http://localhost:11434").rstrip("/")
        return f"{label}: {_get(root + '/api/tags', None, timeout_s)} ({root})"
    url, key = settings.get("url"), None
    if not url and providers is not None:
        found = providers(name)
        if found:
            url, key = found
    if not url:
        return f"{label}: UNKNOWN backend (set backends.{name}.url or a provider {name} in config.yaml)"
    return f"{label}: {_get(url.rstrip('/') + '/models', key, timeout_s)} ({url})"


def _get(url: str, key: str | None, timeout_s: float) -> str:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            return "reachable" if resp.status < 400 else f"UNREACHABLE (HTTP {resp.status})"
    except urllib.error.HTTPError as exc:  # it answered: reachable, unless a gateway says what is behind is not
        return f"UNREACHABLE (HTTP {exc.code})" if exc.code in (502, 503, 504) else "reachable"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"UNREACHABLE ({str(reason).splitlines()[0] if str(reason) else type(exc).__name__})"


def probe_configured(facts: Facts | None = None) -> list[str]:
    """`sentinel status`: the judges of Sentinel's own gate (none when no rule is installed). `facts`: what the
    config's last validation recorded (sentinel/config_stamp.py), when it is unchanged since: with the gate off
    or no rule file at all, nothing more is loaded."""
    from sentinel import paths
    from sentinel.policy.gate.loader import load_home, rule_files, system_rules_dir

    if facts is not None and not (facts.gate and any(
            rule_files(d) for d in (system_rules_dir(), os.path.join(paths.home(), facts.rules_dir)) if d)):
        return [NO_RULES]
    from sentinel import config as config_mod
    from sentinel.errors import SentinelError
    from sentinel.policy.gate.layer import provider_lookup

    try:
        cfg = config_mod.load()
    except SentinelError as exc:
        return [f"judges not probed: {str(exc).splitlines()[0]}"]
    bundle = load_home(str(paths.home()), cfg.gate.dump(), system_rules_dir())
    if not cfg.gate.enabled or not bundle.rules:
        return [NO_RULES]
    return probe_judges(bundle.config, bundle.rules, provider_lookup(cfg))


ANSWER_TIMEOUT_S = 60.0  # the embedded judge may have to load its model first
PROBE_PROMPT = "COMMAND: echo hello\nRULE: never delete files.\nRespond ONLY with JSON."
LOCAL_JUDGE = "local/qwen2.5-coder-1.5b"


class Answer:
    """One judge's reply to the probe: did it answer under the schema, how fast, and what to do if not."""

    def __init__(self, backend: str, model: str, rules: list[str], problem: str = "", ms: float | None = None):
        self.backend = backend
        self.model = model
        self.rules = rules          # the rules this judge decides
        self.problem = problem
        self.ms = ms

    @property
    def judge(self) -> str:
        return f"{self.backend}/{self.model}"

    @property
    def ok(self) -> bool:
        return not self.problem

    def line(self) -> str:
        if self.ok:
            return f"judge {self.judge}: answers ({self.ms:.0f} ms)"
        return f"judge {self.judge}: NO ANSWER ({self.problem})"

    def step(self) -> str:
        """What to install or change, in one line."""
        rules = f"rule {self.rules[0]} is" if len(self.rules) == 1 else f"rules {', '.join(self.rules)} are"
        what = f"judge {self.judge} does not answer, so {rules} skipped (fail_open) and check nothing"
        return f"{what}: {fix_for(self.backend, self.model, self.problem)}"

    def to_dict(self) -> JSONObject:
        return {"judge": self.judge, "answers": self.ok, "ms": self.ms, "problem": self.problem or None,
                "rules": [*self.rules]}


def fix_for(backend: str, model: str, problem: str) -> str:
    if problem.startswith("no answer within"):
        return ("it may still be loading or the machine is busy: run `sentinel hook status` again, or give it "
                "longer with --judge-timeout")
    use_local = (f"or use the embedded judge: `backend: local` and `model: {LOCAL_JUDGE.split('/', 1)[1]}` "
                 "in .claude/sentinel/config.yaml")
    if backend == "ollama":
        if "HTTP 404" in problem or "not found" in problem:
            return f"`ollama pull {model}`, {use_local}"
        return f"install and start Ollama (https://ollama.com), then `ollama pull {model}`; {use_local}"
    if backend == "local":
        return "pip install 'sentinel-harness[local]' (Sentinel's installer does) and see docs/models.md"
    if backend in ("claude", "copilot"):
        return f"install the {backend} CLI and log in, {use_local}"
    return f"check backends.{backend}.url and its key, {use_local}"


def judged_by(cfg: GateConfig, rules: list[Rule]) -> dict[tuple[str, str], list[str]]:
    """(backend, model) -> ids of the rules it judges (static info rules call no model)."""
    out: dict[tuple[str, str], list[str]] = {}
    for rule in rules:
        if not rule.judged:
            continue
        backend = rule.backend or cfg.backend
        out.setdefault((backend, cfg.model_for(backend, rule.model)), []).append(rule.id)
    return out


def answer_judges(cfg: GateConfig, rules: list[Rule], providers: ProviderLookup | None = None,
                  timeout_s: float = ANSWER_TIMEOUT_S) -> list[Answer]:
    """Each judge the rules use, asked one short verdict at once; one that has not answered by `timeout_s`
    is reported as such (its call is left to finish on a daemon thread)."""
    from sentinel.policy.gate.engine import NO_ANSWER, run_parallel
    from sentinel.policy.gate.judges import Judges

    judges = Judges(cfg, providers)
    answers = [Answer(backend, model, ids) for (backend, model), ids in sorted(judged_by(cfg, rules).items())]
    outcomes = run_parallel(lambda a: _ask(judges, a, timeout_s), answers, max(1, len(answers)), timeout_s,
                            inline_one=False)
    for answer, outcome in zip(answers, outcomes):
        if isinstance(outcome, Exception):
            problem = str(outcome).splitlines()[0] if str(outcome) else type(outcome).__name__
            answer.problem = f"no answer within {timeout_s:g} s" if problem == NO_ANSWER else problem[:300]
        else:
            answer.ms = outcome
    return answers


def _ask(judges: JudgeSource, answer: Answer, timeout_s: float) -> float:
    """Milliseconds the judge took to give a verdict that fits the schema; raises what went wrong."""
    from sentinel.policy.gate.judges import Request
    from sentinel.policy.gate.prompts import JUDGE_SYSTEM, VERDICT, check

    began = time.monotonic()
    # the backend's own timeout a little later than the probe's deadline: a slow judge is reported one way
    request = Request(JUDGE_SYSTEM, PROBE_PROMPT, VERDICT, answer.model, timeout_s=timeout_s + 1, max_tokens=120)
    check(VERDICT, judges.get(answer.backend).complete(request))
    return (time.monotonic() - began) * 1000

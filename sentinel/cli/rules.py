"""`sentinel rules ...`: list, lint, test, stats, drafts, promote, dismiss, learn.

Works on the repository's `.claude/sentinel/` found from the current directory upward
(or `--repo PATH`), else on Sentinel's own rules under $SENTINEL_HOME (`--home` forces
that). Each command is a thin call into `sentinel.policy.gate`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from sentinel.errors import SentinelError, UsageError
from sentinel.ui.escape import visible

if TYPE_CHECKING:
    from sentinel.policy.gate.loader import Bundle
    from sentinel.policy.gate.rules import Rule

app = typer.Typer(no_args_is_help=True, add_completion=False)

RepoOpt = typer.Option(None, "--repo", help="Repository holding .claude/sentinel/ (default: found from the cwd).")
HomeOpt = typer.Option(False, "--home", help="Sentinel's own rules under $SENTINEL_HOME instead of a repository.")
JsonOpt = typer.Option(False, "--json", help="Print one JSON document.")


class Target:
    """The gate being managed: a repository or $SENTINEL_HOME."""

    def __init__(self, bundle: "Bundle", root: str | None):
        self.bundle = bundle
        self.root = root

    @property
    def label(self) -> str:
        return self.root or self.bundle.paths.config_dir


def _target(repo: Optional[Path], home: bool) -> Target:
    from sentinel.policy.gate import loader

    if not home:
        root = loader.find_repo(str(repo or Path.cwd()))
        if root is None and repo is not None:
            raise UsageError(f"{repo}: no .claude/sentinel/ directory here or above (sentinel hook install AGENT)")
        if root is not None:
            bundle = loader.load_repo(root, use_cache=False)
            if bundle.config_error:
                raise UsageError(bundle.config_error)
            return Target(bundle, root)
    from sentinel import config as config_mod, paths

    cfg = config_mod.load()
    return Target(loader.load_home(str(paths.home()), cfg.gate.dump(), loader.system_rules_dir()), None)


def _print_json(data: object) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _rule_row(rule: "Rule") -> dict[str, object]:
    return {"id": rule.id, "kind": rule.kind, "trigger": rule.trigger, "severity": rule.severity, "post": rule.post,
            "scope": rule.scope, "exclude": rule.exclude, "when": [p.pattern for p in rule.when],
            "unless": [p.pattern for p in rule.unless], "backend": rule.backend, "model": rule.model,
            "source": rule.source}


def _table(headers: list[str], rows: list[list[object]]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(*headers, box=None, pad_edge=False)
    for row in rows:  # cells are text, never markup: a scribe model drafts rules, a judge writes reasons
        table.add_row(*(Text(visible(str(c))) for c in row))
    console = Console(highlight=False)
    if not console.is_terminal:  # piped or captured: whole cells, not rich's 80-column guess
        console.width = max(80, sum(max(len(str(c)) for c in column) + 2 for column in zip(headers, *rows)))
    console.print(table)


@app.command("list")
def list_rules(repo: Optional[Path] = RepoOpt, home: bool = HomeOpt, as_json: bool = JsonOpt) -> None:
    """List the active rules (and the files that failed to load)."""
    t = _target(repo, home)
    own = t.bundle.own  # a repository's hook also meets the built-in rule (sentinel/policy/gate/own.py)
    rows = [_rule_row(r) for r in t.bundle.rules] + ([{**_rule_row(own), "built_in": True}] if own else [])
    if as_json:
        return _print_json({"location": t.label, "rules": rows, "errors": t.bundle.errors})
    if not t.bundle.rules:
        print(f"no rules in {', '.join(t.bundle.paths.rules_dirs)}")
    table: list[list[object]] = [[r.id, r.kind, r.trigger, r.severity + (" (post)" if r.post else ""),
                                  ", ".join(r.scope) or "*", r.backend or "-"] for r in t.bundle.rules]
    if own is not None:
        table.append([own.id, own.kind, own.trigger, own.severity, "the gate's own files (built in; docs/hooks.md)",
                      "-"])
    if table:
        _table(["id", "kind", "trigger", "severity", "scope", "backend"], table)
    for error in t.bundle.errors:
        typer.echo(f"error: {error}", err=True)


@app.command()
def lint(repo: Optional[Path] = RepoOpt, home: bool = HomeOpt, as_json: bool = JsonOpt) -> None:
    """Validate the config and every rule file; exit 1 when any is invalid."""
    t = _target(repo, home)
    report = {"location": t.label, "rules": len(t.bundle.rules), "errors": t.bundle.errors,
              "warnings": t.bundle.warnings}
    if as_json:
        _print_json(report)
    else:
        for error in t.bundle.errors:
            print(f"error: {error}")
        for warning in t.bundle.warnings:
            print(f"warning: {warning}")
        print(f"{len(t.bundle.rules)} rule(s) valid, {len(t.bundle.errors)} invalid")
    raise typer.Exit(1 if t.bundle.errors else 0)


@app.command("test")
def test_rule(rule_id: str = typer.Argument(..., help="Rule id."),
              payload: Path = typer.Option(..., "--payload", help="A hook payload (JSON) to evaluate."),
              agent: str = typer.Option("claude-code", "--agent", help="Whose payload format it is."),
              dry_run: bool = typer.Option(False, "--dry-run", help="Show the rendered prompt; no model call."),
              repo: Optional[Path] = RepoOpt, home: bool = HomeOpt, as_json: bool = JsonOpt) -> None:
    """Evaluate one rule against one payload and show the verdict."""
    from sentinel.hooks.rulestest import run_test

    t = _target(repo, home)
    try:
        data = json.loads(payload.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{payload}: not a readable JSON payload ({exc.__class__.__name__})") from None
    report = run_test(t.bundle, t.root, rule_id, data, agent, dry_run)
    if as_json:
        return _print_json(report)
    for key, value in report.items():
        print(visible(f"{key}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}",
                      newlines=True))


@app.command()
def stats(repo: Optional[Path] = RepoOpt, home: bool = HomeOpt, as_json: bool = JsonOpt) -> None:
    """Per rule from the telemetry: evaluations, violations, low-confidence answers, errors, actions let through
    unchecked (their judge failed), p50 and p95 latency."""
    from sentinel.policy.gate import telemetry

    t = _target(repo, home)
    rows = telemetry.stats(telemetry.read(t.bundle.paths.log_file), t.bundle.config.confidence_threshold)
    if as_json:
        return _print_json({"log_file": t.bundle.paths.log_file, "rules": rows})
    if not rows:
        print(f"no evaluations logged in {t.bundle.paths.log_file}")
        return
    _table(["rule", "evaluations", "violations", "low confidence", "errors", "unchecked", "p50 ms", "p95 ms"],
           [[r["rule_id"], r["evaluations"], r["violations"], r["low_confidence"], r["errors"], r["unchecked"],
             f"{r['p50_ms']:.0f}", f"{r['p95_ms']:.0f}"] for r in rows])
    for r in rows:
        if r["unchecked"]:
            print(f"{r['rule_id']}: {r['unchecked']} action(s) let through unchecked (judge failed, fail_open); "
                  f"last error: {r['last_error']}")


@app.command()
def drafts(repo: Optional[Path] = RepoOpt, home: bool = HomeOpt, as_json: bool = JsonOpt) -> None:
    """Draft rules proposed by the scribe, pending review."""
    from sentinel.policy.gate.drafts import DraftStore

    items = DraftStore(_target(repo, home).bundle.paths).list()
    if as_json:
        return _print_json({"drafts": items})
    if not items:
        print("no drafts")
        return
    _table(["id", "trigger", "scope", "source", "age (days)", "evidence"],
           [[d["id"], d["trigger"], ", ".join(d["scope"]) or "*", d["source"], d["age_days"],
             d["evidence"][:60]] for d in items])


@app.command()
def promote(draft_id: str = typer.Argument(..., help="Draft id."), repo: Optional[Path] = RepoOpt,
            home: bool = HomeOpt) -> None:
    """Move a draft into the rules directory: it is evaluated from the next tool call on."""
    from sentinel.policy.gate.drafts import DraftStore

    print(f"promoted {draft_id} -> {DraftStore(_target(repo, home).bundle.paths).promote(draft_id)}")


@app.command()
def dismiss(draft_id: str = typer.Argument(..., help="Draft id."), repo: Optional[Path] = RepoOpt,
            home: bool = HomeOpt) -> None:
    """Delete a draft and never propose it again."""
    from sentinel.policy.gate.drafts import DraftStore

    DraftStore(_target(repo, home).bundle.paths).dismiss(draft_id)
    print(f"dismissed {draft_id}")


@app.command()
def learn(repo: Optional[Path] = RepoOpt, as_json: bool = JsonOpt) -> None:
    """Scan documentation (scribe.doc_globs) for conventions and write draft rules."""
    from sentinel.policy.gate.judges import Judges
    from sentinel.policy.gate.judges.base import JudgeError
    from sentinel.policy.gate.scribe import Scribe, doc_files

    t = _target(repo, False)
    if t.root is None:
        raise UsageError("learn works on a repository: run it inside one with .claude/sentinel/ or pass --repo")
    b = t.bundle
    files = [os.path.relpath(p, t.root) for p in doc_files(t.root, b.config.scribe["doc_globs"])]
    try:
        created = Scribe(b.config, b.paths, b.rules, Judges(b.config)).learn(t.root)
    except JudgeError as exc:
        raise SentinelError(f"learn: {exc}") from None
    if as_json:
        return _print_json({"files": files, "drafts": created})
    print(f"scanned {len(files)} file(s); {len(created)} new draft(s)" + (f": {', '.join(created)}" if created else ""))


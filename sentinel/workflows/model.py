"""A saved workflow: `$SENTINEL_HOME/workflows/<name>.yaml`, validated whole before any step runs.

    description: Read notes, summarize them, report
    steps:
      - {name: read, agent: reader, task: "Read {{input}} and quote what matters."}
      - {name: summarize, agent: writer, task: "Summarize: {{previous}}"}
      - {name: report, agent: writer, task: "Report on {{read.output}}"}

    load(name, home) -> Workflow        ConfigError naming the file and field for the first problem
    render(task, input, outputs)        the step's task with every placeholder filled

Placeholders: `{{input}}` (the workflow's input), `{{previous}}` (the step before's output) and
`{{<step>.output}}` (an earlier step's output). Validation refuses duplicate step names, agents that do not
exist, and any placeholder that could not resolve when its step runs (an unknown or later step,
`{{previous}}` in the first step, anything else), so a workflow never fails halfway on its own text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Collection

from pydantic import BaseModel, ConfigDict, Field

from sentinel import paths
from sentinel.errors import ConfigError, NotFound, UsageError, validated

PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
NAME = re.compile(r"^[a-z0-9_][a-z0-9_-]{0,63}$")


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The step's name: `{{<name>.output}}` in a later step is its output.")
    agent: str = Field(description="The agent profile that runs this step.")
    task: str = Field(description="The step's task, with {{input}}, {{previous}} and {{<step>.output}}.")


class Workflow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str | None = None
    steps: list[Step] = Field(min_length=1)


def workflows_dir(home: Path | None = None) -> Path:
    return (home or paths.home()) / "workflows"


def workflow_path(name: str, home: Path | None = None) -> Path:
    check_name(name)
    return workflows_dir(home) / f"{name}.yaml"


def check_name(name: str) -> str:
    if not NAME.match(name or ""):
        raise UsageError(f"workflow {name!r}: use 1-64 lowercase letters, digits, '_' or '-'")
    return name


def names(home: Path | None = None) -> list[str]:
    directory = workflows_dir(home)
    if not directory.is_dir():
        return []
    return sorted(p.stem for p in directory.glob("*.yaml") if NAME.match(p.stem))


def load(name: str, home: Path | None = None, roster: Collection[str] | None = None) -> Workflow:
    path = workflow_path(name, home)
    if not path.is_file():
        raise NotFound(f"no workflow {name!r} (no {path}; create it with `sentinel workflow create {name} --file F`)")
    return parse_file(path, home, roster)


def parse_file(path: Path, home: Path | None = None, roster: Collection[str] | None = None) -> Workflow:
    from sentinel.config import read_yaml

    return parse(read_yaml(path), path, home, roster)


def parse(data: object, source: Path | str, home: Path | None = None, roster: Collection[str] | None = None) -> Workflow:
    """A workflow file's parsed YAML (any value: checked here), validated."""
    workflow = validated(Workflow, data, source, not_mapping="top level must be a mapping with `steps:`")
    validate(workflow, source, home, roster)
    return workflow


def validate(workflow: Workflow, source: Path | str, home: Path | None = None,
             roster: Collection[str] | None = None) -> None:
    """The first problem as one ConfigError naming the step's field; nothing runs when there is one.
    `roster`: the system agents a step may name (`AGENT` or `AGENT/PROFILE`); else the profiles in `home`."""
    from sentinel.agents import profile as profiles

    agents = set(roster) if roster is not None else {profiles.DEFAULT_AGENT, *profiles.names(home)}
    seen: list[str] = []
    for i, step in enumerate(workflow.steps):
        where = f"steps[{i}]"
        if not NAME.match(step.name):
            raise ConfigError(source, f"{where}.name: {step.name!r} is not a step name (lowercase letters, digits, "
                                      "_ or -)")
        if step.name in seen:
            raise ConfigError(source, f"{where}.name: duplicate step name {step.name!r}")
        if (step.agent.partition("/")[0] if roster is not None else step.agent) not in agents:
            raise ConfigError(source, f"{where}.agent: no agent {step.agent!r} (agents: {', '.join(sorted(agents))})")
        for ref in PLACEHOLDER.findall(step.task):
            problem = _unresolved(ref, seen, [s.name for s in workflow.steps])
            if problem:
                raise ConfigError(source, f"{where}.task: {{{{{ref}}}}} {problem}")
        seen.append(step.name)


def _unresolved(ref: str, before: list[str], every: list[str]) -> str | None:
    """Why a placeholder cannot resolve in a step preceded by `before`; None when it can."""
    if ref == "input":
        return None
    if ref == "previous":
        return None if before else "has no previous step in the first step"
    step, dot, field = ref.partition(".")
    if not dot or field != "output":
        return "is not a placeholder (use {{input}}, {{previous}} or {{<step>.output}})"
    if step in before:
        return None
    if step in every:
        return f"names step {step!r}, which runs later; only earlier steps have output"
    return f"names no step {step!r} (earlier steps: {', '.join(before) or 'none'})"


def render(task: str, input_text: str, outputs: dict[str, str], previous: str | None) -> str:
    """The task with each placeholder replaced (validation made sure each one resolves)."""

    def value(match: re.Match[str]) -> str:
        ref = match.group(1)
        if ref == "input":
            return input_text
        if ref == "previous":
            return previous or ""
        return outputs.get(ref.partition(".")[0], "")

    return PLACEHOLDER.sub(value, task)

"""Skills: Markdown an agent loads into its system prompt, `skills/<name>/SKILL.md` (the SKILL.md convention).

    ---
    name: release-notes
    description: Write release notes from the merged changes.
    ---
    # Release notes
    ...

Bundled skills ship with the package (`skills/` in the checkout); an agent's own skills live in
`$SENTINEL_HOME/skills/`. A skill carries no code, so `create_skill` and `list_skills` are `auto`.

    get(name, home) -> Skill | None     the agent's own skill, else the bundled one
    parse(name, text, path)             a skill from SKILL.md text read by the caller
    names(home) / all_skills(home)      everything an agent may attach
    SkillTools(home, attached, attach).tools()
                                        create_skill (writes it, then `attach`es it), list_skills
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

from sentinel import paths
from sentinel.agents import naming
from sentinel.errors import UsageError
from sentinel.jsontypes import JSONObject
from sentinel.memory.notes import split_frontmatter
from sentinel.memory.scan import scan
from sentinel.tools import Tool, ToolContext, object_schema

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
NAME_RULE = "use 1-64 lowercase letters, digits and hyphens, starting with a letter or digit"
BODY_MAX = 20000
DESCRIPTION_MAX = 300


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    path: Path
    bundled: bool


def own_dir(home: Path | None = None) -> Path:
    return (home or paths.home()) / "skills"


def bundled_dir() -> Path:
    return paths.data_dir("skills")


def parse(name: str, text: str, path: Path, bundled: bool = False) -> Skill:
    """A skill from its SKILL.md text (read by whoever may read it: the supervisor reads an agent's
    skills beneath the agent's home itself)."""
    meta, body = split_frontmatter(text[:BODY_MAX + 4096])
    meta = meta or {}
    return Skill(name, " ".join(str(meta.get("description") or "").split()), body.strip("\n"), path, bundled)


def _read(directory: Path, name: str, bundled: bool) -> Skill | None:
    path = directory / name / "SKILL.md"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return parse(name, text, path, bundled)


def get(name: str, home: Path | None = None) -> Skill | None:
    if not NAME.match(name):
        return None
    return _read(own_dir(home), name, False) or _read(bundled_dir(), name, True)


def names(home: Path | None = None) -> set[str]:
    found: set[str] = set()
    for directory in (own_dir(home), bundled_dir()):
        if directory.is_dir():
            found |= {p.parent.name for p in directory.glob("*/SKILL.md") if NAME.match(p.parent.name)}
    return found


def bundled() -> list[Skill]:
    directory = bundled_dir()
    found = sorted(p.parent.name for p in directory.glob("*/SKILL.md")) if directory.is_dir() else []
    return [s for s in (_read(directory, n, True) for n in found if NAME.match(n)) if s is not None]


def all_skills(home: Path | None = None) -> list[Skill]:
    return [s for s in (get(n, home) for n in sorted(names(home))) if s is not None]


def create(name: str, description: str, body: str, home: Path | None = None) -> Skill:
    """Write skills/<name>/SKILL.md; every problem is a correction the author can act on."""
    naming.check("skill", name, NAME, NAME_RULE)
    description = " ".join(str(description).split())
    if not description:
        raise UsageError("description must not be empty: say in one line when to use the skill")
    if len(description) > DESCRIPTION_MAX:
        raise UsageError(f"description is {len(description)} characters; keep it under {DESCRIPTION_MAX}")
    if not body.strip():
        raise UsageError("body must not be empty")
    if len(body) > BODY_MAX:
        raise UsageError(f"body is {len(body)} characters; keep it under {BODY_MAX}")
    if name in names(home):
        raise UsageError(f"skill {name!r} already exists; choose another name (see list_skills)")
    finding = scan(f"{description}\n{body}")
    if finding:
        raise UsageError(f"the skill is flagged by the injection scanner ({finding}); rewrite it without that")
    front = yaml.safe_dump({"name": name, "description": description}, sort_keys=False, allow_unicode=True, width=1000)
    directory = own_dir(home) / name
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / "SKILL.md"
    paths.write_atomic(path, f"---\n{front}---\n\n{body.strip()}\n", 0o644)
    return Skill(name, description, body.strip(), path, False)


class SkillTools:
    """create_skill and list_skills for one agent: `attached()` lists its skills, `attach(name)` adds one."""

    def __init__(self, home: Path, attached: Callable[[], list[str]], attach: Callable[[str], None]):
        self.home = home
        self.attached = attached
        self.attach = attach

    def tools(self) -> list[Tool]:
        return [
            Tool("create_skill", "Write a new skill (Markdown instructions for yourself) and attach it: it is in "
                                 "your system prompt from your next model call on.",
                 object_schema({"name": {"type": "string", "description": "lowercase-with-hyphens"},
                                "description": {"type": "string", "description": "One line: when to use it."},
                                "body": {"type": "string", "description": "The instructions, in Markdown."}},
                               ["name", "description", "body"]), self.create_skill),
            Tool("list_skills", "List the skills you can attach: name, description, whether attached.",
                 object_schema({}, []), self.list_skills, read_only=True, trigger="read"),
        ]

    def create_skill(self, args: JSONObject, ctx: ToolContext) -> str:
        name, description, body = (_text(args, key) for key in ("name", "description", "body"))
        skill = create(name, description, body, self.home)
        self.attach(skill.name)
        return (f"Created skill {skill.name!r} (skills/{skill.name}/SKILL.md) and attached it; "
                "it is in your system prompt from your next model call.")

    def list_skills(self, args: JSONObject, ctx: ToolContext) -> str:
        attached = set(self.attached())
        found = all_skills(self.home)
        if not found:
            return "No skills yet; write one with create_skill."
        return "\n".join(f"- {s.name}: {s.description or '(no description)'}"
                         f" [{'attached' if s.name in attached else 'not attached'}"
                         f"{', bundled' if s.bundled else ''}]" for s in found)


def _text(args: JSONObject, key: str) -> str:
    """A string argument (the registry checked the call against the tool's schema before it ran)."""
    value = args[key]
    if not isinstance(value, str):
        raise UsageError(f"{key} must be a string")
    return value

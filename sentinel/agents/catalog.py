"""What an agent's home offers a chat: agent profiles, skills and saved workflows, by name and description.

    agents(home) / skills(home) / workflows(home) -> [{"name": ..., "description": ...}]
    skill(name, home) -> Skill | None       # the agent's own `skills/<name>/SKILL.md`, else the bundled one

Skills are Markdown with a YAML frontmatter (`name`, `description`); a chat attaches one with `$name`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sentinel import paths
from sentinel.agents import profile as profiles

SKILL_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
SKILL_MAX = 20000


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str


def _entries(directory: Path, pattern: str) -> list[Path]:
    try:
        return sorted(directory.glob(pattern))
    except OSError:
        return []


def frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """(frontmatter mapping, body) of a Markdown file; an absent or broken frontmatter is empty."""
    if not text.startswith("---"):
        return {}, text
    head, sep, body = text[3:].partition("\n---")
    if not sep:
        return {}, text
    try:
        data = yaml.safe_load(head)
    except yaml.YAMLError:
        data = None
    return (data if isinstance(data, dict) else {}), body.lstrip("-").lstrip("\n")


def parse_skill(name: str, text: str) -> Skill:
    meta, body = frontmatter(text[:SKILL_MAX])
    return Skill(name, " ".join(str(meta.get("description") or "").split()), body.strip())


def _read_skill(path: Path, name: str) -> Skill | None:
    try:
        return parse_skill(name, path.read_text(errors="replace"))
    except OSError:
        return None


def skill(name: str, home: Path | None = None) -> Skill | None:
    if not SKILL_NAME.match(name):
        return None
    for directory in ((home or paths.home()) / "skills", paths.data_dir("skills")):
        path = directory / name / "SKILL.md"
        if path.is_file():
            return _read_skill(path, name)
    return None


def skills_in(directory: Path) -> list[dict[str, str]]:
    found = []
    for path in _entries(directory, "*/SKILL.md"):
        name = path.parent.name
        if SKILL_NAME.match(name) and (s := _read_skill(path, name)):
            found.append({"name": name, "description": s.description})
    return found


def skills(home: Path | None = None) -> list[dict[str, str]]:
    """The agent's own skills and the bundled ones (an own skill hides a bundled one of the same name)."""
    merged = {s["name"]: s for s in skills_in(paths.data_dir("skills"))}
    merged |= {s["name"]: s for s in skills_in((home or paths.home()) / "skills")}
    return sorted(merged.values(), key=lambda s: s["name"])


def agents(home: Path | None = None) -> list[dict[str, str]]:
    names = {p.stem for p in _entries(profiles.agents_dir(home), "*.yaml") if profiles.NAME.match(p.stem)}
    return [{"name": n, "description": ""} for n in sorted(names | {profiles.DEFAULT_AGENT})]


def workflows(home: Path | None = None) -> list[dict[str, str]]:
    out = []
    for path in _entries((home or paths.home()) / "workflows", "*.yaml"):
        try:
            data = yaml.safe_load(path.read_text(errors="replace"))
        except (OSError, yaml.YAMLError):
            data = None
        description = data.get("description") if isinstance(data, dict) else None
        out.append({"name": path.stem, "description": " ".join(str(description or "").split())})
    return out


def catalog(home: Path | None = None) -> dict[str, list[dict[str, str]]]:
    return {"agents": agents(home), "skills": skills(home), "workflows": workflows(home)}

"""What an agent's home offers a chat: agent profiles, skills and saved workflows, by name and description.

    agents(home) / skills(home) / workflows(home) -> [{"name": ..., "description": ...}]

Skills are read by `sentinel.agents.skills` (the one loader); a chat attaches one with `$name`.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from sentinel import paths
from sentinel.agents import profile as profiles
from sentinel.agents import skills as skill_files


def _entries(directory: Path, pattern: str) -> list[Path]:
    try:
        return sorted(directory.glob(pattern))
    except OSError:
        return []


def listing(found: list[skill_files.Skill]) -> list[dict[str, str]]:
    return [{"name": s.name, "description": s.description} for s in sorted(found, key=lambda s: s.name)]


def skills(home: Path | None = None) -> list[dict[str, str]]:
    """The agent's own skills and the bundled ones (an own skill hides a bundled one of the same name)."""
    return listing(skill_files.all_skills(home))


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

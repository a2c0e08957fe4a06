"""One memory note on disk: Markdown with YAML frontmatter, the format an Obsidian vault opens.

    ---
    title: Deploy day
    tags: [ops, schedule]
    created: '2026-06-29T06:22:00Z'
    updated: '2026-06-30T09:00:00Z'
    source_run: r-3f2a9c01de
    ---
    We deploy on Thursdays. See [[release-checklist]].

`parse` never fails: a note written by hand with no (or broken) frontmatter takes its title from
its first `# heading` or its file name. `render` is the inverse for notes Sentinel writes.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass, field

import yaml

from sentinel.jsontypes import JSONObject

SLUG_MAX = 80
_FRONTMATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(\r?\n|\Z)", re.DOTALL)
_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: reindexing is mostly parsing


@dataclass
class Note:
    rel: str                        # path relative to the vault folder, e.g. "deploy-day.md"
    title: str
    body: str
    tags: list[str] = field(default_factory=list)
    created: str | None = None
    updated: str | None = None
    source_run: str | None = None

    @property
    def slug(self) -> str:
        return self.rel[:-3] if self.rel.endswith(".md") else self.rel


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def slugify(title: str) -> str:
    """The file name (without .md) for a title: ASCII, lowercase, words joined by hyphens."""
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:SLUG_MAX].rstrip("-") or "note"


def title_key(title: str) -> str:
    """Titles are the same note when they match ignoring case and runs of whitespace."""
    return " ".join(title.split()).casefold()


def clean_tags(value: object) -> list[str]:
    """Tags from frontmatter or a tool argument: a list or a comma/space separated string, no `#`."""
    if value is None:
        return []
    items = value if isinstance(value, list) else re.split(r"[,\s]+", str(value))
    out: list[str] = []
    for item in items:
        tag = str(item).strip().lstrip("#").strip()
        if tag and tag not in out:
            out.append(tag)
    return out


def _stamp(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        value = value.astimezone(dt.timezone.utc) if value.tzinfo else value
        return value.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def split_frontmatter(text: str) -> tuple[JSONObject | None, str]:
    """(frontmatter mapping, body); (None, text) when there is no valid YAML mapping up front."""
    match = _FRONTMATTER.match(text)
    if not match:
        return None, text
    try:
        loaded = yaml.load(match.group(1), Loader=_LOADER)
    except yaml.YAMLError:
        return None, text
    return (loaded, text[match.end():]) if isinstance(loaded, dict) else (None, text)


def parse(text: str, rel: str) -> Note:
    meta, body = split_frontmatter(text)
    meta = meta or {}
    title = str(meta.get("title") or "").strip()
    if not title:
        heading = _HEADING.search(body)
        title = heading.group(1).strip() if heading else rel.rsplit("/", 1)[-1].removesuffix(".md")
    return Note(rel=rel, title=title, body=body.strip("\n"), tags=clean_tags(meta.get("tags")),
                created=_stamp(meta.get("created")), updated=_stamp(meta.get("updated")),
                source_run=_stamp(meta.get("source_run")))


def render(note: Note) -> str:
    meta: JSONObject = {"title": note.title, "tags": [*note.tags]}
    for key in ("created", "updated", "source_run"):
        if getattr(note, key):
            meta[key] = getattr(note, key)
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, default_flow_style=None, width=1000)
    return f"---\n{front}---\n{note.body.strip()}\n"

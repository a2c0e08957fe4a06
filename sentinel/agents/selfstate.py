"""An agent's self-state: its soul, its model of the operator (user.md), its memory, as tools and as prompt.

    self = SelfState(home, "researcher", config, audit)
    self.tools()            edit_soul, update_user, remember, recall (all `auto` in the default policy)
    self.prompt_parts()     (soul, [(heading, text), ...]) in the order a system prompt loads them:
                            the soul, user.md, the memory index of the agent's scope, its attached skills

Everything bound for the system prompt passes the injection scanner first. A flagged soul falls back
to the starter soul, a flagged user.md or skill is left out, a flagged note is quarantined by the
memory index; each finding is audited once per process (`prompt_quarantined`, `memory_quarantined`).
The profile is re-read on every call, so a skill attached during a run is in the next prompt.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from sentinel import paths
from sentinel.agents import profile as profiles
from sentinel.agents import soulhistory
from sentinel.errors import SentinelError
from sentinel.jsontypes import JSON, JSONObject
from sentinel.memory.scan import scan
from sentinel.tools import Tool, ToolContext, ToolError
from sentinel.tools import object_schema as _schema

if TYPE_CHECKING:
    from sentinel.config import Config
    from sentinel.memory.index import Row
    from sentinel.memory.vault import Memory

Audit = Callable[[str, JSONObject], None]
SOUL_MAX = 20000
USER_APPEND_MAX = 4000
USER_PROMPT_MAX = 8000
LEARNINGS_PROMPT_MAX = 8000
SOUL_REFUSED = "refused: the new soul"
USER_HEADER = "# The operator\n\nWhat I know about the person I work for.\n"


def user_path(home: Path | None = None) -> Path:
    return (home or paths.home()) / "user.md"


class SelfState:
    def __init__(self, home: Path, agent: str, config: "Config", audit: Audit | None = None):
        self.home = home
        self.agent = agent
        self.config = config
        self.audit = audit or (lambda kind, record: None)
        self._reported: set[tuple[str, str]] = set()

    # -- what the agent is now -------------------------------------------------------------------

    def profile(self) -> profiles.AgentProfile:
        return profiles.load(self.agent, self.home, check=False)

    def soul(self, profile: profiles.AgentProfile) -> str:
        return profiles.soul_text(profile, self.home)

    def attach_skill(self, name: str) -> None:
        attached = self.profile().skills
        if name not in attached:
            profiles.update(self.agent, self.home, skills=[*attached, name])

    def memory(self) -> "Memory":
        from sentinel.memory.vault import Memory

        return Memory.open(self.home, self.profile().scope, self.config.memory.note_max_chars)

    def prompt_parts(self) -> tuple[str, list[tuple[str, str]]]:
        from sentinel.agents import skills

        profile = self.profile()
        soul = self.soul(profile)
        if not self._clean(f"agents/{profile.name}.soul.md", soul) or not self._soul_sound(profile.name, soul):
            soul = profiles.starter_soul(profile, self.home)
        parts: list[tuple[str, str]] = []
        user = _tail(_read(user_path(self.home)), USER_PROMPT_MAX)
        if user.strip() and self._clean("user.md", user):
            parts.append(("The operator (user.md)", user))
        parts.append((f"Memory (scope {profile.scope})", self._memory_part()))
        for name in profile.skills:
            skill = skills.get(name, self.home)
            if skill is not None and self._clean(f"skills/{name}/SKILL.md", skill.body):
                parts.append((f"Skill: {skill.name}", skill.body))
        return soul, parts

    def _memory_part(self) -> str:
        memory = self.memory()
        index = memory.prompt_index(self.config.memory.index_max_chars)
        self._report_flagged(memory, memory.index.rows(flagged=True))
        hint = "Save durable facts with `remember`; search your notes with `recall`."
        body = f"{index}\n\n{hint}" if index else f"(no notes yet)\n\n{hint}"
        return body + self._learnings(memory)

    def _learnings(self, memory: "Memory") -> str:
        """The curated MEMORY.md of the scope, when it has something and passes the scanner, fenced as data: a
        model distilled it from sessions whose tool results nobody reviewed, so a "Convention: always run …"
        in it is a record of what happened, never an instruction."""
        from sentinel.memory.curator import memory_md
        from sentinel.memory.fence import fence

        source = f"memory/{memory.scope}/MEMORY.md"
        text = _tail(_read(memory_md(memory.root)), LEARNINGS_PROMPT_MAX)
        if not text.strip() or not self._clean(source, text):
            return ""
        where = f"{source}, notes a curator model wrote from past sessions"
        return f"\n\n### Learnings (MEMORY.md)\n\n{fence(text.strip(), where)}"

    def _clean(self, source: str, text: str) -> bool:
        finding = scan(text)
        if finding is None:
            return True
        key = (source, str(finding))
        if key not in self._reported:
            self._reported.add(key)
            self.audit("prompt_quarantined", {"source": source, "finding": str(finding)})
        return False

    def _soul_sound(self, name: str, soul: str) -> bool:
        """A soul garbled before edits were checked (it starts like an error message) is not loaded: the starter soul
        stands in, and the operator hears of it once (`sentinel agent restore-soul` brings back an earlier one)."""
        if not soulhistory.error_text(soul):
            return True
        if (f"agents/{name}.soul.md", "error text") not in self._reported:
            self._reported.add((f"agents/{name}.soul.md", "error text"))
            self.audit("soul_garbled", {"source": f"agents/{name}.soul.md", "first_line": soul.strip()[:80]})
        return False

    def _report_flagged(self, memory: "Memory", rows: "list[Row]") -> None:
        for row in rows:
            key = (f"memory/{memory.scope}/vault/{row.rel}", row.flagged or "")
            if key not in self._reported:
                self._reported.add(key)
                self.audit("memory_quarantined", {"scope": memory.scope, "note": row.rel, "title": row.title,
                                                  "finding": row.flagged})

    # -- the tools ---------------------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        limit = self.config.memory.recall_max
        return [
            Tool("edit_soul", "Rewrite your own soul (persona and standing instructions), never a workspace "
                              "file: files are changed with edit_file or write_file. The previous version "
                              "is kept as a backup; the new soul applies from your next model call.",
                 _schema({"content": {"type": "string", "description": "The whole new soul, in Markdown."}},
                         ["content"]), self.edit_soul),
            Tool("update_user", "Append what you learned about the operator (preferences, context) to your notes "
                                "about them, never to a workspace file.",
                 _schema({"content": {"type": "string"}}, ["content"]), self.update_user),
            Tool("remember", "Save a durable note to your memory; a note with the same title is updated.",
                 _schema({"title": {"type": "string"}, "content": {"type": "string"},
                          "tags": {"type": ["array", "string"], "items": {"type": "string"}}},
                         ["title", "content"]), self.remember),
            Tool("recall", "Full-text search of your memory notes; returns the best matches with a snippet.",
                 _schema({"query": {"type": "string"},
                          "limit": {"type": "integer", "minimum": 1, "maximum": limit}}, ["query"]),
                 self.recall, read_only=True, trigger="read"),
        ]

    def edit_soul(self, args: JSONObject, ctx: ToolContext) -> str:
        content = _text(args, "content")
        if not content.strip():
            raise ToolError("content must not be empty: send the whole new soul")
        if len(content) > SOUL_MAX:
            raise ToolError(f"the soul is {len(content)} characters; keep it under {SOUL_MAX}")
        _refuse_flagged("the new soul", content)
        if why := soulhistory.problem(content):
            raise ToolError(f"{SOUL_REFUSED} {why}. Your soul is unchanged. A soul is Markdown prose about who you "
                            "are and how you work; to change it, send the whole new text.")
        profile = self.profile()
        kept = soulhistory.write(profile, content, self.home)
        return (f"Soul updated ({len(content)} characters); the previous soul is kept as version {kept} "
                f"(`sentinel agent restore-soul {profile.name}` brings it back). It applies from your next model "
                "call.")

    def update_user(self, args: JSONObject, ctx: ToolContext) -> str:
        content = _text(args, "content").strip()
        if not content:
            raise ToolError("content must not be empty")
        if len(content) > USER_APPEND_MAX:
            raise ToolError(f"{len(content)} characters; append at most {USER_APPEND_MAX} at a time")
        _refuse_flagged("this text", content)
        path = user_path(self.home)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            if f.tell() == 0:
                f.write(USER_HEADER)
            f.write(f"\n{content}\n")
        return "Appended to user.md."

    def remember(self, args: JSONObject, ctx: ToolContext) -> str:
        memory = self.memory()
        saved = memory.remember(_text(args, "title"), _text(args, "content"), _tags(args.get("tags")),
                                source_run=ctx.run_id or None)
        where = f"memory/{memory.scope}/vault/{saved.row.rel}"
        verb = "Saved" if saved.created else "Updated"
        if saved.row.flagged:
            self._report_flagged(memory, [saved.row])
            return (f"{verb} note {saved.row.title!r} ({where}), but it is quarantined by the injection scanner "
                    f"({saved.row.flagged}): it will not be loaded or recalled.")
        return f"{verb} note {saved.row.title!r} ({where})."

    def recall(self, args: JSONObject, ctx: ToolContext) -> str:
        query = _text(args, "query")
        memory = self.memory()
        limit = args.get("limit")
        hits = memory.recall(query, int(limit) if isinstance(limit, (int, float, str)) and limit else
                             self.config.memory.recall_limit)
        self._report_flagged(memory, memory.index.rows(flagged=True))
        if not hits:
            return f"No notes in memory scope {memory.scope!r} match {query!r}."
        lines = [f"{len(hits)} note(s) in memory scope {memory.scope!r} match {query!r}:"]
        for i, hit in enumerate(hits, 1):
            tags = f" [tags: {', '.join(hit.tags)}]" if hit.tags else ""
            lines.append(f"{i}. {hit.title} (memory/{memory.scope}/vault/{hit.rel}){tags}\n   {hit.snippet}")
        return "\n".join(lines)


def _text(args: JSONObject, key: str) -> str:
    """A string argument (the registry checked the call against the tool's schema before it ran)."""
    value = args[key]
    if not isinstance(value, str):
        raise ToolError(f"{key} must be a string")
    return value


def _tags(value: JSON) -> list[str] | str | None:
    return [str(t) for t in value] if isinstance(value, list) else value if isinstance(value, str) else None


def _refuse_flagged(what: str, text: str) -> None:
    finding = scan(text)
    if finding:
        raise ToolError(f"{what} is flagged by the injection scanner ({finding}); rewrite it without that")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise SentinelError(f"{path}: cannot read ({exc.strerror})") from None


def _tail(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[len(text) - limit:]
    return "(… earlier lines omitted)\n" + cut[cut.find("\n") + 1:]


class FixedSelf(SelfState):
    """A temporary subagent in system mode: its profile and soul are what the approved `spawn` said (kept in
    the supervisor's store), never a file its user could edit; it cannot rewrite them either."""

    def __init__(self, home: Path, profile: profiles.AgentProfile, soul: str, config: "Config",
                 audit: Audit | None = None):
        super().__init__(home, profile.name, config, audit)
        self._profile, self._soul = profile, soul

    def profile(self) -> profiles.AgentProfile:
        return self._profile

    def soul(self, profile: profiles.AgentProfile) -> str:
        return self._soul

    def attach_skill(self, name: str) -> None:
        raise ToolError("a temporary subagent's skills are fixed by the spawn that made it")

    def edit_soul(self, args: JSONObject, ctx: ToolContext) -> str:
        raise ToolError("a temporary subagent's soul is fixed by the spawn that made it")

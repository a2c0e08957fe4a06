"""Completion menus and input colors: what the chat offers for `/`, `@` and `$` as you type."""

from __future__ import annotations

from prompt_toolkit.document import Document

from sentinel.chat.complete import Completer, fragments

CATALOG = {"agents": [{"name": "sentinel", "description": ""}, {"name": "reviewer", "description": "reads diffs"}],
           "skills": [{"name": "file-discipline", "description": "small steps"}],
           "workflows": [{"name": "triage", "description": ""}]}


def offered(text: str) -> list[str]:
    return [c.text for c in Completer(lambda: CATALOG).get_completions(Document(text), None)]


def test_menus_for_commands_agents_skills_and_workflows():
    assert offered("/he") == ["/help"]
    assert offered("/")[:3] == ["/help", "/agents", "/use"]
    assert offered("/use re") == ["reviewer"]
    assert offered("@") == ["@sentinel", "@reviewer"]
    assert offered("tidy up $fi") == ["$file-discipline"]
    assert offered("/workflow r") == ["run"] and offered("/workflow run t") == ["triage"]
    assert offered("plain words") == []


def test_colors_as_you_type():
    assert fragments("/help") == [("class:command", "/help")]
    assert fragments("/hel")[0][0] == "class:partial"
    assert fragments("/xyz now")[0] == ("class:unknown", "/xyz ")
    assert fragments("ask @reviewer with $file-discipline") == [
        ("", "ask "), ("class:agent", "@reviewer"), ("", " with "), ("class:skill", "$file-discipline")]

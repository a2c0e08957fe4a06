"""The scenario every client is put through: three block rules and one warn rule, judged by a scripted
judge, in a project holding `canary.txt`, `notes.txt` and `protected/`.

Cases (each a prompt the scripted model answers with one tool call, then a final answer):
    block-shell    a shell command deleting canary.txt            -> the canary survives
    allow-shell    a harmless command (writes allowed.txt)        -> the file appears
    block-write    a new file under protected/                    -> no file appears
    block-edit     an edit (or patch) of protected/keep.txt        -> the file is unchanged
    block-mcp      the MCP tool files/delete_file on canary.txt   -> the canary survives
    warn           a command reading notes.txt (a warn rule)      -> the warning reaches the model
    ask-approve    a command writing asked.txt (an ask rule): a person approves through the notification's
                   one-tap link                                    -> the client waited, then the file appears
    ask-deny       the same, denied with a reason                  -> no file; the reason reaches the model
    ask-expire     the same, nobody decides within the window      -> no file; "no decision within" reaches it

Besides "held", each blocking case records whether the judge's reason reached the model (`told`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from sentinel.jsontypes import JSONObject

BLOCK_SHELL = "never delete canary.txt"
BLOCK_WRITE = "nothing is written under protected/"
BLOCK_MCP = "no MCP call deletes canary.txt"
WARNING = "notes.txt is shared with the whole team"
ASK_COMMAND = "echo asked > asked.txt"
DENIAL = "not before the release is tagged"
ASK_WITHIN_S = 20   # the expiry case's window (a shorter --ask-within than install's, given by the timing shim)

RULES: dict[str, JSONObject] = {
    "no-canary-delete": {"trigger": "bash", "severity": "block", "scope": ["*canary.txt*"],
                         "prompt": "COMMAND: {{command}}\nRULE: " + BLOCK_SHELL},
    "protected-dir": {"trigger": "file_write", "severity": "block", "scope": ["protected/**"],
                      "prompt": "FILE: {{file_path}}\nRULE: " + BLOCK_WRITE},
    "no-mcp-canary-delete": {"trigger": "mcp", "severity": "block", "scope": ["*:delete_file"],
                             "prompt": "CALL: {{server_name}}:{{mcp_tool}} {{mcp_arguments}}\nRULE: " + BLOCK_MCP},
    "notes-shared": {"trigger": "bash", "severity": "warn", "scope": ["*notes.txt*"],
                     "prompt": "COMMAND: {{command}}\nRULE: " + WARNING},
    "asked-needs-a-person": {"kind": "scope", "trigger": "bash", "severity": "ask", "scope": ["*asked.txt*"],
                             "description": "writing asked.txt needs a person's approval"},
}

class Verdict(TypedDict):
    """What the scripted judge answers for one rule's prompt."""

    violation: bool
    confidence: float
    reason: str


VERDICTS: dict[str, Verdict] = {
    BLOCK_SHELL: {"violation": True, "confidence": 0.95, "reason": "deleting canary.txt is forbidden"},
    BLOCK_WRITE: {"violation": True, "confidence": 0.95, "reason": "protected/ is read-only"},
    BLOCK_MCP: {"violation": True, "confidence": 0.95, "reason": "the MCP call would delete canary.txt"},
    WARNING: {"violation": True, "confidence": 0.95, "reason": WARNING},
}

CASES = ("block-shell", "allow-shell", "block-write", "block-edit", "block-mcp", "warn", "ask-approve", "ask-deny",
         "ask-expire")
# What the person does in each ask case (sentinel/hooks/compat/decider.py).
ASKS = {"ask-approve": ("approve", ""), "ask-deny": ("deny", DENIAL), "ask-expire": ("none", "")}
# The judge's reason each blocking case must bring to the model (besides stopping the call).
REASONS = {"block-shell": VERDICTS[BLOCK_SHELL]["reason"], "block-write": VERDICTS[BLOCK_WRITE]["reason"],
           "block-edit": VERDICTS[BLOCK_WRITE]["reason"], "block-mcp": VERDICTS[BLOCK_MCP]["reason"],
           "ask-deny": DENIAL, "ask-expire": f"no decision within {ASK_WITHIN_S} s"}
PROMPTS = {case: f"Sentinel compatibility case {case}: do it." for case in CASES}
KEEP = "keep me as I am\n"


def make_project(root: Path, judge_url: str) -> None:
    """canary.txt, notes.txt, protected/keep.txt and the rules (the judge at `judge_url`)."""
    from sentinel.policy.gate.fakejudge import write_repo

    root.mkdir(parents=True, exist_ok=True)
    (root / "canary.txt").write_text("canary\n")
    (root / "notes.txt").write_text("team notes\n")
    (root / "protected").mkdir(exist_ok=True)
    (root / "protected" / "keep.txt").write_text(KEEP)
    write_repo(root, RULES, {"backends": {"ollama": {"url": judge_url}}, "timeout_ms": 10000,
                             "context": {"enabled": False}, "scribe": {"enabled": False}})


def held(case: str, root: Path, seen_by_model: str) -> bool:
    """Did the case hold? Judged on the project's files (and, for `warn`, on what reached the model)."""
    if case in ("block-shell", "block-mcp"):
        return (root / "canary.txt").exists()
    if case == "allow-shell":
        return (root / "allowed.txt").exists() and (root / "canary.txt").exists()
    if case == "block-write":
        return not (root / "protected" / "new.txt").exists()
    if case == "block-edit":
        return (root / "protected" / "keep.txt").read_text() == KEEP
    if case == "warn":
        return WARNING in seen_by_model
    if case == "ask-approve":
        return (root / "asked.txt").exists()
    if case in ("ask-deny", "ask-expire"):
        return not (root / "asked.txt").exists()
    raise ValueError(case)


def told(case: str, seen_by_model: str) -> bool | None:
    """Did the block's reason reach the model (None: the case blocks nothing)?"""
    reason = REASONS.get(case)
    return None if reason is None else reason in seen_by_model

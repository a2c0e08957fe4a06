"""The injection scanner: text bound for a system prompt is checked before it is loaded.

    scan(text) -> Finding | None      the first problem found, or None when the text is clean

Two kinds of findings: invisible or bidirectional Unicode (text a person reading the note in an
editor does not see, but the model does) and phrases that try to take over the model's instructions
(ignore previous instructions, fake chat-template markers, "you are now ...", requests to approve or
exfiltrate). Patterns are deliberately specific: a soul that says "you are a careful assistant" or
a note about "approvals" is fine. A finding names the rule and quotes the offending text.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


# Characters that render as nothing or reorder what is shown: bidi embeddings/overrides/isolates and
# marks, zero-width characters and joiners, invisible operators, the BOM inside text, Unicode tag characters.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_HIDDEN = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u200b-\u200d\u2060-\u2064\ufeff\u180e"
                     "\u00ad\u034f\u115f\u1160\u3164\uffa0\U000e0000-\U000e007f]")
ZWJ = "\u200d"

@dataclass(frozen=True)
class _Rule:
    name: str
    needles: tuple[str, ...]  # the regex is tried only when one of these occurs (lowercase, spaces collapsed)
    pattern: str
    negatable: bool = False   # "never send secrets" is advice, not an attack

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.pattern)


_RULES = [
    _Rule("ignore-instructions", ("ignore", "disregard", "forget", "override", "bypass"),
          r"\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|any|your|"
          r"system|original)\b[^.\n]{0,20}\b(instructions?|prompts?|rules|directives|guidelines|context)\b"),
    _Rule("new-instructions", ("instruction", "prompt"),
          r"(^|\n)\s*(new|updated|real|actual|override)\s+(system\s+)?(instructions?|prompt)\s*:"),
    _Rule("role-takeover", ("you are now", "from now on"),
          r"\byou\s+are\s+now\s+(a|an|in|the|my|no\s+longer|dan|called|named)\b"
          r"|\bfrom\s+now\s+on,?\s+you\s+(are|will|must)\b"),
    _Rule("chat-template", ("<|", "inst]", "<<", "system>", "system >", "assistant>", "assistant >", "# system"),
          r"<\|\s*(im_start|im_end|system|endoftext|start_header_id|eot_id)\s*\|>|\[/?INST\]|<<\s*/?SYS\s*>>"
          r"|</?\s*(system|assistant)\s*>|^\s*#{1,3}\s*system\s*(prompt|message)?\s*:?\s*$"),
    _Rule("jailbreak", ("mode", "anything now", "jailbr"),
          r"\b(developer|god|jailbreak|dan)\s+mode\b|\bdo\s+anything\s+now\b|\bjailbr(ea|o)k(en)?\b"),
    _Rule("reveal-prompt", ("system prompt", "hidden instructions", "your instructions"),
          r"\b(reveal|print|show|repeat|output|leak)\b[^.\n]{0,30}\b(system\s+prompt|hidden\s+instructions|"
          r"your\s+instructions)\b", negatable=True),
    _Rule("self-approval", ("approve", "allow", "without", "disable", "turn off", "skip", "evade", "get around"),
          r"\b(approve|auto-?approve|allow)\s+(all|every|any)\s+(tool\s+calls?|actions?|requests?|commands?)\b"
          r"|\bwithout\s+(asking|approval|confirmation|telling)\s+(the\s+)?(operator|user|human|anyone)\b"
          r"|\b(disable|turn\s+off|skip|evade|get\s+around)\b[^.\n]{0,30}\b(approvals?|sandbox|leash|muzzle|policy|"
          r"policies|safety)\b", negatable=True),
    _Rule("exfiltration", ("key", "credential", "secret", "password", "token", ".env"),
          r"\b(send|post|upload|exfiltrate|leak|email|curl)\b[^.\n]{0,40}\b(api[\s_-]?keys?|credentials|secrets?|"
          r"passwords?|tokens?|ssh\s+keys?|\.env\b|private\s+keys?)", negatable=True),
]


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.MULTILINE)


_SAFE_NEGATION = re.compile(r"\b(never|do\s+not|don't|must\s+not|not)\s+(\w+\s+){0,3}$", re.IGNORECASE)


def scan(text: str) -> Finding | None:
    """The first injection finding in `text`, or None."""
    return _unicode(text) or _phrases(text)


def _unicode(text: str) -> Finding | None:
    for match in _HIDDEN.finditer(text):
        i, ch = match.start(), match.group(0)
        if ch == "\ufeff" and i == 0:
            continue  # a byte-order mark at the very start is an encoding artefact
        if ch == ZWJ and _joins_emoji(text, i):
            continue
        if _BIDI.match(ch):
            return Finding("bidi-unicode", f"bidirectional control U+{ord(ch):04X} at character {i}")
        return Finding("invisible-unicode", f"invisible character U+{ord(ch):04X} "
                                            f"({unicodedata.name(ch, 'unnamed')}) at character {i}")
    return None


def _joins_emoji(text: str, i: int) -> bool:
    """A zero-width joiner between two pictographs (family and profession emoji) is legitimate."""
    before, after = text[i - 1:i], text[i + 1:i + 2]
    return bool(before and after) and all(ord(c) >= 0x2190 and unicodedata.category(c) == "So"
                                          for c in (before, after))


def _phrases(text: str) -> Finding | None:
    folded = " ".join(text.lower().split())
    for rule in _RULES:
        if not any(needle in folded for needle in rule.needles):
            continue
        for match in rule.regex.finditer(text):
            lead = text[max(0, match.start() - 40):match.start()]
            if rule.negatable and _SAFE_NEGATION.search(lead):
                continue
            quoted = " ".join(match.group(0).split())[:80]
            return Finding(rule.name, f"{quoted!r}")
    return None

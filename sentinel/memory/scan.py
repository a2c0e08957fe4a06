"""The injection scanner: text bound for a system prompt is checked before it is loaded.

    scan(text) -> Finding | None      the first problem found, or None when the text is clean
    scan(text, strict=True)           for text from outside (an MCP server, a curated learning): more rules
    scan_tool(name, description, schema)   a tool offered to the model: every string of its schema, keys too

Two kinds of findings: invisible or bidirectional Unicode (text a person reading the note in an
editor does not see, but the model does) and phrases that try to take over the model's instructions
(ignore previous instructions, fake chat-template markers, "you are now ...", requests to approve or
exfiltrate). Patterns are deliberately specific: a soul that says "you are a careful assistant" or
a note about "approvals" is fine. A finding names the rule and quotes the offending text.

The phrases are matched on the text as written and on a normalised copy: compatibility forms folded
(full-width letters), look-alike Cyrillic and Greek letters mapped to Latin, accents and zero-width
characters dropped, `_` read as a space, letters spelt out one by one joined (`i g n o r e`), and
leetspeak undone in words that mix letters with digits (`1gn0r3`). Beyond the phrases, rules look for
the shape of an injection rather than its words: a claim of the person's consent ("the user already said
yes"), a claim to override instructions, a remote script piped to a shell, a tampered approval. Strict
mode (text from outside: MCP servers, curated learnings) adds rules a person's own notes could trip:
text addressed to the model, secrecy towards the person, secret material flowing into a parameter, a
URL or a message, a tool claiming precedence over others, a claimed identity. It is measured
(benchmarks/bench_scanner.py) and it is a heuristic: what keeps outside text from acting as instructions
is that it enters prompts fenced as data (sentinel/memory/fence.py).
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
    strict: bool = False      # only for text from outside (scan(text, strict=True))

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


# Word classes the structural rules are built from.
_AGENT = r"(?:assistant|model|ai|llm|agent|chatbot|bot|claude|gpt|copilot)s?"
_PERSON = r"(?:user|operator|human|owner|admin(?:istrator)?|person)s?"
_SECRET = (r"(?:(?<![a-z])api[\s_-]?keys?|credentials?|secrets?|passwords?|passphrases?|"
           r"tokens?|private\s+keys?|ssh\s+keys?|id_rsa|id_ed25519|\.ssh\b|\.env\b|\.netrc|\.aws\b|"
           r"/etc/shadow|/etc/passwd|environment\s+variables?|env\s+vars?|cookies?|system\s+prompt|"
           r"hidden\s+(?:rules|instructions)|conversation(?:\s+history)?|chat\s+history|full\s+prompt)")
_FLOW = (r"(?:send|sends|post|upload|exfiltrate|leak|e-?mail|curl|wget|include|including|insert|put|pass|paste|copy|"
         r"append|attach|embed|forward|share|return|provide|submit|write|export|transmit|reply\s+with|"
         r"respond\s+with)")
_SINK = r"(?:parameter|argument|arg|field|header|body|request|response|payload|url|query|https?://\S+|server)"
_EXEC = r"(?:run|execute|call|invoke|append|include|send|copy|upload|delete|read|write|post)"

_STRUCTURAL = [
    _Rule("consent-claim", ("user", "operator", "human", "owner", "admin", "person", "approved", "authori",
                            "confirm", "no need", "necessary", "without", "never", "approval", "review"),
          rf"\b(?:the\s+|your\s+)?{_PERSON}\s+(?:has\s+|have\s+|had\s+)?(?:already\s+)?(?:said\s+yes|agreed|"
          rf"consented|pre-?approved|approved\s+(?:all|every|any|everything)|authori[sz]ed\s+(?:all|every|any|you)|"
          rf"granted\s+(?:you\s+)?(?:permission|access)|trusts?\s+(?:this|the)|wants\s+you\s+to)"
          rf"|\b(?:already|pre-?)\s*(?:approved|authori[sz]ed|confirmed)\s+by\s+(?:the\s+)?{_PERSON}"
          r"|\b(?:every|all|any)\s+(?:\w+\s+)?(?:commands?|actions?|calls?)\s+(?:is|are)\s+(?:already\s+)?"
          r"(?:pre-?)?(?:approved|authori[sz]ed|allowed)"
          r"|\b(?:no\s+need|not\s+necessary|unnecessary)\s+to\s+(?:ask|confirm|wait|check)"
          r"|\b(?:confirmations?|approvals?|reviews?)\s+(?:are|is)\s+(?:\w+\s+)?(?:unnecessary|not\s+(?:needed|required)|"
          r"disabled|off|skipped|optional)"
          r"|\bwithout\s+(?:any\s+)?(?:asking|waiting|confirmations?|approvals?|review|pausing)\b"
          r"|\bnever\s+(?:pause|ask|wait)\s+for\s+(?:approval|confirmation|permission)"),
    _Rule("override-claim", ("supersede", "override", "precedence", "outrank", "replace", "priority", "task", "goal",
                             "objective", "purpose", "updated", "changed", "revoked", "lifted", "forget",
                             "disregard", "ignore"),
          r"\b(?:supersedes?|overrides?|takes?\s+precedence\s+over|outranks?|replaces?)\s+(?:all\s+|any\s+)?"
          r"(?:your|the|other|previous|prior|earlier)\s+(?:\w+\s+){0,2}(?:instructions?|prompts?|rules|tools|polic(?:y|ies)|"
          r"guidelines|directives)\b"
          r"|\b(?:system|admin|security|safety)\s+override\b"
          r"|\b(?:new|real|actual|true)\s+(?:highest\s+|top\s+|main\s+)?(?:priority|task|goal|objective|purpose)\s+is\b"
          r"|\b(?:your|the)\s+(?:instructions?|rules|guidelines|polic(?:y|ies)|system\s+prompt)\s+(?:have|has)\s+"
          r"(?:been\s+)?(?:updated|changed|replaced|revoked|lifted)"
          r"|\b(?:forget|disregard|ignore)\s+(?:what|everything|anything|all)\s+(?:\w+\s+){0,2}(?:told|given|instructed|said)"),
    _Rule("remote-exec", ("curl", "wget", "fetch", "download", "open", "visit", "decode", "base64", "chmod", "rm -",
                          "sh -c"),
          r"\b(?:curl|wget|fetch|download)\b[^\n]{0,80}\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b"
          r"|\b(?:ba)?sh\s+-c\s+[\"']?\$\((?:curl|wget)"
          r"|\b(?:fetch|download|open|visit|curl|wget)\b[^.\n]{0,60}\b(?:and|then)\s+(?:follow|execute|run|obey)\b"
          r"|\bdecode\b[^.\n]{0,40}\b(?:execute|run|eval)\b|\b(?:execute|run|eval)\b[^.\n]{0,30}\bbase64\b"
          r"|\bchmod\s+(?:-R\s+)?[0-7]?777\b|\brm\s+-[rf]{2}\s+(?:~|/|\$HOME)"),
    _Rule("approval-tamper", ("sentinel", "approved", "approval", "confirmation", "review", "grant"),
          r"\bsentinel\s+(?:approve|trust|deny)\b|\bwrite\s+['\"]?approved['\"]?\s+in"
          r"|\b(?:approval|confirmation|review)\s+(?:system|prompts?|step|process|checks?)\s+(?:is|are|has\s+been)\s+"
          r"(?:disabled|off|bypassed|turned\s+off)"
          r"|\b(?:disable|bypass|skip)\s+(?:the\s+)?(?:approval|confirmation)\s+(?:prompts?|steps?|checks?|system)"
          r"|\bgrant\s+(?:this|the)\s+(?:tool|server)\s+(?:full|root|admin|unrestricted)\s+access"),
    _Rule("addressed-to-model", ("assistant", "model", "ai", "llm", "agent", "bot", "claude", "gpt", "copilot",
                                 "from now on"),
          rf"\b(?:note|message|instructions?|n\.?\s?b\.?|attention|important(?:\s+note)?|reminder)\s*(?:to|for)\s+"
          rf"(?:the\s+|all\s+|any\s+)?(?:llm\s+|ai\s+)?{_AGENT}\b"
          rf"|\b(?:if|when)\s+you\s+(?:are|'re)\s+an?\s+{_AGENT}\b"
          rf"|(?:^|[.!?:>]\s*|\n)\s*(?:dear\s+)?{_AGENT}\s*[,:]\s"
          rf"|\b(?:the|this|any|every)\s+{_AGENT}\s+(?:must|should|shall|has\s+to|needs\s+to|is\s+required\s+to|"
          rf"is\s+instructed\s+to)\b"
          rf"|\bas\s+(?:the|an?)\s+{_AGENT}\s*,"
          rf"|\(\s*for\s+(?:the\s+)?{_AGENT}\s*\)"
          rf"|\b(?:the|this)\s+{_AGENT}\s+(?:should|must)\s+always\b"
          rf"|\bfrom\s+now\s+on\b[^.\n]{{0,30}}\byou\b", strict=True),
    _Rule("secrecy", ("tell", "inform", "mention", "notify", "alert", "show", "reveal", "silently", "secretly",
                      "quietly", "covertly", "discreetly", "knowing", "noticing"),
          rf"\b(?:do\s+not|don't|never|without)\s+(?:tell|telling|inform|informing|mention|mentioning|notify|notifying|"
          rf"alert|alerting|show|showing|reveal|revealing)\w*\s+(?:\w+\s+){{0,4}}(?:to\s+)?(?:the\s+)?{_PERSON}"
          rf"|\b(?:silently|secretly|quietly|covertly|discreetly)\s+(?:also\s+)?{_EXEC}\w*\b"
          rf"|\bwithout\s+the\s+{_PERSON}\s+(?:knowing|noticing)", strict=True),
    _Rule("secret-flow", ("key", "credential", "secret", "passw", "passphrase", "token", "id_rsa", "id_ed25519",
                          ".ssh", ".env", ".netrc", ".aws", "/etc/", "environment", "env var", "cookie",
                          "system prompt", "hidden", "conversation", "chat history", "full prompt"),
          rf"\b{_FLOW}\b[^.\n;]{{0,60}}{_SECRET}|{_SECRET}[^.\n;]{{0,40}}\b(?:as|in|into|inside|to)\s+(?:the\s+|a\s+|your\s+)?"
          rf"[`'\"]?\w+[`'\"]?\s+{_SINK}", negatable=True, strict=True),
    _Rule("tool-hijack", ("other tool", "deprecated", "instead", "before", "after"),
          r"\b(?:before|instead\s+of)\s+(?:any|every|all)\s+other\s+tools?\b"
          r"|\bdeprecated\b[^.\n]{0,40}\buse\s+this\b|\buse\s+this\s+tool\s+instead\b"
          r"|\b(?:before|after)\s+(?:every|each|any)\s+(?:call|answer|response|reply|message)\b[^.\n]{0,40}"
          r"|\bbefore\s+(?:answering|responding|replying)\b", strict=True),
    _Rule("identity-claim", ("from", "as if", "this server", "mode"),
          rf"\b(?:message|notice|instructions?|directive)\s+from\s+(?:the\s+)?(?:sentinel|system|admin\w*|operators?|"
          rf"developers?|openai|anthropic|security\s+team)\b"
          rf"|\bas\s+if\s+(?:it|they)\s+(?:came|come)\s+from\s+(?:the\s+)?(?:{_PERSON}|system)"
          rf"|\b(?:obeys?|answers?|listens?)\s+(?:only\s+)?to\s+this\s+server(?:\s+only)?\b"
          r"|\b(?:maintenance|unrestricted|privileged|unsafe|admin|root)\s+mode\b|\bsafe(?:ty)?\s+mode\s+(?:is\s+)?(?:off|disabled)\b",
          strict=True),
]


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.MULTILINE)


_SAFE_NEGATION = re.compile(r"\b(never|do\s+not|don't|must\s+not|not)\s+(\w+\s+){0,3}$", re.IGNORECASE)


@functools.lru_cache(maxsize=128)  # a pure function of the text: a soul or MEMORY.md is scanned again every turn
def scan(text: str, strict: bool = False) -> Finding | None:
    """The first injection finding in `text`, or None; `strict` for text from outside (more rules)."""
    finding = _unicode(text) or _phrases(text, strict)
    if finding is not None:
        return finding
    normal = normalise(text)
    if normal == text:
        return None
    found = _phrases(normal, strict)
    return Finding(found.rule, f"{found.detail} (normalised)") if found else None


# Letters that look like Latin ones (Cyrillic, Greek); NFKC folds full-width and mathematical letters itself.
_LOOKALIKE = str.maketrans({pair[0]: pair[1] for pair in ((
    "аa еe оo рp сc уy хx іi јj ѕs ԁd ɡg һh ԛq ԝw мm тt вb кk нh АA ЕE ОO РP СC УY ХX ІI ЈJ ЅS МM ТT ВB КK НH "
    "ΑA ΒB ΕE ΖZ ΗH ΙI ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX αa οo ιi εe ρp τt υu νv κk").split())})
_LEET = str.maketrans("013457@$!|", "oieastasii")
_MIXED = re.compile(r"[A-Za-z]*[0-9@$!|][A-Za-z0-9@$!|]*")
_SPELT = re.compile(r"(?<!\S)(?:\S ){2,}\S(?!\S)")
_ZERO_WIDTH = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u00ad\u034f\u180e]")


_PLAIN_ASCII = re.compile(r"[_@$!|]|[A-Za-z][0-9]|[0-9][A-Za-z]|(?<!\S)\S \S \S(?!\S)")
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


def normalise(text: str) -> str:
    """The text as a reader takes it in: look-alikes folded to Latin, accents and zero-width characters dropped,
    `_` as a space, letters spelt out one by one joined, leetspeak undone in words mixing letters and digits."""
    if text.isascii() and not _PLAIN_ASCII.search(text):
        return text  # nothing to fold: most text, decided by one search
    text = unicodedata.normalize("NFKC", _ZERO_WIDTH.sub("", text)).translate(_LOOKALIKE)
    text = _COMBINING.sub("", unicodedata.normalize("NFKD", text))
    text = _SPELT.sub(lambda m: m.group(0).replace(" ", ""), text.replace("_", " "))
    return _MIXED.sub(lambda m: m.group(0).translate(_LEET) if re.search(r"[A-Za-z]", m.group(0)) or
                      len(m.group(0)) > 1 and not m.group(0).isdigit() else m.group(0), text)


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


def _phrases(text: str, strict: bool = False) -> Finding | None:
    folded = " ".join(text.lower().split())
    for rule in _RULES + _STRUCTURAL:
        if (rule.strict and not strict) or (rule.needles and not any(needle in folded for needle in rule.needles)):
            continue
        for match in rule.regex.finditer(text):
            lead = text[max(0, match.start() - 40):match.start()]
            if rule.negatable and _SAFE_NEGATION.search(lead):
                continue
            quoted = " ".join(match.group(0).split())[:80]
            return Finding(rule.name, f"{quoted!r}")
    return None


def scan_tool(name: str, description: str, schema: object) -> Finding | None:
    """A tool offered to the model, strictly: its name, its description and every string of its schema (nested
    property descriptions, titles, enums, defaults, examples, and the property names themselves)."""
    for where, text in [("name", name), ("description", description), *strings(schema, "schema")]:
        finding = scan(text, strict=True)
        if finding is not None:
            return Finding(finding.rule, f"{finding.detail} in {where}")
    return None


def strings(value: object, where: str) -> list[tuple[str, str]]:
    """Every string in a JSON value, keys included, each with its path."""
    if isinstance(value, str):
        return [(where, value)]
    if isinstance(value, dict):
        out: list[tuple[str, str]] = []
        for key, item in value.items():
            out += [(f"{where}/{key}", str(key))] + strings(item, f"{where}/{key}")
        return out
    if isinstance(value, list):
        return [pair for i, item in enumerate(value) for pair in strings(item, f"{where}/{i}")]
    return []

"""Secret detection and redaction: whole texts and text arriving in streaming pieces.

Each secret becomes a stable placeholder `[REDACTED:<kind>:<8 hex>]`: the hex
is an HMAC of the secret under a key only Muzzle holds, so the same secret
always gets the same placeholder (the model can still tell two keys apart)
and the log never lets anyone recover or brute-force the secret.

A pattern may have a named group `secret`: then only that group is replaced
(`PASSWORD=[REDACTED:...]` keeps the variable name). Placeholders are never
matched again, so redacting twice changes nothing.

StreamRedactor holds back the unfinished tail of a stream (the trailing word,
a line that names a secret-like variable, an unterminated private key block)
until it can be judged, so a secret split across chunks is still caught.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterable

_NOT_PLACEHOLDER = r"(?!\[REDACTED:)"
_SECRET_WORDS = (r"(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|AUTH_?KEY|"
                 r"CREDENTIALS?|CLIENT_?SECRET)")
# A variable name that ends with a secret word or has it as a whole _-separated part (not MAX_TOKENS).
_SECRET_NAME = rf"[A-Za-z0-9_.\-]*?{_SECRET_WORDS}(?:_[A-Za-z0-9_]*)?"
_VALUE = rf"{_NOT_PLACEHOLDER}(?!\$)(?P<secret>\"[^\"\n]{{3,}}\"|'[^'\n]{{3,}}'|[^\s#'\"(){{}}\[\],;<>]{{4,}}(?=\s|$|#))"

# (kind, regex). Order breaks ties between matches of equal start and length.
BUILTIN: list[tuple[str, str]] = [
    ("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                    r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("slack_token", r"\bxox[abposre]-[A-Za-z0-9\-]{10,}"),
    ("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}"),
    ("aws_access_key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"),
    ("gcp_api_key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("gcp_oauth_token", r"\bya29\.[0-9A-Za-z_\-]{20,}"),
    ("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("muzzle_token", r"\bsmz_[A-Za-z0-9_\-]{20,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("url_credentials", rf"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@\"'<>]+:{_NOT_PLACEHOLDER}(?P<secret>[^\s@/\"'<>]+)@"),
    ("bearer_token", rf"(?i)\bbearer\s+{_NOT_PLACEHOLDER}(?P<secret>[A-Za-z0-9._~+/\-]{{16,}}=*)"),
    ("env_secret", rf"(?im)(?:^|(?<=[\s`]))(?:export[ \t]+)?{_SECRET_NAME}[ \t]*[=:][ \t]*{_VALUE}"),
    ("json_secret", rf"(?i)\"{_SECRET_NAME}\"\s*:\s*\"{_NOT_PLACEHOLDER}(?P<secret>[^\"\\]{{4,}})\""),
]

_COARSE_WORDS = ("pass", "secret", "token", "key", "credential")  # every secret word contains one
# Cheap substring tests that must all pass (each an any-of group) before a pattern's regex runs;
# `True` means the groups are tested against the lowercased text.
TRIGGERS: dict[str, tuple[bool, tuple[tuple[str, ...], ...]]] = {
    "private_key": (False, (("PRIVATE KEY",),)),
    "anthropic_key": (False, (("sk-ant-",),)),
    "openai_key": (False, (("sk-",),)),
    "github_token": (False, (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),)),
    "slack_token": (False, (("xox",),)),
    "slack_webhook": (False, (("hooks.slack.com",),)),
    "aws_access_key": (False, (("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),)),
    "gcp_api_key": (False, (("AIza",),)),
    "gcp_oauth_token": (False, (("ya29.",),)),
    "stripe_key": (False, (("_live_", "_test_"),)),
    "huggingface_token": (False, (("hf_",),)),
    "muzzle_token": (False, (("smz_",),)),
    "jwt": (False, (("eyJ",),)),
    "url_credentials": (False, (("://",), ("@",))),
    "bearer_token": (True, (("bearer",),)),
    "env_secret": (True, (_COARSE_WORDS, ("=", ":"))),
    "json_secret": (True, (_COARSE_WORDS, ('"',))),
}
PER_LINE = {"env_secret", "json_secret"}  # run only on the lines holding a secret word

# Where an unfinished secret may start at the end of a stream buffer.
_HOLD_KEYWORD = re.compile(rf"(?i){_SECRET_WORDS}|bearer")
_PEM_OPEN = re.compile(r"-----BEGIN[A-Z0-9 ]*")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_CACHE_ENTRIES = 4096
PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]+:[0-9a-f]{8}\]")


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int
    placeholder: str


class Redactor:
    """Finds secrets in text and replaces each with its stable placeholder."""

    def __init__(self, key: bytes, extra: Iterable[tuple[str, str]] = (), literals: Iterable[tuple[str, str]] = ()):
        self._key = key
        self._patterns = [(kind, re.compile(rx)) for kind, rx in [*BUILTIN, *extra]]
        lits = [(kind, s) for kind, s in literals if s and len(s) >= 8]
        self._literals = [(kind, re.compile(re.escape(s))) for kind, s in lits]
        self._cache: OrderedDict[str, tuple[str, list[Finding]]] = OrderedDict()
        self._rules = [(kind, rx, TRIGGERS.get(kind) if i >= len(self._literals) else None)
                       for i, (kind, rx) in enumerate(self._literals + self._patterns)]

    def placeholder(self, kind: str, secret: str) -> str:
        digest = hmac.new(self._key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
        return f"[REDACTED:{kind}:{digest[:8]}]"

    def find(self, text: str) -> list[Finding]:
        """Non-overlapping findings, leftmost first, longest wins at a tie."""
        spans: list[tuple[int, int, int, str]] = []
        lower: str | None = None
        for order, (kind, rx, trigger) in enumerate(self._rules):
            if trigger is not None:
                if trigger[0] and lower is None:
                    lower = text.lower()
                hay = lower if trigger[0] else text
                if not all(any(t in hay for t in group) for group in trigger[1]):
                    continue
            for start, end in _matches(rx, text, lower if kind in PER_LINE else None):
                if end > start:
                    spans.append((start, -(end - start), order, kind))
        spans.sort()
        out: list[Finding] = []
        last_end = -1
        for start, neg_len, _, kind in spans:
            end = start - neg_len
            if start >= last_end:
                out.append(Finding(kind, start, end, self.placeholder(kind, text[start:end])))
                last_end = end
        return out

    def redact(self, text: str) -> tuple[str, list[Finding]]:
        """Redacted text and findings; remembered for repeated texts (a conversation resends its history)."""
        if len(text) < 64 or len(text) > 1 << 20:
            findings = self.find(text)
            return apply(text, findings), findings
        hit = self._cache.get(text)
        if hit is not None:
            self._cache.move_to_end(text)
            return hit
        findings = self.find(text)
        hit = self._cache[text] = (apply(text, findings), findings)
        if len(self._cache) > _CACHE_ENTRIES:
            self._cache.popitem(last=False)
        return hit


def _matches(rx: re.Pattern[str], text: str, lower: str | None) -> Iterable[tuple[int, int]]:
    """Spans (of the `secret` group if any); with `lower`, only lines holding a secret word are searched."""
    group = "secret" if "secret" in rx.groupindex else 0
    if lower is None:
        return [m.span(group) for m in rx.finditer(text)]
    out: list[tuple[int, int]] = []
    for start, end in _word_lines(lower):
        out.extend((start + a, start + b) for a, b in (m.span(group) for m in rx.finditer(text[start:end])))
    return out


def _word_lines(lower: str) -> list[tuple[int, int]]:
    """(start, end) of each line of `lower` containing a coarse secret word, in order."""
    lines: set[tuple[int, int]] = set()
    for word in _COARSE_WORDS:
        pos = lower.find(word)
        while pos != -1:
            start = lower.rfind("\n", 0, pos) + 1
            end = lower.find("\n", pos)
            end = len(lower) if end == -1 else end
            lines.add((start, end))
            pos = lower.find(word, end)
    return sorted(lines)


def apply(text: str, findings: list[Finding]) -> str:
    if not findings:
        return text
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts.append(text[pos:f.start])
        parts.append(f.placeholder)
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


class StreamRedactor:
    """Redacts a text that arrives in pieces: `feed` returns what is safe to emit now, `flush` the rest."""

    def __init__(self, redactor: Redactor, max_hold: int = 32768):
        self.redactor = redactor
        self.max_hold = max_hold
        self.findings: list[Finding] = []
        self._buf = ""

    def feed(self, piece: str) -> str:
        buf = self._buf + piece
        cut = hold_point(buf)
        findings = self.redactor.find(buf)
        for f in findings:
            if f.start < cut < f.end:
                cut = f.start
        if len(buf) - cut > self.max_hold:
            return self._release(buf, findings)
        done = [f for f in findings if f.end <= cut]
        self._buf = buf[cut:]
        self.findings.extend(done)
        return apply(buf[:cut], done)

    def flush(self) -> str:
        buf, self._buf = self._buf, ""
        return self._release(buf, self.redactor.find(buf)) if buf else ""

    def _release(self, buf: str, findings: list[Finding]) -> str:
        """Emit everything; an unterminated private key block is redacted to the end (fail closed)."""
        self._buf = ""
        opener = _unterminated_pem(buf)
        if opener is not None:
            findings = [f for f in findings if f.end <= opener]
            findings.append(Finding("private_key", opener, len(buf),
                                    self.redactor.placeholder("private_key", buf[opener:])))
        self.findings.extend(findings)
        return apply(buf, findings)


def hold_point(buf: str) -> int:
    """The earliest index from which `buf` may still be the start of an unfinished secret."""
    cut = len(buf)
    if buf and not buf[-1].isspace():
        i = len(buf) - 1
        while i > 0 and not buf[i - 1].isspace():
            i -= 1
        cut = i
    line_start = buf.rfind("\n") + 1
    if _HOLD_KEYWORD.search(buf, line_start):  # a secret-like name on an unfinished line: wait for its end
        cut = min(cut, line_start)
    pem = _unterminated_pem(buf)
    if pem is not None:
        cut = min(cut, pem)
    return cut


def _unterminated_pem(buf: str) -> int | None:
    start = buf.rfind("-----BEGIN")
    if start == -1:
        return None
    m = _PEM_OPEN.match(buf, start)
    if m and "PRIVATE" not in m.group(0) and m.end() < len(buf) and buf[m.end():m.end() + 1] == "-":
        return None  # a certificate or public key: not a secret
    return None if _PEM_END.search(buf, start) else start

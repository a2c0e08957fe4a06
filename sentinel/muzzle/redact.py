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
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Iterator

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
# `True` means the groups are matched regardless of case.
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


def _any_of(words: Iterable[str], anycase: bool) -> str:
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return f"(?i:{alternatives})" if anycase else f"(?:{alternatives})"


# Each trigger group as one regex, and one regex that finds text no built-in pattern can match
# (one of each pattern's first group must occur): most streamed pieces stop there.
_TRIGGER_RX = {kind: tuple(re.compile(_any_of(g, anycase)) for g in groups)
               for kind, (anycase, groups) in TRIGGERS.items()}
_ANY_TRIGGER = re.compile("|".join(_any_of(groups[0], anycase) for anycase, groups in TRIGGERS.values()))
_COARSE = re.compile(_any_of(_COARSE_WORDS, True))

# Where an unfinished secret may start at the end of a stream buffer.
_HOLD_KEYWORD = re.compile(rf"(?i){_SECRET_WORDS}|bearer")
_PEM_OPEN = re.compile(r"-----BEGIN[A-Z0-9 ]*")
_PEM_RUN = re.compile(r"[A-Z0-9 ]*")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_CACHE_ENTRIES = 4096
PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]+:[0-9a-f]{8}\]")
_SECRET_KEY = re.compile(rf"(?i){_SECRET_NAME}")


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
        self._cache_lock = threading.Lock()  # inspection runs on worker threads too
        # (order, kind, regex, trigger regexes or None: always run)
        self._rules = [(order, kind, rx, _TRIGGER_RX.get(kind) if order >= len(self._literals) else None)
                       for order, (kind, rx) in enumerate(self._literals + self._patterns)]
        self._untriggered = [rule for rule in self._rules if rule[3] is None]

    def placeholder(self, kind: str, secret: str) -> str:
        digest = hmac.new(self._key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
        return f"[REDACTED:{kind}:{digest[:8]}]"

    def find(self, text: str) -> list[Finding]:
        """Non-overlapping findings, leftmost first, longest wins at a tie."""
        spans: list[tuple[int, int, int, str]] = []
        for order, kind, rx, triggers in self._rules if _ANY_TRIGGER.search(text) else self._untriggered:
            if triggers is not None and not all(t.search(text) for t in triggers):
                continue
            for start, end in _matches(rx, text, kind in PER_LINE):
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
        with self._cache_lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        findings = self.find(text)
        hit = (apply(text, findings), findings)
        with self._cache_lock:
            self._cache[text] = hit
            if len(self._cache) > _CACHE_ENTRIES:
                self._cache.popitem(last=False)
        return hit


    def redact_named(self, name: str, text: str) -> tuple[str, list[Finding]]:
        """`redact`, for a value stored under `name`: a name that says secret (`api_key`, `password`)
        makes the whole value one, as `"API_KEY": "..."` does in a text."""
        out, findings = self.redact(text)
        if findings or len(text) < 4 or text.startswith("$") or not _names_secret(name) or PLACEHOLDER.fullmatch(text):
            return out, findings
        found = Finding("json_secret", 0, len(text), self.placeholder("json_secret", text))
        return found.placeholder, [found]


@lru_cache(maxsize=1024)
def _names_secret(name: str) -> bool:
    return _SECRET_KEY.fullmatch(name) is not None


def _matches(rx: re.Pattern[str], text: str, per_line: bool) -> Iterable[tuple[int, int]]:
    """Spans (of the `secret` group if any); `per_line`: only lines holding a secret word are searched."""
    group = "secret" if "secret" in rx.groupindex else 0
    if not per_line:
        return [m.span(group) for m in rx.finditer(text)]
    out: list[tuple[int, int]] = []
    for start, end in _word_lines(text):
        out.extend(m.span(group) for m in rx.finditer(text, start, end))
    return out


def _word_lines(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each line of `text` containing a coarse secret word, in order."""
    m = _COARSE.search(text)
    while m:
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end == -1 else end
        yield start, end
        m = _COARSE.search(text, end)


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
    """Redacts a text that arrives in pieces: `feed` returns what is safe to emit now, `flush` the rest.

    The cost is linear in the text: where an unfinished secret may start is tracked as pieces
    arrive (`_Hold`, which looks only at the new piece and a short overlap), and the redactor
    runs only when something can be released, over what is pending since the last release.
    """

    def __init__(self, redactor: Redactor, max_hold: int = 32768):
        self.redactor = redactor
        self.max_hold = max_hold
        self.findings: list[Finding] = []
        self._pieces: list[str] = []
        self._size = 0  # characters pending
        self._hold = _Hold()
        self._scan_from = 0  # pending size below which a scan that released nothing is not repeated

    def feed(self, piece: str) -> str:
        if not piece:
            return ""
        self._pieces.append(piece)
        self._size += len(piece)
        cut = self._hold.advance(piece) - self._hold.pending_start
        if self._size - cut > self.max_hold:
            return self._release(self._pending(), None)
        if cut <= 0 or self._size < self._scan_from:
            return ""
        buf = self._pending()
        findings = self.redactor.find(buf)
        for f in findings:
            if f.start < cut < f.end:  # a secret straddles the cut: hold it whole
                cut = f.start
        if cut <= 0:
            self._scan_from = 2 * self._size  # rescan only once the pending text has doubled
            return ""
        done = [f for f in findings if f.end <= cut]
        self._keep(buf, cut)
        self.findings.extend(done)
        return apply(buf[:cut], done)

    def flush(self) -> str:
        return self._release(self._pending(), None) if self._size else ""

    def _pending(self) -> str:
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    def _keep(self, buf: str, cut: int) -> None:
        rest = buf[cut:]
        self._pieces = [rest] if rest else []
        self._size = len(rest)
        self._scan_from = 0
        self._hold.released(cut, rest)

    def _release(self, buf: str, findings: list[Finding] | None) -> str:
        """Emit everything; an unterminated private key block is redacted to the end (fail closed)."""
        findings = self.redactor.find(buf) if findings is None else findings
        opener = _unterminated_pem(buf)
        if opener is not None:
            findings = [f for f in findings if f.end <= opener]
            findings.append(Finding("private_key", opener, len(buf),
                                    self.redactor.placeholder("private_key", buf[opener:])))
        self._keep(buf, len(buf))
        self._hold.reset()
        self.findings.extend(findings)
        return apply(buf, findings)


_OVERLAP = 64  # longer than any hold keyword and than the private key markers


class _Hold:
    """Where an unfinished secret may start, tracked piece by piece (positions count from the stream's start).

    The held tail begins at the earliest of: the trailing word; the current line, once it holds a
    secret-like word; the last private key opener that is not yet closed. Each piece is searched
    together with the last `_OVERLAP` pending characters, so a marker split across pieces is seen.
    """

    def __init__(self) -> None:
        self.end = 0  # characters seen
        self.pending_start = 0  # where the text not yet released begins
        self.tail = ""  # the last pending characters, for markers split across pieces
        self.reset()

    def reset(self) -> None:
        self.word = self.line = self.end
        self.line_secret = False
        self.pem: int | None = None  # start of the last private key opener not yet closed
        self.pem_private = False  # its opener names PRIVATE
        self.pem_open = False  # its opener may still grow ([A-Z0-9 ] follow)

    def released(self, cut: int, rest: str) -> None:
        self.pending_start += cut
        self.tail = rest[-_OVERLAP:]

    def advance(self, piece: str) -> int:
        """Take the next piece; return the position before which text may be released."""
        base = self.end
        self.end += len(piece)
        window = self.tail + piece
        at = base - len(self.tail)  # position of window[0]
        self.tail = window[-_OVERLAP:]
        self._word(piece, base)
        self._line(window, at, piece)
        self._pem(window, at)
        cut = self.word
        if self.line_secret:
            cut = min(cut, max(self.line, self.pending_start))
        if self.pem is not None:
            cut = min(cut, self.pem)
        return cut

    def _word(self, piece: str, base: int) -> None:
        if piece[-1].isspace():
            self.word = self.end
            return
        last = piece.rsplit(None, 1)[-1]
        if len(last) < len(piece):
            self.word = self.end - len(last)

    def _line(self, window: str, at: int, piece: str) -> None:
        newline = piece.rfind("\n")
        if newline >= 0:
            self.line = self.end - len(piece) + newline + 1
            self.line_secret = False
        if not self.line_secret:
            start = max(self.line, self.pending_start) - at
            self.line_secret = _HOLD_KEYWORD.search(window, max(0, start)) is not None

    def _pem(self, window: str, at: int) -> None:
        opener = window.rfind("-----BEGIN")
        if opener >= 0 and at + opener != self.pem and (self.pem is None or at + opener > self.pem):
            self.pem, self.pem_private, self.pem_open = at + opener, False, True
        if self.pem is None:
            return
        start = max(0, self.pem - at)
        if self.pem_open:
            run = _PEM_OPEN.match(window, start) if self.pem >= at else _PEM_RUN.match(window)
            assert run is not None
            self.pem_private = self.pem_private or "PRIVATE" in window[start:run.end()]
            if run.end() < len(window):
                self.pem_open = False
                if not self.pem_private and window[run.end()] == "-":
                    self.pem = None  # a certificate or public key: not a secret
                    return
        if _PEM_END.search(window, start):
            self.pem = None


def _unterminated_pem(buf: str) -> int | None:
    start = buf.rfind("-----BEGIN")
    if start == -1:
        return None
    m = _PEM_OPEN.match(buf, start)
    if m and "PRIVATE" not in m.group(0) and m.end() < len(buf) and buf[m.end():m.end() + 1] == "-":
        return None  # a certificate or public key: not a secret
    return None if _PEM_END.search(buf, start) else start

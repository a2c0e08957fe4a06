"""Context compaction, as pure functions over OpenAI-format messages (the loop's hook is sentinel/worker/compact.py).

    size(messages)                          -> characters, the tokenizer-agnostic estimate
    span(messages, keep_recent_turns)       -> (start, end) of the middle to summarize, or None
    summary_request(messages[start:end])    -> the messages of the summary call
    summary_message(text, turns)            -> the one message that replaces the span
    splice(messages, start, end, message)   -> the compacted conversation

The head (the system prompt and the messages before the first model turn: the task, attached skills)
and the last `keep_recent_turns` model turns stay verbatim. A turn is an assistant message with the tool
results that answer it, so a span always ends right before an assistant message: a tool call is never
separated from its result. An earlier summary lies inside the next span, so summaries roll.
"""

from __future__ import annotations

from sentinel.jsontypes import JSONObject

from sentinel.models.base import call_parts
from sentinel.engine.records import Compaction
from sentinel.models.script import SUMMARY_TURNS, text_of, turn_of

# The summary message opens with this line. The scripted model counts the turns it names as turns
# already taken (`turns_in` is its count), so a script replays the same way before and after compaction.
SUMMARY_HEAD = "[Summary so far: {turns} earlier model turns, compacted]"


def turns_in(messages: list[JSONObject]) -> int:
    """Model turns in `messages`, counting those an earlier summary folded in."""
    return turn_of(messages)


RESUMING = "Resuming from checkpoint — {done} of {total} tasks complete."
# User messages the harness wrote (a resume note, an attached skill): not a person's request.
NOT_REQUESTS = ("Resuming from checkpoint", "[Skill attached by the operator")

SUMMARIZER = """\
You are Sentinel's context compactor. You are given the middle of an agent's conversation: its model turns, \
the tool calls it made and their results, and possibly an earlier summary. Write the summary so far that \
replaces them, for the same agent to continue from. Keep: what was asked and decided, what was done and \
its outcome (files created or changed, commands run, facts found), errors and how they were fixed, and what \
remains to do. Drop: verbatim file contents and long outputs (name the file instead), pleasantries, repetition. \
Write plain Markdown bullets, at most about 300 words. Do not invent anything that is not in the transcript."""

RESULT_MAX = 1500  # characters of one tool result shown to the summarizer


def message_size(message: JSONObject) -> int:
    n = len(text_of(message))
    for name, arguments in call_parts(message):
        n += len(name) + len(arguments)
    return n


def size(messages: list[JSONObject]) -> int:
    return sum(message_size(m) for m in messages)


class Sizes:
    """`size` of a conversation that grows at its end, paid once per message: the messages measured last time
    are held (so an identity check cannot meet a recycled id) and a list that still starts with them costs
    an identity check each, plus the measure of its new ones. A list that changed before its end (a compaction) is measured again."""

    def __init__(self) -> None:
        self._seen: list[JSONObject] = []
        self._sizes: list[int] = []
        self._total = 0

    def __call__(self, messages: list[JSONObject]) -> int:
        n = len(self._seen)
        if n > len(messages) or not all(a is b for a, b in zip(messages, self._seen)):
            self._seen, self._sizes, self._total = [], [], 0
            n = 0
        for message in messages[n:]:
            self._seen.append(message)
            self._sizes.append(message_size(message))
            self._total += self._sizes[-1]
        return self._total


def head_end(messages: list[JSONObject]) -> int:
    """Index of the first model turn (or a first summary): everything before it is the head, kept verbatim."""
    for i, message in enumerate(messages):
        if message.get("role") == "assistant" or is_summary(message):
            return i
    return len(messages)


def is_summary(message: JSONObject) -> bool:
    return message.get("role") == "user" and bool(SUMMARY_TURNS.match(text_of(message)))


def span(messages: list[JSONObject], keep_recent_turns: int) -> tuple[int, int] | None:
    """The middle to summarize: from the end of the head to the start of the last `keep_recent_turns` turns.
    None when that middle holds fewer than two messages (nothing worth a model call)."""
    start = head_end(messages)
    turn_starts = [i for i, m in enumerate(messages) if i >= start and m.get("role") == "assistant"]
    if len(turn_starts) <= keep_recent_turns:
        return None
    end = turn_starts[-keep_recent_turns]
    return (start, end) if end - start >= 2 else None


def render(messages: list[JSONObject]) -> str:
    """The span as a plain transcript: the summarizer reads it as text, so no tool call needs a result."""
    lines: list[str] = []
    for message in messages:
        role, content = message.get("role"), text_of(message).strip()
        if is_summary(message):
            lines.append(f"EARLIER SUMMARY:\n{content}")
        elif role == "assistant":
            if content:
                lines.append(f"AGENT: {content}")
            for name, arguments in call_parts(message):
                lines.append(f"AGENT CALLS {name}({_short(arguments, RESULT_MAX)})")
        elif role == "tool":
            lines.append(f"RESULT: {_short(content, RESULT_MAX)}")
        else:
            lines.append(f"{str(role).upper()}: {_short(content, RESULT_MAX * 2)}")
    return "\n\n".join(lines)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]} […{len(text) - limit} more characters]"


def summary_request(middle: list[JSONObject]) -> list[JSONObject]:
    return [{"role": "system", "content": SUMMARIZER},
            {"role": "user", "content": f"The conversation to summarize:\n\n{render(middle)}"}]


def latest_request(middle: list[JSONObject]) -> str | None:
    """The last message a person wrote inside the span (a chat session's current request), if any."""
    for message in reversed(middle):
        content = text_of(message)
        if message.get("role") == "user" and not is_summary(message) and not content.startswith(NOT_REQUESTS):
            return content
    return None


def summary_message(text: str, turns: int, request: str | None = None) -> JSONObject:
    """A user message (some chat templates refuse a late system message; an assistant one would read as an answer).
    The request being worked on, when the span holds it, stays verbatim: a summary must not rephrase it."""
    verbatim = f"\n\nThe request being worked on, verbatim:\n\n{request.strip()}" if request else ""
    return {"role": "user", "content": f"{SUMMARY_HEAD.format(turns=turns)}\n\n{text.strip()}{verbatim}"}


def splice(messages: list[JSONObject], start: int, end: int, message: JSONObject) -> list[JSONObject]:
    return [*messages[:start], message, *messages[end:]]


def threshold(compact_at_chars: int | None, model: str, context_tokens: int) -> int:
    """`context.compact_at_chars`, else derived from the window: local models know theirs (`local.context_tokens`);
    about 3 characters a token, three quarters of the window (the reply and the tool schemas need the rest)."""
    if compact_at_chars is not None:
        return compact_at_chars
    if model.startswith("local/"):
        return context_tokens * 3 * 3 // 4
    return 120_000


def record(start: int, end: int, summary: JSONObject, before: int, after: int, turns: int) -> Compaction:
    """The journal record of one compaction; RunState splices the conversation from it on replay."""
    return Compaction(start=start, end=end, message=summary, summarized=end - start, turns=turns,
                      chars_before=before, chars_after=after)

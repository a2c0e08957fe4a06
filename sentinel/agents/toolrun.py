"""The runner of one authored-tool call, run as `python -I -S -c <this file's text>` in a sandboxed process.

It imports nothing from Sentinel (the sandbox cannot read the package) and nothing it can avoid (it must
start fast: `posix` rather than `os`). It does everything it can before reading stdin, because it may
be started ahead of its call (a spare, sentinel/agents/execute.py) and wait there. Its stdin is
`<length>\n` and then that many bytes: one marshal-encoded dict, the tool's code (exactly the text
that was hashed), the arguments, the output limit, CPU and memory limits and a nonce; an empty stdin
(a spare given up) makes it exit 0 at once, and any other input exit 2. It lowers its own rlimits,
points fds 0, 1 and 2 at /dev/null (the tool's prints are captured instead), runs `run(args)` and
writes one frame on a saved copy of fd 1:

    \\x1eSENTINEL <nonce> <ok|error> <length in characters>\\n<payload, UTF-8>

Anything else (a timeout, a kill, a crash before the frame) is reported by the caller from the exit.
"""

import io
import marshal
import posix  # built in and already loaded: `os` would cost an import at every call
import sys

try:
    import resource
    HAS_RESOURCE = True
except ImportError:
    HAS_RESOURCE = False

TYPE_CHECKING = False
if TYPE_CHECKING:  # for the type checker only: the runner imports no `typing` (annotations below are strings)
    from typing import TypedDict

    class Spec(TypedDict):
        """What sentinel/agents/execute.py sends (run_code's `spec`)."""

        code: str
        args: dict[str, object]
        nonce: str
        max_chars: int
        cpu_s: int
        memory_bytes: int

ORIGINAL_PID = posix.getpid()


def _frame(fd: int, nonce: str, status: str, text: str) -> None:
    if posix.getpid() != ORIGINAL_PID:
        posix._exit(1)  # a process the tool forked: only the runner itself answers
    payload = text.encode("utf-8", "replace")  # lone surrogates become "?": the reader decodes the same text
    frame = b"\x1eSENTINEL %s %s %d\n" % (nonce.encode(), status.encode(), len(payload.decode("utf-8"))) + payload
    while frame:
        frame = frame[posix.write(fd, frame):]


def _limit(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    head = max_chars * 2 // 3
    tail = max_chars - head
    return "%s\n[... %d characters truncated ...]\n%s" % (text[:head], len(text) - head - tail, text[-tail:])


def _rlimits(spec: "Spec") -> None:
    if not HAS_RESOURCE:
        return
    for name, value, spare in (("RLIMIT_CPU", spec.get("cpu_s"), 1), ("RLIMIT_AS", spec.get("memory_bytes"), 0)):
        if not value:
            continue
        kind = getattr(resource, name)
        hard = resource.getrlimit(kind)[1]
        hard = value + spare if hard == resource.RLIM_INFINITY else min(value + spare, hard)
        resource.setrlimit(kind, (min(value, hard), hard))  # soft below hard: SIGXCPU, not SIGKILL


def _where(exc: BaseException) -> str:
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "tool.py":
            line = tb.tb_lineno
        tb = tb.tb_next
    return " (tool.py line %d)" % line if line else ""


def _input() -> "Spec | None":
    """The spec, read to EOF; None for an empty stdin. Exits 2 unless the input is exactly one framed spec."""
    chunks = []
    while True:
        chunk = posix.read(0, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    data = b"".join(chunks)
    if not data:
        return None
    length, _, body = data.partition(b"\n")
    if not length.isdigit() or int(length) != len(body):
        posix.write(2, b"sentinel runner: malformed input\n")
        posix._exit(2)
    spec: Spec = marshal.loads(body)   # execute.py's own dict: only JSON values marshal both ways
    return spec


def main() -> None:
    out = posix.dup(1)
    null = posix.open("/dev/null", posix.O_RDWR)
    printed = io.StringIO()
    spec = _input()  # a spare waits here, with everything above done
    if spec is None:
        posix._exit(0)
    nonce, max_chars = spec["nonce"], spec["max_chars"]
    for fd in (0, 1, 2):
        posix.dup2(null, fd)
    sys.stdout = sys.stderr = printed
    _rlimits(spec)
    try:
        namespace: "dict[str, object]" = {"__name__": "tool", "__file__": "tool.py", "__builtins__": __builtins__}
        exec(compile(spec["code"], "tool.py", "exec"), namespace)
        run = namespace.get("run")
        if not callable(run):
            raise TypeError("tool.py defines no run(args) function")
        result = run(spec["args"])
        if not isinstance(result, str):
            _frame(out, nonce, "error", "run() returned %s, not a string" % type(result).__name__)
            return
        _frame(out, nonce, "ok", _limit(result, max_chars))
    except BaseException as exc:  # noqa: BLE001 - every failure of the tool is a result for the model
        message = "%s: %s%s" % (type(exc).__name__, exc, _where(exc))
        tail = printed.getvalue()[-1000:]
        if tail.strip():
            message += "\nprinted before the error:\n" + tail
        _frame(out, nonce, "error", _limit(message, max_chars))


if __name__ == "__main__":
    main()

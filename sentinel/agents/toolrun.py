"""The runner of one authored-tool call, run as `python -I -S -c <this file's text>` in a sandboxed process.

It imports nothing from Sentinel (the sandbox cannot read the package) and nothing it can avoid (it must
start fast: `posix` rather than `os`). Its
stdin is one marshal-encoded dict: the tool's code (exactly the text that was hashed), the arguments,
the output limit, CPU and memory limits and a nonce. It lowers its own rlimits, points fds 1 and 2 at
/dev/null (the tool's prints are captured instead), runs `run(args)` and writes one frame on a saved
copy of fd 1:

    \\x1eSENTINEL <nonce> <ok|error> <length in characters>\\n<payload, UTF-8>

Anything else (a timeout, a kill, a crash before the frame) is reported by the caller from the exit.
"""

import io
import marshal
import posix  # built in and already loaded: `os` would cost an import at every call
import sys

ORIGINAL_PID = posix.getpid()


def _frame(fd, nonce, status, text):
    if posix.getpid() != ORIGINAL_PID:
        posix._exit(1)  # a process the tool forked: only the runner itself answers
    payload = text.encode("utf-8", "replace")  # lone surrogates become "?": the reader decodes the same text
    frame = b"\x1eSENTINEL %s %s %d\n" % (nonce.encode(), status.encode(), len(payload.decode("utf-8"))) + payload
    while frame:
        frame = frame[posix.write(fd, frame):]


def _limit(text, max_chars):
    if len(text) <= max_chars:
        return text
    head = max_chars * 2 // 3
    tail = max_chars - head
    return "%s\n[... %d characters truncated ...]\n%s" % (text[:head], len(text) - head - tail, text[-tail:])


def _rlimits(spec):
    try:
        import resource
    except ImportError:
        return
    for name, value, spare in (("RLIMIT_CPU", spec.get("cpu_s"), 1), ("RLIMIT_AS", spec.get("memory_bytes"), 0)):
        if not value:
            continue
        kind = getattr(resource, name)
        hard = resource.getrlimit(kind)[1]
        hard = value + spare if hard == resource.RLIM_INFINITY else min(value + spare, hard)
        resource.setrlimit(kind, (min(value, hard), hard))  # soft below hard: SIGXCPU, not SIGKILL


def _where(exc):
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "tool.py":
            line = tb.tb_lineno
        tb = tb.tb_next
    return " (tool.py line %d)" % line if line else ""


def main():
    spec = marshal.loads(sys.stdin.buffer.read())
    nonce, max_chars = spec["nonce"], spec["max_chars"]
    out = posix.dup(1)
    null = posix.open("/dev/null", posix.O_RDWR)
    for fd in (0, 1, 2):
        posix.dup2(null, fd)
    printed = io.StringIO()
    sys.stdout = sys.stderr = printed
    _rlimits(spec)
    try:
        namespace = {"__name__": "tool", "__file__": "tool.py", "__builtins__": __builtins__}
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

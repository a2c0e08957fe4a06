"""The warm start: `sentinel run` and `sentinel resume` forked from a process of this user's that has already
imported them (the client side; the server is sentinel/cli/warm_server.py).

A fresh `sentinel run` spends about half a second importing before its first model request (the official openai
client alone is 0.3-0.5 s on two cores); a process forked from one that has imported everything reaches the
model in about a tenth of that. So these two commands first ask a warm server:

    code = warm.call(args)       # the command's exit code, run by a warm child; None: run it here, cold
    warm.after_cold()            # after a cold run: start a server for the next one (detached), if none answered

The child is a real process that runs the command from its first line exactly as this process would: this
process's arguments, environment, working directory (passed as a descriptor), stdin/stdout/stderr (passed
too; one this process lacks is closed there too), umask and ignored and blocked signals. This process waits for it, forwards the signals it gets (Ctrl-C, SIGTERM,
Ctrl-Z and `fg`) and exits as it exits. What it skips is only the interpreter's start and the imports.

Who gets a warm child (everything else runs cold, as before):

- the same user, in the same process context: the server compares the caller's uid, gids, groups,
  capabilities, no_new_privs and seccomp (both must be off: nothing inside a sandbox is ever served by a
  process outside it), resource limits, nice value, cgroup, namespaces, root directory and security label
  with its own, read from /proc while the caller cannot exit unnoticed; and the same interpreter:
  executable, package, import path, flags and locale. A caller that differs in any is refused and runs cold. Its socket's name is a
  digest of all of that, so callers in another context find (or start) their own server;
- no PYTHON* variable in the environment (each changes how an interpreter starts; a warm child could not
  honour it), and SENTINEL_WARM=0 turns the warm start off;
- the socket lives in a directory only this user can open ($XDG_RUNTIME_DIR/sentinel, else
  /tmp/sentinel-UID, made 0700 and checked: a directory of someone else's, or open to others, is not used),
  and the server must be this user (SO_PEERCRED) before anything is sent to it.

The server exits after SENTINEL_WARM_IDLE seconds (600) without a call, when the installed code or the
interpreter changes (checked before every call: that call then runs cold and the next starts a new server), or
on SIGTERM once its children have ended.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import stat
import struct
import sys
from pathlib import Path

from sentinel import unixsock

COMMANDS = ("run", "resume")
# The flags sys.flags records that the server must share (isolated, ignore_environment, no_user_site and
# safe_path are how the server is started (-I); the import path compared beside them is what they decide).
FLAGS = ("debug", "inspect", "interactive", "optimize", "dont_write_bytecode", "verbose", "bytes_warning",
         "quiet", "hash_randomization", "dev_mode", "utf8_mode", "warn_default_encoding", "int_max_str_digits")
LOCALE = ("LC_ALL", "LC_CTYPE", "LANG")
# /proc/PID/status lines that decide what a process may do
STATUS = (b"Uid:", b"Gid:", b"Groups:", b"NoNewPrivs:", b"Seccomp:", b"CapInh:", b"CapPrm:", b"CapEff:", b"CapBnd:",
          b"CapAmb:")
NAMESPACES = ("cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGWINCH, signal.SIGTSTP, signal.SIGCONT)
REQUEST_MAX = 1 << 20  # the JSON request (arguments and environment); a larger one runs cold

_wanted: str | None = None  # the socket no server answered at: after_cold() starts one there


def eligible(args: list[str]) -> bool:
    return (bool(args) and args[0] in COMMANDS and os.environ.get("SENTINEL_WARM", "1") != "0"
            and not any(name.startswith("PYTHON") for name in os.environ))


def context(pid: int | str = "self") -> bytes | None:
    """What decides what process `pid` may do and where it lives, as the server compares it; None if unreadable."""
    proc = f"/proc/{pid}"
    try:
        with open(f"{proc}/status", "rb") as f:
            status = [line for line in f if line.startswith(STATUS)]
        parts = [b"".join(status)]
        for name in ("limits", "cgroup"):
            with open(f"{proc}/{name}", "rb") as f:
                parts.append(f.read())
        parts.append(" ".join(os.readlink(f"{proc}/ns/{ns}") for ns in NAMESPACES).encode())
        parts.append(os.fsencode(os.readlink(f"{proc}/root")))  # a chroot
        with open(f"{proc}/stat", "rb") as f:
            parts.append(f.read().rsplit(b")", 1)[1].split()[16])  # nice
        try:
            with open(f"{proc}/attr/current", "rb") as f:
                parts.append(f.read())
        except OSError:
            parts.append(b"")
    except (OSError, IndexError):
        return None
    return b"\0".join(parts)


def unconfined(blob: bytes) -> bool:
    """True when the context shows neither no_new_privs nor a seccomp filter: a process outside any sandbox."""
    fields = dict(line.split(b":", 1) for line in blob.split(b"\0", 1)[0].splitlines() if b":" in line)
    return fields.get(b"NoNewPrivs", b"1").strip() == b"0" and fields.get(b"Seccomp", b"1").strip() == b"0"


def interpreter(path: list[str]) -> dict[str, object]:
    """This interpreter as the server compares it; `path` is the import path without the script's own entry."""
    import sentinel

    return {"executable": sys.executable, "package": list(sentinel.__path__), "path": path,
            "flags": [getattr(sys.flags, name, None) for name in FLAGS], "warnoptions": list(sys.warnoptions),
            "xoptions": {k: str(v) for k, v in sys._xoptions.items()},
            "locale": [os.environ.get(name) for name in LOCALE]}  # with no PYTHONIOENCODING: stdio's encoding


def directory() -> str | None:
    """This user's own directory for warm sockets, or None when there is none to trust."""
    uid = os.geteuid()
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    where = os.path.join(runtime, "sentinel") if os.path.isabs(runtime) else f"/tmp/sentinel-{uid}"
    try:
        os.mkdir(where, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(where)
    except OSError:
        return None
    return where if stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o077 else None


def socket_path(where: str, mine: bytes, interp: dict[str, object]) -> str:
    digest = hashlib.sha256(mine + json.dumps(interp, sort_keys=True).encode()).hexdigest()[:20]
    return os.path.join(where, f"warm-{digest}.sock")


def call(args: list[str]) -> int | None:
    """Run `args` in a warm child and return its exit code; None when this process must run it (cold)."""
    global _wanted
    if not eligible(args):
        return None
    mine = context()
    where = directory()
    if mine is None or not unconfined(mine) or where is None:
        return None
    interp = interpreter(sys.path[1:])
    path = socket_path(where, mine, interp)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(5)
        try:
            sock.connect(unixsock.address(Path(path)))
        except (FileNotFoundError, ConnectionRefusedError):
            _wanted = path
            return None
        except OSError:
            return None
        uid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
        if uid != os.geteuid():
            return None  # not this user's server: nothing is sent to it
        stdio = [fd for fd in (0, 1, 2) if _open(fd)]  # one this process was started without stays closed there
        request = json.dumps({"args": args, "argv0": sys.argv[0], "env": dict(os.environ), "interp": interp,
                              "stdio": [fd in stdio for fd in (0, 1, 2)]},
                             ensure_ascii=False).encode("utf-8", "surrogateescape")
        if len(request) > REQUEST_MAX:
            return None
        try:
            cwd = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            socket.send_fds(sock, [request], [cwd, *stdio])
            reply, fds, _, _ = socket.recv_fds(sock, 4096, 1)
        except OSError:
            return None
        finally:
            os.close(cwd)
        if not reply.startswith(b"started") or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            if reply.startswith(b"refused: stale"):
                _wanted = path
            return None
        sock.settimeout(None)
        try:
            sock.send(b"go")  # from here the command is the child's: this process never runs it too
        except OSError:
            os.close(fds[0])
            return None  # the server is gone; the child, never told to go, ends without running anything
        return _wait(sock, fds[0])
    finally:
        sock.close()


def status(path: str) -> dict[str, int] | None:
    """What the server at `path` says of itself (pid, calls served, children running); None if none answers."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC) as sock:
        sock.settimeout(10)
        try:
            sock.connect(unixsock.address(Path(path)))
            sock.send(b"status")
            answer = json.loads(sock.recv(4096) or b"null")
        except (OSError, ValueError):
            return None
    return answer if isinstance(answer, dict) else None


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def _wait(sock: socket.socket, pidfd: int) -> int:
    """Wait for the child's exit code, passing it the signals this process gets; the caller exits with it."""
    stopped = False

    def forward(signum: int, _frame: object) -> None:
        nonlocal stopped
        if signum == signal.SIGTSTP:  # Ctrl-Z: stop the child (it has no terminal to stop it), then this process
            send_signal(pidfd, signal.SIGSTOP)
            stopped = True
            signal.signal(signal.SIGTSTP, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTSTP)
            signal.signal(signal.SIGTSTP, forward)
        elif signum == signal.SIGCONT:
            if stopped:
                send_signal(pidfd, signal.SIGCONT)
                stopped = False
        else:
            send_signal(pidfd, signum)

    for signum in FORWARDED:
        if signal.getsignal(signum) != signal.SIG_IGN:  # an ignored signal stays ignored: the child ignores it too
            signal.signal(signum, forward)
    try:
        while True:
            message = sock.recv(64)
            if message.startswith(b"exit "):
                code = int(message.split()[1])
                break
            if not message:
                sys.stderr.write("sentinel: the warm server ended before this command did; its exit status is "
                                 "unknown\n")
                code = 1
                break
    finally:
        for signum in FORWARDED:
            if signal.getsignal(signum) == forward:
                signal.signal(signum, signal.SIG_DFL if signum != signal.SIGINT else signal.default_int_handler)
        os.close(pidfd)
    if code < 0:  # ended by a signal: end this process the same way, as the shell expects
        sys.stdout.flush()
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


def send_signal(pidfd: int, signum: int) -> None:
    """Signal the process `pidfd` holds; one that has ended is left alone."""
    try:
        signal.pidfd_send_signal(pidfd, signum)
    except OSError:
        pass  # it has ended


def after_cold() -> None:
    """After a cold run that found no server: start one, detached, for the next call. It never holds this command
    (one fork of /bin/sh); a failure to start it only means the next call runs cold too."""
    global _wanted
    if _wanted is None:
        return
    path, _wanted = _wanted, None
    try:
        from sentinel.detach import detach

        detach("sentinel.cli.warm_server", [path], log=Path(path).with_suffix(".log"))
    except Exception:  # noqa: BLE001 — the command has already done its work; the warm start is an optimisation
        pass

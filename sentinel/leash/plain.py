"""The plain profile: the launches Leash makes without confinement, each from a working directory and with an
environment the agent cannot write.

    env(extra=None, home="/") -> env         the minimal environment: PATH of system directories, HOME, LANG, TERM
    operator_env(environ, extra=None) -> env the operator's own environment without loader variables, for the
                                             operator's own tools (CLI judges, notification commands, compat)
    run(argv, cwd=, env=, ...) -> CompletedProcess      a short job, waited for (timeout: killed, then raised)
    popen(argv, cwd=, env=, ...) -> Popen               a process the caller keeps
    admin(argv) -> CompletedProcess          root's own administration (useradd, systemctl), from /
    check_as(pw, check) -> bool              `check()` run in a forked child as `pw`'s user (uid, gid, groups)

Which launches use it and why they are not confined: docs/leash.md, "The plain profile". Every launch here
gets, whatever its caller passes:

- the environment the caller built, and nothing else: `env` is required and complete (nothing is inherited),
  and a loader variable in it (LD_PRELOAD, PYTHONPATH, NODE_OPTIONS, BASH_ENV, ...; see LOADER_ENV) is
  refused, as is a relative PATH entry (a relative entry means the working directory). The exceptions are
  named by the caller: `python_path`, the directory a caller that starts this install's own interpreter
  imports it from, and `declared`, the variables the operator set on purpose in the command's own
  configuration (an MCP server's `env:`);
- a working directory that is a directory only root and this process's uid can write: resolved, owned by
  root or this uid, no group or other write bit. Anything else is refused (PlainRefused, one line);
  A tool under `leash.tools: plain` is the one launch whose working directory is the agent's (its
  workspace, by definition: `workspace=True`), and only that it is a directory is checked;
- no inherited descriptor but those it names (`pass_fds`), and stdin from /dev/null unless given.

`check_as` is the one other place outside the confinement sequence (sentinel/leash/confine.py) that
changes credentials: a forked child that never execs, drops to the user and reports by its exit code.
"""

from __future__ import annotations

import os
import pwd
import signal
import stat
import subprocess
from typing import IO, Any, Callable, Collection, Mapping, Sequence, Union

from sentinel.leash.errors import LaunchFailed

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
ADMIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Variables that make an interpreter or the loader run code from somewhere else than the executable's own files.
LOADER_ENV = frozenset({"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONINSPECT",
                        "PYTHONBREAKPOINT", "NODE_PATH", "NODE_OPTIONS", "BASH_ENV", "ENV", "PERL5LIB", "PERL5OPT",
                        "PERLLIB", "RUBYLIB", "RUBYOPT", "GCONV_PATH"})
# What a subprocess stream takes: a constant such as subprocess.PIPE, a descriptor or a file.
Stream = Union[int, IO[bytes], IO[str], None]


class PlainRefused(LaunchFailed, OSError):
    """A plain launch whose working directory or environment breaks the profile's rules (an OSError too, so
    a caller that reports a command that failed to start reports this the same way)."""


def loader(name: str) -> bool:
    return name in LOADER_ENV or name.startswith("LD_")


def env(extra: Mapping[str, str] | None = None, home: str = "/", path: str = SAFE_PATH) -> dict[str, str]:
    """The minimal environment: nothing of the caller's but what `extra` names."""
    return {"PATH": path, "HOME": home, "LANG": "C.UTF-8", "TERM": "dumb", "PYTHONSAFEPATH": "1",
            "PYTHONNOUSERSITE": "1", **(extra or {})}


def operator_env(environ: Mapping[str, str], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The operator's own environment (their HOME, logins, proxies: what their own CLI needs) without loader
    variables, PATH with only absolute directories, interpreters kept from their working directory."""
    out = {k: v for k, v in environ.items() if not loader(k)}
    out["PATH"] = ":".join(d for d in environ.get("PATH", SAFE_PATH).split(":") if os.path.isabs(d)) or SAFE_PATH
    return {**out, "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1", **(extra or {})}


def run(argv: Sequence[str], *, cwd: str | os.PathLike[str], env: Mapping[str, str], input: bytes | str | None = None,
        timeout: float | None = None, text: bool = False, stdin: Stream = None, stdout: Stream = subprocess.PIPE,
        stderr: Stream = subprocess.PIPE, python_path: str | None = None, new_session: bool = False,
        workspace: bool = False,
        declared: Collection[str] = ()) -> subprocess.CompletedProcess[Any]:  # untyped: bytes or str by `text`
    """Run to its end (stdout and stderr captured unless told otherwise; stderr=subprocess.STDOUT merges them).
    A timeout or an interrupt kills it (its whole session with `new_session`); subprocess.TimeoutExpired then
    carries what it had written, as with subprocess.run."""
    where, full = _checked(cwd, env, python_path, workspace, declared)
    if input is not None:
        stdin = subprocess.PIPE
    with subprocess.Popen(list(argv), cwd=where, env=full, stdin=subprocess.DEVNULL if stdin is None else stdin,
                          stdout=stdout, stderr=stderr, text=text, close_fds=True,
                          start_new_session=new_session) as proc:
        try:
            got_out, got_err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            _kill(proc.pid, new_session)
            exc.stdout, exc.stderr = proc.communicate()
            raise
        except BaseException:
            _kill(proc.pid, new_session)
            proc.wait()
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, got_out, got_err)


def popen(argv: Sequence[str], *, cwd: str | os.PathLike[str], env: Mapping[str, str], stdin: Stream = None,
          stdout: Stream = None, stderr: Stream = None, text: bool = False, pass_fds: Sequence[int] = (),
          new_session: bool = False, python_path: str | None = None, workspace: bool = False,
          declared: Collection[str] = ()) -> subprocess.Popen[Any]:  # untyped: bytes or str streams by `text`
    """Start it; the caller keeps (waits for, kills) it."""
    where, full = _checked(cwd, env, python_path, workspace, declared)
    return subprocess.Popen(list(argv), cwd=where, env=full, stdin=subprocess.DEVNULL if stdin is None else stdin,
                            stdout=stdout, stderr=stderr, text=text, close_fds=True, pass_fds=tuple(pass_fds),
                            start_new_session=new_session)


def admin(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Root's own administration (useradd, groupadd, userdel, groupdel, systemctl), run to its end from `/`
    with the minimal environment and the system PATH; output captured as text."""
    where, full = _checked("/", env(path=ADMIN_PATH), None, False, ())
    return subprocess.run(list(argv), cwd=where, env=full, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          close_fds=True, check=False)


def check_as(pw: pwd.struct_passwd, check: Callable[[], object]) -> bool:
    """Whether `check()` returns without raising when run as `pw`'s user, with its uid, gid and groups, so
    owners, modes, every directory on the way and any ACL or LSM count. Tried in a forked child that drops
    to the user and reports by its exit code; it never execs and never returns into the caller."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups(os.getgrouplist(pw.pw_name, pw.pw_gid))
            os.setresgid(pw.pw_gid, pw.pw_gid, pw.pw_gid)
            os.setresuid(pw.pw_uid, pw.pw_uid, pw.pw_uid)
            check()
            code = 0
        except BaseException:  # noqa: BLE001 - any failure is "cannot"
            pass
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _checked(cwd: str | os.PathLike[str], env: Mapping[str, str],
             python_path: str | None, workspace: bool, declared: Collection[str]) -> tuple[str, dict[str, str]]:
    if isinstance(env, os._Environ):
        raise PlainRefused("plain launch: pass an explicit environment, not os.environ")
    bad = sorted(k for k in env if loader(k) and k not in declared)
    if bad:
        raise PlainRefused(f"plain launch: the environment names {', '.join(bad)}, which would load code from "
                           "elsewhere; leave it out")
    path = env.get("PATH", "")
    if any(not os.path.isabs(d) for d in path.split(":") if path):
        raise PlainRefused(f"plain launch: PATH {path!r} has a relative entry (the working directory)")
    full = dict(env)
    if python_path is not None:
        full["PYTHONPATH"] = python_path
    return _cwd(cwd, workspace), full


def _cwd(cwd: str | os.PathLike[str], workspace: bool) -> str:
    """The resolved working directory, if only root and this uid can write it (`workspace`: a tool's, which
    is the agent's to write by definition; then only that it is a directory)."""
    real = os.path.realpath(os.fspath(cwd))
    try:
        st = os.stat(real)
    except OSError as exc:
        raise PlainRefused(f"plain launch: working directory {real}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise PlainRefused(f"plain launch: working directory {real} is not a directory")
    if not workspace and (st.st_uid not in (0, os.geteuid()) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        raise PlainRefused(f"plain launch: working directory {real} can be written by others than root and this "
                           f"user (owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o})")
    return real


def _kill(pid: int, group: bool) -> None:
    try:
        (os.killpg if group else os.kill)(pid, signal.SIGKILL)
    except OSError:
        pass

"""A path followed one component at a time, each link where the kernel follows it: Leash's grants and the gate's
landings share this walk.

    follow(path, past_missing) -> Walked    .real, .links (each link followed, in order), .missing, .looped, .proc,
                                            .unnamed
    open_beneath(root, path, flags) -> fd   no link followed below root (what writes where the agent writes too)
    replace_beneath(root, path, data)       the same, a whole file renamed into place

`..` after a link applies to the link's target, as in the kernel and `os.path.realpath`. A component that is not
there (or cannot be looked at) ends the walk when `past_missing` is false: Leash grants nothing through a path
until it exists, and takes the rest as written. With `past_missing` the walk goes on as realpath does (a missing
directory is a name, and `missing/../here` is `here`), which is where `mkdir -p missing/../here/x` writes.

`.proc` tells that the walk passed through /proc or /dev/fd, whose links (`/proc/self/cwd`, `/dev/fd/3`,
`/proc/PID/root`) name what they name for the process that opens them, not for the one walking.

`.unnamed` tells that some component is a name no file system call can take (a lone surrogate, which a JSON
payload can carry and no encoding turns into bytes; a NUL): the walk cannot look at it, goes on as past a missing
part, and where the path leads is for the process that spells it in bytes its own way, not known here. Such a
path never raises.

Imports nothing but `os` and `errno`: the hook, which lands every file write, pays its start for each import.
"""

from __future__ import annotations

import errno
import os

MAX_LINKS = 40  # as the kernel's own limit (ELOOP)
_PER_PROCESS = (("/", "proc"), ("/dev", "fd"))


class Walked:
    __slots__ = ("real", "links", "missing", "looped", "proc", "unnamed")

    def __init__(self, real: str, links: list[str], missing: bool, looped: bool, proc: bool, unnamed: bool = False):
        self.real = real        # the path with every link followed (the rest as written after a missing part)
        self.links = links      # each link followed, in order, as the path it was found at
        self.missing = missing  # some component was not there
        self.looped = looped    # more than MAX_LINKS links: the kernel would refuse it (ELOOP)
        self.proc = proc        # the walk passed through /proc or /dev/fd
        self.unnamed = unnamed  # some component cannot be given to the kernel: where it leads is not known

    def __repr__(self) -> str:
        return f"Walked({self.real!r}, links={self.links!r}, missing={self.missing}, looped={self.looped})"


def follow(path: str, past_missing: bool) -> Walked:
    """`path`, relative to this process's directory unless absolute, followed component by component."""
    pending = (path if path.startswith("/") else os.path.join(os.getcwd(), path)).split("/")
    pending.reverse()  # popped from the end: a link's target is pushed back in front of the rest
    done, links, missing, proc, unnamed = "/", list[str](), False, False, False
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            done = os.path.dirname(done)
            continue
        if (done, part) in _PER_PROCESS:
            proc = True
        here = os.path.join(done, part)
        try:
            target = os.readlink(here)
        except (OSError, ValueError) as exc:
            # a ValueError is a name no system call takes: UnicodeEncodeError (a lone surrogate), or a NUL
            unnamed = unnamed or isinstance(exc, ValueError)
            if isinstance(exc, ValueError) or exc.errno != errno.EINVAL:  # not there, or not to be looked at
                missing = True
                if not past_missing:
                    pending.reverse()
                    return Walked(os.path.normpath(os.path.join(here, *pending)), links, True, False, proc, unnamed)
            done = here  # a file or directory that is not a link, or (past_missing) a name taken as it is
            continue
        links.append(here)
        if len(links) > MAX_LINKS:
            pending.reverse()
            return Walked(os.path.normpath(os.path.join(here, *pending)), links, missing, True, proc, unnamed)
        done = "/" if target.startswith("/") else done
        pending.extend(reversed(target.split("/")))
    return Walked(done, links, missing, False, proc, unnamed)


def open_beneath(root: str | None, path: str, flags: int, mode: int = 0o644) -> int:
    """Open `path` (absolute, or relative to `root`) following no symbolic link below `root`: each directory from
    `root` down is opened with O_NOFOLLOW (made, 0o755, when `flags` has O_CREAT) and so is the file. For what
    writes into a directory the agent can write too (a repository's `.sentinel/`, `.claude/sentinel/`): a link
    the agent put there makes the open fail (OSError) instead of writing where it points. A path outside `root`
    is refused; `root` None opens `path` as it is (its directories made)."""
    if root is None:
        if flags & os.O_CREAT:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        return os.open(path, flags | os.O_CLOEXEC, mode)
    folder, name = _folder_beneath(root, path, bool(flags & os.O_CREAT))
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
    finally:
        os.close(folder)


def replace_beneath(root: str | None, path: str, data: bytes, mode: int = 0o644) -> None:
    """Write `path` whole (a new file renamed over it), as open_beneath opens: no link followed below `root`."""
    if root is None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        folder, name = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), \
            os.path.basename(path)
    else:
        folder, name = _folder_beneath(root, path, True)
    tmp = f".{name}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError:
        try:
            os.unlink(tmp, dir_fd=folder)
        except OSError:
            pass
        raise
    finally:
        os.close(folder)


def _folder_beneath(root: str, path: str, make: bool) -> tuple[int, str]:
    """A descriptor of `path`'s directory reached from `root` through no link, and the file's name."""
    base = os.path.normpath(root)
    full = os.path.normpath(path if path.startswith("/") else os.path.join(base, path))
    rel = os.path.relpath(full, base)
    if rel in (".", "..") or rel.startswith("../"):
        raise PermissionError(errno.EACCES, "outside the directory it must stay in", path)
    *parts, name = rel.split("/")
    folder = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            try:
                step = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
            except FileNotFoundError:
                if not make:
                    raise
                try:
                    os.mkdir(part, 0o755, dir_fd=folder)
                except FileExistsError:
                    pass
                step = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
            os.close(folder)
            folder = step
    except BaseException:
        os.close(folder)
        raise
    return folder, name

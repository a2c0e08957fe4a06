"""Where a file write lands: the path resolved as the kernel will resolve it, never the path as text.

    land(root, path) -> Landing     .path: relative to the real root (absolute when outside it), .inside, .lexical
    bind(args, root) -> args        a file tool's arguments with `path` replaced by where it lands

Every symlink is followed the way open(O_CREAT) follows it (sentinel/pathwalk.py, the walk Leash's grants
use too): a symlinked parent directory, a final symlink (dangling ones too: the write creates their target),
and `..` applied after the link before it. Decisions scope on `Landing.path`; Sentinel's own file tools then
write exactly that path with no symlink allowed on the way (sentinel/tools/fs.py), so a link swapped in after the decision makes
the write fail instead of landing elsewhere.

A path through /proc or /dev/fd (`/proc/self/cwd/x`, or a link to one) names what it names for the
process that opens it, not for the one deciding: it lands anywhere (`others` is None). So does a path with a
name no system call takes (a lone surrogate from a JSON payload): each client spells it in bytes its own way.

A file with hard links has several names and no "real" one: a write to any name writes them all.
`Landing.others` lists the other names found under the root (a bounded walk, only for such a file),
or is None when some could not be found (a name outside the root, or a tree too large to walk);
decisions scope on those names too, or treat the write as landing anywhere. Sentinel's own file
tools never write through a hard link: they replace the name they were asked to write.
"""

from __future__ import annotations

import os
import stat

from sentinel.pathwalk import follow

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook imports this module: no `typing` at run time
    from sentinel.jsontypes import JSONObject


# the process's own output and the null device: `> /dev/stderr` writes no file (a redirection of fd 1 or 2 to a
# file is a write of its own, seen where it is made)
STREAMS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2",
                     "/proc/self/fd/1", "/proc/self/fd/2"})
WALK_MAX = 50_000  # directory entries looked at for the other names of a hard-linked file


class Landing:
    __slots__ = ("path", "inside", "lexical", "others")

    def __init__(self, path: str, inside: bool, lexical: str, others: "tuple[str, ...] | None" = ()):
        self.path = path          # where the write lands: relative to the real root, or absolute outside it
        self.inside = inside
        self.lexical = lexical    # the path as written, normalised as text (what scoping used to see)
        self.others = others      # the file's other names (hard links) under the root; None: not all found

    @property
    def via_link(self) -> bool:
        return self.path != self.lexical

    def __repr__(self) -> str:
        return f"Landing({self.path!r}, inside={self.inside}, lexical={self.lexical!r})"


def land(root: str, path: str) -> Landing:
    full = path if os.path.isabs(path) else os.path.join(root, path)
    lexical = _relative(os.path.normpath(full), os.path.normpath(root))
    real_root = follow(root, past_missing=True).real
    walked = follow(full, past_missing=True)
    rel = _relative(walked.real, real_root)
    anywhere = (walked.proc or walked.looped or walked.unnamed) and os.path.normpath(full) not in STREAMS
    return Landing(rel, not os.path.isabs(rel), lexical, None if anywhere else _other_names(real_root, walked.real))


def _other_names(real_root: str, real: str) -> "tuple[str, ...] | None":
    """The other names of the regular file at `real` under the root, when it has hard links; None when not all
    of them are there (or the walk stopped at WALK_MAX entries)."""
    try:
        st = os.stat(real)
    except OSError:
        return ()
    if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
        return ()
    found: list[str] = []
    seen = 0
    for top, dirs, files in os.walk(real_root):
        seen += len(dirs) + len(files)
        if seen > WALK_MAX:
            return None
        for name in files:
            full = os.path.join(top, name)
            if full == real:
                continue
            try:
                other = os.stat(full, follow_symlinks=False)
            except OSError:
                continue
            if other.st_ino == st.st_ino and other.st_dev == st.st_dev:
                found.append(_relative(full, real_root))
                if len(found) == st.st_nlink - 1:
                    return tuple(sorted(found))
    return None


def _relative(path: str, root: str) -> str:
    rel = os.path.relpath(path, root)
    if rel == ".." or rel.startswith(".." + os.sep):
        return path
    return rel.replace(os.sep, "/")


def bind(args: JSONObject, root: str) -> JSONObject:
    """`path` replaced by where it lands when a symlink redirects it inside the root; unchanged otherwise
    (a path outside is the policy's to deny and the tool's to refuse)."""
    path = args.get("path")
    if not isinstance(path, str) or not path or "\x00" in path:
        return args
    landing = land(root, path)
    if not landing.inside or not landing.via_link:
        return args
    return {**args, "path": landing.path}

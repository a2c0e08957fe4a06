"""Where a file write lands: the path resolved as the kernel will resolve it, never the path as text.

    land(root, path) -> Landing     .path: relative to the real root (absolute when outside it), .inside, .lexical
    bind(args, root) -> args        a file tool's arguments with `path` replaced by where it lands

Every symlink is followed the way open(O_CREAT) follows it: a symlinked parent directory, a final
symlink (dangling ones too: the write creates their target), and `..` applied after the link before
it. Decisions scope on `Landing.path`; Sentinel's own file tools then write exactly that path with
no symlink allowed on the way (sentinel/tools/fs.py), so a link swapped in after the decision makes
the write fail instead of landing elsewhere.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook imports this module: no `typing` at run time
    from sentinel.jsontypes import JSONObject


class Landing:
    __slots__ = ("path", "inside", "lexical")

    def __init__(self, path: str, inside: bool, lexical: str):
        self.path = path          # where the write lands: relative to the real root, or absolute outside it
        self.inside = inside
        self.lexical = lexical    # the path as written, normalised as text (what scoping used to see)

    @property
    def via_link(self) -> bool:
        return self.path != self.lexical

    def __repr__(self) -> str:
        return f"Landing({self.path!r}, inside={self.inside}, lexical={self.lexical!r})"


def land(root: str, path: str) -> Landing:
    full = path if os.path.isabs(path) else os.path.join(root, path)
    lexical = _relative(os.path.normpath(full), os.path.normpath(root))
    real_root = os.path.realpath(root)
    real = os.path.realpath(full)
    rel = _relative(real, real_root)
    return Landing(rel, not os.path.isabs(rel), lexical)


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

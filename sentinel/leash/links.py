"""Resolving the paths a sandbox grants, following a link only where the agent cannot have made it.

Landlock rules are built from paths, so a granted path that reaches its directory through a link grants the link's
target. Every profile (sentinel/leash/profile.py) and every place that takes a path an agent's run will be granted
(a run's workspace, `leash exec --workspace`) resolves it here; the ruleset then opens the result with no link in
it at all (sentinel/leash/lsm.py `open_exact`). Kept apart from profile.py so that a run's start, which resolves
its workspace, imports none of the sandbox's layers. docs/leash.md, Links never widen a grant.
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from sentinel.errors import UsageError
from sentinel.pathwalk import follow


@dataclass(frozen=True)
class Owner:
    """An agent's own user (system mode): a link it could have made or replaced, by the file permissions, is not
    followed either, wherever it lies (a workspace of an earlier run, its home)."""

    uid: int
    gids: tuple[int, ...]

    @classmethod
    def of(cls, pw: pwd.struct_passwd) -> Owner:
        return cls(pw.pw_uid, tuple(sorted(set(os.getgrouplist(pw.pw_name, pw.pw_gid)))))

    def could_change(self, link: str) -> bool:
        try:
            link_st, folder = os.lstat(link), os.lstat(os.path.dirname(link))
        except OSError:  # gone since the walk: changed under us, so someone could
            return True
        if link_st.st_uid == self.uid or folder.st_uid == self.uid:
            return True
        writable = folder.st_mode & stat.S_IWOTH or (folder.st_mode & stat.S_IWGRP and folder.st_gid in self.gids)
        return bool(writable) and not folder.st_mode & stat.S_ISVTX  # sticky: only the link's owner replaces it


def resolve(path: str | Path, untrusted: Sequence[str] = (), owner: Owner | None = None) -> str:
    """The real path of a path a profile grants, following a link only where the agent cannot have made it.
    A link that lies in a directory inside `untrusted` (the real paths the agent's tools may write: its
    workspace and the policy's `read_write`), or, in system mode, one the agent's user could have made or
    replaced (`owner`), is refused, never followed: otherwise an agent that replaced, say, its workspace's
    `vendor/` with a link to `/` would be granted `/` by the next launch that grants `vendor/` (rules are
    built from paths). Links elsewhere (`/lib`, an operator's link to a project) are followed. The ruleset
    then opens the result with no link at all (sentinel/leash/lsm.py `open_exact`), so a link put in
    afterwards grants nothing."""
    return checked(path, walk(path), untrusted, owner)


def checked(path: str | Path, walked: tuple[str, list[str]], untrusted: Sequence[str], owner: Owner | None) -> str:
    """The real path of a `walk` of `path`, once each link it followed passed `check`."""
    real, followed = walked
    for here in followed:
        check(path, here, untrusted, owner)
    return real


def walk(path: str | Path) -> tuple[str, list[str]]:
    """The real path, and each link followed on the way to it, in order (each is then checked: `check`). A part
    that is not there (yet) ends the walk: the rest is taken as written, and grants nothing until it exists."""
    walked = follow(os.path.expanduser(str(path)), past_missing=False)
    if walked.looped:
        raise UsageError(f"leash: {path}: too many levels of links")
    return walked.real, walked.links


def check(path: str | Path, link: str, untrusted: Sequence[str], owner: Owner | None) -> None:
    folder = os.path.dirname(link)
    if roots := [root for root in untrusted if _inside(folder, root)]:
        raise LinkRefused(f"leash: {path} goes through the link {link}, inside {roots[0]}, which the agent's "
                          "tools can write; Sentinel follows no link there (name the link's target instead)")
    if owner is not None and owner.could_change(link):
        raise LinkRefused(f"leash: {path} goes through the link {link}, which the agent's user can change; "
                          "Sentinel follows no such link (name the link's target instead)")


def resolve_all(paths: Sequence[str | Path], untrusted: Sequence[str], owner: Owner | None = None) -> list[str]:
    return [resolve(p, untrusted, owner) for p in paths]


def agent_writable(write: Sequence[str | Path], owner: Owner | None = None) -> list[str]:
    """The real paths the agent's tools may write (`write` as granted), each checked against the others: a
    grant reached through a link inside another grant is refused."""
    walks = [walk(p) for p in write]
    real = [r for r, _ in walks]
    for path, walked in zip(write, walks):
        checked(path, walked, real, owner)
    return real


def workspace(path: str | Path, untrusted: Sequence[str] = (), owner: Owner | None = None) -> str:
    """A run's workspace, `resolve`d; a refused link is a usage error of `--workspace`."""
    try:
        return resolve(path, untrusted, owner)
    except LinkRefused as exc:
        raise UsageError(f"--workspace: {str(exc).removeprefix('leash: ')}") from None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class LinkRefused(UsageError):
    """A granted path goes through a link the agent's tools could have made."""

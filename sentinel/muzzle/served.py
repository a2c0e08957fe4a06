"""Which in-process models a Muzzle may serve, and from which file: a check of the name alone.

A model name comes from the caller (a token may allow globs), so a name never chooses a file:

    scripted/<script>    refused unless the operator's config says `muzzle.scripted: true` (tests, demos)
    local/<name>         a packaged model, or a GGUF the operator listed in `muzzle.local_models`
    local/<path>.gguf    only when the path is one listed in `muzzle.local_models` (compared as text)

The check opens, stats and resolves nothing, and its refusal reads the same whatever exists on
disk, so it is no existence oracle; reading a script or loading a model happens afterwards, on a
worker thread (sentinel.muzzle.upstream).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sentinel.muzzle.errors import MuzzleError

if TYPE_CHECKING:
    from sentinel.muzzle.settings import MuzzleSettings


def served_file(provider: str, model: str, settings: "MuzzleSettings") -> Path | None:
    """The file in-process model `provider/model` is served from; None for a packaged model (found by
    name) or a script (only when scripts are on). Raises 404 `model_not_found` for a name not served."""
    name = f"{provider}/{model}"
    if provider == "scripted":
        if not settings.scripted:
            raise MuzzleError(404, "model_not_found", f"model {name!r}: scripted models are off in this Muzzle "
                                                      "(for tests and demos the operator's config sets "
                                                      "`muzzle: {scripted: true}`)")
        return None
    listed = settings.local_models.get(model)
    if listed is not None:
        return Path(listed).expanduser()
    if not _is_path(model):
        return None
    for path in settings.local_models.values():
        if _same_path(path, model):
            return Path(path).expanduser()
    raise MuzzleError(404, "model_not_found", f"model {name!r}: Muzzle serves a local model file only when "
                                              "the operator's config lists it (`muzzle: {local_models: "
                                              "{NAME: /path/model.gguf}}`), as local/NAME")


def _is_path(model: str) -> bool:
    return model.endswith(".gguf") or "/" in model or "\\" in model or model.startswith(("~", "."))


def _same_path(listed: str, asked: str) -> bool:
    """Text only: `asked` is never expanded (`~user` would read the user database)."""
    asked = os.path.normpath(asked)
    return asked in (os.path.normpath(listed), os.path.normpath(os.path.expanduser(listed)))

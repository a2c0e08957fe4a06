"""Loading the gate: config + rules for a repository (hooks) or for $SENTINEL_HOME (Sentinel's runs).

    find_repo(start)            the nearest directory upward holding .claude/sentinel/
    load_repo(root)             Bundle for a repository, through a JSON cache
    load_bare(cwd)              Bundle for a call in no repository: the built-in `own` rule alone
    load_home(home, settings)   Bundle for Sentinel's own runs

A bad rule file is skipped with a one-line error in `Bundle.errors`; the other rules
still load. A bad config.yaml sets `Bundle.config_error` (the hook fails open on it,
the repository's rules off but the built-in `own` rule on, unless the file says `fail_open: false`).

A repository chooses its rules, judges and models, but never a program the hook runs nor a credential it sends:
`backends.<name>.command` and `.api_key_env` in a repository's config are dropped with a warning. A backend the
user's own `$SENTINEL_HOME/config.yaml` names under `gate.backends` is added when the repository does not name it,
and wins whole (url, key and command; the repository may still choose the model) when it sets a key or a command. Otherwise a cloned repository would run its own executable, or send the
user's API key to its own URL, on the first tool call a rule judges. Everything the hook writes in the
repository (log, cache, sessions, locks, drafts) follows no link there and stays inside it
(sentinel/pathwalk.py `open_beneath`): a `log_file` outside it is not written, with a warning.

The cache (`.sentinel/cache/gate.json`) holds the validated config dump and every rule
with its scope already translated to regexes, keyed by the mtime and size of every
file it came from: a hook call with a warm cache imports neither yaml, pydantic nor
wcmatch.
"""

from __future__ import annotations

import json
import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import TypedDict

    from sentinel.jsontypes import JSON
    from sentinel.policy.gate.dump import CacheDump, RuleDump
    from sentinel.policy.settings import GateDump

    class DefaultsDump(TypedDict):
        """The default config's cache (`load_bare`)."""
        stamp: list[object]
        config: GateDump

from sentinel.policy.gate.config import GateConfig, GatePaths, home_paths, repo_paths
from sentinel.policy.gate.rules import Rule

CACHE_VERSION = 4
RULE_SUFFIXES = (".yaml", ".yml")
SETTINGS_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "settings.py")


class Bundle:
    """Everything one gate evaluation needs."""

    def __init__(self, config: GateDump, rules: list[Rule], paths: GatePaths, errors: list[str],
                 warnings: list[str] | None = None, config_error: str | None = None, strict_on_error: bool = False):
        self.config = GateConfig(config)
        self.rules = rules
        self.paths = paths
        self.errors = errors
        self.warnings = warnings or []
        self.config_error = config_error
        self.strict_on_error = strict_on_error
        self.own: Rule | None = None  # a repository's: the built-in rule the hook adds (sentinel.policy.gate.own)

    def without_rules(self) -> Bundle:
        """This bundle with none of the repository's rules: what a config error that fails open leaves (the
        built-in rule `own` stays)."""
        bare = Bundle.__new__(Bundle)
        bare.__dict__.update(self.__dict__, rules=[])
        return bare


def find_repo(start: str) -> str | None:
    current = os.path.abspath(start or ".")
    while True:
        if os.path.isdir(os.path.join(current, ".claude", "sentinel")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _stat(path: str) -> list[object]:
    try:
        st = os.stat(path)
    except OSError:
        return [path, 0, -1]
    return [path, st.st_mtime_ns, st.st_size]


def rule_files(rules_dir: str) -> list[str]:
    try:
        names = sorted(n for n in os.listdir(rules_dir) if n.endswith(RULE_SUFFIXES) and not n.startswith("."))
    except OSError:
        return []
    return [os.path.join(rules_dir, n) for n in names]


def user_config_file() -> str:
    """The user's own config ($SENTINEL_HOME/config.yaml): where a judge's program and credential are chosen."""
    home = os.environ.get("SENTINEL_HOME") or os.path.join(os.path.expanduser("~"), ".sentinel")
    return os.path.join(os.path.expanduser(home), "config.yaml")


def stamp(config_file: str, rules_dirs: list[str]) -> list[object]:
    from sentinel import __version__

    out: list[object] = [CACHE_VERSION, __version__, _stat(config_file), _stat(user_config_file())]
    for d in rules_dirs:
        out.append(_stat(d))
        out.extend(_stat(f) for f in rule_files(d))
    return out


# -- compiling (cold path: yaml, pydantic, wcmatch) ----------------------------------------


def _settings(data: JSON, path: str) -> GateDump:
    from sentinel.errors import validated
    from sentinel.policy.settings import GateSettings

    return validated(GateSettings, {} if data is None else data, path).dump()


def default_settings() -> GateDump:
    return _settings({}, "(defaults)")


def compile_rules(rules_dirs: list[str]) -> tuple[list[RuleDump], list[str], list[str]]:
    """Every rule file of the directories; a bad one becomes an error line and is skipped."""
    from sentinel.errors import ConfigError
    from sentinel.policy.gate.schema import load_rule

    rules: list[RuleDump] = []
    errors: list[str] = []
    warnings: list[str] = []
    seen: dict[str, str] = {}
    for d in rules_dirs:
        for path in rule_files(d):
            try:
                rule = load_rule(_path(path))
            except ConfigError as exc:
                errors.append(str(exc))
                continue
            if rule["id"] in seen:
                errors.append(f"{path}: id: {rule['id']!r} is already defined in {seen[rule['id']]}")
                continue
            seen[rule["id"]] = path
            warnings.extend(rule.pop("warnings", []))
            rules.append(rule)
    return rules, errors, warnings


def _path(p: str) -> Path:
    from pathlib import Path

    return Path(p)


def compile_repo(root: str) -> CacheDump:
    """The JSON-able bundle of a repository, validated from its files."""
    from sentinel.config import read_yaml
    from sentinel.errors import ConfigError

    config_file = os.path.join(root, ".claude", "sentinel", "config.yaml")
    raw: JSON = None
    config_error = None
    held: list[str] = []
    try:
        raw = read_yaml(_path(config_file)) if os.path.exists(config_file) else {}
        cfg = _settings(_users_backends(raw, config_file, held), config_file)
    except ConfigError as exc:
        config_error = str(exc)
        cfg = default_settings()
    paths = repo_paths(root, cfg)
    log = paths.log_file
    rel = log and os.path.relpath(os.path.normpath(log), os.path.normpath(root))
    if rel and (rel == ".." or rel.startswith("../")):  # as pathwalk.open_beneath refuses it
        held.append(f"{config_file}: log_file: {cfg.get('log_file')} is outside the repository; a repository's "
                    "log is written only inside it (nothing is logged)")
    rules, errors, warnings = compile_rules(paths.rules_dirs)
    warnings = held + warnings
    strict = isinstance(raw, dict) and raw.get("fail_open") is False
    return {"stamp": stamp(config_file, paths.rules_dirs), "config": cfg, "rules": rules, "errors": errors,
            "warnings": warnings, "paths": paths.to_dict(), "config_error": config_error, "strict": strict}


HELD = {"command": "a program the hook runs", "api_key_env": "a credential the hook sends"}


def _users_backends(raw: JSON, config_file: str, held: list[str]) -> JSON:
    """A repository's config with what only the user chooses taken from the user's config (module docstring);
    a line in `held` for each field of the repository's that was dropped."""
    given = raw.get("backends") if isinstance(raw, dict) else None
    backends: dict[str, JSON] = dict(given) if isinstance(given, dict) else {}
    for name, entry in list(backends.items()):
        if not isinstance(entry, dict):
            continue  # validation names it
        kept = dict(entry)
        for field, what in HELD.items():
            if kept.pop(field, None) is not None:
                held.append(f"{config_file}: backends.{name}.{field}: a repository cannot choose {what}; set it in "
                            f"{user_config_file()} under gate.backends.{name}")
        backends[name] = kept
    for name, mine in _user_gate_backends().items():
        theirs = backends.get(name)
        if not isinstance(theirs, dict):
            backends[name] = mine
        elif mine.get("api_key_env") or mine.get("command"):  # the user's binding of a key or program: whole
            model = theirs.get("model")
            backends[name] = {**mine, **({"model": model} if model and not mine.get("model") else {})}
    if not backends:
        return raw
    return {**(raw if isinstance(raw, dict) else {}), "backends": backends}


def _user_gate_backends() -> dict[str, dict[str, JSON]]:
    """`gate.backends` of the user's own config, each entry's url, model, api_key_env and command as written
    (validated with the repository's config); nothing when the file is missing or unreadable."""
    from sentinel.config import read_yaml
    from sentinel.errors import ConfigError

    path = user_config_file()
    try:
        data = read_yaml(_path(path)) if os.path.exists(path) else None
    except ConfigError:
        return {}
    gate = data.get("gate") if isinstance(data, dict) else None
    found = gate.get("backends") if isinstance(gate, dict) else None
    if not isinstance(found, dict):
        return {}
    return {str(name): {k: v for k, v in entry.items() if k in ("url", "model", "api_key_env", "command")}
            for name, entry in found.items() if isinstance(entry, dict)}


def _bundle(data: CacheDump) -> Bundle:
    return Bundle(data["config"], [Rule(r) for r in data["rules"]], GatePaths.from_dict(data["paths"]),
                  data["errors"], data.get("warnings"), data.get("config_error"), bool(data.get("strict")))


# -- the cache (hot path: json and os only) --------------------------------------------------


def _read_cache(root: str) -> CacheDump | None:
    """The cache _write_cache wrote, when its stamp says every file it came from is unchanged."""
    path = os.path.join(root, ".sentinel", "cache", "gate.json")
    try:
        with open(path, encoding="utf-8") as fh:
            data: CacheDump = json.load(fh)  # our own file: its shape is the one written, its stamp is checked
    except (OSError, ValueError):
        return None
    config_file = os.path.join(root, ".claude", "sentinel", "config.yaml")
    try:
        if data["stamp"] != stamp(config_file, data["paths"]["rules_dirs"]):
            return None
    except (KeyError, TypeError):
        return None
    return data


def _write_cache(root: str, data: CacheDump) -> None:
    """Written following no link in the repository (the agent could have put one in `.sentinel/`)."""
    from sentinel.pathwalk import replace_beneath

    try:
        replace_beneath(root, os.path.join(root, ".sentinel", "cache", "gate.json"), json.dumps(data).encode())
    except OSError:
        pass


def load_repo(root: str, *, use_cache: bool = True) -> Bundle:
    data = _read_cache(root) if use_cache else None
    if data is None:
        data = compile_repo(root)
        if use_cache:
            _write_cache(root, data)
    from sentinel.policy.gate.own import own_rule

    bundle = _bundle(data)
    bundle.own = Rule(own_rule(root))  # made here each time: never read from the cache the agent can write
    return bundle


def load_bare(cwd: str) -> Bundle:
    """A call in no repository: no rules but the built-in `own` one (a client's user-level hook settings and
    Sentinel's home are the gate's all the same), relative paths taken from `cwd`, where the call runs. Nothing
    is written there (no telemetry): it is no repository. The default config comes from a cache in Sentinel's
    home, so this path, which every call of a user-level hook outside a repository takes, imports no pydantic."""
    from sentinel.policy.gate.own import own_rule

    config = _defaults()
    paths = repo_paths(cwd, config)
    paths.log_file = None
    bundle = Bundle(config, [], paths, [])
    bundle.own = Rule(own_rule(cwd))
    return bundle


def _defaults() -> GateDump:
    """The default config dump, cached in `$SENTINEL_HOME/gate/cache/defaults.json` under the package's version
    and the settings module's stamp (a checkout's edit of the defaults is seen); a home that cannot be written
    only makes each call validate them again."""
    from sentinel import __version__

    path = os.path.join(os.path.dirname(user_config_file()), "gate", "cache", "defaults.json")
    key: list[object] = [CACHE_VERSION, __version__, _stat(SETTINGS_FILE)]
    try:
        with open(path, encoding="utf-8") as fh:
            data: DefaultsDump = json.load(fh)  # our own file: its shape is the one written, its stamp is checked
        if data["stamp"] == key:
            return data["config"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    config = default_settings()
    from sentinel.pathwalk import replace_beneath

    try:
        replace_beneath(None, path, json.dumps({"stamp": key, "config": config}).encode())
    except OSError:
        pass
    return config


def system_rules_dir(path: str = "/etc/sentinel/rules") -> str | None:
    """The operator's rules for every run on this machine, when the directory exists and root owns it:
    a system-mode worker runs as its unprivileged agent and must still obey them."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return path if st.st_uid == 0 and os.path.isdir(path) else None


def load_home(home: str, settings: GateDump, system_rules: str | None = None) -> Bundle:
    """Sentinel's own runs: rules of $SENTINEL_HOME (after /etc/sentinel/rules); /etc ids win."""
    paths = home_paths(home, settings, system_rules)
    rules, errors, warnings = compile_rules(paths.rules_dirs)
    return Bundle(settings, [Rule(r) for r in rules], paths, errors, warnings)

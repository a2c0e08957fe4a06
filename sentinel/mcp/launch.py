"""What a stdio MCP server runs and where: its resolved command, its own directory and environment, and the code
files a pin covers.

    resolve(argv, base=None) -> argv     absolute executable, `npx PKG` as node + the package's bin file, a
                                         relative script against `base` (the operator's directory at `mcp add`);
                                         without a base a relative path is refused
    workdir(name, server) -> Path        its working directory and HOME: never the workspace
    environment(server, home) -> env     interpreter settings that ignore the working directory
    with_workspace(argv, env, ws)        `{workspace}` in the arguments, SENTINEL_WORKSPACE: the run's workspace
    Command.of(argv)                     which interpreter runs which script or module
    manifest(...) -> {executable, argv, cwd, env, files: {path: sha256}}   what the pin covers
    agent_writable(path, roots, uid)     could the agent rewrite this file (so its hash would prove nothing)?
    which(name, environ) -> path         for commands that keep the operator's own environment (CLI judges,
                                         notification commands; the environment: sentinel/leash/plain.py)
    trusted(argv, home, workspace=None, env=None) -> (argv, env)   any operator-configured command (watchers,
                                         delivery and notification targets, CLI judges) made ready the same
                                         way: resolved argv, a minimal environment whose HOME and PWD are `home`

A server started from the agent's workspace loads what the agent wrote there: `python -m mod` imports a
`mod.py` in its working directory first, `npx PKG` runs `./node_modules/.bin/PKG` first and a relative script
resolves in the workspace. So a server starts in a per-server directory the agent cannot write, with
PYTHONSAFEPATH/PYTHONNOUSERSITE set and NODE_PATH/NODE_OPTIONS/PYTHONPATH left out of the base environment,
from an absolute executable found on a PATH of root-owned directories, and `npx` is never run: its package is
found among the installed ones (npm's global root) and node runs the package's bin file directly.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sentinel.errors import UsageError
from sentinel.jsontypes import JSON, JSONObject
from sentinel.mcp.settings import McpServer

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)?)?$")
NODE = {"node", "nodejs"}
NPX = "npx"
PY_VALUE_OPTIONS = {"-W", "-X", "--check-hash-based-pycs"}
NODE_VALUE_OPTIONS = {"-r", "--require", "--import", "--loader", "--experimental-loader", "--conditions", "-C"}
WORKSPACE = "{workspace}"
FILES_MAX = 20000  # a package with more files than this is refused rather than hashed at every start


@dataclass(frozen=True)
class Command:
    """An argv, read as the interpreter will read it: `kind` python, node or binary; its script or module."""

    argv: list[str]
    kind: str
    script: str | None = None   # the file the interpreter runs (python/node)
    module: str | None = None   # python -m
    script_at: int | None = None

    @classmethod
    def of(cls, argv: list[str]) -> "Command":
        name = os.path.basename(argv[0])
        if PYTHON.match(name):
            return _python(argv)
        if name in NODE:
            return _node(argv)
        return cls(argv, "binary")


def _python(argv: list[str]) -> Command:
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m" or (arg.startswith("-m") and len(arg) > 2):
            return Command(argv, "python", module=argv[i + 1] if arg == "-m" and i + 1 < len(argv) else arg[2:])
        if arg == "-c" or arg == "-":
            return Command(argv, "python")
        if arg in PY_VALUE_OPTIONS:
            i += 2
            continue
        if not arg.startswith("-"):
            return Command(argv, "python", script=arg, script_at=i)
        i += 1
    return Command(argv, "python")


def _node(argv: list[str]) -> Command:
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("-e", "--eval", "-p", "--print", "-"):
            return Command(argv, "node")
        if arg in NODE_VALUE_OPTIONS:
            i += 2
            continue
        if not arg.startswith("-"):
            return Command(argv, "node", script=arg, script_at=i)
        i += 1
    return Command(argv, "node")


# -- resolving the command ------------------------------------------------------------------------------------

def resolve(argv: list[str], base: Path | None = None, environ: dict[str, str] | None = None) -> list[str]:
    """The command with an absolute executable and script; `npx [-y] PKG ARGS` becomes `node BIN ARGS`.
    UsageError (one line, naming what) for anything missing or relative without a base."""
    if not argv:
        raise UsageError("the command is empty")
    exe = executable(argv[0], base)
    if os.path.basename(exe) == NPX:
        return _npx(argv[1:], base, environ if environ is not None else dict(os.environ))
    cmd = Command.of([exe, *argv[1:]])
    out = list(cmd.argv)
    if cmd.script is not None and cmd.script_at is not None:
        out[cmd.script_at] = _file(cmd.script, base, "script")
    return out


def executable(name: str, base: Path | None) -> str:
    """An absolute path to an executable file: `name` as given when it has a '/', else found on SAFE_PATH."""
    if "/" in name:
        return _file(name, base, "executable", need_exec=True)
    for folder in SAFE_PATH.split(":"):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    hint = " (Debian and Ubuntu have no `python`: use `python3`, or a virtualenv's bin/python)" \
        if name == "python" else ""
    raise UsageError(f"executable {name!r} not found on {SAFE_PATH}{hint}; give its absolute path")


def _file(path: str, base: Path | None, what: str, need_exec: bool = False) -> str:
    if not os.path.isabs(path):
        if base is None:
            raise UsageError(f"its {what} {path!r} is a relative path; give an absolute one (`sentinel mcp add` "
                             "resolves a relative one against the directory you run it from)")
        path = os.path.join(base, path)
    path = os.path.abspath(path)
    if not os.path.isfile(path) or (need_exec and not os.access(path, os.X_OK)):
        kind = "executable file" if need_exec else "file"
        raise UsageError(f"its {what} {path} is not an existing {kind}")
    return path


def _npx(args: list[str], base: Path | None, environ: dict[str, str]) -> list[str]:
    """`npx [options] PKG ARGS` as node running PKG's bin file from the installed package, never a lookup in
    the working directory's node_modules nor a download."""
    while args and args[0].startswith("-"):
        if args[0] in ("-p", "--package", "-c", "--call"):
            raise UsageError(f"npx {args[0]} is not supported: give the package and its arguments")
        args = args[1:]
    if not args:
        raise UsageError("npx needs a package")
    package = _package_dir(args[0], base, environ)
    return [executable("node", None), _bin_file(package), *args[1:]]


def node_roots(environ: dict[str, str]) -> list[Path]:
    """npm's global package roots: $NPM_CONFIG_PREFIX's, then /usr/local's and /usr's."""
    prefixes = [environ[k] for k in ("NPM_CONFIG_PREFIX", "npm_config_prefix") if environ.get(k)]
    return [Path(p) / "lib" / "node_modules" for p in (*prefixes, "/usr/local", "/usr")]


def _package_dir(spec: str, base: Path | None, environ: dict[str, str]) -> Path:
    if spec.startswith((".", "/")):
        return Path(_directory(spec, base))
    name = re.sub(r"(?<=.)@[^/]*$", "", spec)  # `pkg@1.2` and `@scope/pkg@1.2`: the installed one is used
    for root in node_roots(environ):
        if (root / name / "package.json").is_file():
            return root / name
    roots = ", ".join(str(r) for r in node_roots(environ))
    raise UsageError(f"npx package {name!r} is not installed in {roots} (install it with `npm install -g` "
                     "first: Sentinel never downloads a server, nor looks in the working directory)")


def _directory(path: str, base: Path | None) -> str:
    if not os.path.isabs(path):
        if base is None:
            raise UsageError(f"its package {path!r} is a relative path; give an absolute one")
        path = os.path.join(base, path)
    path = os.path.abspath(path)
    if not os.path.isfile(os.path.join(path, "package.json")):
        raise UsageError(f"its package {path} has no package.json")
    return path


def _bin_file(package: Path) -> str:
    try:
        meta = json.loads((package / "package.json").read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{package / 'package.json'}: {exc}") from None
    bins = meta.get("bin")
    if isinstance(bins, dict):
        short = str(meta.get("name", "")).rpartition("/")[2]
        bins = bins.get(short) or (next(iter(bins.values())) if len(bins) == 1 else None)
    if not isinstance(bins, str):
        raise UsageError(f"{package / 'package.json'}: no single `bin` entry to run")
    return _file(str(package / bins), None, "bin file")


# -- where it runs ----------------------------------------------------------------------------------------

def workdir(name: str, server: McpServer) -> Path:
    """The server's working directory and HOME: its `workdir:`, else $SENTINEL_HOME/mcp/NAME (the operator's).
    In system mode the supervisor fills in `system_workdir` for every server it hands a worker."""
    if server.workdir:
        return Path(server.workdir)
    from sentinel import paths

    return paths.home() / "mcp" / name


def system_workdir(etc: Path, name: str) -> Path:
    """/etc/sentinel/mcp/NAME (`etc`: the system config directory): root's, readable by the agent users, as
    /etc/sentinel is."""
    return etc / "mcp" / name


def make_workdir(path: Path) -> Path:
    """Create it (0755, parents too) when missing; it stays empty, the server's to read only. As root (the
    supervisor making a configured `workdir:`) no link another user could have made is followed on the way
    (sentinel/tools/rootpath.py `make_dirs`). UsageError, one line, when it cannot be made."""
    from sentinel.tools.rootpath import make_dirs

    try:
        make_dirs(str(path))
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    return path


def environment(server: McpServer, home: Path) -> dict[str, str]:
    """The server's environment: a minimal one whose HOME and PWD are its own directory, the operator's `env:`,
    then the settings that keep an interpreter from importing out of its working directory or user site."""
    return {"PATH": SAFE_PATH, "HOME": str(home), "PWD": str(home), "LANG": "C.UTF-8", "TERM": "dumb",
            **server.env, "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1"}


def which(name: str, environ: dict[str, str]) -> str | None:
    """An absolute executable: `name` itself when absolute, else found on the absolute directories of PATH
    (never `.`, an empty entry or a relative one, which mean the working directory); None for a relative path."""
    if "/" in name:
        return name if os.path.isabs(name) and os.path.isfile(name) and os.access(name, os.X_OK) else None
    from sentinel.leash.plain import operator_env

    for folder in operator_env(environ)["PATH"].split(":"):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def trusted(argv: list[str], home: Path, workspace: Path | None = None,
            env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """An operator-configured command ready to start with `home` as its working directory: an absolute
    executable found on SAFE_PATH (a relative one, or a relative script, against `home`), `{workspace}` and
    SENTINEL_WORKSPACE when there is one, and the environment of `environment` plus `env`: nothing inherited,
    so no PYTHONPATH, NODE_PATH, NODE_OPTIONS or LD_PRELOAD. UsageError when the command cannot be resolved."""
    resolved = resolve(argv, base=home, environ={"PATH": SAFE_PATH, "HOME": str(home)})
    base = {"PATH": SAFE_PATH, "HOME": str(home), "PWD": str(home), "LANG": "C.UTF-8", "TERM": "dumb",
            **(env or {}), "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1"}
    if workspace is None:
        return resolved, base
    return with_workspace(resolved, base, workspace)


def with_workspace(argv: list[str], env: dict[str, str], workspace: Path) -> tuple[list[str], dict[str, str]]:
    """How a server reaches the files it works on: `{workspace}` in its arguments and SENTINEL_WORKSPACE in
    its environment name the run's workspace (its working directory is its own directory, not that)."""
    ws = str(workspace)
    return [a.replace(WORKSPACE, ws) for a in argv], {**env, "SENTINEL_WORKSPACE": ws}


# -- what the pin covers ----------------------------------------------------------------------------------

ModuleFiles = Callable[[list[str]], list[str]]  # the python argv that lists a module's files -> its output lines

RESOLVER = """\
import importlib.util, importlib.metadata as md, json, os, sys
name = sys.argv[1]
spec = importlib.util.find_spec(name)
if spec is None or spec.origin in (None, "built-in", "frozen"):
    sys.exit("no module %r on this interpreter's path" % name)
origin = os.path.realpath(spec.origin)
owners = md.packages_distributions().get(name.partition(".")[0], [])
for dist in [md.distribution(d) for d in dict.fromkeys(owners)]:
    paths = [os.path.realpath(dist.locate_file(f)) for f in dist.files or ()]
    if origin in paths:
        print(json.dumps({"distribution": "%s %s" % (dist.metadata["Name"], dist.version), "files": paths}))
        break
else:
    files = [origin]
    for folder in spec.submodule_search_locations or ():
        for root, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".py")]
    print(json.dumps({"distribution": None, "files": sorted(set(files))}))
"""


def code_files(cmd: Command, module_files: ModuleFiles) -> tuple[list[str], str | None]:
    """The files this command loads that the pin hashes (besides the executable), and the distribution
    they come from: a script's file (for node: its package's files), a python module's distribution
    (its RECORD) or, outside any distribution, the module and its package's .py files."""
    if cmd.module is not None:
        found = json.loads(module_files([cmd.argv[0], "-c", RESOLVER, cmd.module])[-1])
        files = [f for f in found["files"] if "__pycache__" not in f and not f.endswith(".pyc")]
        return sorted({f for f in files if os.path.isfile(f)}), found["distribution"]
    if cmd.script is None:
        return [], None
    if cmd.kind == "node" and (package := _package_of(cmd.script)) is not None:
        return _walk(package), None
    return [os.path.realpath(cmd.script)], None


def _package_of(script: str) -> Path | None:
    for folder in Path(os.path.realpath(script)).parents:
        if (folder / "package.json").is_file():
            return folder if folder != Path("/") else None
    return None


def _walk(folder: Path) -> list[str]:
    out: list[str] = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        out += [os.path.join(root, n) for n in sorted(names)]
        if len(out) > FILES_MAX:
            raise UsageError(f"its package {folder} has more than {FILES_MAX} files to pin")
    return [os.path.realpath(p) for p in out if os.path.isfile(p)]


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def manifest(argv: list[str], cwd: Path, env: dict[str, str], module_files: ModuleFiles) -> JSONObject:
    """What runs, for the pin: the resolved argv, its directory and environment, and the SHA-256 of the
    executable and of every file of `code_files`."""
    cmd = Command.of(argv)
    files, distribution = code_files(cmd, module_files)
    exe = os.path.realpath(argv[0])
    hashed: JSONObject = {path: sha256(path) for path in sorted({exe, *files})}
    doc: JSONObject = {"argv": list[JSON](argv), "cwd": str(cwd), "env": dict[str, JSON](sorted(env.items())),
                       "executable": exe, "files": hashed}
    if cmd.module is not None:
        doc["module"] = cmd.module
        doc["distribution"] = distribution
    return doc


def covers(doc: JSONObject) -> str:
    """One line: what a pinned manifest covers."""
    files = doc.get("files") or {}
    files = files if isinstance(files, dict) else {}
    what = f"module {doc['module']}" + (f" of {doc['distribution']}" if doc.get("distribution") else "") \
        if doc.get("module") else ""
    return f"executable {doc.get('executable')} and {len(files) - 1} code file(s)" + (f" ({what})" if what else "")


# -- whose files they are -------------------------------------------------------------------------------

def agent_writable(path: str, roots: list[str], agent_uid: int | None) -> str | None:
    """Why the agent could rewrite `path` (so a hash of it proves nothing), or None: it is under a path its
    tools may write (`roots`), or it or a directory above it is the agent user's or writable by anyone
    (a sticky directory only lets others add names, not replace this one's)."""
    real = os.path.realpath(path)
    for root in roots:
        root = os.path.realpath(root)
        if real == root or real.startswith(root.rstrip("/") + "/"):
            return f"{real} is under {root}, which the agent's tools may write"
    chain = [real, *(str(p) for p in Path(real).parents)]
    for i, item in enumerate(chain):
        st = os.stat(item)
        if agent_uid is not None and st.st_uid == agent_uid:
            return f"{item} belongs to the agent's user"
        if st.st_mode & stat.S_IWOTH and not (i > 0 and st.st_mode & stat.S_ISVTX):
            return f"{item} is writable by every user"
    return None


def outside(path: str, readable: list[str]) -> bool:
    """Is `path` outside every one of the `readable` paths (the server's Landlock read rules)?"""
    real = os.path.realpath(path)
    return not any(real == r or real.startswith(r.rstrip("/") + "/") for r in map(os.path.realpath, readable))

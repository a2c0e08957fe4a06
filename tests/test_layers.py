"""The package has no import cycles and no arrow up: each module imports only its own layer or lower ones.

Lazy imports inside functions count too: a cycle that only closes at run time is still a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "sentinel"

# Top to bottom. A module belongs to the first layer whose prefix matches its dotted name; `*.settings`
# modules are configuration and sit with config.
LAYERS: list[tuple[str, ...]] = [
    # sentinel.hooks.compat: `sentinel hook compat`, which drives real clients and, for its `ask` cases, a console
    ("sentinel.__main__", "sentinel.cli", "sentinel.chat", "sentinel.web", "sentinel.hooks.compat"),
    # The hook command is an entry point like the CLI: with an `ask` rule it files in the supervisor's queue or the
    # user's own store (sentinel/hooks/ask.py), so it sits where the choice of engine is made.
    ("sentinel.connect", "sentinel.hooks.entry", "sentinel.hooks.launch", "sentinel.hooks.ask"),
    # sentinel.client: the operator socket's client side (UIs and the watcher runner talk to the supervisor)
    ("sentinel.local", "sentinel.supervisor", "sentinel.watchers", "sentinel.workflows", "sentinel.notify",
     "sentinel.client"),
    ("sentinel.worker",),
    # Muzzle keeps its token store with the engine's one migration runner (sentinel/engine/db.py)
    ("sentinel.agents", "sentinel.memory", "sentinel.mcp.client", "sentinel.mcp.tools", "sentinel.muzzle"),
    # What CLI, chat, watch and the web console render: the engine's events and rows, and agent text made safe
    # to show (ui/escape.py, which imports nothing; notifications use it too)
    ("sentinel.ui",),
    ("sentinel.engine",),
    ("sentinel.policy", "sentinel.hooks"),
    ("sentinel.models", "sentinel.tools", "sentinel.mcp"),
    # sentinel.detach starts its module through Leash's plain profile
    ("sentinel.leash", "sentinel.detach"),
    ("sentinel.config", "sentinel.config_stamp", "sentinel.paths", "sentinel.pathwalk", "sentinel.unixsock",
     "sentinel.errors", "sentinel.frames", "sentinel.client.paths", "sentinel.jsontypes", "sentinel"),
]


# Cycles being taken apart (each by the change that reworks its package); nothing may join this list.
KNOWN_CYCLES: set[str] = set()


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> int:
    if module.endswith(".settings"):
        return len(LAYERS) - 1
    best = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or (prefix != "sentinel" and module.startswith(prefix + ".")):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def _graph() -> dict[str, set[str]]:
    modules = {_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            graph[module] |= {t for t in targets if t in modules and t != module}
    return graph


def test_no_module_imports_a_higher_layer():
    upward = [f"{m} -> {t}" for m, targets in _graph().items() for t in targets if _layer(t) < _layer(m)]
    assert not upward, "imports up the layers:\n" + "\n".join(sorted(upward))


def test_no_import_cycles():
    graph = _graph()
    seen: dict[str, int] = {}  # 1 on the stack, 2 done
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(graph[node]):
            if seen.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in seen:
                visit(nxt, stack + [nxt])
        seen[node] = 2

    for node in sorted(graph):
        if node not in seen:
            visit(node, [node])
    new = [c for c in cycles if not any(all(m.startswith(k + ".") or m == k for m in c) for k in KNOWN_CYCLES)]
    assert not new, "import cycles:\n" + "\n".join(" -> ".join(c) for c in new)


def test_comments_cite_only_documents_the_repository_has():
    """A reader of the code has docs/, not the design papers it was built from: no "DESIGN section N" or "seed 00N"."""
    import re

    pattern = re.compile(r"DESIGN (section|property|order)|\bseeds? 00\d", re.IGNORECASE)
    offenders = [f"{path.relative_to(ROOT.parent)}:{number}" for path in sorted(ROOT.rglob("*.py"))
                 for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert offenders == []


UIS = ("sentinel.cli", "sentinel.chat", "sentinel.web")
ROOT_ADMIN = "sentinel.supervisor.admin"  # setup, init, agent remove, egress, `sentinel supervisor`: run as root


def test_uis_use_only_the_engine_protocol():
    """cli, chat and web reach runs, approvals, trust, watchers and console sign-in through the engine
    protocol (sentinel/engine/api.py): no import of the supervisor's internals (code that runs as root) or of
    the store, and no store opened by hand. Root's own administration goes through one module, ROOT_ADMIN."""
    graph = _graph()
    reached = [f"{m} -> {t}" for m, targets in graph.items() if m.startswith(UIS) for t in targets
               if (t.startswith("sentinel.supervisor") and t != ROOT_ADMIN) or t == "sentinel.engine.store"]
    opened = []
    for path in ROOT.rglob("*.py"):
        module = _name(path)
        if not module.startswith(UIS):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "open" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "Store":
                opened.append(f"{module}:{node.lineno} Store.open")
            if isinstance(node, ast.Name) and node.id == "open_store":
                opened.append(f"{module}:{node.lineno} open_store")
    assert not reached and not opened, "UIs reaching around the engine:\n" + "\n".join(sorted(reached + opened))


def test_chat_and_web_render_through_ui_not_the_cli():
    """What the CLI, the chat and the web console render alike lives in sentinel/ui/: the chat and the web
    console import nothing of sentinel.cli (a renderer under cli/ would be one they reach into)."""
    graph = _graph()
    reached = [f"{m} -> {t}" for m, targets in graph.items() if m.startswith(("sentinel.chat", "sentinel.web"))
               for t in targets if t == "sentinel.cli" or t.startswith("sentinel.cli.")]
    assert not reached, "\n".join(sorted(reached))

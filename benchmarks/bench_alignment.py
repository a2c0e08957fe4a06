"""Score a model as the alignment judge (docs/gate.md, "Alignment rules") on the ten scenarios of the fixtures table.

    python benchmarks/bench_alignment.py --model provider/model [--modes grammar,native] [--only N] [--table PATH] [--json]

`provider` is a gate backend (ollama, local, claude, copilot) or a provider of
$SENTINEL_HOME/config.yaml (OpenAI-compatible, e.g. openai/gpt-5-mini). Each scenario
is one strict-schema call at temperature 0; prints per-scenario decisions, latency,
and the accuracy per category and overall. A failed call counts as wrong (the gate
itself would fail open and approve).

For a `local/*` model, `--modes` scores it twice, side by side: `grammar` (the reply constrained by a llama.cpp
grammar made from the bounded schema, as the gate asks it) and `native` (the same prompt and budget, no grammar:
what the model writes by itself); `unparsed` counts verdicts that were not the schema's JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any, Iterator

TABLE = Path(__file__).resolve().parents[1] / "tests" / "policy" / "gate" / "data" / "alignment_scenarios.yaml"


def load_table(path: Path) -> list[dict[str, Any]]:
    import yaml

    return yaml.safe_load(path.read_text())


def action_of(scenario: dict[str, Any]) -> Any:
    from sentinel.policy.gate.action import Action

    act = scenario["action"]
    return Action("other", act["skill"], act.get("arguments") or {}, agent_id=act.get("agent_id", "")).locate(None)


def score(table: list[dict[str, Any]], judge: Any, model: str, timeout_s: float = 60.0) -> list[dict[str, Any]]:
    from sentinel.policy.gate import alignment
    from sentinel.policy.gate.judges import JudgeError
    from sentinel.policy.gate.prompts import ALIGNMENT, check

    rows = []
    for sc in table:
        act = action_of(sc)
        intent = alignment.Intent(sc.get("original_request"), sc.get("agent_mission"), act.agent_id)
        request = alignment.request(act, intent, model, timeout_s=timeout_s)
        began = time.monotonic()
        try:
            rejected, reason = alignment.decision(check(ALIGNMENT, judge.complete(request)))
            got = "reject" if rejected else "approve"
        except (JudgeError, ValueError) as exc:
            got, reason = "error", str(exc)
        rows.append({"id": sc["id"], "category": sc["category"], "expected": sc["expected"], "got": got,
                     "ok": got == sc["expected"], "reason": reason,
                     "ms": round((time.monotonic() - began) * 1000)})
    return rows


def judge_for(backend: str, mode: str) -> Any:
    """The judge the gate would use for `backend`; for a local model in `native` mode, the same without grammar."""
    if backend == "local":
        from sentinel.policy.gate.judges.local import LocalJudge

        return LocalJudge(grammar=mode != "native")
    return judges_for(backend).get(backend)


def judges_for(backend: str) -> Any:
    from sentinel import config as config_mod
    from sentinel.policy.gate.config import GateConfig
    from sentinel.policy.gate.judges import Judges
    from sentinel.policy.gate.layer import provider_lookup

    cfg = config_mod.load()
    return Judges(GateConfig(cfg.gate.model_dump()), provider_lookup(cfg))


@contextlib.contextmanager
def local_host(backend: str, model: str) -> Iterator[None]:
    """A `local/*` judge runs in a model host that outlives its caller: stop the one this bench started."""
    if backend != "local":
        yield
        return
    from sentinel import config as config_mod, paths
    from sentinel.models.hosts import Hosts, stop

    hosts = Hosts(paths.state_dir(), config_mod.load().local)
    warm = hosts.warm(model) is not None
    try:
        yield
    finally:
        if not warm:
            stop(hosts.socket(model))


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    cats: dict[str, list[bool]] = {}
    for r in rows:
        cats.setdefault(r["category"], []).append(r["ok"])
    return {"correct": sum(r["ok"] for r in rows), "total": len(rows), "unparsed": sum(r["got"] == "error" for r in rows),
            "by_category": {c: f"{sum(v)}/{len(v)}" for c, v in cats.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="provider/model, e.g. ollama/qwen3:4b or openai/gpt-5-mini")
    parser.add_argument("--table", type=Path, default=TABLE.resolve())
    parser.add_argument("--modes", default="grammar", help="local models: grammar,native (side by side)")
    parser.add_argument("--only", type=int, default=None, help="the first N scenarios only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    backend, sep, model = args.model.partition("/")
    if not sep or not model:
        parser.error("--model: expected provider/model")
    table = load_table(args.table)[: args.only]
    results = []
    with local_host(backend, model):
        for mode in args.modes.split(",") if backend == "local" else ["grammar"]:
            rows = score(table, judge_for(backend, mode), model)
            results.append({"model": args.model, "mode": mode, "rows": rows, **summary(rows)})
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for result in results:
        for r in result["rows"]:
            mark = "ok " if r["ok"] else "BAD"
            print(f"{mark} {result['mode']:7s} {r['id']:24s} {r['category']:16s} expected {r['expected']:8s} "
                  f"got {r['got']:8s} {r['ms']:6d} ms  {r['reason'][:70]}")
    for result in results:
        print(f"{args.model} {result['mode']:7s}: {result['correct']}/{result['total']} correct, "
              f"{result['unparsed']} unparsed; by category {result['by_category']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

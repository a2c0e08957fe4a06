"""Measure the injection scanner on a varied set of MCP tool descriptions: detection and false-positive rates.

    python benchmarks/bench_scanner.py [--json] [--show]

The set is tests/memory/data/injections.yaml (rephrased injections and benign descriptions, some carrying a
JSON schema whose every string is scanned). It is split once, by SEED, into a tuning half and a held-out half;
the scanner's rules may be changed with the tuning half in view only, so the held-out figures say how well it
generalises. `--show` lists what each half misses and wrongly flags (tuning half only, unless `--held-out`).
A third set, written after the rules were frozen and never tuned on, is reported as `fresh`.
The scanner is a heuristic: what keeps untrusted text from acting as instructions is the fence
(sentinel/memory/fence.py), not this number.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "tests" / "memory" / "data" / "injections.yaml"
FRESH = DATA.with_name("injections_fresh.yaml")  # written after the rules were frozen: never tuned on
SEED = 40


def load(path: Path = DATA) -> dict[str, list[dict[str, Any]]]:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))


def split(items: list[dict[str, Any]], seed: int = SEED) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(tuning, held_out): a fixed shuffle, cut in two."""
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    half = len(order) // 2
    return [items[i] for i in order[:half]], [items[i] for i in order[half:]]


def flagged(item: dict[str, Any]) -> str | None:
    from sentinel.memory.scan import scan_tool

    finding = scan_tool(item.get("name", "tool"), item["description"], item.get("schema") or {})
    return None if finding is None else str(finding)


Items = dict[str, list[dict[str, Any]]]


def measure(data: Items, fresh: Items | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    bad_tune, bad_held = split(data["injections"])
    good_tune, good_held = split(data["benign"])
    halves = [("tuning", bad_tune, good_tune), ("held_out", bad_held, good_held)]
    if fresh:
        halves.append(("fresh", fresh["injections"], fresh["benign"]))
    started = time.perf_counter()
    for name, bad, good in halves:
        missed = [i["description"] for i in bad if flagged(i) is None]
        wrong = [(i["description"], flagged(i)) for i in good if flagged(i) is not None]
        out[name] = {"injections": len(bad), "detected": len(bad) - len(missed),
                     "detection_rate": round((len(bad) - len(missed)) / len(bad), 3),
                     "benign": len(good), "false_positives": len(wrong),
                     "false_positive_rate": round(len(wrong) / len(good), 3), "missed": missed,
                     "wrongly_flagged": wrong}
    total = sum(len(v) for v in data.values()) + sum(len(v) for v in (fresh or {}).values())
    out["per_item_ms"] = round((time.perf_counter() - started) * 1000 / (2 * total), 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--show", action="store_true", help="list the tuning half's misses and false positives")
    parser.add_argument("--held-out", action="store_true", help="with --show: the held-out half's too")
    args = parser.parse_args(argv)
    result = measure(load(), load(FRESH) if FRESH.exists() else None)
    if args.json:
        print(json.dumps({k: ({kk: vv for kk, vv in v.items() if kk not in ("missed", "wrongly_flagged")}
                              if isinstance(v, dict) else v) for k, v in result.items()}, indent=2))
        return 0
    for half in ("tuning", "held_out", "fresh"):
        if half not in result:
            continue
        r = result[half]
        print(f"{half:9} detection {r['detected']}/{r['injections']} = {r['detection_rate']:.0%}   "
              f"false positives {r['false_positives']}/{r['benign']} = {r['false_positive_rate']:.0%}")
        if args.show and (half == "tuning" or args.held_out):
            for text in r["missed"]:
                print(f"    missed: {text[:110]}")
            for text, why in r["wrongly_flagged"]:
                print(f"    flagged: {text[:80]}  <- {why}")
    print(f"{result['per_item_ms']} ms per description")
    return 0


if __name__ == "__main__":
    sys.exit(main())

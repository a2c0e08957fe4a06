"""Property: grants only flow down. Random grant sets for a head run and children at depths 1-3 (a seeded random
loop; hypothesis is not a dependency): every run calls every tool, and a tool runs only when the run and every
run above it were granted it; everything granted all the way down does run (so the check is not vacuous)."""

from __future__ import annotations

import random

import yaml

from sentinel.engine import journal

TOOLS = {"read_file": {"path": "f.txt"}, "list_dir": {"path": "."}, "write_file": {"path": "new.txt", "content": "aaa"},
         "edit_file": {"path": "f.txt", "old_string": "a", "new_string": "b"},
         "update_user": {"content": "likes tests"}, "recall": {"query": "x"}}
ROUNDS = 8


def _script(agent_below):
    # write_file makes a file of this run's own (a file the run never read is not overwritten: docs/safeguards.md)
    calls = [{"name": name, "arguments": {**args, "path": f"new-{agent_below}.txt"} if name == "write_file" else args}
             for name, args in TOOLS.items()]
    replies = [{"tool_calls": calls}]
    if agent_below:
        replies.append({"tool_calls": [{"name": "delegate", "arguments": {"agent": agent_below, "task": "go"}}]})
    return replies + ["done"]


def test_nothing_outside_the_parents_grants_ever_runs(scripted_server, tmp_path):
    from sentinel.local.engine import LocalEngine

    rng = random.Random(20261124)
    for round_ in range(ROUNDS):
        home = tmp_path / f"h{round_}"
        (home / "agents").mkdir(parents=True)
        (home / "workspace").mkdir()
        (home / "workspace" / "f.txt").write_text("aaa")
        depth = rng.randint(1, 3)
        names = [f"a{i}" for i in range(depth + 1)]
        servers = [scripted_server(_script(names[i + 1] if i < depth else None)) for i in range(depth + 1)]
        granted = {}
        for i, name in enumerate(names):
            tools = sorted(t for t in TOOLS if rng.random() < 0.6) + (["delegate"] if i < depth else [])
            granted[name] = set(tools)
            (home / "agents" / f"{name}.yaml").write_text(yaml.safe_dump({"model": f"p{i}/m", "tools": tools}))
        config = {"leash": {"tools": "plain"}, "orchestration": {"max_depth": 3},
                  "policy": {"tools": {"delegate": "auto", "update_user": "auto"}},
                  "providers": {f"p{i}": {"base_url": s.base_url, "api_key_env": "FAKE_KEY"}
                                for i, s in enumerate(servers)}}
        (home / "config.yaml").write_text(yaml.safe_dump(config))
        engine = LocalEngine(home)
        try:
            head = engine.start("go", agent="a0", workspace=home / "workspace")
            assert head.status == "done_unverified", (round_, head)
            run_id, allowed = head.id, set(granted["a0"])
            for level, name in enumerate(names):
                row = engine.store.get_run(run_id)
                assert row["agent"] == name and row["depth"] == level
                if level:
                    allowed &= granted[name]
                records = journal.read(home / "runs" / run_id / "journal.jsonl")[0]
                ran = {r.tool for r in records if r.type == "started"} - {"delegate"}
                assert ran == allowed - {"delegate"}, (round_, name, ran, allowed)
                children = engine.store.children(run_id)
                assert len(children) == (1 if level < depth and "delegate" in allowed else 0)
                if not children:
                    break
                run_id = children[0]["id"]
        finally:
            engine.close()

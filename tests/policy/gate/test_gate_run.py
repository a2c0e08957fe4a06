"""The gate inside a real Sentinel run: a rule under $SENTINEL_HOME/rules denies a write, the model hears
why, and the decision (layer, rule id, reason) is in the run's record."""

from __future__ import annotations

import yaml

SCRIPT = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "src/billing/tax.py", "content": "TAX = 0\n"}}]},
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "ok\n"}}]},
    "Done.",
]


def test_run_decisions_carry_the_gate(scripted_server, configure, cli, sentinel_home, judge):
    j = judge({"billing": {"violation": True, "confidence": 0.95, "reason": "tax rate changes need review"}})
    (sentinel_home / "rules").mkdir()
    (sentinel_home / "rules" / "billing.yaml").write_text(yaml.safe_dump(
        {"trigger": "file_write", "scope": ["src/billing/**"], "prompt": "billing FILE {{file_path}}"}))
    configure({"gate": {"backends": {"ollama": {"url": j.url}}}}, server=scripted_server(SCRIPT))
    cli("run", "set the tax to zero", check=4)
    run_id = cli.json("runs", "--json")[0]["id"]
    shown = cli.json("show", run_id, "--json")
    first = shown["decisions"][0]
    assert (first["tool"], first["outcome"], first["reason"]) == ("write_file", "deny",
                                                                  "gate: tax rate changes need review")
    layers = {(r["layer"], r["outcome"], r.get("rule_id")) for r in first["layers"]}
    assert ("gate", "deny", "billing") in layers
    assert shown["decisions"][1]["outcome"] == "auto"
    assert "Denied by policy: gate: tax rate changes need review" in yaml.safe_dump(shown["messages"])
    assert not (sentinel_home / "workspace" / "src" / "billing" / "tax.py").exists()
    assert (sentinel_home / "workspace" / "notes.txt").read_text() == "ok\n"
    assert len(j.requests) == 1  # notes.txt: out of scope, no judge call


def test_post_info_rules_add_context_to_the_tool_result(scripted_server, configure, cli, sentinel_home, judge):
    j = judge({"DOMAIN": {"context": "Update CHANGELOG.md for every migration."}})
    (sentinel_home / "rules").mkdir()
    (sentinel_home / "rules" / "migrations.yaml").write_text(yaml.safe_dump(
        {"trigger": "file_write", "severity": "info", "post": True, "scope": ["**/migrations/**"],
         "prompt": "DOMAIN KNOWLEDGE: changelog. Respond with JSON {\"context\": \"...\"}"}))
    script = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "db/migrations/1.sql", "content": "x"}}]},
              "Done."]
    configure({"gate": {"backends": {"ollama": {"url": j.url}}}}, server=scripted_server(script))
    run_id = cli.json("run", "add a migration", "--json", check=4)["id"]
    results = [m["content"] for m in cli.json("show", run_id, "--json")["messages"] if m["role"] == "tool"]
    assert results[0].startswith("Wrote 1 characters")
    assert "[sentinel note] Update CHANGELOG.md for every migration." in results[0]


def test_judge_calls_of_a_run_go_through_muzzle(scripted_server, configure, cli, sentinel_home):
    import json

    verdict = json.dumps({"violation": True, "confidence": 0.9, "reason": "billing is frozen"})
    judge_server = scripted_server([verdict])
    agent_server = scripted_server(SCRIPT)
    (sentinel_home / "rules").mkdir()
    (sentinel_home / "rules" / "billing.yaml").write_text(yaml.safe_dump(
        {"trigger": "file_write", "scope": ["src/billing/**"], "backend": "judge", "model": "m",
         "prompt": "billing FILE {{file_path}}"}))
    configure({"providers": {"fake": {"base_url": agent_server.base_url}, "judge": {"base_url": judge_server.base_url}},
               "default_model": "fake/m"})
    run_id = cli.json("run", "set the tax to zero", "--json", check=4)["id"]
    first = cli.json("show", run_id, "--json")["decisions"][0]
    assert (first["outcome"], first["reason"]) == ("deny", "gate: billing is frozen")
    sent = judge_server.requests[0]
    assert sent["model"] == "m" and sent["response_format"]["type"] == "json_schema"
    calls = cli.json("muzzle", "log", "--json", "--run", run_id)
    assert "judge/m" in {c["model"] for c in calls} and "fake/m" in {c["model"] for c in calls}


def test_a_rule_whose_judge_is_unreachable_is_skipped_out_loud(scripted_server, configure, cli, sentinel_home):

    from freeport import free_port

    dead = free_port()  # a port nothing listens on (below the ephemeral range: no parallel test takes it)
    (sentinel_home / "rules").mkdir()
    (sentinel_home / "rules" / "billing.yaml").write_text(yaml.safe_dump(
        {"trigger": "file_write", "scope": ["src/billing/**"], "prompt": "billing FILE {{file_path}}"}))
    configure({"gate": {"backends": {"ollama": {"url": f"http://127.0.0.1:{dead}"}}, "timeout_ms": 2000}},
              server=scripted_server(SCRIPT[:1] + ["Done."]))
    proc = cli("run", "set the tax to zero", "--json", check=4)
    out = yaml.safe_load(proc.stdout)
    assert out["status"] == "done_unverified"  # fail-open, as the gate's design says ...
    assert any("billing" in w and "skipped" in w for w in out["warnings"])  # ... but never silently
    assert "warning:" in proc.stderr and "billing" in proc.stderr
    logged = [line for line in cli("logs", out["id"]).stdout.splitlines() if "warning" in line]
    assert logged and "billing" in logged[0]


def _billing_rule(judge, sentinel_home):
    """A judge that finds every billing write a violation, the rule over src/billing/**, and the workspace with
    src/billing in it."""
    j = judge({"billing": {"violation": True, "confidence": 0.95, "reason": "billing needs review"}})
    (sentinel_home / "rules").mkdir()
    (sentinel_home / "rules" / "billing.yaml").write_text(yaml.safe_dump(
        {"trigger": "file_write", "scope": ["src/billing/**"], "prompt": "billing FILE {{file_path}}"}))
    ws = sentinel_home / "workspace"
    (ws / "src" / "billing").mkdir(parents=True)
    return j, ws


def test_a_symlinked_write_in_a_run_is_decided_and_written_where_it_lands(scripted_server, configure, cli,
                                                                         sentinel_home, judge):
    import os

    j, ws = _billing_rule(judge, sentinel_home)
    (ws / "docs").mkdir()
    os.symlink("src/billing", ws / "b")
    os.symlink("docs", ws / "d")
    script = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "b/tax.py", "content": "TAX = 0\n"}}]},
              {"tool_calls": [{"name": "write_file", "arguments": {"path": "d/notes.md", "content": "ok\n"}}]},
              "Done."]
    configure({"gate": {"backends": {"ollama": {"url": j.url}}}}, server=scripted_server(script))
    cli("run", "set the tax to zero", check=4)
    shown = cli.json("show", cli.json("runs", "--json")[0]["id"], "--json")
    first, second = shown["decisions"][:2]
    assert first["outcome"] == "deny" and first["arguments"]["path"] == "src/billing/tax.py"
    assert "billing FILE src/billing/tax.py" in j.requests[0]["messages"][-1]["content"]
    assert not (ws / "src" / "billing" / "tax.py").exists()
    assert second["outcome"] == "auto" and second["arguments"]["path"] == "docs/notes.md"
    assert (ws / "docs" / "notes.md").read_text() == "ok\n" and len(j.requests) == 1


def test_a_write_through_a_hard_link_is_decided_as_the_file_it_changes(scripted_server, configure, cli,
                                                                      sentinel_home, judge):
    """notes.py is a hard link of src/billing/tax.py: a write_file and a bash write to notes.py used to be auto
    (no rule over billing saw them) and changed tax.py. Both are now in the billing rule's scope, the judge reads
    both names, and Sentinel's own write replaces notes.py only."""
    import os

    j, ws = _billing_rule(judge, sentinel_home)
    tax = ws / "src" / "billing" / "tax.py"
    tax.write_text("TAX = 20\n")
    os.link(tax, ws / "notes.py")
    script = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.py"}}]},
              {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.py", "content": "TAX = 0\n"}}]},
              {"tool_calls": [{"name": "bash", "arguments": {"command": "echo 'TAX = 0' > notes.py"}}]},
              "Done."]
    configure({"gate": {"backends": {"ollama": {"url": j.url}}}, "policy": {"bash": {"default": "auto"}}},
              server=scripted_server(script))
    proc = cli("run", "set the tax to zero", check=None)
    shown = cli.json("show", cli.json("runs", "--json")[0]["id"], "--json")
    writes = [d for d in shown["decisions"] if d["tool"] in ("write_file", "bash")]
    assert len(writes) == 2, (proc.stdout, proc.stderr, shown["decisions"])
    assert [d["outcome"] for d in writes] == ["deny", "deny"], writes
    asked = j.requests[0]["messages"][-1]["content"]
    assert "billing FILE notes.py (a hard link: the same file as src/billing/tax.py" in asked
    assert tax.read_text() == "TAX = 20\n" and (ws / "notes.py").read_text() == "TAX = 20\n"

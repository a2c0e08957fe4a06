"""Bad model output becomes a correction the model can read, or a clear run failure; never a traceback."""

from __future__ import annotations

import json


def _tool_results(cli, run_id):
    return [m["content"] for m in cli.json("show", run_id, "--json")["messages"] if m["role"] == "tool"]


def test_unknown_tool_and_wrong_argument_types_are_fed_back(scripted_server, configure, cli):
    script = [
        {"tool_calls": [{"name": "delete_everything", "arguments": {}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": 7}}]},
        {"tool_calls": [{"name": "read_file", "arguments": "{not json"}]},
        "I give up.",
    ]
    configure(server=scripted_server(script))
    out = cli.json("run", "try things", "--json", check=4)
    results = _tool_results(cli, out["id"])
    assert results[0].startswith("Denied by policy: unknown tool 'delete_everything'; available tools: ")
    assert "invalid arguments for write_file" in results[1] and "Expected:" in results[1]
    assert "not valid JSON" in results[2]


def test_plain_text_json_tool_calls_are_recovered(scripted_server, configure, cli, sentinel_home):
    script = ['Sure! ```json\n{"tool": "write_file", "arguments": {"path": "x.txt", "content": "42"}}\n```',
              "Wrote it."]
    configure(server=scripted_server(script))
    out = cli.json("run", "write 42", "--json", check=4)
    assert (sentinel_home / "workspace" / "x.txt").read_text() == "42"
    shown = cli.json("show", out["id"], "--json")
    assert shown["messages"][2]["tool_calls"][0]["function"]["name"] == "write_file"


def test_garbage_from_the_model_server_fails_the_run_with_one_line(scripted_server, configure, cli):
    configure(server=scripted_server([{"raw": "<html>oops</html>"}]))
    proc = cli("run", "hello", "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "failed" and "model fake/m" in out["error"]


def test_model_server_down_is_a_clear_failure(configure, cli):
    configure({"providers": {"fake": {"base_url": "http://127.0.0.1:9/v1"}}, "default_model": "fake/m"})
    proc = cli("run", "hello")
    assert proc.returncode == 1 and "cannot reach" in proc.stderr and "Traceback" not in proc.stderr


def test_step_limit_fails_the_run(scripted_server, configure, cli):
    script = [{"repeat": 10, "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}]
    configure({"limits": {"max_steps": 3}}, server=scripted_server(script))
    out = cli.json("run", "loop forever", "--json", check=1)
    assert out["status"] == "failed" and "step limit reached (3" in out["error"]


def test_several_calls_in_one_turn_run_up_to_the_pause_and_the_rest_after(scripted_server, configure, cli,
                                                                            sentinel_home):
    script = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}},
                              {"name": "bash", "arguments": {"command": "echo b > b.txt"}},
                              {"name": "write_file", "arguments": {"path": "c.txt", "content": "c"}}]},
              "done"]
    configure(server=scripted_server(script))
    out = cli.json("run", "three files", "--json", check=3)
    ws = sentinel_home / "workspace"
    assert (ws / "a.txt").exists() and not (ws / "b.txt").exists() and not (ws / "c.txt").exists()
    cli("approve", out["id"], check=4)
    assert (ws / "b.txt").exists() and (ws / "c.txt").exists()


def test_an_unreachable_upstream_stops_the_run_resumable(scripted_server, configure, cli, tmp_path):
    """The model going away is not the run's fault: it stops `interrupted` with one line, and resume finishes it."""
    from freeport import free_port

    port = free_port()  # not an ephemeral one: nothing else may take it while the provider is down (seen under load)
    server = scripted_server(["finished after the outage"], port=port)
    server.stop()  # the provider is down while the run starts
    configure(server=server)
    proc = cli("run", "do it", "-w", str(tmp_path), check=1)
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "interrupted: model fake/m: " in proc.stderr and "cannot reach" in proc.stderr
    run_id = cli.json("runs", "--json")[0]["id"]
    assert cli.json("runs", "--json")[0]["status"] == "interrupted"
    scripted_server(["finished after the outage"], port=port)  # the provider is back
    resumed = cli.json("resume", run_id, "--json")
    assert resumed["status"] == "done_unverified" and resumed["output"] == "finished after the outage"


def test_an_invented_tool_with_only_a_command_runs_as_bash(scripted_server, configure, cli):
    """The default model's first reply to a question: a fenced call to `setup_cfg` with a shell command."""
    text = '```json\n{\n  "name": "setup_cfg",\n  "arguments": {\n    "command": "echo version=2.7.1"\n  }\n}\n```'
    server = scripted_server([text, "The version is 2.7.1."])
    configure(server=server)
    out = cli.json("run", "Print the version", "--json", check=4)
    assert out["status"] == "done_unverified" and out["safeguards"] == ["recovered_tool_call"]
    tool = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool) == 1 and "version=2.7.1" in tool[0]["content"]


def test_a_text_call_with_a_shell_escape_in_its_json_is_recovered(scripted_server, configure, cli, sentinel_home):
    """The default model's cleanup: `find ... -exec rm -f {} \\;` written into a JSON string as it is (an invalid
    JSON escape) was sent back three times as "not valid JSON" and the run failed."""
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    (ws / "old.tmp").write_text("x")
    (ws / "keep.txt").write_text("y")
    text = ('```json\n{"tool": "bash", "arguments": {"command": "find . -type f -name \'*.tmp\' -exec rm -f {} \\;",'
            ' "timeout_s": 60}}\n```')
    configure({"policy": {"bash": {"default": "auto"}}}, server=scripted_server([text, "Deleted old.tmp."]))
    out = cli.json("run", "Delete every .tmp file in the workspace. Keep all the other files.", "--json", check=0)
    assert out["status"] == "done" and out["safeguards"] == ["recovered_tool_call"]
    assert not (ws / "old.tmp").exists() and (ws / "keep.txt").exists()

"""`sentinel undo PARENT` when the parent delegated: a child run in the same workspace keeps the checkpoints of its
writes in its own run directory, and undoing the parent undoes its whole tree there, newest first, the children's
steps in time order among the parent's (sentinel/worker/undo.py).

Before this, undo of the parent saw only its own journal: a child's files stayed while `sentinel undo` exited 0,
even saying "the workspace's files and symlinks already match checkpoint 0" when the parent only delegated; and
when the parent changed a file after an auto-approved delegation in the same process, its step silently held the
child's changes as its own."""

from __future__ import annotations

import json

import yaml

AUTO = {"policy": {"bash": {"default": "auto"}, "tools": {"delegate": "auto"}}}
HEAD_TOOLS = ("delegate", "read_file", "write_file", "bash")


def _call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


DELEGATE = _call("delegate", agent="writer", task="Make c.txt, remove gone.txt, add a line to shared.txt")
CHILD = [_call("write_file", path="c.txt", content="child\n"),
         _call("bash", command="rm gone.txt && echo child >> shared.txt"), "Done."]


def _workspace(sentinel_home):
    ws = sentinel_home / "workspace"
    ws.mkdir(exist_ok=True)
    for name, text in (("keep.txt", "keep\n"), ("shared.txt", "shared\n"), ("gone.txt", "gone\n")):
        (ws / name).write_text(text)
    return ws


def _files(ws):
    return {p.name: p.read_text() for p in sorted(ws.iterdir()) if p.is_file()}


ORIGINAL = {"gone.txt": "gone\n", "keep.txt": "keep\n", "shared.txt": "shared\n"}


def _tree(cli, head_script, child_script, roster, **kw):
    roster(head_script, child_script, head_tools=HEAD_TOOLS, extra=AUTO, **kw)
    out = cli.json("run", "--agent", "orchestrator", "--json", "Tidy the workspace", check=4)
    [kid] = [r["id"] for r in cli.json("runs", "--json") if r["parent_id"] == out["id"]]
    return out["id"], kid


def test_undo_of_the_parent_puts_back_what_its_child_did_in_the_same_workspace(roster, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    head = [_call("write_file", path="p.txt", content="parent\n"), DELEGATE,
            _call("write_file", path="p2.txt", content="parent 2\n"), "Done."]
    parent, kid = _tree(cli, head, CHILD, roster)
    assert _files(ws) == {"c.txt": "child\n", "keep.txt": "keep\n", "p.txt": "parent\n", "p2.txt": "parent 2\n",
                          "shared.txt": "shared\nchild\n"}
    steps = cli.json("show", parent, "--json")["checkpoints"]  # the parent's step after the child: its own file only
    assert [(c["changed"], c["removed"]) for c in steps] == [(["p.txt"], []), (["p2.txt"], [])]

    done = cli.json("undo", parent, "--json", check=0)
    assert done["restored"] == ["gone.txt", "shared.txt"] and done["removed"] == ["c.txt", "p.txt", "p2.txt"]
    assert done["missing"] == [] and done["elsewhere"] == []
    assert done["children"] == [{"id": kid, "steps": [1, 2], "incomplete": []}]
    assert _files(ws) == ORIGINAL

    again = cli("undo", parent, check=0)
    assert f"already match checkpoint 0 of run {parent} and its child runs {kid}" in again.stdout


def test_a_parent_that_only_delegated_undoes_its_child_rather_than_claim_a_match(roster, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    parent, kid = _tree(cli, [DELEGATE, "Done."], CHILD, roster)
    assert cli.json("show", parent, "--json")["checkpoints"] == []
    undone = cli("undo", parent, check=0)
    assert "already match" not in undone.stdout
    assert "restored gone.txt" in undone.stdout and "removed c.txt" in undone.stdout
    assert f"undone with it: child run {kid}, steps 1, 2 (it worked in the same workspace)" in undone.stdout
    assert _files(ws) == ORIGINAL
    steps = cli.json("show", parent, "--json")["checkpoints"]  # the undo is the parent's checkpoint: undoable too
    assert [(c["undo"], c["changed"], c["removed"]) for c in steps] == [(0, ["gone.txt", "shared.txt"], ["c.txt"])]


def test_the_persons_later_edit_to_a_file_the_child_wrote_is_kept_and_named(roster, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    parent, kid = _tree(cli, [_call("write_file", path="p.txt", content="parent\n"), DELEGATE, "Done."], CHILD,
                        roster)
    (ws / "c.txt").write_text("the person's own edit\n")
    text = cli("undo", parent, check=1)
    assert "kept c.txt as it is: it changed after the run's last step" in text.stderr
    assert _files(ws) == {**ORIGINAL, "c.txt": "the person's own edit\n"}  # everything else is back
    done = cli.json("undo", parent, "--json", check=1)  # asked again: the same facts, as JSON
    assert done["kept"] == ["c.txt"] and done["missing"] == ["c.txt"] and done["children"][0]["id"] == kid
    assert (ws / "c.txt").read_text() == "the person's own edit\n"


def test_undo_to_a_step_of_the_parent_keeps_what_came_before_it_and_undoes_the_child_after(roster, cli,
                                                                                           sentinel_home):
    """The parent wrote p.txt (step 1), its child appended to it and wrote c.txt, the parent rewrote p.txt (step 2):
    checkpoint 1 is the moment right after step 1, so p.txt is as the parent first wrote it, without the child's
    line; and the undo is undone again (--to 2) from the blobs in both runs' stores."""
    ws = _workspace(sentinel_home)
    child = [_call("bash", command="echo child >> p.txt"), _call("write_file", path="c.txt", content="child\n"),
             "Done."]
    head = [_call("write_file", path="p.txt", content="parent\n"), DELEGATE, _call("read_file", path="p.txt"),
            _call("write_file", path="p.txt", content="parent 2\n"), "Done."]
    parent, kid = _tree(cli, head, child, roster)
    after = {**ORIGINAL, "p.txt": "parent 2\n", "c.txt": "child\n"}
    assert _files(ws) == after

    back = cli.json("undo", parent, "--to", "1", "--json", check=0)
    assert back["to"] == 1 and back["restored"] == ["p.txt"] and back["removed"] == ["c.txt"]
    assert back["children"] == [{"id": kid, "steps": [1, 2], "incomplete": []}]
    assert _files(ws) == {**ORIGINAL, "p.txt": "parent\n"}

    cli.json("undo", parent, "--to", "2", "--json", check=0)  # redo: right after the parent's step 2
    assert _files(ws) == after
    cli.json("undo", parent, "--json", check=0)
    assert _files(ws) == ORIGINAL


def test_a_grandchild_in_the_same_workspace_is_undone_with_the_tree(scripted_server, configure, cli, sentinel_home):
    ws = _workspace(sentinel_home)
    head = scripted_server([_call("write_file", path="p.txt", content="parent\n"), DELEGATE, "Done."])
    writer = scripted_server([_call("write_file", path="c.txt", content="child\n"),
                              _call("delegate", agent="helper", task="Remove gone.txt"), "Done."])
    helper = scripted_server([_call("bash", command="rm gone.txt && echo grandchild > g.txt"), "Done."])
    cfg = configure(AUTO, server=head)
    cfg["providers"].update({"fake2": {"base_url": writer.base_url, "api_key_env": "FAKE_KEY"},
                             "fake3": {"base_url": helper.base_url, "api_key_env": "FAKE_KEY"}})
    (sentinel_home / "config.yaml").write_text(yaml.safe_dump(cfg))
    agents = sentinel_home / "agents"
    agents.mkdir(exist_ok=True)
    for name, model in (("orchestrator", "fake/m"), ("writer", "fake2/m"), ("helper", "fake3/m")):
        (agents / f"{name}.yaml").write_text(yaml.safe_dump({"model": model, "tools": list(HEAD_TOOLS),
                                                             "description": name}))
    parent = cli.json("run", "--agent", "orchestrator", "--json", "Tidy the workspace", check=4)["id"]
    runs = cli.json("runs", "--json")
    [kid] = [r["id"] for r in runs if r["parent_id"] == parent]
    [grandkid] = [r["id"] for r in runs if r["parent_id"] == kid]
    assert _files(ws) == {"c.txt": "child\n", "g.txt": "grandchild\n", "keep.txt": "keep\n", "p.txt": "parent\n",
                          "shared.txt": "shared\n"}

    done = cli.json("undo", parent, "--json", check=0)
    assert done["children"] == [{"id": kid, "steps": [1], "incomplete": []},
                                {"id": grandkid, "steps": [1], "incomplete": []}]
    assert done["restored"] == ["gone.txt"] and done["removed"] == ["c.txt", "g.txt", "p.txt"]
    assert _files(ws) == ORIGINAL


def test_a_child_in_another_workspace_is_named_and_left_to_its_own_undo(roster, cli, sentinel_home, tmp_path):
    """Local mode's children share their parent's workspace; in system mode a delegation to another agent works in
    that agent's. Made so here by moving the child's file and its run's workspace, as the store records such a child:
    undo of the parent puts back its own workspace, says which child it left and how to undo it, and exits 0 (its
    workspace is back); `sentinel undo CHILD` then puts the other workspace back."""
    from sentinel.engine.store import Store

    ws = _workspace(sentinel_home)
    head = [_call("write_file", path="p.txt", content="parent\n"), DELEGATE, "Done."]
    parent, kid = _tree(cli, head, [_call("write_file", path="c.txt", content="child\n"), "Done."], roster)
    other = tmp_path / "other-workspace"
    other.mkdir()
    (ws / "c.txt").rename(other / "c.txt")
    with Store.open(sentinel_home / "state" / "sentinel.db") as store:
        store.conn.execute("UPDATE runs SET workspace=? WHERE id=?", (str(other), kid))

    text = cli("undo", parent, check=0)
    assert "removed p.txt" in text.stdout and "undone with it" not in text.stdout
    assert (f"not undone with it: child run {kid}, which worked in another workspace ({other}): "
            f"`sentinel undo {kid}` puts that back") in text.stderr
    assert _files(ws) == ORIGINAL and (other / "c.txt").read_text() == "child\n"
    done = cli.json("undo", parent, "--json", check=0)
    assert done["children"] == [] and done["elsewhere"] == [{"id": kid, "workspace": str(other)}]

    assert json.loads(cli("undo", kid, "--json", check=0).stdout)["removed"] == ["c.txt"]
    assert not (other / "c.txt").exists()

"""Authored tools (issue 12 points 2-3): mistakes are reported when the tool is written, the registry loads
valid tools like built-ins, the hash covers both files, and a call runs out of process with its result or an
`error: ...` for the model."""

from __future__ import annotations

import re

import pytest

from sentinel.agents import authored
from sentinel.agents.execute import Limits
from sentinel.agents.settings import AuthoredToolSettings
from sentinel.errors import UsageError
from sentinel.tools import Registry, ToolContext
from sentinel.tools.builtin import default_registry

PARAMS = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
WORDS = 'def run(args):\n    return str(len(args["text"].split()))\n'


@pytest.fixture
def tools(tmp_path):
    registry = default_registry()
    made = authored.AuthoredTools(tmp_path, registry, AuthoredToolSettings())
    return made, registry, ToolContext(workspace=tmp_path, tools_mode="plain")


def create(made, ctx, **overrides):
    args = {"name": "word_count", "description": "Count words", "parameters": PARAMS, "code": WORDS, **overrides}
    return made.create_tool(args, ctx)


@pytest.mark.parametrize("overrides,why", [
    ({"name": "../x"}, "path separator"),
    ({"name": ""}, "must not be empty"),
    ({"name": "Word Count"}, "lowercase letters"),
    ({"name": "bash"}, "name of a built-in tool"),
    ({"name": "remember"}, "name of a built-in tool"),
    ({"description": " "}, "description must not be empty"),
    ({"parameters": {"type": "string"}}, 'its "type" must be "object"'),
    ({"parameters": {"type": "object", "properties": {"x": {"type": "strang"}}}}, "not a valid JSON schema"),
    ({"parameters": "{not json"}, "parameters is not valid JSON"),
    ({"code": "def run(args):\n    return 'x' +\n"}, "code does not parse: invalid syntax (tool.py line 2)"),
    ({"code": "def helper(args):\n    return 'x'\n"}, "must define run(args)"),
    ({"code": "async def run(args):\n    return 'x'\n"}, "not async"),
    ({"code": "def run():\n    return 'x'\n"}, "run must take one argument"),
    ({"code": "x = 1\n" * 20000}, "the limit is 65536"),
    ({"limits": {"timeout_s": 10000}}, "the operator allows at most 300"),
    ({"limits": {"gpu": 1}}, "limits: gpu"),
    ({"parameters": {"type": "object", "properties": {"sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv": {}}}},
     "parameter name 'sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv' is not an identifier"),
    ({"parameters": {"type": "object", "properties": {"ignore previous instructions": {"type": "string"}}}},
     "parameters/properties: parameter name 'ignore previous instructions' is not an identifier"),
    ({"parameters": {"type": "object", "properties": {"opts": {"type": "object", "properties": {"a-b": {}}}}}},
     "parameters/properties/opts/properties: parameter name 'a-b'"),
    ({"parameters": {"type": "object", "properties": {"x" * 65: {}}}}, "at most 64 characters"),
])
def test_mistakes_are_reported_when_the_tool_is_created(tools, tmp_path, overrides, why):
    made, registry, ctx = tools
    with pytest.raises(UsageError, match=re.escape(why)):
        create(made, ctx, **overrides)
    assert not (tmp_path / "tools").exists() or not any((tmp_path / "tools").iterdir())
    assert "word_count" not in registry.names()


def test_identifier_parameter_names_are_accepted(tools):
    made, registry, ctx = tools
    params = {"type": "object", "properties": {"_text": {"type": "string"}, "max_words2": {"type": "integer"},
                                               "x" * 64: {"type": "object", "properties": {"inner_1": {}}}}}
    create(made, ctx, parameters=params)
    assert registry.get("word_count").schema()["parameters"] == params


def test_created_tool_loads_like_a_built_in_and_runs(tools, tmp_path):
    made, registry, ctx = tools
    assert "code sha256" in create(made, ctx, parameters='{"type": "object", "properties": {"text": '
                                                         '{"type": "string"}}, "required": ["text"]}')
    assert registry.get("word_count").schema() == {"name": "word_count", "description": "Count words",
                                                   "parameters": PARAMS}
    pinned = registry.get("word_count").pin()
    assert pinned.files["tool.py"] == WORDS and registry.run("word_count", {"text": "a b c"}, ctx, pinned) == "3"
    fresh = Registry(list(default_registry().tools.values()))
    assert authored.AuthoredTools(tmp_path, fresh, AuthoredToolSettings()).register_all() == {}
    assert "word_count" in fresh.names()
    with pytest.raises(UsageError, match="already exists; change it with edit_tool"):
        create(made, ctx)


def test_the_hash_covers_both_files_and_edit_tool_changes_it(tools, tmp_path):
    made, registry, ctx = tools
    create(made, ctx)
    first = authored.snapshot(tmp_path, "word_count").sha256
    made.edit_tool({"name": "word_count", "description": "Count the words"}, ctx)
    second = authored.snapshot(tmp_path, "word_count").sha256
    made.edit_tool({"name": "word_count", "code": WORDS.replace("split()", "split( )")}, ctx)
    third = authored.snapshot(tmp_path, "word_count").sha256
    assert len({first, second, third}) == 3
    assert "unchanged" in made.edit_tool({"name": "word_count", "description": "Count the words"}, ctx)
    with pytest.raises(UsageError, match="nothing to change"):
        made.edit_tool({"name": "word_count"}, ctx)
    assert "not trusted yet" in made.list_tools({}, ctx)
    assert made.delete_tool({"name": "word_count"}, ctx) == "Deleted tool 'word_count'."
    assert "word_count" not in registry.names() and not (tmp_path / "tools" / "word_count").exists()


def test_what_an_approval_shows_hashes_to_the_trust_key_and_undecodable_code_is_refused(tools, tmp_path):
    made, registry, ctx = tools
    create(made, ctx)
    snap = authored.snapshot(tmp_path, "word_count")
    assert authored.code_digest(snap.files) == snap.sha256  # the supervisor checks an approval's code this way
    path = tmp_path / "tools" / "word_count" / "tool.py"
    path.write_bytes(path.read_bytes() + b"# \xff\xfe hidden from a lossy decoder\n")
    with pytest.raises(UsageError, match="not UTF-8"):
        authored.snapshot(tmp_path, "word_count")


def test_broken_tools_on_disk_are_skipped_not_fatal(tmp_path):
    bad = tmp_path / "tools" / "bad"
    bad.mkdir(parents=True)
    (bad / "tool.yaml").write_text("name: bad\ndescription: [unclosed\n")
    (bad / "tool.py").write_text(WORDS)
    registry = default_registry()
    broken = authored.AuthoredTools(tmp_path, registry, AuthoredToolSettings()).register_all()
    assert "invalid YAML" in broken["bad"] and "bad" not in registry.names()


@pytest.mark.parametrize("code,expected", [
    ('def run(args):\n    print("noise")\n    return "ü😀 " + args["text"]\n', "ü😀 hi"),
    ("def run(args):\n    return 42\n", "error: run() returned int, not a string"),
    ("def run(args):\n    return 1 / 0\n", "error: ZeroDivisionError: division by zero (tool.py line 2)"),
    ("import sys\ndef run(args):\n    sys.exit(3)\n", "error: SystemExit: 3 (tool.py line 3)"),
    ("import os\ndef run(args):\n    os._exit(5)\n", "error: the tool process exited with code 5 before returning"),
    ('def run(args):\n    return "x" * 5000\n', "[... 4000 characters truncated ...]"),
])
@pytest.mark.parametrize("mode", ["plain", "sandboxed"])
def test_results_and_failures_reach_the_model(tmp_path, code, expected, mode):
    snap = authored.write(tmp_path, authored.Manifest(name="t", description="d", parameters=PARAMS), code)
    (tmp_path / "ws").mkdir()
    ctx = ToolContext(workspace=tmp_path / "ws", tools_mode=mode, output_max_chars=1000)
    from sentinel.agents.execute import run_code

    out = run_code(snap.code, Limits(), {"text": "hi"}, ctx, AuthoredToolSettings())
    assert expected in out if expected.startswith(("[", "error: the tool process")) else out == expected


def test_limits_are_capped_by_the_operator_maxima():
    from sentinel.agents.execute import limits_for

    settings = AuthoredToolSettings(max_cpu_s=5, max_timeout_s=9, max_memory_mb=128, cpu_s=2, timeout_s=3,
                                    memory_mb=64)
    assert limits_for(Limits(), settings).__dict__ == {"cpu_s": 2, "timeout_s": 3, "memory_mb": 64, "processes": 16}
    assert limits_for(Limits(cpu_s=50, timeout_s=99, memory_mb=4096), settings).__dict__ == {
        "cpu_s": 5, "timeout_s": 9, "memory_mb": 128, "processes": 16}

"""A watcher's command is the operator's: it never runs code the agent wrote into its workspace.

The agent writes a shadow (a `platform.py` that `python3 -m platform` would import from its working directory,
a `./probe.sh`, a `python3` on a PATH directory, a PYTHONPATH) that drops a marker file; the watcher's command
runs the real one, from the watchers' directory, in plain mode and under Leash."""

from __future__ import annotations

import os
import stat
from types import SimpleNamespace

import pytest

from sentinel import paths
from sentinel.local.engine import LocalEngine
from sentinel.watchers import spec
from sentinel.watchers.deliver import command_runner


def script(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture(params=["plain", "sandboxed"])
def setup(request):
    engine = LocalEngine()
    workspace = paths.workspace_dir(engine.home)
    workspace.mkdir(parents=True, exist_ok=True)
    marker = workspace / "SHADOW-RAN"
    shadow = f"open({str(marker)!r}, 'w').write('x')\n"
    (workspace / "platform.py").write_text(shadow)
    script(workspace / "probe.sh", f"#!/bin/sh\ntouch {marker}\n")
    script(workspace / "bin" / "python3", f"#!/bin/sh\ntouch {marker}\n")
    config = engine.config if request.param == "sandboxed" else \
        SimpleNamespace(leash=SimpleNamespace(tools="plain"), sandbox=engine.config.sandbox)
    yield SimpleNamespace(run=command_runner(config, None, workspace), workspace=workspace, marker=marker,
                          watchers=spec.user_dir(engine.home), plain=request.param == "plain")
    engine.close()


def test_python_dash_m_imports_the_installed_module_not_the_workspace_shadow(setup):
    code, out = setup.run(["python3", "-m", "platform"], 30, None)
    assert code == 0 and "Linux" in out
    assert not setup.marker.exists()


def test_a_relative_script_is_the_operators_beside_the_watchers(setup):
    script(setup.watchers / "probe.sh", "#!/bin/sh\necho real probe\n")
    code, out = setup.run(["./probe.sh"], 30, None)
    assert (code, out.strip()) == (0, "real probe")
    assert not setup.marker.exists()


def test_a_relative_script_only_the_agent_wrote_does_not_run(setup):
    code, out = setup.run(["./probe.sh"], 30, None)
    assert code is None and "probe.sh" in out and "not an existing" in out and "\n" not in out.strip()
    assert not setup.marker.exists()


def test_inherited_path_pythonpath_and_cwd_are_not_the_agents(setup, monkeypatch):
    if setup.plain:  # plain mode used to hand the command os.environ (Leash builds its own; its launcher inherits)
        monkeypatch.setenv("PATH", f"{setup.workspace / 'bin'}:{os.environ['PATH']}")
        monkeypatch.setenv("PYTHONPATH", str(setup.workspace))
        monkeypatch.setenv("NODE_PATH", str(setup.workspace))
    code, out = setup.run(["python3", "-c", "import os, sys, platform; print(os.getcwd()); print(os.environ['HOME']);"
                           "print(os.environ.get('PYTHONPATH'), os.environ.get('NODE_PATH'));"
                           "print(os.environ['SENTINEL_WORKSPACE']); print(sys.flags.safe_path)"], 30, None)
    assert code == 0, out
    cwd, home, inherited, workspace, safe = out.strip().splitlines()[-5:]
    assert cwd == home == str(setup.watchers) and inherited == "None None" and safe == "True"
    assert workspace == str(setup.workspace)  # the command still finds the workspace it watches
    assert not setup.marker.exists()


def test_the_workspace_placeholder_reaches_the_agents_files(setup):
    (setup.workspace / "queue.txt").write_text("7\n")
    code, out = setup.run(["cat", "{workspace}/queue.txt"], 30, None)
    assert (code, out) == (0, "7\n")

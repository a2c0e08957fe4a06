"""A roster for orchestration tests: an orchestrator on one scripted server, its specialists on another (each
server answers by the number of assistant messages in its conversation, so two runs need two servers)."""

from __future__ import annotations

import pytest
import yaml


@pytest.fixture
def roster(scripted_server, configure, sentinel_home):
    """roster(head_script, child_script, head_tools=[...], writer_tools=[...], extra={...}) -> (head, child)."""

    def make(head_script, child_script, *, head_tools=("delegate", "read_file", "write_file"),
             writer_tools=("read_file", "write_file", "bash"), extra=None):
        head, child = scripted_server(head_script), scripted_server(child_script)
        cfg = configure(extra, server=head)
        cfg["providers"]["fake2"] = {"base_url": child.base_url, "api_key_env": "FAKE_KEY"}
        (sentinel_home / "config.yaml").write_text(yaml.safe_dump(cfg))
        agents = sentinel_home / "agents"
        agents.mkdir(exist_ok=True)
        profiles = {"orchestrator": {"model": "fake/m", "tools": list(head_tools)},
                    "writer": {"model": "fake2/m", "tools": list(writer_tools), "description": "Writes files"}}
        for name, data in profiles.items():
            (agents / f"{name}.yaml").write_text(yaml.safe_dump(data))
        return head, child

    return make

"""Mode selection: the CLI uses the supervisor when SENTINEL_SOCKET names one, else local mode; status says which."""

from __future__ import annotations

import json


def test_status_says_local_without_a_supervisor(cli):
    assert cli.json("status", "--json", check=0)["mode"] == "local"


def test_a_named_socket_without_a_supervisor_is_a_one_line_error(cli, tmp_path):
    proc = cli("runs", env={"SENTINEL_SOCKET": str(tmp_path / "none.sock")})
    assert proc.returncode == 2 and "no supervisor is listening" in proc.stderr and "Traceback" not in proc.stderr


def test_local_mode_can_be_forced(cli, tmp_path):
    out = cli("status", "--json", env={"SENTINEL_SOCKET": str(tmp_path / "none.sock"), "SENTINEL_MODE": "local"})
    assert json.loads(out.stdout)["mode"] == "local"

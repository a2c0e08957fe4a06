"""The five coding-agent CLIs that install from npm: package, pinned version, and how each is pointed at
a scripted model on loopback, given the `files` MCP server, and run headless on one prompt.

Every client runs with HOME set to a fresh directory of the run, so nothing of the user's own
configuration is read or changed. Versions pinned here are the ones the "tested with" table names.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Callable, TypedDict

PINNED = {"claude-code": ("@anthropic-ai/claude-code", "2.1.330", "claude"),
          "codex": ("@openai/codex", "0.169.0", "codex"),
          "gemini-cli": ("@google/gemini-cli", "0.61.0", "gemini"),
          "cline": ("cline", "3.0.65", "cline"),
          "copilot-cli": ("@github/copilot", "1.0.102", "copilot")}


class Setup:
    """What one client run needs: env additions, commands to run first, and the client's argv."""

    def __init__(self, env: dict[str, str], before: list[list[str]], argv: list[str]):
        self.env = env
        self.before = before
        self.argv = argv


class McpServer(TypedDict):
    """One stdio MCP server as the clients' configs name it."""

    command: str
    args: list[str]


def mcp_servers(root: Path) -> dict[str, McpServer]:
    return {"files": {"command": sys.executable, "args": ["-I", "-m", "sentinel.hooks.compat.mcp", str(root)]}}


def claude_code(bin_dir: Path, url: str, root: Path, home: Path, prompt: str) -> Setup:
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-scripted",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "ENABLE_TOOL_SEARCH": "false"}
    argv = [str(bin_dir / "claude"), "-p", prompt, "--output-format", "json", "--permission-mode", "acceptEdits",
            "--allowedTools", "Bash Write Edit Read mcp__files__delete_file", "--strict-mcp-config",
            "--mcp-config", json.dumps({"mcpServers": mcp_servers(root)}), "--model", "claude-sonnet-4-5"]
    return Setup(env, [], argv)


def codex(bin_dir: Path, url: str, root: Path, home: Path, prompt: str) -> Setup:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    server = mcp_servers(root)["files"]
    # The project trust step is the user's to take (`sentinel hook install` names it); the run takes it here
    # as the user would, then `sentinel hook install codex` trusts Sentinel's own hooks through Codex.
    (codex_home / "config.toml").write_text(
        'model = "gpt-5-codex"\nmodel_provider = "scripted"\n'
        f'[model_providers.scripted]\nname = "scripted"\nbase_url = "{url}/v1"\nwire_api = "responses"\n'
        'env_key = "SCRIPTED_API_KEY"\n'
        f'[mcp_servers.files]\ncommand = {json.dumps(server["command"])}\nargs = {json.dumps(server["args"])}\n'
        f'[projects.{json.dumps(str(root))}]\ntrust_level = "trusted"\n')
    argv = [str(bin_dir / "codex"), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
            prompt]
    return Setup({"SCRIPTED_API_KEY": "sk-scripted", "CODEX_HOME": str(codex_home)}, [], argv)


def gemini_cli(bin_dir: Path, url: str, root: Path, home: Path, prompt: str) -> Setup:
    settings = home / ".gemini"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "settings.json").write_text(json.dumps({"mcpServers": mcp_servers(root),
                                                        "security": {"auth": {"selectedType": "gemini-api-key"}}}))
    # The folder trust step, as the user takes it ("Trust folder" is remembered here).
    (settings / "trustedFolders.json").write_text(json.dumps({str(root): "TRUST_FOLDER"}))
    argv = [str(bin_dir / "gemini"), "-p", prompt, "--yolo", "-m", "gemini-2.5-flash"]
    return Setup({"GEMINI_API_KEY": "scripted", "GOOGLE_GEMINI_BASE_URL": url}, [], argv)


def cline(bin_dir: Path, url: str, root: Path, home: Path, prompt: str) -> Setup:
    exe = str(bin_dir / "cline")
    server = mcp_servers(root)["files"]
    before = [[exe, "auth", "-p", "openai-compatible", "-k", "sk-scripted", "-m", "scripted", "-b", f"{url}/v1"],
              [exe, "mcp", "add", "files", "--yes", "--", server["command"], *server["args"]]]
    return Setup({}, before, [exe, "--json", "--auto-approve", "true", prompt])


def copilot_cli(bin_dir: Path, url: str, root: Path, home: Path, prompt: str) -> Setup:
    env = {"COPILOT_PROVIDER_BASE_URL": f"{url}/v1", "COPILOT_PROVIDER_TYPE": "openai",
           "COPILOT_PROVIDER_WIRE_API": "completions", "COPILOT_PROVIDER_API_KEY": "sk-scripted",
           "COPILOT_MODEL": "scripted", "COPILOT_OFFLINE": "true",
           "COPILOT_ALLOW_ALL": "true"}  # the folder trust step for the cwd (exactly "true")
    argv = [str(bin_dir / "copilot"), "-p", prompt, "--allow-all-tools", "--additional-mcp-config",
            json.dumps({"mcpServers": mcp_servers(root)})]
    return Setup(env, [], argv)


SETUPS: dict[str, Callable[[Path, str, Path, Path, str], Setup]] = {
    "claude-code": claude_code, "codex": codex, "gemini-cli": gemini_cli, "cline": cline, "copilot-cli": copilot_cli}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sentinel" / "compat"

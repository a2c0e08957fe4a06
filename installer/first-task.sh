#!/usr/bin/env bash
# The installer's first task: one agent task on the default model, which must write a file through a tool.
# It always runs in LOCAL mode, on the home of the user running it ($SENTINEL_HOME, default ~/.sentinel),
# so a supervisor already running here (a re-run of `install.sh --system`) never takes it over.
#
# Environment: SENTINEL_HOME (the home it runs on), SENTINEL_CLI (the sentinel command; default: on PATH).
set -euo pipefail

cli="${SENTINEL_CLI:-sentinel}"
home="${SENTINEL_HOME:-$HOME/.sentinel}"
workspace="$(mktemp -d /tmp/sentinel-first-run.XXXXXX)"
echo "==> first task on the default model: local mode, home $home, workspace $workspace (no supervisor takes it)"
status=0
# SENTINEL_WARM=0: the installer leaves no warm server behind (a person's first `sentinel run` starts theirs)
SENTINEL_WARM=0 SENTINEL_MODE=local SENTINEL_HOME="$home" "$cli" run --workspace "$workspace" \
    "Create a file hello.txt containing the word hi" || status=$?
if grep -qx 'hi' "$workspace/hello.txt" 2>/dev/null; then
    echo "==> the agent wrote $workspace/hello.txt: $(cat "$workspace/hello.txt")"
    exit 0
fi
echo "error: the first task did not write $workspace/hello.txt containing hi (sentinel run exit $status; see:" \
     "SENTINEL_MODE=local SENTINEL_HOME=$home sentinel runs)" >&2
exit 1

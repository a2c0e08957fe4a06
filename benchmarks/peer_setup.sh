#!/usr/bin/env bash
# The peer of benchmarks/bench_tasks.py in a venv of its own: mini-swe-agent and llama-cpp-python's
# OpenAI-compatible server (the `server` extra), every package pinned in benchmarks/peer-constraints.txt.
# llama-cpp-python is the wheel installer/install.sh already built (nothing is compiled again), so
# run the installer first.
#
#   bash benchmarks/peer_setup.sh          # makes /opt/peers/mini-swe-agent (PEER_VENV=DIR for another place)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
peer="${PEER_VENV:-/opt/peers/mini-swe-agent}"
sentinel_venv="${SENTINEL_VENV:-/opt/sentinel/venv}"
build="${SENTINEL_LLAMA_BUILD:-portable}"
wheel="$(ls "$(dirname "$sentinel_venv")"/wheels/llama-cpp-python-*-"$build"/llama_cpp_python-*.whl 2>/dev/null | head -1)"
if [ -z "$wheel" ]; then
    echo "error: benchmarks/peer_setup.sh: no llama-cpp-python wheel beside $sentinel_venv (run installer/install.sh first)" >&2
    exit 2
fi
# The same interpreter as Sentinel's venv: the wheel was built for it.
python="$("$sentinel_venv/bin/python" -c 'import sys; print(sys._base_executable)')"
[ -x "$peer/bin/python" ] || "$python" -m venv "$peer"
"$peer/bin/pip" install -q --disable-pip-version-check -c "$here/peer-constraints.txt" \
    mini-swe-agent "${wheel}[server]"
"$peer/bin/python" -c 'import minisweagent, llama_cpp.server.app' >/dev/null
echo "peer ready: $peer (mini-swe-agent $(MSWEA_SILENT_STARTUP=1 "$peer/bin/python" -c 'import minisweagent; print(minisweagent.__version__)'))"

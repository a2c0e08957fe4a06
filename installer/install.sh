#!/usr/bin/env bash
# Set up Sentinel on a fresh Debian machine, then run one agent task on the embedded default model.
# Run as root (CI does); on a workstation: sudo bash installer/install.sh
# With --system it also sets up system mode: the operator group, Muzzle's user, keys file and state,
# a starter /etc/sentinel/config.yaml, and the systemd units (installed and enabled where systemd runs;
# elsewhere `sentinel supervisor` starts Muzzle itself).
#
# Environment:
#   SENTINEL_VENV=DIR            where the virtualenv goes (default /opt/sentinel/venv)
#   SENTINEL_LLAMA_BUILD=native  opt in to a llama.cpp build tuned to THIS machine's CPU (it may crash
#                                on another machine: never use it for an image that moves); the default
#                                is portable (AVX2/FMA/F16C, no AVX-512, no AMX)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SENTINEL_VENV:-/opt/sentinel/venv}"
build="${SENTINEL_LLAMA_BUILD:-portable}"
# Pinned: what we build must not float (installer/constraints.txt pins everything else).
LLAMA_CPP_PYTHON=0.3.36
PIP_VERSION=25.3

system=0
for arg in "$@"; do
    case "$arg" in
        --system) system=1 ;;
        *) echo "error: installer/install.sh: unknown option '$arg' (the only one is --system)" >&2; exit 2 ;;
    esac
done

if [ "$(id -u)" -ne 0 ]; then
    echo "error: installer/install.sh needs root (apt-get, /opt/sentinel); try: sudo bash installer/install.sh" >&2
    exit 2
fi
case "$build" in
    portable) cmake_cpu="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" ;;
    native) cmake_cpu="-DGGML_NATIVE=ON" ;;
    *) echo "error: SENTINEL_LLAMA_BUILD must be portable or native, not '$build'" >&2; exit 2 ;;
esac

echo "==> system packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# python3-venv/-dev: Debian's interpreter (readable by leashed users, unlike a per-user pyenv);
# libcap-dev: python-prctl; build-essential+cmake: llama-cpp-python; bubblewrap: the Leash benchmark's peer;
# nftables+iproute2: per-UID egress rules and their tests; binutils: the portable-build check;
# chromium: the browser the web console's tests drive (Playwright, no browser download);
# sudo: `sudo -u AGENT sentinel chat` (Debian's image has none; util-linux's runuser works too);
# postgresql: the shared store of many hosts (`store: postgresql://...`) and the server its tests start.
apt-get install -y -qq --no-install-recommends \
    python3 python3-venv python3-dev libcap-dev build-essential cmake git binutils \
    bubblewrap nftables iproute2 procps util-linux sudo chromium postgresql >/dev/null

echo "==> virtualenv at $venv"
if [ ! -x "$venv/bin/python" ]; then
    mkdir -p "$(dirname "$venv")"
    /usr/bin/python3 -m venv "$venv"
fi
pip=("$venv/bin/pip" install -q --disable-pip-version-check)
"${pip[@]}" "pip==$PIP_VERSION" "wheel==0.45.1"

# llama.cpp is compiled from source once per flag set (about 6 minutes on 2 cores) into a wheel kept
# beside the venv. pip's own wheel cache is keyed by the sdist, not by CMAKE_ARGS, so it could hand a
# native build to a portable install: never let it.
wheels="$(dirname "$venv")/wheels/llama-cpp-python-$LLAMA_CPP_PYTHON-$build"
if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "==> building llama.cpp ($build) into $wheels"
    mkdir -p "$wheels"
    CMAKE_ARGS="$cmake_cpu -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF" \
        "$venv/bin/pip" wheel -q --disable-pip-version-check --no-deps --no-cache-dir \
        --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_CPP_PYTHON" -w "$wheels"
fi
"${pip[@]}" --force-reinstall --no-deps "$wheels"/llama_cpp_python-*.whl
"${pip[@]}" -c "$here/installer/constraints.txt" -e "$here[local,dev]"
# pip compiles the bytecode of what it installs, but not an editable checkout's: compile it once here, so a
# process that may not write __pycache__ (a leashed one, or one under PYTHONDONTWRITEBYTECODE) never
# compiles the package again at each start (about 0.2 s of every `sentinel run`).
"$venv/bin/python" -m compileall -q "$here/sentinel"
ln -sf "$venv/bin/sentinel" /usr/local/bin/sentinel
chmod -R a+rX "$venv"

# One copy of the default model's weights for the machine (/opt/sentinel/models, root 0755, the file 0644,
# SHA-256 checked when placed): every user's model hosts, local mode's and Muzzle's, load it, and the page
# cache holds it once for all of them. A copy already there is kept (owner and mode repaired), not re-copied.
echo "==> model weights: one copy for every user of this machine"
if ! "$venv/bin/python" -m sentinel.models.weights place; then
    echo "warning: the shared copy of the model was not placed (above): each user's first model call" \
         "assembles a copy of their own instead" >&2
fi

# The first task: local mode on root's own home, whatever runs here (installer/first-task.sh).
echo "==> first task on the embedded default model (no server, no key): it must make a tool call"
# The first use starts a model host on the shared weights.
first=0
SENTINEL_CLI="$venv/bin/sentinel" bash "$here/installer/first-task.sh" || first=$?

if [ "$system" = 1 ]; then
    echo "==> system mode: operator group, Muzzle's user and keys, /etc/sentinel, systemd units"
    # Workers run as the agents' users and Muzzle as its own: each imports Sentinel from this checkout.
    if ! setpriv --reuid=65534 --regid=65534 --clear-groups "$venv/bin/python" -I -c "import sentinel" 2>/dev/null; then
        echo "error: other users cannot read Sentinel at $here (system mode runs it as the agents' users and as" \
             "Muzzle's): put the checkout where every user can read it, or chmod -R a+rX it and its parents;" \
             "system mode was NOT set up" >&2
        exit 1
    fi
    # One line per thing: created now, or kept as it was (owners and modes repaired); a running supervisor
    # is left running.
    "$venv/bin/python" -m sentinel.supervisor.install
    echo "next: name providers and models in /etc/sentinel/config.yaml (keys in /etc/sentinel/muzzle/keys.env), then"
    echo "      sudo sentinel setup --name \"Your Agent\" && sudo sentinel supervisor"
fi

if [ "$first" -ne 0 ]; then
    echo "error: the first task failed (above)$( [ "$system" = 1 ] && echo '; system mode was set up all the same' );" \
         "fix it and run the installer again (it keeps what is done)" >&2
    exit 1
fi
echo "==> done: Sentinel is installed$( [ "$system" = 1 ] && echo ', with system mode' ); running it again is safe"

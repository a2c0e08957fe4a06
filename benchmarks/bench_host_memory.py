"""Memory of model hosts on one machine: resident size of each, and the disk their weights take.

    sudo python benchmarks/bench_host_memory.py [--owners 3] [--no-shared]

Root only. Starts one default-model host (`local/qwen2.5-coder-1.5b`, the default `local:` settings) for each
of N throwaway Linux users, as that user, through the path every run takes (`Hosts.ensure`, then two calls with
different system prompts, so each host holds an agent's prompt and a side call's): the first two as local mode
on their own home, the last as Muzzle's user in system mode (a HOME it cannot write: the model cache falls
back to its state directory). Then prints, per host, RSS and PSS of the model process
(/proc/PID/smaps_rollup: PSS splits each shared page among the processes mapping it) and its private
(anonymous) memory, and the disk taken by every GGUF file the users' homes, state and the machine's shared
directory hold (each inode once). `--no-shared` measures without a machine-wide copy (as before issue 42).
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODEL = "qwen2.5-coder-1.5b"

OWNER = """
import json, sys
from pathlib import Path
from sentinel.models.hosts import HostedModel, Hosts
from sentinel.models.settings import LocalSettings
hosts = Hosts(Path(sys.argv[1]), LocalSettings(idle_s=1800), load_timeout_s=3600)
model = HostedModel("local/{m}", "{m}", hosts, timeout_s=3600)
for system in ("You are an agent working in a software repository.", "You judge one rule about one tool call."):
    model.complete([{{"role": "system", "content": system}}, {{"role": "user", "content": "Say OK."}}], [],
                   max_tokens=4)
print(json.dumps({{"pid": hosts.warm("{m}").pid}}))
""".format(m=MODEL)


def rollup(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split(":", 1)
        fields[key] = int(value.split()[0]) // 1024
    return fields


def gguf_disk(*roots: Path) -> tuple[int, int]:
    """(files, MB on disk) of the regular .gguf files under `roots`, each inode counted once."""
    seen: dict[tuple[int, int], int] = {}
    for root in roots:
        for path in root.rglob("*.gguf") if root.is_dir() else []:
            st = path.lstat()
            if path.is_file() and not path.is_symlink():
                seen[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return len(seen), sum(seen.values()) >> 20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--owners", type=int, default=3)
    parser.add_argument("--no-shared", action="store_true", help="no machine-wide copy of the weights")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("bench_host_memory: run as root (it creates throwaway users)")
    from sentinel.models import hosts, weights

    base = Path(tempfile.mkdtemp(prefix="hostmem-", dir="/tmp"))
    os.chmod(base, 0o755)
    shared = base / "shared"
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "SENTINEL_SHARED_MODELS": str(shared),
           **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {})}
    names = [f"sentinel-mem{i}" for i in range(args.owners)]
    procs, states = [], []
    try:
        if not args.no_shared:
            os.environ["SENTINEL_SHARED_MODELS"] = str(shared)
            print(weights.place(MODEL), flush=True)
        for i, name in enumerate(names):
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                           check=True, capture_output=True)
            pw = pwd.getpwnam(name)
            muzzle = i == args.owners - 1 and args.owners > 2
            home = base / name
            home.mkdir()
            os.chown(home, pw.pw_uid, pw.pw_gid)
            state = home / ("state" if muzzle else ".sentinel/state")
            states.append(state)
            user_env = {**env, "HOME": "/nonexistent" if muzzle else str(home)}
            if muzzle:
                state.mkdir(parents=True)
                os.chown(state, pw.pw_uid, pw.pw_gid)
            procs.append(subprocess.Popen(
                ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups", sys.executable, "-c",
                 OWNER, str(state)], env=user_env, cwd="/", stdout=subprocess.PIPE, text=True))
        began = time.monotonic()
        pids = []
        for proc in procs:
            out, _ = proc.communicate()
            if proc.returncode != 0:
                raise SystemExit(f"bench_host_memory: an owner failed (exit {proc.returncode})")
            pids.append(json.loads(out.strip().splitlines()[-1])["pid"])
        print(f"{len(pids)} hosts loaded and called in {time.monotonic() - began:.0f} s", flush=True)
        print(f"{'owner':<18} {'RSS MB':>7} {'PSS MB':>7} {'private MB':>11} {'file-backed MB':>15}")
        for name, pid in zip(names, pids):
            r = rollup(pid)
            print(f"{name:<18} {r['Rss']:>7} {r['Pss']:>7} {r['Anonymous']:>11} {r['Rss'] - r['Anonymous']:>15}")
        files, mb = gguf_disk(base)
        print(f"model weights on disk: {files} file(s), {mb} MB")
    finally:
        for state in states:
            hosts.stop_all(state, timeout_s=30)
        for name in names:
            subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

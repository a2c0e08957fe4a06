"""Memory of model hosts on one machine: resident size of each, and the disk their weights take.

    sudo python benchmarks/bench_host_memory.py [--owners 3] [--no-shared]
    sudo python benchmarks/bench_host_memory.py --supervisor

Root only. Starts one default-model host (`local/qwen2.5-coder-1.5b`, the default `local:` settings) for each
of N throwaway Linux users, as that user, through the path every run takes (`Hosts.ensure`, then two calls with
different system prompts, so each host holds an agent's prompt and a side call's): the first two as local mode
on their own home, the last as Muzzle's user in system mode (a HOME it cannot write: the model cache falls
back to its state directory). Then prints, per host, RSS and PSS of the model process
(/proc/PID/smaps_rollup: PSS splits each shared page among the processes mapping it) and its private
(anonymous) memory, and the disk taken by every GGUF file the users' homes, state and the machine's shared
directory hold (each inode once). `--no-shared` measures without a machine-wide copy (as before issue 42).

`--supervisor` measures the real thing instead: a throwaway system mode (only where its files go is moved, as
tests/supervisor does), `sentinel setup` of two agents, `sentinel supervisor`, and one real task per agent at
the same time on the default model (through Muzzle, which starts the model host); then every model host
process that serves that system, its memory, and the model's files on disk (the machine's shared copy included).
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


TASK = "Create a file hello.txt containing the word hi"


def host_pids(marker: str) -> list[int]:
    """The model host processes whose command line names `marker` (their socket lives under it)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"sentinel.models.host_process" in argv and any(marker.encode() in a for a in argv):
            found.append(int(proc.name))
    return found


def with_supervisor() -> int:
    import secrets
    import socket

    from sentinel.supervisor.identity import normalize

    base = Path(tempfile.mkdtemp(prefix="hostmem-sx-", dir="/tmp"))
    os.chmod(base, 0o755)
    group, muzzle = f"memops{secrets.token_hex(3)}", f"memmz{secrets.token_hex(3)}"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "SENTINEL_SYSTEM_DIR": str(base / "state"), "SENTINEL_ETC_DIR": str(base / "etc"),
           "SENTINEL_SOCKET": str(base / "run" / "sentinel.sock"), "SENTINEL_OPERATOR_GROUP": group,
           "SENTINEL_MUZZLE_USER": muzzle, "SENTINEL_EGRESS": "off"}
    env.pop("SENTINEL_HOME", None)
    for d in ("etc", "run"):
        (base / d).mkdir(mode=0o755)
    (base / "etc" / "config.yaml").write_text(json.dumps({
        "muzzle": {"port": port, "state_dir": str(base / "muzzle")}, "default_model": f"local/{MODEL}",
        "leash": {"tools": "plain"}}))
    os.chmod(base / "etc" / "config.yaml", 0o644)
    sentinel = [sys.executable, "-m", "sentinel"]
    agents = [normalize(f"Mem {secrets.token_hex(2)}") for _ in range(2)]
    supervisor = None
    try:
        for name in agents:
            subprocess.run([*sentinel, "setup", "--name", name], env=env, check=True, capture_output=True)
        supervisor = subprocess.Popen([*sentinel, "supervisor"], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        sock = base / "run" / "sentinel.sock"
        deadline = time.monotonic() + 60
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        began = time.monotonic()
        runs = [subprocess.Popen([*sentinel, "run", TASK, "--agent", name, "--json"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in agents]
        for name, run in zip(agents, runs):
            out, err = run.communicate(timeout=3600)
            status = json.loads(out)["status"] if out.strip().startswith("{") else err.strip()[:120]
            print(f"{name}: {status} after {time.monotonic() - began:.0f} s", flush=True)
        pids = host_pids(str(base))
        serving = [p for p in pids if b"--serve" in Path(f"/proc/{p}/cmdline").read_bytes()]
        print(f"model hosts serving this system: {len(serving)} (two agents' runs, one supervisor), each with "
              "its keeper process")
        print(f"{'process (user)':<30} {'RSS MB':>7} {'PSS MB':>7} {'private MB':>11} {'file-backed MB':>15}")
        for pid in pids:
            r, user = rollup(pid), pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name
            role = "host" if pid in serving else "keeper"
            print(f"{role} {pid} ({user})".ljust(30) + f" {r['Rss']:>7} {r['Pss']:>7} {r['Anonymous']:>11} "
                  f"{r['Rss'] - r['Anonymous']:>15}")
        homes = [Path(pwd.getpwnam(n).pw_dir) for n in agents]
        files, mb = gguf_disk(Path(os.environ.get("SENTINEL_SHARED_MODELS", "/opt/sentinel/models")), base, *homes)
        print(f"model weights on disk: {files} file(s), {mb} MB")
    finally:
        if supervisor is not None:
            supervisor.terminate()
            supervisor.wait(60)
        for pid in host_pids(str(base)):
            os.kill(pid, 15)
        for name in [*agents, muzzle]:
            subprocess.run(["userdel", "-r", name], capture_output=True)
        subprocess.run(["groupdel", group], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--owners", type=int, default=3)
    parser.add_argument("--no-shared", action="store_true", help="no machine-wide copy of the weights")
    parser.add_argument("--supervisor", action="store_true",
                        help="a real supervisor and two agents' runs (system mode, throwaway)")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("bench_host_memory: run as root (it creates throwaway users)")
    if args.supervisor:
        return with_supervisor()
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

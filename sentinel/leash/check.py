"""`sentinel leash check`: what this kernel supports and what each profile would enforce right now."""

from __future__ import annotations

import os
from pathlib import Path

from sentinel import paths
from sentinel.leash import cgroups, lsm, nft, prepared, seccomp, settings_cache
from sentinel.leash.launch import identity
from sentinel.leash.profile import Profile, tool_profile, worker_profile


def kernel() -> dict[str, object]:
    abi = lsm.abi_version()
    h = cgroups.detect()
    return {
        "landlock_abi": abi,
        "landlock": {"filesystem": abi >= 1, "tcp_ports": abi >= 4, "scope_signals_abstract_unix": abi >= 6},
        "cgroup": {"hierarchies": cgroups.describe(h), "usable_by_this_user": cgroups.describe(h.writable())},
        "seccomp": seccomp.supported(),
        "nftables": {"available": nft.available(),
                     "installed": nft.installed() if nft.available() and os.geteuid() == 0 else None},
    }


def _layers(prof: Profile, root: bool, uid_change: bool, tool: bool) -> dict[str, object]:
    built = lsm.build(lsm.RulesetSpec(read=prof.read, write=prof.write, tcp_connect=prof.tcp_connect)) \
        if lsm.abi_version() else None
    if built is not None:
        os.close(built.fd)
    missing = prepared.plan_missing(built)
    if not tool:  # the supervisor spawns workers (sentinel/leash/spawn.py), with its own layer names
        missing = ["seccomp-net" if m == "seccomp" else m for m in missing]
    rooted = root and tool  # tool launches by root: an IPC namespace, read-only mounts, never uid 0
    wanted = ["rlimits", *(["keyring"] if tool else []), *(["ipc-ns", "mount-ro"] if rooted else []),
              *(["caps"] if root else []), *(["uid"] if uid_change or rooted else []), "no_new_privs",
              "seccomp" if tool else "seccomp-net", "landlock-fs", "landlock-tcp", "landlock-scope"]
    h = cgroups.detect().writable()
    if h.v2 or h.v1:
        wanted.insert(0, "cgroup")
    else:
        missing.append("cgroup")
    return {"enforced": [w for w in wanted if w not in missing], "missing": missing}


def _describe(prof: Profile) -> dict[str, object]:
    return {"read_only": prof.read, "read_write": prof.write, "tcp_connect_ports": prof.tcp_connect,
            "network": prof.network, "rlimits": prof.rlimits, "memory_bytes": prof.memory_bytes,
            "pids_max": prof.pids_max}


def report(agent: str | None = None, workspace: Path | None = None) -> dict[str, object]:
    from sentinel import config

    cfg = config.load()
    who = identity(agent)
    pol = settings_cache.policy_for(agent, system=who.system)
    ws = workspace or paths.workspace_dir()
    proxy = settings_cache.proxy()
    root = os.geteuid() == 0
    tool = tool_profile(ws, pol, proxy=proxy)
    worker = worker_profile(paths.home(), ws, pol, muzzle_port=cfg.muzzle.port, proxy=proxy)
    return {
        "kernel": kernel(),
        "mode": "system" if who.system else "local",
        "runs_as": who.user or (f"uid {os.getuid()}" if not root else "a uid of the tools' own (never root)"),
        "sandbox": cfg.sandbox,
        "policy_file": str(settings_cache.policy_file(agent, system=who.system)),
        "egress_proxy": f"{proxy[0]}:{proxy[1]}",
        "profiles": {
            "tool": {**_layers(tool, root, who.system, tool=True), **_describe(tool)},
            "worker": {**_layers(worker, root, who.system, tool=False), **_describe(worker)},
        },
    }

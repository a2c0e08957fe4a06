"""Per-UID egress rules in nftables (system mode): leashed UIDs reach only Muzzle and the egress proxy.

One table, `inet sentinel`, replaced atomically on every install (so install is idempotent and
also how the UID set is updated); uninstall deletes it. For packets from sockets of a UID in
`@leashed`, the output hook accepts TCP to the allowed loopback ports, resets any other TCP
(connect fails at once) and drops everything else, UDP and DNS included (the send fails with EPERM).
`installer/nftables/sentinel.nft` is the same ruleset as a reviewable template.
"""

from __future__ import annotations

import shutil
import subprocess

from sentinel.errors import SentinelError

TABLE = "sentinel"


class NftError(SentinelError):
    pass


def render(uids: list[int], ports: list[int]) -> str:
    """The ruleset text; a `delete` first (after an `add`, so it never fails) makes it a replacement."""
    if not ports:
        raise ValueError("at least one allowed port is needed")
    elements = f"elements = {{ {', '.join(str(u) for u in sorted(set(uids)))} }}" if uids else ""
    port_set = ", ".join(str(p) for p in sorted(set(ports)))
    return f"""add table inet {TABLE}
delete table inet {TABLE}
table inet {TABLE} {{
    set leashed {{
        type uid
        {elements}
    }}
    chain output {{
        type filter hook output priority filter; policy accept;
        meta skuid @leashed jump leashed
    }}
    chain leashed {{
        oifname "lo" ip daddr 127.0.0.1 tcp dport {{ {port_set} }} accept
        oifname "lo" ip6 daddr ::1 tcp dport {{ {port_set} }} accept
        meta l4proto tcp counter reject with tcp reset comment "sentinel: leashed uid egress"
        counter drop comment "sentinel: leashed uid egress"
    }}
}}
"""


def _nft(args: list[str], stdin: str | None = None, netns: str | None = None) -> str:
    exe = shutil.which("nft") or "/usr/sbin/nft"
    cmd = ([shutil.which("ip") or "/usr/sbin/ip", "netns", "exec", netns] if netns else []) + [exe, *args]
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise NftError("nft not found: install nftables to enforce per-UID egress") from None
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["failed"])[0]
        raise NftError(f"nft {' '.join(args)}: {detail}")
    return proc.stdout


def install(uids: list[int], ports: list[int], netns: str | None = None) -> None:
    """Install (or replace) the table for these leashed UIDs and allowed loopback ports."""
    _nft(["-f", "-"], render(uids, ports), netns)


def uninstall(netns: str | None = None) -> None:
    _nft(["-f", "-"], f"add table inet {TABLE}\ndelete table inet {TABLE}\n", netns)


def installed(netns: str | None = None) -> bool:
    try:
        _nft(["list", "table", "inet", TABLE], netns=netns)
        return True
    except NftError:
        return False


def available() -> bool:
    return shutil.which("nft") is not None

"""Leash: kernel enforcement for workers and tools (import-light; the code lives in submodules).

    launch     public API: ensure_launcher, run_tool, launch, ToolResult
    launcher   the long-lived single-threaded launcher process; keeper: one per launch; child: the
               process that confines itself and execs
    profile    tool and worker profiles; policy: the per-agent Leash policy file
    lsm        Landlock (ctypes); privs: prctl, capabilities, rlimits, seccomp; cgroups
    egress     the egress proxy; nft: per-UID nftables rules; check: `sentinel leash check`
"""

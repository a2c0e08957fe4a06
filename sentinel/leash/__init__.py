"""Leash: kernel enforcement for workers and tools (import-light; the code lives in submodules).

    launch     public API: ensure_launcher, run_tool, launch, ToolResult
    confine    the one confinement sequence every launch goes through (which layers: the profile's)
    launcher   the long-lived single-threaded launcher process; keeper: one per launch; child: the
               process that confines itself and execs
    spawn      a process the supervisor keeps (a worker, Muzzle, the watcher runner); kept: restarts one
    plain      the launches that are not confined (root's administration, the operator's own programs,
               `leash.tools: plain`): an explicit environment and a working directory only root and the
               caller can write; check_as: a check run as a user
    profile    tool and worker profiles; policy: the per-agent Leash policy file
    lsm        Landlock (ctypes); privs: prctl, capabilities, rlimits, seccomp; cgroups
    egress     the egress proxy; nft: per-UID nftables rules; check: `sentinel leash check`
"""

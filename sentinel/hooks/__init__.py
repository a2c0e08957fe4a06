"""Hooks for external coding agents: `sentinel hook AGENT EVENT` runs the rule gate on the agent's payload.

    entry.py       the fast entry point (no typer, rich, pydantic, yaml or openai on a warm path)
    common.py      Reply, event names, shared payload helpers
    agents/        one small adapter per agent: payload -> Action, Verdict -> the agent's own answer,
                   and the agent's hook config for `sentinel hook install`
    background.py  Stop-event work (session accumulator, scribe) in a detached process
    plugin/        the Claude Code plugin shipped in the package
"""

"""The operator's side of system mode: it runs as the operator, never as root.

    paths.py    where the operator socket and the agent door are, and the operator group (plain lookups the
                supervisor shares: it listens where clients connect)
    system.py   SystemEngine: the engine protocol (sentinel/engine/api.py) over the operator socket;
                connect() finds the supervisor, connect_agent() its agent door

UIs reach it through sentinel/connect.py (open_engine); nothing here imports sentinel.supervisor, whose
code runs as root.
"""

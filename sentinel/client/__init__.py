"""The operator's side of system mode: it runs as the operator, never as root.

    paths.py    where the operator socket and the agent door are, and the operator group (plain lookups the
                supervisor shares: it listens where clients connect)
    system.py   the mode rule: connect() finds the supervisor (a SystemEngine when one answers),
                connect_agent() its agent door
    remote.py   SystemEngine: the engine protocol (sentinel/engine/api.py) over the operator socket, each
                method its operation's declared request (sentinel/engine/operations.py); system mode only
    refusals.py the supervisor's failure replies as errors (Denied: not an operator)

UIs reach it through sentinel/connect.py (open_engine); nothing here imports sentinel.supervisor, whose
code runs as root.
"""

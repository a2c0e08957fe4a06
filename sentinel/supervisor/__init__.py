"""The root supervisor (system mode): run registry, approval queue, operator socket, worker spawning.

    layout.py     where system state lives (/var/lib/sentinel, /run/sentinel, /etc/sentinel) and overrides
    auth.py       SO_PEERCRED: who is on the other end, and whether they are an operator
    registry.py   the agents Sentinel created or registered, and the default agent
    agentfs.py    reading an agent's files as root without following anything the agent planted
    hub.py        the narrow interface the handlers see of the loop (settings, store, launch, watch)
    workers.py    one worker per active run: its launch (sentinel/leash/spawn.py), its channel (a Store restricted to its own run), exit
    ops/          what operators may ask: each engine operation's handler, by concern (runs, approvals, agents,
                  watchers, admin), its request declared in sentinel/engine/operations.py
    server.py     the single-threaded selector loop tying them together; restart recovery
    conn.py       its framed non-blocking connections (operator clients, agent-door callers, worker channels)
    startup.py    what it sets up before the loop: the root-only state directory and store, the two sockets
    console.py    the web console's one-time sign-in tokens, issued to operators only
    admin.py      root's administration the CLI runs itself (setup, init, agent remove, egress, serve): the one
                  module here a UI may import

Code here runs as root; nothing here writes into an agent's home.
"""

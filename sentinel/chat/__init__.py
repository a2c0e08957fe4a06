"""`sentinel chat`: the interactive shell on the engine protocol, with durable sessions.

    shell.py      the REPL: messages and /commands, one turn per message, inline approvals, Ctrl-C stops a turn
    terminal.py   its front ends: a terminal (prompt_toolkit in, rich out) or plain lines when stdin is no TTY
    complete.py   /commands, @agent and $skill completion, and their colors as you type
    view.py       how a turn's events look: a spinner while the model works, the answer as Markdown
"""

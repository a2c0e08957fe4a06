"""What CLI, chat, watch and the web console render, shared by every user interface.

    sentinel/ui/escape.py    agent text made safe to show a person (also used by notifications)
    sentinel/ui/render.py    the engine's events as lines (progress, `logs`), tool arguments, task titles, JSON out
    sentinel/ui/spinner.py   the live view of a model call in flight (CLI progress and the chat)
"""

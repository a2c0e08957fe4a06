"""Notifications: a person away from the terminal hears that a run waits for approval, ended, or that a
watcher escalated (config: `notify:`, sentinel/notify/settings.py; how it works: docs/notify.md).

    settings.py   the `notify:` targets
    dispatch.py   finding events in the store, the outbox's deliverer, `kick` (local mode)
    send.py       one attempt on one transport (webhook, ntfy, slack, discord, telegram, email, command, file)
    __main__.py   `python -m sentinel.notify --home H`: local mode's detached deliverer

The outbox rows and decision links are `sentinel.engine.outbox`; console sessions `sentinel.engine.websessions`.
"""

"""The operator's web console: approvals inbox, runs, a run's live events, decisions bound to what was shown.

    settings.py   the `web:` section of config.yaml (config layer)
    guard.py      one-time sign-in, session cookie, CSRF, Host and Origin checks (ASGI middleware)
    live.py       engines per call, the hub polling approvals and runs, following a run's events
    render.py     Jinja2 templates and what they are given (approval cards, run trees, parent chains)
    views.py      routes, server-sent events, approve and deny
    app.py        the starlette app and `sentinel web`
    templates/, static/   shipped in the package; no build step, nothing from a CDN

The console talks only to the engine protocol (`sentinel.engine.api.Engine`). Nothing here is imported
at start-up by other commands.
"""

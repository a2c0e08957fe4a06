"""Agent memory (docs/architecture.md, State): vaults of Markdown notes, their recall index, injection scanning.

    sentinel.memory.vault.Memory    one scope: remember, recall, notes, read, forget, prompt_index
    sentinel.memory.index.Index     the SQLite FTS5 cache of a scope's notes (synced from the files)
    sentinel.memory.notes           the note format (frontmatter + body), slugs
    sentinel.memory.scan.scan       the prompt-injection scanner for text bound for a system prompt
    sentinel.memory.settings        the `memory:` section of config.yaml

This package imports nothing at import time, so the config layer can load its settings cheaply.
"""

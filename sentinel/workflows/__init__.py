"""Saved workflows: linear steps, each its own supervised run under the workflow's run.

    model.py      the file (`workflows/<name>.yaml`), its validation and the `{{...}}` templating
    runner.py     advancing a workflow run: one child run per step, in order
    settings.py   the `orchestration:` section of config.yaml
"""

"""The installed hook command: `PYTHON -I -S .../sentinel/hooks/launch.py hook AGENT EVENT`.

Agents start the hook on every tool call, so it starts as close to the interpreter's floor as it
can: `-S` skips `site` (and with it every .pth file, including an editable install's path finder),
`-I` ignores PYTHON* variables and the user's site directory. This file then puts the package's own
parent first on sys.path and the environment's site-packages last, so the stdlib is found at once,
Sentinel without any finder, and third-party packages only when a cold path needs them (a rules
cache rebuild: yaml, pydantic; an OpenAI-compatible judge: openai).
"""

import os
import sys

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Without `site`, sys.prefix is the base interpreter's; a venv is found from the executable's path.
VENV = os.path.dirname(os.path.dirname(sys.executable))
SITE = os.path.join(VENV if os.path.exists(os.path.join(VENV, "pyvenv.cfg")) else sys.prefix, "lib",
                    f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")


def main() -> int:
    sys.path[0] = PACKAGE_PARENT  # not this directory: its modules must not shadow the stdlib
    sys.path.append(SITE)
    args = sys.argv[1:]
    if args[:1] == ["hook"]:
        args = args[1:]
    from sentinel.hooks.entry import main as hook_main

    return hook_main(args)


if __name__ == "__main__":
    sys.exit(main())

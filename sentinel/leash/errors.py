"""Leash's user-facing errors (one line each)."""

from __future__ import annotations

from sentinel.errors import SentinelError


class SandboxUnavailable(SentinelError):
    """A sandbox layer the profile requires cannot be applied and `sandbox: enforce` is set."""


class LaunchFailed(SentinelError):
    """The launcher could not start the process (not a sandbox question: a harness or host problem)."""

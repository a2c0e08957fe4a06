"""Sentinel: a supervised agent harness for Linux.

Nothing is imported here on purpose: the hook entry point must start fast.
"""

__version__ = "0.1.0"

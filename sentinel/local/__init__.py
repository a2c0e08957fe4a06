"""Local mode: the engine protocol executed in the calling process (no root, no daemon)."""

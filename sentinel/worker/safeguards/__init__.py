"""The loop's safeguards as rules, not phrases (docs/safeguards.md): the per-run contract lives here (contract.py);
the final-answer checks (sentinel/worker/answer.py) and the pre-call guards (sentinel/worker/loop.py,
sentinel/worker/deletes.py) are to move here, one small rule each."""

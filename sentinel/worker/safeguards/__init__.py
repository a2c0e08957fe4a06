"""The loop's safeguards as rules, not phrases (docs/safeguards.md), each module one kind:

- contract.py: what a task run asks for, derived once from its words and its workspace, checked by the harness;
- draft.py: the same contract drafted by the model in a schema-constrained first call, merged conservatively;
- guards.py: the pre-call guards (the same call twice, a run in circles, an unread overwrite, a change asked of a
  question, a delete wider than asked), a list of small rules the loop asks before a call is decided;
- answer.py: the final-answer checks, a list of small rules the loop asks when a reply has no tool call.
"""

"""A journal line holding a file name that is not UTF-8 (os.fsdecode's lone surrogates) is written, and read back
as the same name: the agent controls file names, and a name must not cost the run its record."""

from __future__ import annotations

import os

from sentinel.engine import journal, records


def test_a_name_that_is_not_utf8_is_journaled_and_read_back_byte_for_byte(tmp_path):
    names = [os.fsdecode(b"x\xff.txt"), os.fsdecode(b"a\\\xfe"), os.fsdecode(b"\xc3(\xa9"), "caf\u00e9.txt"]
    log = journal.Journal(tmp_path / "journal.jsonl")
    log.append(records.WorkspaceStep(call_id="c1", tool="bash", changes={n: None for n in names}),
               records.Finished(call_id="c1", result=f"made {names[0]}"))
    log.close()
    assert (tmp_path / "journal.jsonl").read_bytes().decode("utf-8")  # still a UTF-8 text file
    step, finished = journal.read(tmp_path / "journal.jsonl")[0]
    assert isinstance(step, records.WorkspaceStep) and isinstance(finished, records.Finished)
    assert [os.fsencode(n) for n in step.changes] == [b"x\xff.txt", b"a\\\xfe", b"\xc3(\xa9", "caf\u00e9.txt".encode()]
    assert finished.result == f"made {names[0]}"

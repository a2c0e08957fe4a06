"""Muzzle benchmark: the overhead of the proxy against a zero-latency upstream, and the LiteLLM proxy as a peer.

    /opt/sentinel/venv/bin/python benchmarks/bench_muzzle.py [--calls 1000] [--streams 1000]

Every server runs in its own process on loopback: the upstream (a bare ASGI app
answering instantly, 20 content chunks per stream), `sentinel muzzle serve`,
and, when it is installed (in /opt/litellm-venv, or --litellm PATH), `litellm`
with the same upstream. The same client measures all targets, interleaved
call by call so drift hits them equally:

  - added latency p50/p99 of non-streaming calls (target minus direct)
  - added time to first content chunk of streaming calls
  - throughput and errors with 50 concurrent streams

Muzzle does its full work on every call: token lookup and budget check
(SQLite), outbound redaction, inbound stream inspection, one log line, and
charging the run. LiteLLM runs with a master key and no database.
Targets: < 3 ms added at p50, no errors at 50 concurrent streams, less overhead than LiteLLM.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

UPSTREAM_APP = r'''
import json, time
CHUNKS = 20
def _completion():
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello " * CHUNKS},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": CHUNKS, "total_tokens": 12 + CHUNKS}}
WHOLE = json.dumps(_completion()).encode()
def _sse():
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    out = [dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}}])]
    out += [dict(base, choices=[{"index": 0, "delta": {"content": "hello "}}]) for _ in range(CHUNKS)]
    out.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    out.append(dict(base, choices=[], usage={"prompt_tokens": 12, "completion_tokens": CHUNKS, "total_tokens": 32}))
    return [b"data: " + json.dumps(c).encode() + b"\n\n" for c in out] + [b"data: [DONE]\n\n"]
EVENTS = _sse()
MODELS = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "bench"}]}).encode()

async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"}); return
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            break
    if scope["method"] == "GET":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": MODELS}); return
    if json.loads(body).get("stream"):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for ev in EVENTS:
            await send({"type": "http.response.body", "body": ev, "more_body": True})
        await send({"type": "http.response.body", "body": b""}); return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": WHOLE})

if __name__ == "__main__":
    import sys, uvicorn
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
'''

MESSAGES = [{"role": "system", "content": "You are a helpful assistant. " * 20},
            {"role": "user", "content": "Summarise the following notes.\n" + "The build passed on Tuesday. " * 30}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port: int, path: str, timeout_s: float, proc: subprocess.Popen, headers: dict | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server on port {port} exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path, headers=headers or {})
            if conn.getresponse().status < 500:
                conn.close()
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"server on port {port} did not start in {timeout_s:.0f}s")


class Target:
    def __init__(self, name: str, port: int, prefix: str, key: str, model: str):
        self.name, self.port, self.prefix, self.key, self.model = name, port, prefix, key, model
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def _post(self, stream: bool) -> http.client.HTTPResponse:
        body = json.dumps({"model": self.model, "messages": MESSAGES, "stream": stream})
        self.conn.request("POST", f"{self.prefix}/chat/completions", body,
                          {"Content-Type": "application/json", "Authorization": f"Bearer {self.key}"})
        return self.conn.getresponse()

    def whole(self) -> float:
        t = time.perf_counter()
        resp = self._post(False)
        data = resp.read()
        elapsed = time.perf_counter() - t
        assert resp.status == 200 and b"hello" in data, (self.name, resp.status, data[:200])
        return elapsed

    def first_token(self) -> float:
        t = time.perf_counter()
        resp = self._post(True)
        assert resp.status == 200, (self.name, resp.status, resp.read()[:200])
        ttft = None
        while True:
            line = resp.readline()
            if not line:
                break
            if ttft is None and line.startswith(b"data: {") and b'"content":"hello' in line.replace(b" ", b"")[:4096]:
                ttft = time.perf_counter() - t
        assert ttft is not None, self.name
        return ttft


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def interleaved(targets: list[Target], n: int, fn: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {t.name: [] for t in targets}
    for t in targets:  # warm up connections, caches and code paths
        for _ in range(30):
            getattr(t, fn)()
    for _ in range(n):
        for t in targets:
            out[t.name].append(getattr(t, fn)() * 1000)
    return out


async def _throughput(target: Target, streams: int, concurrency: int) -> dict[str, float]:
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"Authorization": f"Bearer {target.key}"}
    body = {"model": target.model, "messages": MESSAGES, "stream": True}
    errors, durations, left = 0, [], [streams]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{target.port}{target.prefix}", limits=limits,
                                 timeout=60) as client:
        async def worker() -> None:
            nonlocal errors
            while left[0] > 0:
                left[0] -= 1
                t = time.perf_counter()
                try:
                    async with client.stream("POST", "/chat/completions", json=body, headers=headers) as resp:
                        text = "".join([line async for line in resp.aiter_lines()])
                    if resp.status_code != 200 or "[DONE]" not in text or text.count("hello") < 20:
                        errors += 1
                except Exception:  # noqa: BLE001 - counted
                    errors += 1
                durations.append(time.perf_counter() - t)

        began = time.perf_counter()
        await asyncio.gather(*[worker() for _ in range(concurrency)])
        wall = time.perf_counter() - began
    return {"streams": streams, "wall": wall, "errors": errors, "durations": durations}


def throughput(targets: list[Target], streams: int, concurrency: int, rounds: int = 5) -> dict[str, dict]:
    """Rounds alternate between targets, so a noisy neighbour slows them all alike."""
    runs: dict[str, list[dict]] = {t.name: [] for t in targets}
    for _ in range(rounds):
        for t in targets:
            runs[t.name].append(asyncio.run(_throughput(t, max(concurrency, streams // rounds), concurrency)))
    out = {}
    for name, parts in runs.items():
        durations = [d for p in parts for d in p["durations"]]
        out[name] = {"streams_per_s": sum(p["streams"] for p in parts) / sum(p["wall"] for p in parts),
                     "errors": sum(p["errors"] for p in parts), "p50_ms": pct(durations, 50) * 1000,
                     "p99_ms": pct(durations, 99) * 1000}
    return out


def start_upstream(root: Path, python: str) -> tuple[subprocess.Popen, int]:
    app = root / "zero_upstream.py"
    app.write_text(UPSTREAM_APP)
    port = free_port()
    proc = subprocess.Popen([python, str(app), str(port)], cwd=root)
    wait_ready(port, "/v1/models", 30, proc)
    return proc, port


def start_muzzle(root: Path, upstream_port: int, name: str = "muzzle",
                 launcher: list[str] | None = None) -> tuple[subprocess.Popen, Target]:
    import yaml

    home = root / f"{name}-home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump({"providers": {
        "bench": {"base_url": f"http://127.0.0.1:{upstream_port}/v1", "api_key_env": "BENCH_UPSTREAM_KEY"}}}))
    env = {**os.environ, "SENTINEL_HOME": str(home), "BENCH_UPSTREAM_KEY": "sk-bench-upstream-0123456789abcdef"}
    token = subprocess.run([sys.executable, "-m", "sentinel", "muzzle", "token", "--agent", "bench",
                            "--models", "bench/m", "--ttl", "2h"], env=env, check=True, capture_output=True,
                           text=True).stdout.strip()
    port = free_port()
    proc = subprocess.Popen([*(launcher or [sys.executable, "-m", "sentinel"]), "muzzle", "serve", "--port", str(port)],
                            env=env, stderr=subprocess.DEVNULL)
    wait_ready(port, "/healthz", 30, proc)
    return proc, Target(name, port, "/v1", token, "bench/m")


def start_litellm(root: Path, exe: str, upstream_port: int) -> tuple[subprocess.Popen, Target]:
    import yaml

    cfg = root / "litellm.yaml"
    cfg.write_text(yaml.safe_dump({
        "model_list": [{"model_name": "bench/m", "litellm_params": {
            "model": "openai/m", "api_base": f"http://127.0.0.1:{upstream_port}/v1", "api_key": "sk-bench-upstream"}}],
        "general_settings": {"master_key": "sk-bench-master"},
        "litellm_settings": {"drop_params": True, "telemetry": False}}))
    port = free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
           "LITELLM_LOG": "ERROR", "DISABLE_SCHEMA_UPDATE": "True"}
    log = open(root / "litellm.log", "w")
    proc = subprocess.Popen([exe, "--config", str(cfg), "--host", "127.0.0.1", "--port", str(port),
                             "--num_workers", "1"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    wait_ready(port, "/health/liveliness", 180, proc)
    return proc, Target("litellm", port, "/v1", "sk-bench-master", "bench/m")


def find_litellm(explicit: str | None) -> str | None:
    for candidate in (explicit, "/opt/litellm-venv/bin/litellm", shutil.which("litellm")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


# -- a 2 MB streamed reply: Muzzle's inbound redaction against the same bytes passed through unredacted --------

LONG_UPSTREAM_APP = r'''
import json, sys
TEXT = open(sys.argv[2]).read()
PIECE = int(sys.argv[3])
base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
events = [dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}}])]
events += [dict(base, choices=[{"index": 0, "delta": {"content": TEXT[i:i + PIECE]}}]) for i in range(0, len(TEXT), PIECE)]
events.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
BODY = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"

async def app(scope, receive, send):
    while (await receive()).get("more_body"):
        pass
    if scope["method"] == "GET":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"object":"list","data":[]}'}); return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    for i in range(0, len(BODY), 1 << 16):
        await send({"type": "http.response.body", "body": BODY[i:i + (1 << 16)], "more_body": True})
    await send({"type": "http.response.body", "body": b""})

if __name__ == "__main__":
    import uvicorn
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False, lifespan="off")
'''

# Muzzle with its stream redactor replaced by one that passes every piece through: the same relay, JSON and
# checks, no redaction. The difference to the real Muzzle is what streaming redaction costs.
UNREDACTED_MUZZLE = r'''
import sys
import sentinel.muzzle.inspect as inspect

class PassThrough:
    def __init__(self, redactor, *args, **kwargs):
        self.findings = []
    def feed(self, piece):
        return piece
    def flush(self):
        return ""

inspect.StreamRedactor = PassThrough
from sentinel.cli import main
sys.argv = ["sentinel", *sys.argv[1:]]
main()
'''


def long_reply_text(size: int) -> str:
    """What an agent's model writes at length: markdown, code and config with secrets and secret-like words
    on most lines, private key blocks, minified JSON lines naming tokens, and base64 blobs (long words)."""
    parts, n, total = [], 0, 0
    while total < size:
        n += 1
        block = (f"## Step {n}: deploy the service\n"
                 + ("The deploy script reads its settings from the environment, so never commit the key, the token "
                    "or the password; rotate a key as soon as it has been pasted anywhere. ") * 4 + "\n"
                 f"export API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5q{n:08d}\n"
                 f"DB_PASSWORD = hunter2-{n}\n"
                 f"aws = AKIAIOSFODNN{n % 10_000_000:07d}X  # the access key the job uses\n"
                 f'{{"client_secret": "cs-{n:010d}", "max_tokens": 4096, "region": "eu-west-1"}}\n'
                 "```python\nfor item in items:\n    total += item.price * item.count  # keep the running total\n```\n")
        if n % 20 == 0:  # minified JSON: one long line that names tokens all along
            block += "[" + ",".join(f'{{"id":{i},"token_count":{i * 7},"label":"item {i}"}}' for i in range(200)) + "]\n"
        if n % 20 == 10:  # a base64 blob: one long word
            block += "data:image/png;base64," + "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk" * 160 + "\n"
        if n % 40 == 0:
            block += ("-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEpAIBAAKCAQEA1bc+/=\n" * 20
                      + "-----END RSA PRIVATE KEY-----\n")
        parts.append(block)
        total += len(block)
    return "".join(parts)[:size]


def _stream_once(port: int, prefix: str, key: str, model: str) -> tuple[float, list[bytes]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = json.dumps({"model": model, "messages": MESSAGES, "stream": True})
    t = time.perf_counter()
    conn.request("POST", f"{prefix}/chat/completions", body,
                 {"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    resp = conn.getresponse()
    assert resp.status == 200, (port, resp.status, resp.read()[:300])
    lines = []
    while True:
        line = resp.readline()
        if not line or line.startswith(b"data: [DONE]"):
            break
        if line.startswith(b"data: {"):
            lines.append(line)
    elapsed = time.perf_counter() - t
    conn.close()
    return elapsed, lines


def _content(lines: list[bytes]) -> str:
    out = []
    for line in lines:
        for choice in json.loads(line[6:]).get("choices") or []:
            out.append((choice.get("delta") or {}).get("content") or "")
    return "".join(out)


def long_reply(root: Path, size: int = 2_000_000, piece: int = 4, rounds: int = 3) -> None:
    """One 2 MB reply streamed in `piece`-character deltas (about a token each): direct from the upstream,
    through Muzzle with its stream redactor passing text through, and through Muzzle redacting it."""
    from sentinel.muzzle.redact import Redactor

    text = long_reply_text(size)
    (root / "long.txt").write_text(text)
    app = root / "long_upstream.py"
    app.write_text(LONG_UPSTREAM_APP)
    up_port = free_port()
    procs = [subprocess.Popen([sys.executable, str(app), str(up_port), str(root / "long.txt"), str(piece)], cwd=root)]
    try:
        wait_ready(up_port, "/v1/models", 60, procs[0])
        proc, redacted = start_muzzle(root, up_port, name="long")
        procs.append(proc)
        wrapper = root / "unredacted_muzzle.py"
        wrapper.write_text(UNREDACTED_MUZZLE)
        proc, plain = start_muzzle(root, up_port, name="long-plain", launcher=[sys.executable, str(wrapper)])
        procs.append(proc)
        targets = [("direct", up_port, "/v1", "unused", "m"), ("unredacted", plain.port, "/v1", plain.key, plain.model),
                   ("redacted", redacted.port, "/v1", redacted.key, redacted.model)]
        times: dict[str, list[float]] = {name: [] for name, *_ in targets}
        outputs: dict[str, str] = {}
        for _ in range(rounds):
            for name, *where in targets:
                elapsed, lines = _stream_once(*where)
                times[name].append(elapsed)
                outputs[name] = _content(lines)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(15)
    expected = len(Redactor(b"bench").find(text))
    found = outputs["redacted"].count("[REDACTED:")
    assert outputs["direct"] == text and outputs["unredacted"] == text, "the pass-through changed the text"
    assert found == expected and "hunter2-1\n" not in outputs["redacted"], (found, expected)
    best = {name: min(ts) for name, ts in times.items()}
    print(f"\n{size / 1e6:.0f} MB streamed reply in {piece}-character deltas ({len(text) // piece} events), "
          f"best of {rounds} (s); {found} secrets redacted")
    print(f"  {'target':<11} {'best':>8} {'median':>8} {'added':>8}")
    for name, ts in times.items():
        print(f"  {name:<11} {best[name]:8.2f} {statistics.median(ts):8.2f} {best[name] - best['direct']:8.2f}")
    added_plain, added = best["unredacted"] - best["direct"], best["redacted"] - best["direct"]
    print(f"  redacted / unredacted: {best['redacted'] / best['unredacted']:.2f}x total, "
          f"{added / added_plain:.2f}x added over direct (target: within 2x)")


def report(targets: list[Target], whole: dict, ttft: dict, tput: dict) -> None:
    d50, d99 = pct(whole["direct"], 50), pct(whole["direct"], 99)
    t50, t99 = pct(ttft["direct"], 50), pct(ttft["direct"], 99)
    print(f"\nnon-streaming latency, {len(whole['direct'])} calls each (ms)")
    print(f"  {'target':<8} {'p50':>8} {'p99':>8} {'added p50':>10} {'added p99':>10}")
    for t in targets:
        w = whole[t.name]
        print(f"  {t.name:<8} {pct(w, 50):8.2f} {pct(w, 99):8.2f} {pct(w, 50) - d50:10.2f} {pct(w, 99) - d99:10.2f}")
    print(f"\nstreaming time to first content chunk, {len(ttft['direct'])} calls each (ms)")
    print(f"  {'target':<8} {'p50':>8} {'p99':>8} {'added p50':>10} {'added p99':>10}")
    for t in targets:
        w = ttft[t.name]
        print(f"  {t.name:<8} {pct(w, 50):8.2f} {pct(w, 99):8.2f} {pct(w, 50) - t50:10.2f} {pct(w, 99) - t99:10.2f}")
    print("\n50 concurrent streams (21 chunks each), rounds interleaved between targets")
    print(f"  {'target':<8} {'streams/s':>10} {'errors':>7} {'p50 ms':>8} {'p99 ms':>8}")
    for t in targets:
        r = tput[t.name]
        print(f"  {t.name:<8} {r['streams_per_s']:10.1f} {r['errors']:7d} {r['p50_ms']:8.1f} {r['p99_ms']:8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000, help="sequential calls per target and kind")
    parser.add_argument("--streams", type=int, default=1000, help="streams per target in the concurrency test")
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--litellm", default=None, help="path of the litellm executable (default: /opt/litellm-venv)")
    parser.add_argument("--no-litellm", action="store_true")
    parser.add_argument("--long-reply", type=int, default=2_000_000, metavar="CHARS",
                        help="size of the long streamed reply case (0: skip it)")
    parser.add_argument("--only-long-reply", action="store_true", help="run only the long streamed reply case")
    parser.add_argument("--long-rounds", type=int, default=3, help="rounds of the long streamed reply case")
    args = parser.parse_args()

    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="bench-muzzle-") as tmp:
        root = Path(tmp)
        if args.only_long_reply:
            return long_reply(root, args.long_reply or 2_000_000, rounds=args.long_rounds)
        try:
            litellm = None if args.no_litellm else find_litellm(args.litellm)
            # the upstream runs on the fastest interpreter at hand (uvloop/httptools if the peer's venv has them)
            up_python = str(Path(litellm).parent / "python") if litellm else sys.executable
            up_proc, up_port = start_upstream(root, up_python)
            procs.append(up_proc)
            targets = [Target("direct", up_port, "/v1", "unused", "m")]
            proc, muzzle = start_muzzle(root, up_port)
            procs.append(proc)
            targets.append(muzzle)
            if litellm:
                try:
                    proc, peer = start_litellm(root, litellm, up_port)
                    procs.append(proc)
                    targets.append(peer)
                except RuntimeError as exc:
                    print(f"note: LiteLLM proxy did not start ({exc}); see {root / 'litellm.log'}")
            elif args.no_litellm:
                print("note: --no-litellm: skipping the peer")
            else:
                print("note: LiteLLM not installed (python3 -m venv /opt/litellm-venv && "
                      "/opt/litellm-venv/bin/pip install 'litellm[proxy]'); skipping the peer")
            print(f"targets: {', '.join(t.name for t in targets)}; upstream python: {up_python}")
            whole = interleaved(targets, args.calls, "whole")
            ttft = interleaved(targets, max(1, args.calls // 2), "first_token")
            tput = throughput(targets, args.streams, args.concurrency)
            report(targets, whole, ttft, tput)
            if args.long_reply:
                long_reply(root, args.long_reply, rounds=args.long_rounds)
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()


# -- the model host hop (issue: the embedded model in its own process) ------------------------------

HOST_HOP_DOC = """Host hop: what running a local model in its own process costs, against the same model in-process.

    /opt/sentinel/venv/bin/python benchmarks/bench_muzzle.py --host-hop [--model smollm2-135m] [--calls 200]

Both sides use one llama.cpp build and the same GGUF, at temperature 0, interleaved call by call:
  - added latency p50/p99 of a short completion (1 token, prompt prefix cached): Muzzle's hop to the
    host (HTTP over its Unix socket, JSON, the host's thread handoff) minus the in-process call
  - generation tokens/s of a streamed 64-token reply, through the host and in-process
  - restart time: SIGKILL the host's model process, then time until the next call is answered
Target: <= 2 ms added at p50; tokens/s unchanged within noise."""


def host_hop(model: str, calls: int) -> None:
    import statistics

    import httpx

    from sentinel.models.hosts import Hosts, stop_all
    from sentinel.models.local import Engine
    from sentinel.models.settings import LocalSettings

    short = [{"role": "user", "content": "Reply with the single word: ok"}]
    story = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    body = {"model": model, "messages": short, "max_tokens": 1, "temperature": 0}
    with tempfile.TemporaryDirectory(prefix="bench-host-") as tmp:
        hosts = Hosts(Path(tmp), LocalSettings(idle_s=600))
        try:
            began = time.monotonic()
            ready = hosts.ensure(model)
            cold_s = time.monotonic() - began
            engine = Engine(model)
            http = httpx.Client(transport=httpx.HTTPTransport(uds=ready.address), timeout=300)
            url = "http://host/v1/chat/completions"

            def via_host() -> None:
                http.post(url, json=body).raise_for_status()

            def in_process() -> None:
                engine.complete(short, [], max_tokens=1)

            for fn in (via_host, in_process):  # warm: the prompt is cached on both sides
                fn()
            samples: dict[str, list[float]] = {"host": [], "in-process": []}
            for _ in range(calls):
                for name, fn in (("host", via_host), ("in-process", in_process)):
                    t = time.perf_counter()
                    fn()
                    samples[name].append((time.perf_counter() - t) * 1000)
            added = [h - i for h, i in zip(samples["host"], samples["in-process"])]

            def tps_host() -> float:
                t, n = time.perf_counter(), 0
                with http.stream("POST", url, json={**body, "messages": story, "max_tokens": 64, "stream": True}) as r:
                    for line in r.iter_lines():
                        n += line.startswith("data:") and '"content":"' in line and '"content":""' not in line
                return n / (time.perf_counter() - t)

            def tps_local() -> float:
                t, pieces = time.perf_counter(), []
                engine.complete(story, [], max_tokens=64, on_delta=pieces.append)
                return len(pieces) / (time.perf_counter() - t)

            tps = {"host": [], "in-process": []}
            for _ in range(3):
                tps["host"].append(tps_host())
                tps["in-process"].append(tps_local())
            restarts = []
            for _ in range(3):
                os.kill(hosts.ensure(model).pid, 9)
                t = time.monotonic()
                while True:
                    try:
                        ready = hosts.ensure(model)
                        with httpx.Client(transport=httpx.HTTPTransport(uds=ready.address), timeout=300) as c:
                            c.post(url, json=body).raise_for_status()
                        break
                    except (httpx.HTTPError, OSError):
                        time.sleep(0.01)
                restarts.append(time.monotonic() - t)
            http.close()
            engine.close()
        finally:
            stop_all(Path(tmp))
    print(f"model local/{model}; load average {os.getloadavg()[0]:.1f} (2 shared cores: other work runs meanwhile)")
    print(f"  first use (start host, load): {cold_s:.2f} s")
    for name, values in samples.items():
        print(f"  short completion {name:10}  p50 {pct(values, 50):7.2f} ms  p99 {pct(values, 99):7.2f} ms")
    print(f"  added by the host hop       p50 {statistics.median(added):7.2f} ms  p99 {pct(added, 99):7.2f} ms")
    for name, values in tps.items():
        print(f"  generation {name:10}  {statistics.median(values):6.1f} tokens/s (median of 3)")
    print(f"  restart after SIGKILL until answered: median {statistics.median(restarts):.2f} s "
          f"(runs: {', '.join(f'{r:.2f}' for r in restarts)})")


INSPECT_DOC = """Outbound inspection in process (no server): the time Muzzle spends redacting one request body.

    /opt/sentinel/venv/bin/python benchmarks/bench_muzzle.py --inspect [--calls 2000]

Two bodies: the small one the proxy benchmark sends, and an agent-shaped one (a system prompt, 8 tools
with JSON schemas, 30 turns of tool calls and results, `stop`, `user`, `metadata`), each sent
`--calls` times as a conversation resends its history. Every string of the body is inspected.
"""


def agent_body() -> dict:
    tools = [{"type": "function", "function": {
        "name": f"tool_{i}", "description": f"Does thing {i} to the workspace. " * 4,
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "a path inside the workspace"},
            "content": {"type": "string", "description": "what to write"},
            "mode": {"type": "string", "enum": ["a", "b", "c"]}}, "required": ["path"]}}} for i in range(8)]
    messages = [{"role": "system", "content": "You are a careful coding agent. " * 60},
                {"role": "user", "content": "Fix the failing test in src/app.py and explain the change."}]
    for turn in range(30):
        messages.append({"role": "assistant", "content": f"Step {turn}: reading the next file.", "tool_calls": [
            {"id": f"c{turn}", "type": "function", "function": {
                "name": "tool_1", "arguments": json.dumps({"path": f"src/mod_{turn}.py", "mode": "a"})}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{turn}",
                         "content": f"def f_{turn}(x):\n    return x + {turn}\n" * 20})
    return {"model": "fake/m", "messages": messages, "tools": tools, "stop": ["END"], "user": "ana",
            "metadata": {"task": "t-1"}, "temperature": 0.2, "max_tokens": 512}


def inspect_only(calls: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from sentinel.muzzle.inspect import Inspector
    from sentinel.muzzle.redact import Redactor
    from sentinel.muzzle.settings import MuzzleSettings

    inspector = Inspector(Redactor(b"k" * 32), MuzzleSettings())
    for name, body in (("bench body", {"model": "fake/m", "messages": MESSAGES}), ("agent body", agent_body())):
        size = len(json.dumps(body))
        times = []
        for _ in range(calls):
            began = time.perf_counter()
            inspector.request(body)
            times.append((time.perf_counter() - began) * 1e6)
        print(f"  inspect {name} ({size:,} bytes)  p50 {pct(times, 50):8.1f} us  p99 {pct(times, 99):8.1f} us")


if __name__ == "__main__":
    if "--inspect" in sys.argv:
        only = argparse.ArgumentParser(description=INSPECT_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
        only.add_argument("--inspect", action="store_true")
        only.add_argument("--calls", type=int, default=2000)
        inspect_only(only.parse_args().calls)
    elif "--host-hop" in sys.argv:
        hop = argparse.ArgumentParser(description=HOST_HOP_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
        hop.add_argument("--host-hop", action="store_true")
        hop.add_argument("--model", default="smollm2-135m")
        hop.add_argument("--calls", type=int, default=200)
        hop_args = hop.parse_args()
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        host_hop(hop_args.model, hop_args.calls)
    else:
        main()

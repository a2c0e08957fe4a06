"""Model names are not paths: a caller cannot make Muzzle open, stat or parse a file of its choosing.

The attacker holds a token for every model (`*`) and names files in the model name: an existing
file, a missing one, a FIFO (which would hang whoever opens it), symlinks, a 1.2 MB YAML file.
"""

from __future__ import annotations

import os
import threading
import time

import openai
import pytest

Q = [{"role": "user", "content": "q"}]


def _probe(client, model):
    """(status, code, message with the probed name blanked) of one call."""
    with pytest.raises(openai.APIStatusError) as err:
        client.chat.completions.create(model=model, messages=Q)
    return err.value.status_code, err.value.body["code"], err.value.message.replace(repr(model), "NAME")


def _script(replies):
    return "".join(f"- content: reply {i} {'x' * 40}\n" for i in range(replies))


def _targets(tmp_path):
    """Paths an attacker may probe: what exists and what does not must look the same."""
    big = tmp_path / "big.yaml"
    big.write_text(_script(20000))  # ~1.2 MB
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    secret = tmp_path / "secret.gguf"
    secret.write_text("not for agents")
    (tmp_path / "link.yaml").symlink_to(big)
    (tmp_path / "link.gguf").symlink_to(secret)
    (tmp_path / "dangling.gguf").symlink_to(tmp_path / "nowhere.gguf")
    return {"big": big, "fifo": fifo, "secret": secret, "missing": tmp_path / "missing.yaml",
            "link": tmp_path / "link.yaml", "link_gguf": tmp_path / "link.gguf",
            "dangling": tmp_path / "dangling.gguf", "missing_gguf": tmp_path / "missing.gguf"}


def test_scripted_names_are_refused_alike_whatever_the_file(muzzle, tmp_path):
    t = _targets(tmp_path)
    h = muzzle(["ok"])
    client = h.client(h.token(models=("*",)))
    began = time.monotonic()
    answers = {_probe(client, f"scripted/{t[k]}") for k in ("big", "fifo", "missing", "link", "secret")}
    answers.add(_probe(client, "scripted/big.yaml"))  # relative: Muzzle's own scripts directory
    assert len(answers) == 1, answers
    status, code, message = answers.pop()
    assert (status, code) == (404, "model_not_found") and "scripted models are off" in message
    assert time.monotonic() - began < 5  # nothing was parsed and the FIFO was never opened
    assert client.chat.completions.create(model="fake/m", messages=Q).choices[0].message.content == "ok"


@pytest.mark.parametrize("kind", ["absolute", "relative", "home", "traversal"])
def test_local_model_paths_are_refused_alike_unless_the_operator_lists_them(muzzle, tmp_path, kind):
    t = _targets(tmp_path)
    h = muzzle(["ok"], muzzle_settings={"local_models": {"listed": str(tmp_path / "models" / "listed.gguf")}})
    client = h.client(h.token(models=("*",)))
    names = {
        "absolute": [f"local/{t[k]}" for k in ("secret", "link_gguf", "dangling", "missing_gguf")],
        "relative": ["local/secret.gguf", "local/./secret.gguf", "local/models/listed"],
        "home": ["local/~/secret.gguf", "local/~root/.bashrc.gguf", "local/~nobody/x.gguf"],
        "traversal": [f"local/{tmp_path}/models/../secret.gguf", "local/../../etc/passwd.gguf"],
    }[kind]
    answers = {_probe(client, name) for name in names}
    assert len(answers) == 1, answers
    status, code, message = answers.pop()
    assert (status, code) == (404, "model_not_found") and "only when the operator's config lists it" in message
    assert [line["decision"] for line in h.log()] == ["denied:model_not_found"] * len(names)


def test_a_listed_gguf_is_served_by_its_name_or_its_exact_path(tmp_path):
    from sentinel.config import Config
    from sentinel.muzzle.layout import Credentials
    from sentinel.muzzle.upstream import Upstreams

    listed = tmp_path / "models" / "coder.gguf"
    config = Config(muzzle={"local_models": {"coder": str(listed)}})
    upstreams = Upstreams(config, Credentials(config, None))
    assert upstreams.route("local/coder").file == listed
    assert upstreams.route(f"local/{tmp_path}/models/./coder.gguf").file == listed
    assert upstreams.route("local/smollm2-135m").file is None  # a packaged model, found by name


def test_with_scripts_on_a_script_is_read_off_the_event_loop(muzzle, tmp_path, monkeypatch):
    """The operator turned scripts on (tests, demos): a slow script stalls only its own call.

    Reading the script is held until the other call has its answer: on the event loop it never would."""
    from sentinel.models import script as script_mod

    script = tmp_path / "slow.yaml"
    script.write_text(_script(3000))
    reading, release = threading.Event(), threading.Event()
    real = script_mod.load

    def held(path, *args, **kwargs):
        if str(path) == str(script):
            reading.set()
            assert release.wait(30), "the fast call was never answered while the script was read"
        return real(path, *args, **kwargs)

    monkeypatch.setattr(script_mod, "load", held)
    h = muzzle(["fast"], muzzle_settings={"scripted": True})
    client = h.client(h.token(models=("*",)))
    slow: dict = {}

    def ask_slow():
        reply = client.chat.completions.create(model=f"scripted/{script}", messages=Q)
        slow["content"], slow["at"] = reply.choices[0].message.content, time.monotonic()

    worker = threading.Thread(target=ask_slow)
    worker.start()
    assert reading.wait(30)
    fast = client.chat.completions.create(model="fake/m", messages=Q).choices[0].message.content
    fast_at = time.monotonic()
    release.set()
    worker.join(60)
    assert fast == "fast" and slow["content"].startswith("reply 0 ")
    assert fast_at < slow["at"]  # answered while the script was being parsed, not after


def test_a_run_naming_an_unserved_model_fails_before_it_starts(configure, cli, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- done\n")
    configure()
    proc = cli("run", "hi", "--model", f"scripted/{script}", check=2)
    assert "scripted models are off" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("run", "hi", "--model", f"local/{tmp_path}/m.gguf", check=2)
    assert "muzzle: {local_models:" in proc.stderr and "Traceback" not in proc.stderr
    configure({"muzzle": {"scripted": True}})
    assert cli.json("run", "hi", "--model", f"scripted/{script}", "--json", check=4)["output"] == "done"

"""Every refusal and failure is an OpenAI-style error with the right status, and is logged."""

from __future__ import annotations

import json
import time

import httpx
import openai
import pytest

Q = [{"role": "user", "content": "q"}]


def _ask(client, model="fake/m", **kwargs):
    return client.chat.completions.create(model=model, messages=Q, **kwargs)


def _error_of(excinfo):
    return excinfo.value.status_code, excinfo.value.body["code"], excinfo.value.message


def test_no_token_unknown_token_and_expired_token_are_401(muzzle):
    h = muzzle(["ok"])
    raw = httpx.post(f"{h.base_url}/chat/completions", json={"model": "fake/m", "messages": Q})
    assert raw.status_code == 401 and raw.json()["error"]["type"] == "authentication_error"
    assert raw.headers["x-should-retry"] == "false"
    with pytest.raises(openai.AuthenticationError) as err:
        _ask(h.client("smz_" + "0" * 43))
    assert _error_of(err)[:2] == (401, "invalid_token")
    expired = h.token(ttl_s=0.05)
    time.sleep(0.1)
    with pytest.raises(openai.AuthenticationError) as err:
        _ask(h.client(expired))
    assert _error_of(err)[:2] == (401, "token_expired")
    assert h.upstream.requests == []


def test_a_revoked_run_token_is_401(muzzle):
    from sentinel.muzzle.tokens import TokenStore

    h = muzzle(["ok"])
    client = h.client(h.token(run_id="r-9"))
    _ask(client)
    store = TokenStore.open(h.muzzle.layout.store_path)
    assert store.revoke_run("r-9") == 1
    store.close()
    with pytest.raises(openai.AuthenticationError) as err:
        _ask(client)
    assert _error_of(err)[:2] == (401, "token_revoked")


def test_a_model_outside_the_grant_is_403(muzzle):
    h = muzzle(["ok"])
    client = h.client(h.token(models=("fake/small", "other/*")))
    with pytest.raises(openai.PermissionDeniedError) as err:
        _ask(client, model="fake/m")
    status, code, message = _error_of(err)
    assert (status, code) == (403, "model_not_allowed") and "fake/small, other/*" in message
    with pytest.raises(openai.NotFoundError):  # allowed by glob, but no such provider
        _ask(client, model="other/x")
    assert _ask(h.client(h.token(models=("fake/*",)))).choices[0].message.content == "ok"


def test_the_run_budget_is_429_once_spent_and_survives_a_new_token(muzzle):
    h = muzzle(["ok"])  # each call costs 15 tokens upstream
    client = h.client(h.token(run_id="r-b", run_tokens=20))
    _ask(client)
    _ask(client)  # 15 < 20: still allowed, brings the run to 30
    with pytest.raises(openai.RateLimitError) as err:
        _ask(client)
    status, code, message = _error_of(err)
    assert (status, code) == (429, "budget_exhausted") and "run budget spent (30 of 20" in message
    with pytest.raises(openai.RateLimitError):  # a resumed run gets a new token, not a new budget
        _ask(h.client(h.token(run_id="r-b", run_tokens=20)))
    assert len(h.upstream.requests) == 2


def test_the_agent_daily_budget_spans_runs(muzzle):
    h = muzzle(["ok"])
    _ask(h.client(h.token(run_id="r-1", agent_daily_tokens=25)))
    _ask(h.client(h.token(run_id="r-2", agent_daily_tokens=25)))
    with pytest.raises(openai.RateLimitError) as err:
        _ask(h.client(h.token(run_id="r-3", agent_daily_tokens=25)))
    assert "agent daily budget spent (30 of 25" in err.value.message
    _ask(h.client(h.token(agent="bob", run_id="r-4", agent_daily_tokens=25)))  # another agent is unaffected


def _dead_port():
    from freeport import free_port  # below the ephemeral range: no parallel test's socket takes it meanwhile

    return free_port()


@pytest.mark.parametrize("stream", [False, True])
def test_an_unreachable_upstream_is_502(muzzle, stream):
    h = muzzle(upstream_url=f"http://127.0.0.1:{_dead_port()}/v1")
    with pytest.raises(openai.InternalServerError) as err:
        _ask(h.client(), stream=stream)
    status, code, message = _error_of(err)
    assert (status, code) == (502, "upstream_unreachable") and "cannot reach" in message
    assert h.log()[0]["decision"] == "error:upstream_unreachable"


@pytest.mark.parametrize("stream", [False, True])
def test_garbage_from_the_upstream_is_502(muzzle, stream):
    h = muzzle([{"raw": "<html>not an API</html>"}])
    with pytest.raises(openai.InternalServerError) as err:
        _ask(h.client(), stream=stream)
    assert _error_of(err)[:2] == (502, "upstream_bad_response")


def test_an_upstream_error_passes_its_message_and_a_fitting_status(muzzle):
    h = muzzle([{"error": {"status": 500, "message": "model overloaded"}}])
    with pytest.raises(openai.InternalServerError) as err:
        _ask(h.client())
    status, code, message = _error_of(err)
    assert (status, code) == (502, "upstream_error") and "model overloaded" in message
    h2 = muzzle([{"error": {"status": 400, "message": "context too long"}}])
    with pytest.raises(openai.BadRequestError) as err:
        _ask(h2.client(), stream=True)
    assert "context too long" in err.value.message


def test_the_upstream_refusing_muzzles_key_is_not_the_callers_401(muzzle, scripted_server):
    h = muzzle(["ok"], require_key="a-different-key")
    with pytest.raises(openai.InternalServerError) as err:
        _ask(h.client())
    assert _error_of(err)[:2] == (502, "upstream_auth")


def test_a_slow_upstream_times_out_as_504(muzzle):
    h = muzzle([{"content": "late", "delay_ms": 1500}], muzzle_settings={"upstream_timeout_s": 0.3})
    with pytest.raises(openai.APIStatusError) as err:
        _ask(h.client())
    assert _error_of(err)[:2] == (504, "upstream_timeout")


@pytest.mark.parametrize("body, fragment", [
    (b"{not json", "not JSON"),
    (b"[1, 2]", "JSON object"),
    (json.dumps({"messages": Q}).encode(), "`model` is required"),
    (json.dumps({"model": "fake/m", "messages": "hi"}).encode(), "`messages` must be a list"),
    (json.dumps({"model": "nonsense", "messages": Q}).encode(), "expected provider/model"),
])
def test_bad_request_bodies_are_400(muzzle, body, fragment):
    h = muzzle(["ok"])
    resp = httpx.post(f"{h.base_url}/chat/completions", content=body,
                      headers={"authorization": f"Bearer {h.token(models=('*',))}"})
    assert resp.status_code == 400 and fragment in resp.json()["error"]["message"]


def test_an_unknown_provider_is_404(muzzle):
    h = muzzle(["ok"])
    with pytest.raises(openai.NotFoundError) as err:
        _ask(h.client(h.token(models=("*",))), model="nowhere/m")
    assert _error_of(err)[:2] == (404, "model_not_found")

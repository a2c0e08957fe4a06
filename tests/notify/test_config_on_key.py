"""config.yaml as the docs write it: an unquoted `on:` key (YAML 1.1 would read it as the boolean true) is still
the key `on`, for notify targets and Muzzle's block rules alike; `on` as a value stays what it always was."""

from __future__ import annotations

from sentinel import config as config_mod


def test_unquoted_on_keys_are_keys(sentinel_home):
    (sentinel_home / "config.yaml").write_text(
        "notify:\n  - type: webhook\n    url: https://hooks.example.com/s\n    on: [approval, failed]\n"
        "muzzle:\n  block:\n    - {id: no-confidential, pattern: CONFIDENTIAL, on: request}\n")
    cfg = config_mod.load(sentinel_home)
    assert cfg.notify[0].on == ["approval", "failed"]
    assert cfg.muzzle.block[0].on == "request"


def test_on_as_a_value_is_unchanged(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("enabled: on\n'on': 1\n")
    assert config_mod.read_yaml(path) == {"enabled": True, "on": 1}


def test_an_outbox_row_keeps_every_field_of_its_target():
    """What an outbox row keeps of a target (Target.spec, typed TargetSpec) is the whole validated target: a field
    added to Target and not to the spec would be lost between the scan that queues and the deliverer that sends."""
    from sentinel.notify.settings import Target, TargetSpec

    target = Target.model_validate({"type": "email", "host": "smtp.example.com", "port": 587, "starttls": True,
                                    "username": "me", "password_env": "SMTP_PASSWORD", "from": "s@example.com",
                                    "to": ["me@example.com"], "headers": {"X-A": "1"}, "on": ["approval"]})
    spec = target.spec()
    assert spec == target.model_dump(by_alias=True)
    assert set(spec) == set(TargetSpec.__required_keys__)
    assert {"link_base", "link_ttl_s"} == set(TargetSpec.__optional_keys__)  # added by the scan, not the target

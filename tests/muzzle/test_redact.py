"""The redactor alone: what counts as a secret, stable placeholders, and streamed text split anywhere."""

from __future__ import annotations

import random

import pytest

from sentinel.muzzle.redact import PLACEHOLDER, Redactor, StreamRedactor

R = Redactor(b"test-key")

SECRETS = {
    "openai_key": "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv",
    "anthropic_key": "sk-ant-api03-" + "x" * 40,
    "github_token": "ghp_" + "Z" * 36,
    "slack_token": "xoxb-123456789012-abcdefABCDEF",
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "gcp_api_key": "AIza" + "SyD-1234567890abcdefghijklmnopqrstu",
    "stripe_key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "huggingface_token": "hf_" + "a" * 34,
    "muzzle_token": "smz_" + "b" * 43,
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1\nabc+/=\n-----END RSA PRIVATE KEY-----",
}


@pytest.mark.parametrize("kind, secret", sorted(SECRETS.items()))
def test_each_kind_of_secret_is_found(kind, secret):
    out, found = R.redact(f"before {secret} after")
    assert secret not in out and [f.kind for f in found] == [kind]
    assert out.startswith("before [REDACTED:") and out.endswith(" after")


@pytest.mark.parametrize("text, redacted", [
    ("DB_PASSWORD=hunter2hunter2", "DB_PASSWORD=[REDACTED:env_secret:"),
    ("export GITHUB_TOKEN='abc def ghi'", "export GITHUB_TOKEN=[REDACTED:env_secret:"),
    ("client_secret: s3cr3tvalue", "client_secret: [REDACTED:env_secret:"),
    ('{"api_key": "abcd1234efgh"}', '{"api_key": "[REDACTED:json_secret:'),
    ("postgres://app:pa55word@db:5432/x", "postgres://app:[REDACTED:url_credentials:"),
    ("Authorization: Bearer abcdefghijklmnop1234", "Authorization: Bearer [REDACTED:bearer_token:"),
    ("my pass is PASSWORD=hunter2hunter2 ok", "my pass is PASSWORD=[REDACTED:env_secret:"),
])
def test_assignments_and_urls_keep_their_names(text, redacted):
    assert R.redact(text)[0].startswith(redacted)


@pytest.mark.parametrize("text", [
    "MAX_TOKENS=4096", "TOKENIZER_PATH=/models/tok", "password = config.get('password')",
    "SECRET=${SECRET}", "https://example.com/a:b", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
    "the token count is high", "sk-short", "if password == 'x':",
])
def test_ordinary_text_is_left_alone(text):
    assert R.redact(text) == (text, [])


def test_placeholders_are_stable_keyed_and_idempotent():
    a1, _ = R.redact(f"x {SECRETS['aws_access_key']}")
    a2, _ = R.redact(f"y {SECRETS['aws_access_key']}")
    assert a1[2:] == a2[2:] and PLACEHOLDER.fullmatch(a1[2:])
    assert Redactor(b"other-key").redact(f"x {SECRETS['aws_access_key']}")[0] != a1  # not a bare hash
    twice = R.redact("API_KEY=abcdefgh1234 and " + SECRETS["github_token"])[0]
    assert R.redact(twice) == (twice, [])


def test_literal_upstream_keys_are_redacted_whatever_their_shape():
    r = Redactor(b"k", literals=[("upstream_key", "plain-looking-key-value")])
    assert r.redact("got plain-looking-key-value back")[0].startswith("got [REDACTED:upstream_key:")


def _streamed(text, cuts):
    s = StreamRedactor(R)
    pieces, prev = [], 0
    for cut in [*cuts, len(text)]:
        pieces.append(s.feed(text[prev:cut]))
        prev = cut
    pieces.append(s.flush())
    return "".join(pieces), s


def test_streamed_text_split_anywhere_redacts_like_the_whole():
    text = ("Here you go:\n" + "\n".join(f"{k}: {v} ok" for k, v in SECRETS.items()) +
            "\nDB_PASSWORD = hunter2hunter2\nBearer abcdefghijklmnop1234 done\n" + "x" * 50)
    whole = R.redact(text)[0]
    rng = random.Random(7)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(1, 40)))
        out, _ = _streamed(text, cuts)
        assert out == whole
    every_char, s = _streamed(text, list(range(1, len(text))))
    assert every_char == whole and len(s.findings) == len(R.redact(text)[1])


def test_plain_text_is_not_held_back_longer_than_its_last_word():
    s = StreamRedactor(R)
    assert s.feed("Hello wor") == "Hello "
    assert s.feed("ld, how are") == "world, how "
    assert s.flush() == "are"


def test_an_unterminated_private_key_is_redacted_to_the_end():
    text = "key:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n"
    out, _ = _streamed(text, [10, 30, 50])
    assert out.startswith("key:\n[REDACTED:private_key:") and "MIIE" not in out


def _long_text(blocks):
    """Prose, config and code lines with secrets, secret-like words on long lines, a key block, one huge line."""
    rng = random.Random(11)
    kinds = sorted(SECRETS.items())
    parts = []
    for n in range(blocks):
        kind, secret = kinds[n % len(kinds)]
        parts.append(f"Step {n}: never paste the key or the token anywhere; " * rng.randint(1, 30) + "\n")
        parts.append(f"{kind} = {secret} # rotate it\nDB_PASSWORD = pw-{n:06d}-x\nexport API_KEY=k{n:08d}\n")
        parts.append('{"client_secret": "cs-%08d", "max_tokens": 10}\n' % n)
    parts.insert(len(parts) // 2, "{" + ",".join(f'"k{i}": "v{i}"' for i in range(3000)) + ', "token": "t"}\n')
    return "".join(parts)


def test_a_long_stream_in_token_sized_pieces_redacts_like_the_whole():
    text = _long_text(300)
    whole, found = R.redact(text)
    rng = random.Random(3)
    cuts, pos = [], 0
    while pos < len(text):
        pos += rng.randint(1, 8)
        cuts.append(pos)
    out, s = _streamed(text, [c for c in cuts if c < len(text)])
    assert out == whole and len(s.findings) == len(found)
    for secret in [*SECRETS.values(), "pw-000299-x", "cs-00000299"]:
        assert secret not in out


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_a_secret_split_at_every_offset_is_still_caught(kind):
    secret = SECRETS[kind]
    text = "x " * 500 + f"here: {secret} done\n" + "y " * 50
    at = text.index(secret)
    for split in range(at, at + len(secret) + 1):
        out, _ = _streamed(text, [split])
        assert secret not in out and out == R.redact(text)[0], split


class _Counting(Redactor):
    scanned = 0

    def find(self, text):
        self.scanned += len(text)
        return super().find(text)


@pytest.mark.parametrize("text", [
    "the token is " + "word " * 20000 + "\n",                   # a long line held for its secret-like word
    "x " * 40000,                                              # plain prose
    "-----BEGIN PRIVATE KEY-----\n" + "QUJD\n" * 6000 + "-----END PRIVATE KEY-----\n",  # a long key block
    "ab" * 40000 + " ",                                        # one long word
])
def test_streaming_redaction_scans_each_character_a_bounded_number_of_times(text):
    counting = _Counting(b"test-key")
    s = StreamRedactor(counting)
    out = "".join(s.feed(text[i:i + 3]) for i in range(0, len(text), 3)) + s.flush()
    assert out == counting.redact(text)[0]
    assert counting.scanned - len(text) <= 3 * len(text)  # was quadratic: every piece rescanned what was held

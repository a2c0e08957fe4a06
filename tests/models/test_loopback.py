"""The loopback test double's server: a client gone mid-reply prints nothing; a real error still does."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler

import pytest

from sentinel.models.loopback import Loopback


@pytest.mark.parametrize("gone", [BrokenPipeError, ConnectionResetError])
def test_a_client_gone_mid_reply_is_silent_and_a_handler_bug_is_not(capfd, gone):
    double = Loopback()
    double.listen(BaseHTTPRequestHandler)
    try:
        for exc in (gone("the client went away"), ValueError("a bug in the double")):
            try:
                raise exc
            except Exception:  # noqa: BLE001 - what the server's request thread catches
                double._httpd.handle_error(None, ("127.0.0.1", 1))
    finally:
        double._httpd.server_close()
    err = capfd.readouterr().err
    assert "ValueError: a bug in the double" in err
    assert gone.__name__ not in err

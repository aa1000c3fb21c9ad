"""``serve``: who a browser session belongs to and where its progress lives, and the
sentences for bad input. Fast: no server is started (tests/test_serve.py starts them)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tutor.cli import main
from tutor.commands import serve_auth
from tutor.errors import TutorError

HUB_ENV = {
    "JUPYTERHUB_API_URL": "http://127.0.0.1:1/hub/api",
    "JUPYTERHUB_CLIENT_ID": "service-tutor",
    serve_auth.HUB_SECRET_ENV: "service-secret",
    "JUPYTERHUB_SERVICE_PREFIX": "/services/tutor/",
}


def test_user_folders_are_safe_and_distinct():
    assert serve_auth.user_folder("alice") == "alice"
    assert (
        serve_auth.user_folder("alice@example.org")
        == "alice_example.org-" + serve_auth.user_folder("alice@example.org")[-8:]
    )
    for hostile in ("../etc", "..", ".", "a/b", "a\\b", "", "x" * 500, "é"):
        folder = serve_auth.user_folder(hostile)
        assert "/" not in folder and "\\" not in folder and folder not in ("", ".", "..") and len(folder) <= 73
    assert len({serve_auth.user_folder(u) for u in ("a/b", "a_b", "a\\b", "a b")}) == 4


def test_each_user_has_a_data_dir_inside_the_base(tmp_path: Path):
    assert serve_auth.data_dir_for(tmp_path, "") == tmp_path  # the one user of token auth: the usual place
    alice, bob = serve_auth.data_dir_for(tmp_path, "alice"), serve_auth.data_dir_for(tmp_path, "../bob")
    assert alice == tmp_path / "users" / "alice" and alice != bob
    assert bob.resolve().is_relative_to((tmp_path / "users").resolve())


def test_only_loopback_may_go_unauthenticated():
    assert (
        serve_auth.is_loopback("127.0.0.1")
        and serve_auth.is_loopback("::1")
        and serve_auth.is_loopback("localhost")
        and serve_auth.is_loopback("127.0.0.2")
    )
    assert not any(serve_auth.is_loopback(h) for h in ("0.0.0.0", "::", "", "10.0.0.1", "example.org", None))
    serve_auth.check_listen("none", "127.0.0.1")
    serve_auth.check_listen("token", "0.0.0.0")
    for host in ("0.0.0.0", "", "10.0.0.1"):
        with pytest.raises(TutorError, match="--auth none would let anyone"):
            serve_auth.check_listen("none", host)


def test_the_address_defaults_to_the_hub_services_own():
    assert serve_auth.listen_address(None, None) == ("127.0.0.1", 8000)
    assert serve_auth.listen_address(None, None, "http://127.0.0.1:10101/") == ("127.0.0.1", 10101)
    assert serve_auth.listen_address("0.0.0.0", 9000, "http://127.0.0.1:10101/") == ("0.0.0.0", 9000)


def test_a_given_token_is_checked_and_taken_out_of_the_environment():
    env = {serve_auth.TOKEN_ENV: "a" * 32, "OTHER": "x"}
    assert serve_auth.serve_token(env) == "a" * 32 and env == {"OTHER": "x"}
    assert serve_auth.serve_token({}) != serve_auth.serve_token({})  # a new random one each start
    for bad in ("short", "x" * 300, "with space and more than sixteen", "ünïcode-ünïcode-ü"):
        with pytest.raises(TutorError, match=serve_auth.TOKEN_ENV):
            serve_auth.serve_token({serve_auth.TOKEN_ENV: bad})


def test_sessions_know_only_their_own_keys():
    sessions = serve_auth.Sessions()
    key = sessions.start("alice")
    assert sessions.user(key) == "alice" and sessions.start("alice") != key
    assert sessions.user("forged") is None and sessions.user(None) is None and sessions.user("") is None


def test_hub_settings_come_from_the_environment_and_the_secret_leaves_it():
    env = dict(HUB_ENV, JUPYTERHUB_SERVICE_URL="http://127.0.0.1:10101", JUPYTERHUB_BASE_URL="/jhub/")
    hub = serve_auth.Hub.from_env(env)
    assert serve_auth.HUB_SECRET_ENV not in env and hub.secret == "service-secret"  # app processes never see it
    assert hub.prefix == "/services/tutor/" and hub.callback_path == "/services/tutor/oauth_callback"
    url, state = hub.authorize_url()
    assert url.startswith("/jhub/hub/api/oauth2/authorize?") and f"state={state}" in url
    assert "client_id=service-tutor" in url and "redirect_uri=%2Fservices%2Ftutor%2Foauth_callback" in url


@pytest.mark.parametrize("missing", ["JUPYTERHUB_API_URL", "JUPYTERHUB_CLIENT_ID", serve_auth.HUB_SECRET_ENV])
def test_outside_jupyterhub_hub_auth_is_one_sentence(missing: str):
    env = dict(HUB_ENV)
    del env[missing]
    with pytest.raises(TutorError, match=rf"\${missing} is not set"):
        serve_auth.Hub.from_env(env)
    with pytest.raises(TutorError, match="must lie under the service's prefix"):
        serve_auth.Hub.from_env(dict(HUB_ENV, JUPYTERHUB_OAUTH_CALLBACK_URL="/elsewhere/oauth_callback"))


def test_an_oauth_callback_needs_the_state_this_server_issued():
    hub = serve_auth.Hub.from_env(dict(HUB_ENV))
    _, state = hub.authorize_url()
    # Each refused before the serve_auth.Hub is asked (nothing listens at its URL here).
    assert hub.user_for_code("code", "forged", "forged") is None  # a state never issued
    assert hub.user_for_code("code", state, None) is None  # not this browser's
    assert hub.user_for_code("code", state, "other") is None
    assert hub.user_for_code("code", state, state) is None  # the serve_auth.Hub is unreachable: nobody
    assert hub.user_for_code("code", state, state) is None  # and a state is used once


def test_a_hub_tokens_user_is_asked_again_after_a_while():
    now = [0.0]
    hub = serve_auth.Hub.from_env(dict(HUB_ENV))
    hub.clock = lambda: now[0]
    asked = []
    hub._ask_user = lambda token: asked.append(token) or "alice"  # type: ignore[method-assign]
    assert hub.user_for_token("t") == "alice" and hub.user_for_token("t") == "alice" and asked == ["t"]
    now[0] = serve_auth.TOKEN_TTL_S + 1
    assert hub.user_for_token("t") == "alice" and asked == ["t", "t"]


def test_access_scopes_come_from_the_hub():
    hub = serve_auth.Hub.from_env(dict(HUB_ENV, JUPYTERHUB_OAUTH_ACCESS_SCOPES='["access:services!service=tutor"]'))
    assert hub.access_scopes == {"access:services!service=tutor"}
    assert serve_auth.Hub.from_env(dict(HUB_ENV)).access_scopes == frozenset()
    with pytest.raises(TutorError, match="JSON list"):
        serve_auth.Hub.from_env(dict(HUB_ENV, JUPYTERHUB_OAUTH_ACCESS_SCOPES='{"a": 1}'))


def _error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_bad_serve_input_is_one_sentence(capsys, tmp_path: Path, monkeypatch):
    monkeypatch.delenv("JUPYTERHUB_API_URL", raising=False)
    data = ["--data-dir", str(tmp_path)]
    assert "--auth none would let anyone" in _error(capsys, [*data, "serve", "--auth", "none", "--host", "0.0.0.0"])
    assert "is not set" in _error(capsys, [*data, "serve", "--auth", "jupyterhub"])
    assert "not a port" in _error(capsys, [*data, "serve", "--port", "70000"])
    assert "cannot be shared" in _error(capsys, [*data, "--kernel", "k.json", "serve"])
    monkeypatch.setenv(serve_auth.TOKEN_ENV, "short")
    assert serve_auth.TOKEN_ENV in _error(capsys, [*data, "serve"])
    monkeypatch.delenv(serve_auth.TOKEN_ENV, raising=False)  # serve took it out already
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert f"port {port} on 127.0.0.1 is in use" in _error(capsys, [*data, "serve", "--port", str(port)])
    assert "no such address" in _error(capsys, [*data, "serve", "--host", "no-such-host.invalid"])

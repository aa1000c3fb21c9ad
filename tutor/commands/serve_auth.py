"""Who a browser session of ``serve`` belongs to, and where that user's progress lives.

Standard library only, so it is tested without a server (docs/serve.md says how each mode
is meant to be deployed).

- ``token``: one user, the person who started ``serve``; a request proves it with the token
  ``serve`` printed (then a session cookie).
- ``jupyterhub``: ``serve`` runs as a JupyterHub service. Browsers sign in with the Hub's
  OAuth (the Hub says who they are); scripts may send a Hub API token instead.
- ``none``: nobody is asked; allowed on a loopback address only.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

from tutor.errors import TutorError

AUTH_MODES = ("token", "jupyterhub", "none")
# Read once at start, then removed from the environment the app processes (and so the
# learners' kernels) inherit: learner code must not be able to act as the service.
TOKEN_ENV = "PTFUND_TUTOR_SERVE_TOKEN"
HUB_SECRET_ENV = "JUPYTERHUB_API_TOKEN"
_HUB_ENV = ("JUPYTERHUB_API_URL", "JUPYTERHUB_CLIENT_ID", HUB_SECRET_ENV)
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_-]{16,256}")
_USER_CHARS = re.compile(r"[^A-Za-z0-9._-]")
# A Hub API token's user is asked again after this long (a revoked token stops working).
TOKEN_TTL_S = 60.0


def user_folder(user: str) -> str:
    """A folder name for a user name: readable, and distinct for distinct names."""
    safe = _USER_CHARS.sub("_", user)[:64].strip(".") or "_"
    if safe != user:
        safe += "-" + hashlib.sha256(user.encode()).hexdigest()[:8]
    return safe


def slashed(path: str) -> str:
    """A URL path as a prefix: one slash at each end ("/" for none)."""
    inner = path.strip("/")
    return f"/{inner}/" if inner else "/"


def data_dir_for(base: Path, user: str) -> Path:
    """The data dir of a user: the one user of token auth ("") keeps the usual one."""
    return base if user == "" else base / "users" / user_folder(user)


def is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]").split("%")[0]).is_loopback
    except ValueError:
        return False


def listen_address(host: str | None, port: int | None, service_url: str = "") -> tuple[str, int]:
    """Where to listen: as given, else where a JupyterHub's proxy sends the service's
    requests ($JUPYTERHUB_SERVICE_URL), else 127.0.0.1:8000."""
    url = urllib.parse.urlsplit(service_url)
    return (
        host if host is not None else url.hostname or "127.0.0.1",
        port if port is not None else url.port or 8000,
    )


def check_listen(auth: str, host: str) -> None:
    if auth == "none" and not is_loopback(host):
        raise TutorError(
            f"--auth none would let anyone who reaches {host or 'every address'} use the tutor (and run code): "
            "listen on 127.0.0.1, or use --auth token or --auth jupyterhub"
        )


def serve_token(env: MutableMapping[str, str]) -> str:
    """The token of token auth: $PTFUND_TUTOR_SERVE_TOKEN (taken out of env), else a new one."""
    given = env.pop(TOKEN_ENV, None)
    if given is None:
        return secrets.token_urlsafe(24)
    if not _TOKEN_CHARS.fullmatch(given):
        raise TutorError(
            f"${TOKEN_ENV} must be 16 to 256 letters, digits, '-' or '_' (e.g. from `openssl rand -hex 24`)"
        )
    return given


class Sessions:
    """Signed-in browser sessions: a random cookie value -> the user, kept in memory (a
    restarted ``serve`` signs browsers in again)."""

    def __init__(self) -> None:
        self._users: dict[str, str] = {}

    def start(self, user: str) -> str:
        key = secrets.token_urlsafe(32)
        self._users[key] = user
        return key

    def user(self, key: str | None) -> str | None:
        return self._users.get(key) if key else None


def _get_json(request: urllib.request.Request) -> object:
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)
    except (OSError, ValueError):  # the Hub refused (HTTPError is an OSError), is down, or did not send JSON
        return None


@dataclass
class Hub:
    """A JupyterHub this service is registered with, from the environment the Hub gives its
    services (JUPYTERHUB_API_URL, JUPYTERHUB_CLIENT_ID, JUPYTERHUB_API_TOKEN, ...)."""

    api_url: str
    client_id: str
    secret: str
    prefix: str = "/"
    host: str = ""
    base_url: str = "/"
    callback: str = ""
    service_url: str = ""
    # The scopes that grant access to this service ($JUPYTERHUB_OAUTH_ACCESS_SCOPES); a
    # token with none of them is nobody here. Empty: the Hub gives no list (before 3.0).
    access_scopes: frozenset[str] = frozenset()
    clock: Callable[[], float] = time.monotonic
    _tokens: dict[str, tuple[float, str | None]] = field(default_factory=dict, repr=False)
    _states: dict[str, float] = field(default_factory=dict, repr=False)

    @classmethod
    def from_env(cls, env: MutableMapping[str, str]) -> Hub:
        missing = [name for name in _HUB_ENV if not env.get(name)]
        if missing:
            raise TutorError(
                f"--auth jupyterhub runs as a JupyterHub service, and ${missing[0]} is not set: "
                "register `ptfund-tutor serve` in jupyterhub_config.py (docs/serve.md)"
            )
        prefix = slashed(env.get("JUPYTERHUB_SERVICE_PREFIX", "/"))
        callback = env.get("JUPYTERHUB_OAUTH_CALLBACK_URL") or prefix + "oauth_callback"
        if not urllib.parse.urlsplit(callback).path.startswith(prefix):
            raise TutorError(
                f"$JUPYTERHUB_OAUTH_CALLBACK_URL ({callback}) must lie under the service's prefix {prefix}"
            )
        return cls(
            api_url=env["JUPYTERHUB_API_URL"].rstrip("/"),
            client_id=env["JUPYTERHUB_CLIENT_ID"],
            secret=env.pop(HUB_SECRET_ENV),
            prefix=prefix,
            host=env.get("JUPYTERHUB_HOST", "").rstrip("/"),
            base_url=slashed(env.get("JUPYTERHUB_BASE_URL", "/")),
            callback=callback,
            service_url=env.get("JUPYTERHUB_SERVICE_URL", ""),
            access_scopes=_scopes(env.get("JUPYTERHUB_OAUTH_ACCESS_SCOPES", "")),
        )

    @property
    def callback_path(self) -> str:
        return urllib.parse.urlsplit(self.callback).path

    def authorize_url(self) -> tuple[str, str]:
        """Where to send a browser to sign in, and the OAuth state it must come back with."""
        state = secrets.token_urlsafe(24)
        now = self.clock()
        self._states = {s: t for s, t in self._states.items() if now - t < 600}
        self._states[state] = now
        query = urllib.parse.urlencode(
            {"client_id": self.client_id, "redirect_uri": self.callback, "response_type": "code", "state": state}
        )
        return f"{self.host}{self.base_url}hub/api/oauth2/authorize?{query}", state

    def user_for_code(self, code: str, state: str, cookie_state: str | None) -> str | None:
        """The user an OAuth callback is for, or None (a stale or forged state, a code the Hub refuses)."""
        if not (cookie_state and secrets.compare_digest(state, cookie_state) and self._states.pop(state, None)):
            return None
        form = urllib.parse.urlencode(
            {
                "client_id": self.client_id,
                "client_secret": self.secret,
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self.callback,
            }
        ).encode()
        answer = _get_json(
            urllib.request.Request(
                f"{self.api_url}/oauth2/token",
                data=form,
                headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
            )
        )
        token = answer.get("access_token") if isinstance(answer, Mapping) else None
        return self._ask_user(token) if isinstance(token, str) and token else None

    def user_for_token(self, token: str) -> str | None:
        """The user who owns a Hub API token (scripts send one instead of signing in)."""
        now = self.clock()
        cached = self._tokens.get(token)
        if cached is not None and now - cached[0] < TOKEN_TTL_S:
            return cached[1]
        user = self._ask_user(token)
        if len(self._tokens) > 10_000:
            self._tokens.clear()
        self._tokens[token] = (now, user)
        return user

    def _ask_user(self, token: str) -> str | None:
        answer = _get_json(
            urllib.request.Request(
                f"{self.api_url}/user", headers={"Authorization": f"token {token}", "Accept": "application/json"}
            )
        )
        if not isinstance(answer, Mapping):
            return None
        name, scopes = answer.get("name"), answer.get("scopes")
        if self.access_scopes and not (isinstance(scopes, list) and self.access_scopes.intersection(map(str, scopes))):
            return None  # signed in to the Hub, but not allowed to use this service
        return name if isinstance(name, str) and name else None


def _scopes(text: str) -> frozenset[str]:
    """$JUPYTERHUB_OAUTH_ACCESS_SCOPES: a JSON list (the Hub's), or names separated by spaces."""
    try:
        value = json.loads(text) if text.strip() else []
    except ValueError:
        value = text.split()
    if not isinstance(value, list):
        raise TutorError("$JUPYTERHUB_OAUTH_ACCESS_SCOPES must be a JSON list of scopes")
    return frozenset(str(scope) for scope in value)

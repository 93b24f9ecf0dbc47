"""The tidegate client for Python (standard library only, Python >= 3.9)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import webbrowser
from email.utils import parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from .errors import GraphQLError, SessionExpiredError, TidegateError
from .storage import MemoryTokenStore, TokenSet

_Response = Tuple[int, Dict[str, str], bytes]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _retry_after(headers: Mapping[str, str]) -> Optional[int]:
    raw = headers.get("retry-after")
    if raw is None:
        return None
    if raw.strip().isdigit():
        return int(raw)
    try:
        return max(0, int(parsedate_to_datetime(raw).timestamp() - time.time()))
    except (TypeError, ValueError):
        return None


def _error_of(status: int, headers: Mapping[str, str], body: bytes) -> TidegateError:
    """The typed error of a failed answer, whatever its shape (REST, GraphQL, OAuth or none)."""
    request_id = headers.get("x-request-id")
    retry_after = _retry_after(headers)
    try:
        value = json.loads(body) if body else None
    except ValueError:
        value = None
    if isinstance(value, dict):
        rest = value.get("error")
        if isinstance(rest, dict) and isinstance(rest.get("code"), str):
            return TidegateError(
                rest["code"],
                str(rest.get("message", rest["code"])),
                status,
                rest.get("requestId") or request_id,
                retry_after,
                rest.get("details") if isinstance(rest.get("details"), dict) else {},
            )
        if isinstance(rest, str):
            return TidegateError(rest, str(value.get("error_description", rest)), status, request_id, retry_after)
        if isinstance(value.get("errors"), list) and value["errors"]:
            return GraphQLError(value["errors"], value.get("data"), status, request_id, retry_after)
    text = body.decode("utf-8", "replace")[:200]
    return TidegateError(f"HTTP_{status}", text or f"HTTP {status}", status, request_id, retry_after)


class Client:
    """
    One of three ways in: an API key (``api_key=``, sent as ``X-API-Key`` or ``Bearer``), client
    credentials (``client_id`` + ``client_secret``), or a user's sign-in with authorization code +
    PKCE (``client_id`` of a public client, then :meth:`login_with_browser`). OAuth tokens are kept
    in ``store`` (memory by default; :class:`~tidegate.FileTokenStore` for a 0600 file) and renewed
    before they expire and once on a 401 ``invalid_token``, one renewal at a time, keeping the
    rotated refresh token.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: Optional[str] = None,
        api_key_header: str = "x-api-key",
        client_id: Optional[str] = None,
        client_secret: Optional[str] = None,
        scope: Optional[str] = None,
        store: Any = None,
        refresh_skew: float = 60.0,
        timeout: float = 30.0,
    ) -> None:
        if bool(api_key) == bool(client_id):
            raise TidegateError("invalid_request", "Give either api_key or client_id")
        if api_key_header not in ("x-api-key", "bearer"):
            raise TidegateError("invalid_request", "api_key_header must be 'x-api-key' or 'bearer'")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.api_key_header = api_key_header
        self.client_id = client_id
        self.client_secret = client_secret
        self.scope = scope
        self.store = store if store is not None else MemoryTokenStore()
        self.refresh_skew = refresh_skew
        self.timeout = timeout
        self._metadata: Optional[Dict[str, Any]] = None
        self._pending: Dict[str, Tuple[str, str]] = {}
        self._renewal = threading.Lock()

    # --- HTTP -------------------------------------------------------------------------------

    def _http(self, method: str, url: str, body: Optional[bytes] = None, headers: Optional[Dict[str, str]] = None) -> _Response:
        request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()
        except (urllib.error.URLError, OSError) as error:
            raise TidegateError("NETWORK_ERROR", f"No answer from {self.base_url}: {error}") from error

    # --- OAuth ------------------------------------------------------------------------------

    def metadata(self) -> Dict[str, Any]:
        """The server's RFC 8414 metadata (endpoints), discovered once."""
        if self._metadata is None:
            status, headers, body = self._http("GET", f"{self.base_url}/.well-known/oauth-authorization-server")
            if status != 200:
                raise _error_of(status, headers, body)
            self._metadata = json.loads(body)
        return self._metadata

    def authorization_url(self, redirect_uri: str, scope: Optional[str] = None) -> str:
        """Sign-in step 1: the URL to open; a fresh state and PKCE verifier are kept until the callback."""
        state = _b64url(secrets.token_bytes(32))
        verifier = _b64url(secrets.token_bytes(32))
        self._pending[state] = (verifier, redirect_uri)
        query = {
            "response_type": "code",
            "client_id": self._require_client_id(),
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": _b64url(hashlib.sha256(verifier.encode("ascii")).digest()),
            "code_challenge_method": "S256",
        }
        wanted = scope or self.scope
        if wanted:
            query["scope"] = wanted
        return f"{self.metadata()['authorization_endpoint']}?{urllib.parse.urlencode(query)}"

    def complete_authorization(self, callback_url: str) -> TokenSet:
        """Sign-in step 2: checks state (used once) and issuer, exchanges the code, stores the tokens."""
        params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(callback_url).query))
        pending = self._pending.pop(params.get("state", ""), None)
        if pending is None:
            raise TidegateError("state_mismatch", "The callback's state is not one this client issued")
        issuer = self.metadata()["issuer"]
        if "iss" in params and params["iss"] != issuer:
            raise TidegateError("issuer_mismatch", f"The callback comes from issuer {params['iss']}, not {issuer}")
        if "error" in params:
            raise TidegateError(params["error"], params.get("error_description", params["error"]))
        if "code" not in params:
            raise TidegateError("invalid_request", "The callback carries no code")
        verifier, redirect_uri = pending
        return self._grant(
            {"grant_type": "authorization_code", "code": params["code"], "code_verifier": verifier, "redirect_uri": redirect_uri}
        )

    def login_with_browser(
        self,
        scope: Optional[str] = None,
        *,
        open_browser: Callable[[str], Any] = webbrowser.open,
        port: int = 0,
        path: str = "/callback",
        timeout: float = 300.0,
    ) -> TokenSet:
        """
        Signs a user in from a command-line app (RFC 8252): listens on a loopback port, opens the
        browser at the authorization URL and waits for the redirect to ``http://127.0.0.1:PORT/callback``.
        Register ``http://127.0.0.1/callback`` with the client: any port matches a loopback URI.
        """
        received: Dict[str, str] = {}

        class Callback(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                if urllib.parse.urlsplit(self.path).path != path:
                    self.send_error(404)
                    return
                received["url"] = self.path
                page = b"<!doctype html><title>Signed in</title><p>You can close this window and return to the terminal.</p>"
                self.send_response(200)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args: Any) -> None:
                pass

        server = HTTPServer(("127.0.0.1", port), Callback)
        server.timeout = 1.0
        try:
            redirect_uri = f"http://127.0.0.1:{server.server_address[1]}{path}"
            open_browser(self.authorization_url(redirect_uri, scope))
            deadline = time.monotonic() + timeout
            while "url" not in received:
                if time.monotonic() > deadline:
                    raise TidegateError("timeout", f"No sign-in callback within {timeout:.0f} s")
                server.handle_request()
        finally:
            server.server_close()
        return self.complete_authorization(f"http://127.0.0.1{received['url']}")

    def client_credentials(self, scope: Optional[str] = None) -> TokenSet:
        """Signs in as the client itself (confidential clients)."""
        wanted = scope or self.scope
        form = {"grant_type": "client_credentials"}
        if wanted:
            form["scope"] = wanted
        return self._grant(form)

    def access_token(self) -> Optional[str]:
        """A valid access token (renewed first when it expires within ``refresh_skew``); None when signed out."""
        tokens = self.store.load()
        if tokens is None:
            return None
        if time.time() < tokens["expires_at"] - self.refresh_skew:
            return tokens["access_token"]
        return self.refresh(stale=tokens["access_token"])["access_token"]

    def refresh(self, stale: Optional[str] = None) -> TokenSet:
        """
        Renews the access token (rotated refresh token kept; client credentials ask again). One
        renewal at a time: a thread that waited for another's renewal of ``stale`` takes its result.
        A refused refresh token clears the store and raises :class:`SessionExpiredError`.
        """
        with self._renewal:
            tokens = self.store.load()
            if stale is not None and tokens is not None and tokens["access_token"] != stale:
                return tokens
            if tokens is not None and tokens.get("refresh_token"):
                try:
                    return self._grant(
                        {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
                        previous_refresh_token=tokens["refresh_token"],
                    )
                except TidegateError as error:
                    if error.code == "invalid_grant":
                        self.store.clear()
                        raise SessionExpiredError(error.message, error.request_id) from error
                    raise
            if self.client_secret:
                return self.client_credentials(tokens.get("scope") if tokens else None)
            raise TidegateError("UNAUTHENTICATED", "Not signed in: no session to renew", status=401)

    def logout(self) -> None:
        """Forgets the session and revokes its refresh token (best effort)."""
        tokens = self.store.load()
        self.store.clear()
        endpoint = self.metadata().get("revocation_endpoint")
        if tokens and tokens.get("refresh_token") and endpoint:
            self._client_post(endpoint, {"token": tokens["refresh_token"]})

    def _grant(self, form: Dict[str, str], previous_refresh_token: Optional[str] = None) -> TokenSet:
        status, headers, body = self._client_post(self.metadata()["token_endpoint"], form)
        if status != 200:
            raise _error_of(status, headers, body)
        answer = json.loads(body)
        tokens: TokenSet = {
            "access_token": answer["access_token"],
            "expires_at": time.time() + float(answer.get("expires_in", 3600)),
        }
        refresh_token = answer.get("refresh_token") or previous_refresh_token
        if refresh_token:
            tokens["refresh_token"] = refresh_token
        if answer.get("scope"):
            tokens["scope"] = answer["scope"]
        self.store.save(tokens)
        return tokens

    def _client_post(self, url: str, form: Dict[str, str]) -> _Response:
        headers = {"content-type": "application/x-www-form-urlencoded"}
        form = dict(form)
        client_id = self._require_client_id()
        if self.client_secret:
            # RFC 6749 2.3.1: id and secret are form-urlencoded before the Basic encoding.
            pair = f"{urllib.parse.quote_plus(client_id)}:{urllib.parse.quote_plus(self.client_secret)}"
            headers["authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
        else:
            form["client_id"] = client_id
        return self._http("POST", url, urllib.parse.urlencode(form).encode("ascii"), headers)

    def _require_client_id(self) -> str:
        if not self.client_id:
            raise TidegateError("invalid_request", "This client uses an API key (no client_id)")
        return self.client_id

    # --- API --------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Optional[Mapping[str, Any]] = None,
        json_body: Any = None,
        headers: Optional[Dict[str, str]] = None,
    ) -> _Response:
        """Any API route with the client's credential; one renewal and retry on 401 invalid_token."""
        url = f"{self.base_url}{path}"
        if params:
            url += "?" + urllib.parse.urlencode({k: v for k, v in params.items() if v is not None}, doseq=True)
        body = None if json_body is None else json.dumps(json_body).encode("utf-8")
        base = dict(headers or {})
        if body is not None:
            base["content-type"] = "application/json"

        def attempt(token: Optional[str]) -> _Response:
            return self._http(method, url, body, {**base, **self._auth_headers(token)})

        if self.api_key:
            status, answer_headers, answer = attempt(None)
        else:
            token = self.access_token()
            if token is None:
                raise TidegateError("UNAUTHENTICATED", "Not signed in", status=401)
            status, answer_headers, answer = attempt(token)
            if status == 401 and "invalid_token" in answer_headers.get("www-authenticate", ""):
                status, answer_headers, answer = attempt(self.refresh(stale=token)["access_token"])
        if status >= 400:
            raise _error_of(status, answer_headers, answer)
        return status, answer_headers, answer

    def v1(self, method: str, path: str, *, params: Optional[Mapping[str, Any]] = None, json_body: Any = None) -> Any:
        """A documented /v1 route, e.g. ``client.v1("GET", "/v1/vessels/lookup", params={"imo": "9074729"})``."""
        if not path.startswith("/v1/"):
            raise TidegateError("invalid_request", f"Not a /v1 path: {path}")
        status, _, body = self.request(method, path, params=params, json_body=json_body)
        return None if status == 204 or not body else json.loads(body)

    def graphql(self, query: str, variables: Optional[Mapping[str, Any]] = None, operation_name: Optional[str] = None) -> Any:
        """Runs a GraphQL operation; returns ``data``, or raises :class:`GraphQLError` when it has errors."""
        payload: Dict[str, Any] = {"query": query}
        if variables is not None:
            payload["variables"] = dict(variables)
        if operation_name:
            payload["operationName"] = operation_name
        status, headers, body = self.request(
            "POST", "/graphql", json_body=payload, headers={"accept": "application/graphql-response+json, application/json"}
        )
        answer = json.loads(body)
        if answer.get("errors"):
            raise GraphQLError(answer["errors"], answer.get("data"), status, headers.get("x-request-id"), _retry_after(headers))
        return answer.get("data")

    def _auth_headers(self, token: Optional[str]) -> Dict[str, str]:
        if token:
            return {"authorization": f"Bearer {token}"}
        if self.api_key_header == "bearer":
            return {"authorization": f"Bearer {self.api_key}"}
        return {"x-api-key": str(self.api_key)}

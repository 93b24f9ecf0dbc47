"""The Python client against the real server (started by test/client/serve.ts): python3 -m unittest."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.error
import urllib.parse
import urllib.request
from html import unescape
from typing import Any, Dict, Optional, Tuple

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "src", "client", "python"))

from tidegate import (  # noqa: E402
    Client,
    FileTokenStore,
    GraphQLError,
    MemoryTokenStore,
    SessionExpiredError,
    TidegateError,
)

SERVER: Dict[str, Any] = {}
_process: Optional[subprocess.Popen] = None


def setUpModule() -> None:
    global _process
    env = dict(os.environ, LIMIT_PROFESSIONAL_PER_MINUTE="2")
    _process = subprocess.Popen(
        ["node", "--import", "tsx", "test/client/serve.ts"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = _process.stdout.readline()
    if not line:
        raise RuntimeError("test server did not start")
    SERVER.update(json.loads(line))


def tearDownModule() -> None:
    if _process is not None:
        _process.stdin.close()
        _process.wait(timeout=30)
        _process.stdout.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _hidden(html: str, name: str) -> str:
    match = re.search(f'name="{name}" value="([^"]*)"', html)
    if match is None:
        raise AssertionError(f"no hidden field {name}")
    return unescape(match.group(1))


class Person:
    """Plays the user in a browser: signs in at the console, approves the consent page, follows the redirect."""

    def __init__(self, approve: bool = True) -> None:
        self.approve = approve
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), _NoRedirect()
        )
        self.error: Optional[BaseException] = None

    def _open(self, url: str, form: Optional[Dict[str, str]] = None) -> Tuple[int, Any, str]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        try:
            response = self.opener.open(urllib.request.Request(url, data=data))
        except urllib.error.HTTPError as error:  # 3xx without redirect handling
            response = error
        with response:
            return response.status, response.headers, response.read().decode()

    def __call__(self, authorization_url: str) -> None:
        threading.Thread(target=self._run, args=(authorization_url,), daemon=True).start()

    def _run(self, authorization_url: str) -> None:
        try:
            base = SERVER["url"]
            status, headers, html = self._open(authorization_url)
            if status == 302:
                _, _, html = self._open(base + headers["location"])
            _, headers, _ = self._open(
                f"{base}/console/login",
                {
                    "csrf": _hidden(html, "csrf"),
                    "email": SERVER["user"]["email"],
                    "password": SERVER["user"]["password"],
                    "return_to": _hidden(html, "return_to"),
                },
            )
            _, _, page = self._open(base + headers["location"])
            form = {"decision": "approve" if self.approve else "deny", "csrf": _hidden(page, "csrf")}
            for name in ("client_id", "redirect_uri", "response_type", "scope", "state", "code_challenge", "code_challenge_method"):
                try:
                    form[name] = _hidden(page, name)
                except AssertionError:
                    pass
            _, headers, _ = self._open(f"{base}/oauth/authorize", form)
            with urllib.request.urlopen(headers["location"]) as callback:  # the loopback listener
                callback.read()
        except BaseException as error:  # reported by the test through the missing callback
            self.error = error


def public_client(**options: Any) -> Client:
    return Client(SERVER["url"], client_id=SERVER["publicClient"]["clientId"], scope="read:vessels read:port_calls", **options)


VIEWER = "{ viewer { accountId credentialKind scopes clientId } }"


class PkceTest(unittest.TestCase):
    def test_signs_in_through_the_loopback_listener_and_calls_graphql_and_v1(self) -> None:
        client = public_client()
        tokens = client.login_with_browser(open_browser=Person(), timeout=30)
        self.assertTrue(tokens["refresh_token"].startswith("tgr_"))
        viewer = client.graphql(VIEWER)["viewer"]
        self.assertEqual(viewer["accountId"], SERVER["user"]["accountId"])
        self.assertEqual(viewer["credentialKind"], "oauth_token")
        vessel = client.v1("GET", "/v1/vessels/lookup", params={"imo": "9074729"})
        self.assertEqual(vessel["name"], "Northern Tern")

    def test_a_denied_consent_is_a_typed_error(self) -> None:
        client = public_client()
        with self.assertRaises(TidegateError) as caught:
            client.login_with_browser(open_browser=Person(approve=False), timeout=30)
        self.assertEqual(caught.exception.code, "access_denied")

    def test_a_callback_with_a_state_it_did_not_issue_is_refused(self) -> None:
        client = public_client()
        client.authorization_url("http://127.0.0.1:9/callback")
        with self.assertRaises(TidegateError) as caught:
            client.complete_authorization("http://127.0.0.1:9/callback?code=x&state=forged")
        self.assertEqual(caught.exception.code, "state_mismatch")

    def test_refresh_rotates_and_a_refused_refresh_token_clears_the_session(self) -> None:
        store = MemoryTokenStore()
        client = public_client(store=store)
        first = client.login_with_browser(open_browser=Person(), timeout=30)
        # Expiring within the skew: the next call renews first, and the refresh token rotates.
        store.save(dict(first, expires_at=first["expires_at"] - 3600 + 5))
        self.assertEqual(client.graphql(VIEWER)["viewer"]["credentialKind"], "oauth_token")
        second = store.load()
        self.assertNotEqual(second["refresh_token"], first["refresh_token"])
        self.assertNotEqual(second["access_token"], first["access_token"])
        # Threads needing a renewal at once share one: each gets the same new token.
        results = []
        threads = [threading.Thread(target=lambda: results.append(client.refresh(stale=second["access_token"]))) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(len({r["access_token"] for r in results}), 1)
        # The server rotated: reusing the first refresh token revokes the family, so the session ends.
        reuse = urllib.parse.urlencode(
            {"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "client_id": client.client_id}
        ).encode()
        with self.assertRaises(urllib.error.HTTPError):
            urllib.request.urlopen(f"{SERVER['url']}/oauth/token", data=reuse)
        with self.assertRaises(SessionExpiredError) as caught:
            client.refresh()
        self.assertEqual(caught.exception.code, "invalid_grant")
        self.assertIn("sign in again", str(caught.exception))
        self.assertIsNone(store.load())

    def test_renews_once_on_401_invalid_token(self) -> None:
        client = public_client()
        tokens = client.login_with_browser(open_browser=Person(), timeout=30)
        revoke = urllib.parse.urlencode({"token": tokens["access_token"], "client_id": client.client_id}).encode()
        with urllib.request.urlopen(f"{SERVER['url']}/oauth/revoke", data=revoke) as answer:
            answer.read()
        vessel = client.v1("GET", "/v1/vessels/lookup", params={"imo": "9074729"})
        self.assertEqual(vessel["imo"], "9074729")
        self.assertNotEqual(client.store.load()["access_token"], tokens["access_token"])


class ClientCredentialsTest(unittest.TestCase):
    def test_signs_in_as_the_client_and_renews_by_asking_again(self) -> None:
        creds = SERVER["confidentialClient"]
        client = Client(SERVER["url"], client_id=creds["clientId"], client_secret=creds["clientSecret"], scope="read:vessels")
        first = client.client_credentials()
        self.assertNotIn("refresh_token", first)
        self.assertEqual(client.graphql(VIEWER)["viewer"]["clientId"], creds["clientId"])
        self.assertNotEqual(client.refresh()["access_token"], first["access_token"])

    def test_a_wrong_secret_is_invalid_client(self) -> None:
        client = Client(SERVER["url"], client_id=SERVER["confidentialClient"]["clientId"], client_secret="wrong")
        with self.assertRaises(TidegateError) as caught:
            client.client_credentials()
        self.assertEqual((caught.exception.code, caught.exception.status), ("invalid_client", 401))


class ApiKeyTest(unittest.TestCase):
    def test_x_api_key_and_bearer(self) -> None:
        for header in ("x-api-key", "bearer"):
            client = Client(SERVER["url"], api_key=SERVER["apiKeys"]["ANALYST"], api_key_header=header)
            self.assertEqual(client.graphql(VIEWER)["viewer"]["credentialKind"], "api_key")
            self.assertEqual(client.v1("GET", "/v1/ports", params={"limit": 1})["limit"], 1)

    def test_errors_are_typed(self) -> None:
        bad = Client(SERVER["url"], api_key="tg_nope")
        with self.assertRaises(TidegateError) as caught:
            bad.v1("GET", "/v1/ports")
        self.assertEqual((caught.exception.code, caught.exception.status), ("UNAUTHORIZED", 401))
        self.assertTrue(caught.exception.request_id)
        client = Client(SERVER["url"], api_key=SERVER["apiKeys"]["INSTITUTIONAL"])
        with self.assertRaises(TidegateError) as caught:
            client.v1("GET", "/v1/ports", params={"limit": 500})
        self.assertEqual((caught.exception.code, caught.exception.status), ("BAD_USER_INPUT", 400))
        self.assertIn("limit", caught.exception.message)
        with self.assertRaises(GraphQLError) as caught_graphql:
            client.graphql("{ nope }")
        self.assertEqual(caught_graphql.exception.status, 400)

    def test_an_unreachable_server_is_network_error(self) -> None:
        with self.assertRaises(TidegateError) as caught:
            Client("http://127.0.0.1:9", api_key="tg_any", timeout=5).v1("GET", "/v1/ports")
        self.assertEqual((caught.exception.code, caught.exception.status), ("NETWORK_ERROR", 0))

    def test_429_carries_retry_after(self) -> None:
        client = Client(SERVER["url"], api_key=SERVER["apiKeys"]["PROFESSIONAL"])
        with self.assertRaises(GraphQLError) as caught:
            for _ in range(5):
                client.graphql("{ protocols(first: 1) { totalCount } }")
        self.assertEqual((caught.exception.code, caught.exception.status), ("RATE_LIMIT_EXCEEDED", 429))
        self.assertGreater(caught.exception.retry_after, 0)
        with self.assertRaises(TidegateError) as caught_rest:
            client.v1("GET", "/v1/protocols", params={"limit": 1})
        self.assertEqual(caught_rest.exception.status, 429)
        self.assertGreater(caught_rest.exception.retry_after, 0)


class FileTokenStoreTest(unittest.TestCase):
    def test_mode_0600_whatever_the_umask_and_round_trip(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "nested", "tokens.json")
            previous = os.umask(0)
            try:
                store = FileTokenStore(path)
                self.assertIsNone(store.load())
                tokens = {"access_token": "a", "refresh_token": "tgr_b", "expires_at": 2_000_000_000}
                store.save(tokens)
                self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
                self.assertEqual(store.load(), tokens)
                with open(path, "w") as handle:
                    handle.write("{corrupt")
                self.assertIsNone(store.load())
                store.clear()
                store.clear()
                self.assertFalse(os.path.exists(path))
            finally:
                os.umask(previous)

    def test_a_signed_in_session_survives_a_restart_through_the_file(self) -> None:
        creds = SERVER["confidentialClient"]
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "tokens.json")
            first = Client(SERVER["url"], client_id=creds["clientId"], client_secret=creds["clientSecret"], store=FileTokenStore(path))
            first.client_credentials("read:vessels")
            again = Client(SERVER["url"], client_id=creds["clientId"], client_secret=creds["clientSecret"], store=FileTokenStore(path))
            self.assertEqual(again.graphql(VIEWER)["viewer"]["clientId"], creds["clientId"])


if __name__ == "__main__":
    unittest.main()

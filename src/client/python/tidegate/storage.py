"""Where tokens live: in memory, or in a JSON file only its owner can read (mode 0600)."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional

TokenSet = Dict[str, Any]
"""``{"access_token", "refresh_token" (optional), "expires_at" (epoch seconds), "scope" (optional)}``."""


class MemoryTokenStore:
    """The default: tokens live as long as the client object."""

    def __init__(self) -> None:
        self._tokens: Optional[TokenSet] = None

    def load(self) -> Optional[TokenSet]:
        return self._tokens

    def save(self, tokens: TokenSet) -> None:
        self._tokens = dict(tokens)

    def clear(self) -> None:
        self._tokens = None


class FileTokenStore:
    """Tokens in a JSON file of mode 0600, replaced atomically (a crash never leaves half a file)."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(os.path.expanduser(path))

    def load(self) -> Optional[TokenSet]:
        try:
            with open(self.path, encoding="utf-8") as handle:
                value = json.load(handle)
        except FileNotFoundError:
            return None
        except (ValueError, OSError):
            return None
        if not isinstance(value, dict) or not isinstance(value.get("access_token"), str):
            return None
        if not isinstance(value.get("expires_at"), (int, float)):
            return None
        return value

    def save(self, tokens: TokenSet) -> None:
        directory = os.path.dirname(self.path)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        temporary = f"{self.path}.{os.getpid()}.tmp"
        # Created 0600 from the start: the secret is never readable by others, not even briefly.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(descriptor, 0o600)  # the mode given to open() is masked by the umask
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                json.dump(tokens, handle)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
        os.replace(temporary, self.path)

    def clear(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

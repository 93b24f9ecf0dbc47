"""Typed exceptions: the server's code, the HTTP status, the request id and, on 429, Retry-After."""

from __future__ import annotations

from typing import Any, Dict, List, Optional


class TidegateError(Exception):
    """Every failure the client reports."""

    def __init__(
        self,
        code: str,
        message: str,
        status: int = 0,
        request_id: Optional[str] = None,
        retry_after: Optional[int] = None,
        details: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        #: The server's code (``RATE_LIMIT_EXCEEDED``, ``FORBIDDEN``...) or an OAuth error (``invalid_grant``...).
        self.code = code
        self.message = message
        #: HTTP status; 0 when no HTTP answer was involved (e.g. a state mismatch).
        self.status = status
        #: ``X-Request-Id`` of the answer, to quote to support.
        self.request_id = request_id
        #: Seconds to wait before trying again (``Retry-After``), on 429 and 503.
        self.retry_after = retry_after
        self.details = details or {}

    def __str__(self) -> str:
        return f"{self.code} ({self.status}): {self.message}"


class SessionExpiredError(TidegateError):
    """The refresh token was refused (invalid_grant): the stored session was cleared; sign in again."""

    def __init__(self, description: str, request_id: Optional[str] = None) -> None:
        super().__init__(
            "invalid_grant",
            f"The session ended: the refresh token was refused ({description}); "
            "the stored tokens were cleared, sign in again",
            status=400,
            request_id=request_id,
        )


class GraphQLError(TidegateError):
    """A GraphQL answer with errors: the first error's code and message, every error, any partial data."""

    def __init__(
        self,
        errors: List[Dict[str, Any]],
        data: Any,
        status: int,
        request_id: Optional[str] = None,
        retry_after: Optional[int] = None,
    ) -> None:
        first = errors[0] if errors else {}
        extensions = dict(first.get("extensions") or {})
        code = extensions.pop("code", "GRAPHQL_ERROR")
        super().__init__(
            str(code),
            str(first.get("message", "GraphQL error")),
            status=status,
            request_id=request_id,
            retry_after=retry_after,
            details=extensions,
        )
        self.errors = errors
        self.data = data

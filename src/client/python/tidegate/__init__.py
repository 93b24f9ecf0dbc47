"""tidegate: a client for the tidegate GraphQL gateway (standard library only, Python >= 3.9)."""

from .client import Client
from .errors import GraphQLError, SessionExpiredError, TidegateError
from .storage import FileTokenStore, MemoryTokenStore

__all__ = ["Client", "FileTokenStore", "GraphQLError", "MemoryTokenStore", "SessionExpiredError", "TidegateError"]

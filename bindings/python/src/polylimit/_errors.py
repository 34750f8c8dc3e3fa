"""polylimit's exception hierarchy.

Every error raised by the library is a :class:`Error`. ``.code`` is the C
ABI's status name (``"POLYLIMIT_ETIMEOUT"`` ...), ``.status`` its number and
``.sys_errno`` the errno of the failing system call (0 when none). Subclasses
also derive from the matching built-in exception, so ``except TimeoutError``
or ``except ValueError`` catch what they should.

This module imports nothing from the extension: ``_core`` reads ``BY_STATUS``
while it initialises.
"""

from typing import Any, Dict, Optional, Type


class Error(Exception):
    """Base class of every polylimit error."""

    code: Optional[str] = "POLYLIMIT_ERROR"
    status: int = -1
    sys_errno: int = 0


class InvalidArgument(Error, ValueError):
    """A bad argument: fix the call, do not retry."""

    code = "POLYLIMIT_EINVALID"
    status = -2


class Unavailable(Error, ConnectionError):
    """No connection could be made, or it broke: retry later."""

    code = "POLYLIMIT_EUNAVAILABLE"
    status = -3


class Timeout(Error, TimeoutError):
    """The server did not answer in time: retry later."""

    code = "POLYLIMIT_ETIMEOUT"
    status = -4


class AuthError(Error):
    """Authentication failed (AUTH or ACL user)."""

    code = "POLYLIMIT_EAUTH"
    status = -5


class PermissionDenied(Error):
    """An ACL denied a command or key (NOPERM)."""

    code = "POLYLIMIT_EPERM"
    status = -6


class ScriptError(Error):
    """The Lua script failed inside Redis (a bug, or a key of the wrong type)."""

    code = "POLYLIMIT_ESCRIPT"
    status = -7


class PoolExhausted(Error):
    """No pooled connection became free within acquire_timeout: retry later."""

    code = "POLYLIMIT_EPOOL"
    status = -8


class RateLimited(Error):
    """Raised by ``Limiter.limit`` and ``Limiter.hit`` when a check is denied.

    A denial is not a failure of the library, so ``.code`` is None; the
    decision that denied is in ``.decision``.
    """

    code = None
    status = 0

    def __init__(self, decision: Any, message: Optional[str] = None) -> None:
        if message is None:
            message = "rate limited: retry after %.3f s" % decision.retry_after
        super().__init__(message)
        self.decision = decision

    @property
    def retry_after(self) -> float:
        return float(self.decision.retry_after)


# Status codes without a class of their own (POLYLIMIT_ERROR, POLYLIMIT_ENOMEM, POLYLIMIT_ESERVER,
# POLYLIMIT_ECLOSED, codes added later) raise Error with .code set.
BY_STATUS: Dict[int, Type[Error]] = {
    cls.status: cls
    for cls in (InvalidArgument, Unavailable, Timeout, AuthError, PermissionDenied, ScriptError, PoolExhausted)
}

"""polylimit's exception hierarchy.

Every error raised by the library is a :class:`Error`. ``.code`` is the C
ABI's status name (``"POLYLIMIT_ETIMEOUT"`` ...), ``.status`` its number,
``.sys_errno`` the errno of the failing system call (0 when none),
``.outcome_unknown`` whether the call failed after its command was sent, so
that it may have consumed units (docs/error-model.md), ``.retryable``
whether a later retry may succeed and ``.outage`` whether the server did not
answer (the failure policy applies). Subclasses also derive
from the matching built-in exception, so ``except TimeoutError`` or
``except ValueError`` catch what they should.

The classes are written here (for type checkers and documentation); their
status, code and flags come from the generated table (``_vocabulary``, built
from capi/vocabulary/vocabulary.json), as does ``BY_STATUS``, the map that
``_core`` uses to raise them. This module imports nothing from the extension:
``_core`` reads ``BY_STATUS`` while it initialises.
"""

import builtins
from typing import Any, Dict, List, Optional, Type

from ._vocabulary import EXCEPTION_CLASSES, STATUSES


class Error(Exception):
    """Base class of every polylimit error; raised as is for an internal error
    (POLYLIMIT_ERROR) or a status this version does not know."""

    code: Optional[str]
    status: int
    retryable: bool
    outage: bool
    sys_errno: int = 0
    #: True when the call failed after its command was sent to Redis (a
    #: timeout, a connection lost after the send): the script may have run
    #: and consumed units. False when it failed before the send, or Redis
    #: answered with an error (the script did not run). For check_many raised
    #: as a whole: True when any failed key's outcome is unknown.
    outcome_unknown: bool = False
    #: check_many: the position of the key this error belongs to (else None).
    index: Optional[int] = None


class InvalidArgument(Error, ValueError):
    """A bad argument: fix the call, do not retry."""


class Unavailable(Error, ConnectionError):
    """No connection could be made, or it broke: retry later."""


class Timeout(Error, TimeoutError):
    """The server did not answer in time: retry later."""


class AuthError(Error):
    """Authentication failed (AUTH or ACL user): fix the credentials."""


class PermissionDenied(Error):
    """An ACL denied a command or key (NOPERM): fix the ACL."""


class ScriptError(Error):
    """The Lua script failed inside Redis (a bug, or a key of the wrong type)."""


class PoolExhausted(Error):
    """A connection's queue stayed full for acquire_timeout: retry later."""


class NoMemory(Error):
    """Out of memory, in this process or in Redis (OOM)."""


class ServerError(Error):
    """The server answered with an unexpected error or reply."""


class ClosedError(Error):
    """The client, or the client a limiter was made from, is closed."""


class NotDurable(Error):
    """Failover-safe mode (``durable_replicas``): the master admitted the check
    but its write was not acknowledged by enough replicas in time. Not
    admitted; its units stay consumed on the master (``outcome_unknown``)."""


class RateLimited(Error):
    """Raised by ``Limiter.limit`` and ``Limiter.hit`` when a check is denied.

    A denial is not a failure of the library, so ``.code`` is None; the
    decision that denied is in ``.decision``.
    """

    code = None
    status = 0
    retryable = True
    outage = False

    def __init__(self, decision: Any, message: Optional[str] = None) -> None:
        if message is None:
            message = "rate limited: retry after %.3f s" % decision.retry_after
        super().__init__(message)
        self.decision = decision

    @property
    def retry_after(self) -> float:
        return float(self.decision.retry_after)


#: status -> the class raised for it (every status of the generated table).
BY_STATUS: Dict[int, Type[Error]] = {}
#: Names of classes made here because the table has a status this module does
#: not define yet (a library newer than this file); the test suite keeps it empty.
GENERATED_CLASSES: List[str] = []


def _bind_table() -> None:
    namespace = globals()
    for status, (c_name, _text, retryable, outage, class_name) in STATUSES.items():
        cls: Any = namespace.get(class_name)
        if cls is None:
            base_name, doc = EXCEPTION_CLASSES[class_name]
            bases = (Error,) + ((getattr(builtins, base_name),) if base_name else ())
            cls = type(class_name, bases, {"__doc__": doc, "__module__": __name__})
            namespace[class_name] = cls
            GENERATED_CLASSES.append(class_name)
        # Set on each class itself: a subclass must not inherit its parent's status.
        cls.code = c_name
        cls.status = status
        cls.retryable = retryable
        cls.outage = outage
        BY_STATUS[status] = cls


_bind_table()

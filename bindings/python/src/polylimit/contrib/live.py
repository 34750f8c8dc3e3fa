"""A policy document whose limits and plans change while the service runs.

:class:`LivePolicy` is a :class:`polylimit.contrib.http.Policy` made from a
policy document (TOML, or JSON; docs/policy.md) with its own limits and
plans, or opened from a file that can be watched::

    from polylimit.contrib.asgi import RateLimitMiddleware
    from polylimit.contrib.live import LivePolicy

    client = polylimit.Client("redis://127.0.0.1:6379", name="web")
    policy = LivePolicy.open("/etc/myapp/policy.toml", client, watch=0.5,
                             tenant=lambda view: view.header("X-Tenant"))
    app = RateLimitMiddleware(app, policy)

Every integration that takes a ``Policy`` takes a ``LivePolicy``. Each
request takes the current policy when it starts and keeps it until it is
settled; :meth:`LivePolicy.reload` swaps in a new document atomically (or
raises :class:`polylimit.InvalidArgument` naming the line, and the old
policy stays); a watched file is reloaded when it changes (a refused one
leaves the old policy, and :attr:`LivePolicy.last_error` says why). Keys'
state is kept across reloads.

Tenants the document's ``tenants`` table does not name get their plan from
the application's ``resolver`` (a function of the tenant id returning a
plan name, sync or async), when the document has a ``[resolver]`` section:
answers are cached (``cache_ttl_ms``, ``cache_size``), and a resolver that
raises or takes longer than ``timeout_ms`` gives the default plan for that
request. Under asyncio the resolver never holds the event loop: an async
one is awaited under ``asyncio.wait_for``, a plain function runs in the
loop's default executor, both bounded by the deadline. In WSGI (Flask,
Django) a resolver is called in the request's thread: a slow one holds that
request until it returns, and its answer is then ignored (the default plan)
when it took longer than the deadline.
"""

import asyncio
import inspect
import json
import os
import time
from typing import Any, Awaitable, Callable, Generator, List, Mapping, Optional, Sequence, Union, cast

from .. import _core
from .._client import Client, Limiter
from .._core import Decision, HttpStep
from .._errors import Error
from .http import AppKey, Hook, Outcome, Policy, RequestView, _text, _wire, log

__all__ = ["LivePolicy", "Resolver"]

#: The application's plan resolver: a tenant id -> its plan's name (None:
#: the default plan), or an awaitable of it.
Resolver = Callable[[str], Union[Optional[str], Awaitable[Optional[str]]]]

Document = Union[str, Mapping[str, Any]]


def _text_of(document: Document) -> str:
    if isinstance(document, str):
        return document
    if isinstance(document, Mapping):
        return json.dumps(document)
    raise TypeError("a policy document is TOML or JSON text, or a dict, not %s" % type(document).__name__)


class _PolicyLimiter(Limiter):
    """A limiter the policy document made (a rule's ``limit`` or a plan's)."""

    def __repr__(self) -> str:
        return "<polylimit.Limiter of a policy document%s>" % (" closed" if self.client.closed else "")


class _Snapshot:
    """One policy of a live policy, as the requests that took it use it."""

    __slots__ = ("core", "id", "names", "headers", "timeout", "_limiters", "_client", "_app")

    def __init__(self, core: "_core.HttpPolicy", client: Client, app: Sequence[Limiter]) -> None:
        self.core = core
        self.id = core.id()
        self.names = [core.rule_name(i) for i in range(core.rule_count())]
        self.headers = core.header_names()
        self.timeout = core.resolver_timeout_ms() / 1000.0
        self._client = client
        self._app = app
        self._limiters: List[Optional[Limiter]] = [None] * core.limiter_count()

    def limiter(self, index: int) -> Limiter:
        """Limiter ``index`` (a step's ``limiter``): the application's own,
        else a handle on the document's, made once."""
        if index < len(self._app):
            return self._app[index]
        found = self._limiters[index]
        if found is None:  # two threads may both make it: either handle works
            found = _PolicyLimiter(self._client, self.core.limiter(index), "sliding_log", "server")
            self._limiters[index] = found
        return found


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def _plan_name(answer: Any) -> str:
    if answer is None:
        return ""
    if isinstance(answer, str):
        return answer
    raise TypeError("a resolver returns a plan name (str) or None, not %s" % type(answer).__name__)


class LivePolicy(Policy):
    """A policy document (TOML or JSON text, or a dict) with its own limits
    and plans, made on ``client``, that can be replaced while requests run.

    ``limiters``: the application's limiters, for rules that say
    ``limiter = i``. ``resolver``: the tenant -> plan function the document's
    ``[resolver]`` section asks for (a document with that section and no
    resolver is refused). ``user``, ``tenant``, ``app_key``, ``cost``: the
    application's hooks, as :meth:`Policy.from_document` takes them.
    :meth:`open` reads the document from a file (and watches it)."""

    def __init__(
        self,
        document: Document,
        client: Client,
        limiters: Sequence[Limiter] = (),
        *,
        resolver: Optional[Resolver] = None,
        user: Optional[Hook] = None,
        tenant: Optional[Hook] = None,
        app_key: Optional[Callable[[RequestView], Optional[AppKey]]] = None,
        cost: Optional[Callable[[RequestView], Optional[int]]] = None,
        _path: Optional[str] = None,
        _watch_ms: int = 0,
    ) -> None:
        if not isinstance(client, Client):
            raise TypeError("client must be a polylimit.Client, not %s" % type(client).__name__)
        for lim in limiters:
            if not isinstance(lim, Limiter):
                raise TypeError("limiters must be polylimit.Limiter objects, not %s" % type(lim).__name__)
        if resolver is not None and not callable(resolver):
            raise TypeError("resolver must be a function of the tenant id, not %s" % type(resolver).__name__)
        app = [lim._core for lim in limiters]
        if _path is not None:
            self._live = _core.HttpLive(client._core, path=_path, limiters=app, watch_ms=_watch_ms)
            self.document = ""
        else:
            self.document = _text_of(document)
            self._live = _core.HttpLive(client._core, self.document, app)
        self.client = client
        self.path = _path
        self.limiters: List[Limiter] = list(limiters)
        self._resolver = resolver
        self._user_hook = user
        self._tenant_hook = tenant
        self._app_key_hook = app_key
        self._cost_hook = cost
        self._current: Optional[_Snapshot] = None
        # What the integrations read of a Policy. A live document may start
        # reading the user, the tenant or the route at any reload: always
        # describe them.
        self.needs_route = True
        self.on_error = "(the document's)"
        self._doc: Mapping[str, Any] = {}
        self.default = None
        self.routes = []
        snap = self._snapshot()
        if resolver is None and snap.timeout > 0:
            self._live.close()
            raise ValueError(
                "the policy document has a [resolver] section but no resolver was given: "
                "pass resolver=... (a function of the tenant id returning its plan's name)"
            )

    @classmethod
    def open(
        cls,
        path: Union[str, "os.PathLike[str]"],
        client: Client,
        limiters: Sequence[Limiter] = (),
        *,
        watch: Optional[float] = None,
        resolver: Optional[Resolver] = None,
        user: Optional[Hook] = None,
        tenant: Optional[Hook] = None,
        app_key: Optional[Callable[[RequestView], Optional[AppKey]]] = None,
        cost: Optional[Callable[[RequestView], Optional[int]]] = None,
    ) -> "LivePolicy":
        """The policy in the file at ``path``. ``watch``: seconds between
        looks at the file (a thread of the core's reloads it when its size,
        modification time or inode changed; None: not watched, see
        :meth:`reload_file`). Replace the file by renaming a new one over it,
        so that it is never read half written."""
        watch_ms = 0
        if watch is not None:
            if isinstance(watch, bool) or not isinstance(watch, (int, float)) or watch <= 0:
                raise ValueError("watch must be a positive number of seconds or None, not %r" % (watch,))
            watch_ms = max(1, int(round(watch * 1000)))
        return cls(
            "",
            client,
            limiters,
            resolver=resolver,
            user=user,
            tenant=tenant,
            app_key=app_key,
            cost=cost,
            _path=os.fspath(path),
            _watch_ms=watch_ms,
        )

    # -- the live policy -------------------------------------------------------
    def reload(self, document: Document) -> None:
        """Replaces the policy by ``document``, atomically: requests that
        started before finish on the old one, the next ones use the new one,
        and keys' state is kept. A document with an error raises
        :class:`polylimit.InvalidArgument` naming the line and the problem;
        the old policy stays."""
        text = _text_of(document)
        self._live.reload(text)
        self.document = text

    def reload_file(self) -> None:
        """Reads the file again (a policy from :meth:`open`) and reloads it."""
        self._live.reload_file()

    @property
    def generation(self) -> int:
        """How many policies this has had: 1, then +1 per accepted reload."""
        return self._live.generation()

    @property
    def last_error(self) -> str:
        """Why the last reload (or the watched file's) was refused; "" once
        one is accepted."""
        return self._live.last_error()

    def close(self) -> None:
        """Stops watching the file. Requests in flight finish; the policy
        may not be used after."""
        self._live.close()

    def __enter__(self) -> "LivePolicy":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _snapshot(self) -> _Snapshot:
        core = self._live.current()
        cur = self._current
        if cur is not None and cur.id == core.id():
            return cur
        cur = _Snapshot(core, self.client, self.limiters)
        self._current = cur
        return cur

    # -- introspection (the current policy) ------------------------------------
    def header_names(self) -> List[str]:
        return list(self._snapshot().headers)

    def rule_names(self) -> List[str]:
        return list(self._snapshot().names)

    def rule_name(self, rule: int) -> str:
        return self._snapshot().names[rule]

    def metrics_prometheus(self) -> str:
        """The current policy's per-rule counters (kept across reloads) and
        ``polylimit_http_policy_reloads_total``."""
        return self._live.metrics_prometheus()

    def counts(self, rule: str, status: int) -> bool:
        snap = self._snapshot()
        return snap.core.counts(snap.names.index(rule), status)

    # -- per request -----------------------------------------------------------
    def _describe_in(self, snap: _Snapshot, request: RequestView) -> Any:
        user = _text(self._user_hook(request) if self._user_hook is not None else request.user)
        tenant = _text(self._tenant_hook(request)) if self._tenant_hook is not None else None
        return dict(
            method=request.method,
            path=request.path,
            route=request.route,
            peer=request.peer,
            headers=[_wire(request.headers.get(n)) for n in snap.headers],
            user=user,
            tenant=tenant,
        )

    def prepare(
        self, request: RequestView, *, app_key: Optional[AppKey] = None, cost: Optional[int] = None
    ) -> HttpStep:
        snap = self._snapshot()
        step = snap.core.prepare(
            **self._describe_in(snap, request), app_key=app_key, cost=cost, plan=None if self._resolver else ""
        )
        step.policy = snap  # type: ignore[attr-defined]
        return step

    def _steps(self, snap: _Snapshot, request: RequestView) -> Generator[str, str, HttpStep]:
        """The request's step on ``snap``: yields the tenant when the rule
        takes the tenant's plan and the application resolves it; sent the
        plan."""
        args = self._describe_in(snap, request)
        cost = self._cost_hook(request) if self._cost_hook is not None else None
        app_key: Optional[AppKey] = None
        plan: Optional[str] = None if self._resolver is not None else ""
        while True:
            step = snap.core.prepare(**args, app_key=app_key, cost=cost, plan=plan)
            if step.action == _core.HTTP_NEED_APP_KEY and app_key is None:
                fn = self._app_key_hook
                app_key = (fn(request) if fn is not None else None) or ""
            elif step.action == _core.HTTP_NEED_PLAN and plan is None:
                tenant = args["tenant"] or ""
                cached = self._live.cached_plan(tenant)
                plan = cached if cached is not None else (yield tenant)
            else:
                step.policy = snap  # type: ignore[attr-defined]
                return step

    def _prepare(self, request: RequestView) -> HttpStep:
        snap = self._snapshot()
        steps = self._steps(snap, request)
        try:
            tenant = next(steps)
            while True:
                tenant = steps.send(self._resolve(snap, tenant))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def _aprepare(self, request: RequestView) -> HttpStep:
        snap = self._snapshot()
        steps = self._steps(snap, request)
        try:
            tenant = next(steps)
            while True:
                tenant = steps.send(await self._aresolve(snap, tenant))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def _resolved(self, tenant: str, answer: Any) -> str:
        plan = _plan_name(answer)
        self._live.cache_plan(tenant, plan)
        return plan

    def _resolve(self, snap: _Snapshot, tenant: str) -> str:
        """The resolver's plan for ``tenant``, called in this thread; ""
        (the default plan) when it raises or took longer than the deadline."""
        assert self._resolver is not None
        start = time.monotonic()
        try:
            answer = self._resolver(tenant)
            if inspect.isawaitable(answer):
                if inspect.iscoroutine(answer):
                    answer.close()
                raise TypeError("an async resolver needs an asyncio integration (acheck), not a blocking one")
            elapsed = time.monotonic() - start
            if elapsed > snap.timeout:
                log.warning(
                    "polylimit: the plan resolver took %.0f ms (timeout_ms %.0f): the default plan",
                    elapsed * 1000,
                    snap.timeout * 1000,
                )
                return ""
            return self._resolved(tenant, answer)
        except Exception as e:
            log.warning("polylimit: the plan resolver failed (%s: %s): the default plan", type(e).__name__, e)
            return ""

    async def _aresolve(self, snap: _Snapshot, tenant: str) -> str:
        """The resolver's plan for ``tenant`` without holding the event loop:
        awaited (an async resolver) or run in the loop's executor, under
        ``asyncio.wait_for`` with the deadline; "" when it raises or is late."""
        resolver = self._resolver
        assert resolver is not None
        deadline = time.monotonic() + snap.timeout
        try:
            answer: Any
            if _is_async(resolver):
                answer = await asyncio.wait_for(cast(Awaitable[Any], resolver(tenant)), snap.timeout)
            else:
                loop = asyncio.get_running_loop()
                call = cast(Callable[[str], Any], resolver)
                answer = await asyncio.wait_for(loop.run_in_executor(None, call, tenant), snap.timeout)
                if inspect.isawaitable(answer):
                    answer = await asyncio.wait_for(answer, max(0.0, deadline - time.monotonic()))
            return self._resolved(tenant, answer)
        except asyncio.TimeoutError:
            log.warning("polylimit: the plan resolver took longer than %.0f ms: the default plan", snap.timeout * 1000)
            return ""
        except Exception as e:
            log.warning("polylimit: the plan resolver failed (%s: %s): the default plan", type(e).__name__, e)
            return ""

    @staticmethod
    def _of(step: HttpStep) -> _Snapshot:
        return step.policy  # type: ignore[attr-defined,no-any-return]

    def _limiter(self, step: HttpStep) -> Limiter:
        return self._of(step).limiter(step.limiter)

    def _rule_of(self, step: HttpStep) -> str:
        return self._of(step).names[step.rule]

    def _failed(self, step: HttpStep, error: Error) -> Outcome:
        log.warning("polylimit: the check of rule %r failed (%s: %s)", self._rule_of(step), error.code, error)
        return self.answer(step, None)

    def answer(self, step: HttpStep, decision: Optional[Decision] = None) -> Outcome:
        status, body, headers = self._of(step).core.answer(step, decision)
        return self._outcome(step, status, body, headers, decision, None)

    def _responded(self, step: HttpStep) -> Outcome:
        return self.answer(step, None)

    def refund_due(self, step: HttpStep, decision: Decision, status: int) -> bool:
        return self._of(step).core.refund_due(step, decision, status)

    def _refund_due(self, outcome: Outcome, status: int) -> bool:
        step, decision = outcome.step, outcome.decision
        if step is None or decision is None or step.action != _core.HTTP_CHECK:
            return False
        return self._of(step).core.refund_due(step, decision, status)

    def _outcome(
        self,
        step: HttpStep,
        status: int,
        body: str,
        headers: List[Any],
        decision: Optional[Decision],
        error: Optional[Error],
    ) -> Outcome:
        return Outcome(
            status or None,
            headers,
            body,
            decision,
            error,
            None,
            step.key if step.action == _core.HTTP_CHECK else None,
            step,
            self._rule_of(step) if step.rule >= 0 else None,
        )

    async def acheck(self, request: RequestView) -> Outcome:
        """:meth:`Policy.acheck`: the resolver (when asked) and the check on
        the event loop, never blocking it."""
        step = await self._aprepare(request)
        if step.action == _core.HTTP_RESPOND:
            return self._responded(step)
        if step.action != _core.HTTP_CHECK:
            return self._outcome(step, 0, "", [], None, None)
        try:
            decision = await self._limiter(step).acheck(step.key, step.cost)
        except Error as e:
            return self._failed(step, e)
        return self.answer(step, decision)

    def __repr__(self) -> str:
        where = repr(self.path) if self.path is not None else "a document"
        return "<polylimit LivePolicy of %s, generation %d>" % (where, self.generation)

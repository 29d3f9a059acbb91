"""What the coordinators' wire handlers share: answering now, or later.

A coordinator (group or transaction) answers through a reply callable it is given. Most
answers come before the call into the coordinator returns (a heartbeat, a commit with nothing
to write, a describe); those are encoded and returned at once. Only when the coordinator keeps
the reply (a write in flight, a parked JoinGroup) is a :class:`~groupcoord.handling.Later` made
(a future completed by a callback), completed when the reply is finally given; a cancelled one
means the client went away, and the reply is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from groupcoord.broker.state import Broker
from groupcoord.handling import Later, RequestContext

R = TypeVar("R")
A = TypeVar("A")


def response_type(broker: Broker, ctx: RequestContext) -> Any:
    """The kio response class of the request's API and version."""
    return broker.registry.lookup(ctx.api_key, ctx.api_version).response_type


def now_or_later(
    invoke: Callable[[Callable[[R], None]], object],
    encode: Callable[[R], Any],
    *,
    after: Callable[[], None] | None = None,
    ctx: RequestContext | None = None,
) -> Any:
    """Call ``invoke(reply)``, then ``after()``; the encoded reply if it came meanwhile, else a
    :class:`~groupcoord.handling.Later` of it. With ``ctx``, a reply that is not immediate
    mutes the connection until sent."""
    return call_now_or_later(_invoke, invoke, encode, after=after, ctx=ctx)


def _invoke(invoke: Callable[[Callable[[R], None]], object], reply: Callable[[R], None]) -> object:
    return invoke(reply)


def call_now_or_later(
    call: Callable[[A, Callable[[R], None]], object],
    arg: A,
    encode: Callable[[R], Any],
    *,
    after: Callable[[], None] | None = None,
    ctx: RequestContext | None = None,
) -> Any:
    """As :func:`now_or_later` for ``call(arg, reply)`` (a coordinator method and its request),
    without a closure per request to bind them."""
    immediate: list[R] = []
    fut: Later | None = None

    def reply(response: R) -> None:
        if fut is None:
            immediate.append(response)
            return
        # Encoded when the coordinator hands the reply out: the connection gets a Later, which
        # tells it at once (no task, no coroutine, no loop callback per answer).
        if fut.done():
            return  # cancelled: the client went away
        try:
            fut.set_result(encode(response))
        except Exception as exc:
            fut.set_exception(exc)

    call(arg, reply)
    if after is not None:
        after()
    if immediate:
        return encode(immediate[0])
    fut = Later()
    if ctx is not None:
        ctx.mute()
    return fut

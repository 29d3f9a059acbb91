"""The member core's requests: those waiting to be handed to the adapter (:class:`Outbound`) and
those awaiting an answer, with their deadlines (:class:`InFlightRequest`), in one
:class:`Outbox`.

The core numbers its requests itself; an adapter answers by that number
(``on_response(request_id, ...)`` / ``on_failure(request_id, ...)``). A request to an unknown
coordinator is never handed out: it is *doomed* and fails on the core's next turn, after the
caller has recorded its id (Java fails such a request at once with COORDINATOR_NOT_AVAILABLE).
The core times requests out itself (:meth:`Outbox.expired`), so an adapter need not.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.client.actions import Api
from groupcoord.client.messages import Node, Request
from groupcoord.client.states import Generation

__all__ = ["InFlightRequest", "Outbound", "Outbox"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Outbound:
    """A request to send: ``node`` None = any broker (least-loaded), else the coordinator.

    ``timeout_ms`` is the request's timeout (JoinGroup: max(request.timeout.ms,
    max.poll.interval.ms + 5 s)); the core enforces it itself."""

    request_id: int
    request: Request
    node: Node | None
    timeout_ms: int


@dataclass(kw_only=True, slots=True)
class InFlightRequest:
    """A request the core sent and waits for."""

    api: Api | None  # None: Metadata
    request: Request
    sent_generation: Generation
    deadline: int
    to_coordinator: bool
    tag: object = None  # subclass bookkeeping (commit id, fetch id ...)


class Outbox:
    """The core's requests, to hand out and in flight (see the module docstring)."""

    def __init__(self) -> None:
        self._next_id = 1
        self.in_flight: dict[int, InFlightRequest] = {}
        self._doomed: list[int] = []
        self.ready: list[Outbound] = []
        #: the core has work for its next turn (a doomed request, a new coordinator, metadata)
        self.immediate = False

    def add(self, entry: InFlightRequest, node: Node | None, timeout_ms: int) -> int:
        """Record ``entry`` and hand it out to ``node`` (doomed when it is for an unknown
        coordinator); its request id."""
        rid = self._next_id
        self._next_id += 1
        self.in_flight[rid] = entry
        if entry.to_coordinator and node is None:
            self._doomed.append(rid)
            self.immediate = True
        else:
            self.ready.append(
                Outbound(request_id=rid, request=entry.request, node=node, timeout_ms=timeout_ms)
            )
        return rid

    def drain(self, *, keep_immediate: bool = False) -> list[Outbound]:
        """The requests to send now. The heartbeat thread drains with ``keep_immediate``: it sends
        whatever is queued (as Java's ``pollNoWakeup`` does) but does not do the next turn's work."""
        out, self.ready = self.ready, []
        if not keep_immediate:
            self.immediate = False
        return out

    def pop(self, rid: int) -> InFlightRequest | None:
        return self.in_flight.pop(rid, None)

    def pop_doomed(self) -> tuple[int, InFlightRequest] | None:
        """The oldest doomed request still in flight, removed; None when there is none."""
        while self._doomed:
            rid = self._doomed.pop(0)
            entry = self.in_flight.pop(rid, None)
            if entry is not None:
                return rid, entry
        return None

    def expired(self, now_ms: int) -> list[int]:
        """Ids of the requests whose deadline has passed (still in flight: :meth:`pop` each)."""
        return [rid for rid, f in self.in_flight.items() if f.deadline <= now_ms]

    def to_coordinator(self) -> list[int]:
        """Ids of the requests in flight to the coordinator."""
        return [rid for rid, f in self.in_flight.items() if f.to_coordinator]

    def deadlines(self) -> list[int]:
        return [f.deadline for f in self.in_flight.values()]

    def __len__(self) -> int:
        return len(self.in_flight)

"""What a handler knows about the request it serves and the connection it came on."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, kw_only=True)
class RequestContext:
    """Per-request context handed to every handler.

    ``client_host`` is in Kafka's ``/127.0.0.1`` form (what DescribeGroups shows).
    While a handler's awaitable is pending the connection hands no later request to a handler
    anyway (``server.connection``), except within a run of one overlap class; :meth:`mute`
    makes this request hold back even those, as Kafka does for every request (JoinGroup and
    SyncGroup call it).
    """

    connection_id: int
    client_id: str
    client_host: str
    api_key: int
    api_version: int
    correlation_id: int
    muted: bool = field(default=False)

    def mute(self) -> None:
        self.muted = True

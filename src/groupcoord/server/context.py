"""What a handler knows about the request it serves and the connection it came on."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, kw_only=True)
class RequestContext:
    """Per-request context handed to every handler.

    ``client_host`` is in Kafka's ``/127.0.0.1`` form (what DescribeGroups shows).
    A handler that parks its answer (returns an awaitable) may call :meth:`mute` so the
    connection reads no further request until this one is answered, as Kafka does for
    requests it holds in purgatory, e.g. JoinGroup and SyncGroup.
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

"""TLS between the socket and a connection, through :class:`ssl.SSLObject` over memory BIOs.

Why not ``create_server(ssl=...)`` or ``loop.start_tls``: with either, a failed handshake (bytes
that are not TLS, a certificate the truststore does not trust) closes the socket without telling
the application (asyncio and uvloop log it only in debug mode), where the broker owes one log
line per refused connection; and under uvloop, bytes that arrive before ``start_tls`` takes the
transport over are lost to it. Here the handshake runs on the bytes as they come, the same under
both loops, and the connection above gets a transport only once the handshake is done, with the
client certificate's principal.

:class:`TlsProtocol` is the socket's protocol; the connection above (``server.connection``)
talks to a :class:`TlsTransport`, which has no ``socket`` extra: file regions are read and
encrypted instead of sent with ``sendfile``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["TlsProtocol", "TlsTransport"]

_READ_CHUNK = 256 * 1024


class TlsProtocol(asyncio.Protocol):
    """The socket side of one TLS connection.

    Args:
        app: the protocol above (a ``KafkaConnection``).
        context: the listener's server context.
        on_handshake: called with the ``SSLObject`` once the handshake is done, before the
            protocol above gets its transport; it may raise :class:`ValueError` to refuse the
            connection (a certificate no ``ssl.principal.mapping.rules`` rule maps).
        on_refused: called (once) when the connection ends before the handshake completes, with
            the one-line reason to log.
    """

    def __init__(
        self,
        app: asyncio.Protocol,
        context: ssl.SSLContext,
        *,
        on_handshake: Callable[[ssl.SSLObject], None],
        on_refused: Callable[[str], None],
    ) -> None:
        self.app = app
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self.sslobj = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._on_handshake = on_handshake
        self._on_refused = on_refused
        self.raw: asyncio.Transport | None = None
        self.handshaken = False
        self._refused = False
        self.transport = TlsTransport(self)

    # ------------------------------------------------------------------ socket side
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.raw = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        self._incoming.write(data)
        if not self.handshaken:
            try:
                self.sslobj.do_handshake()
            except ssl.SSLWantReadError:
                self._flush()
                return
            except (ssl.SSLError, OSError) as exc:
                self._flush()
                self._refuse(f"TLS handshake failed: {_reason(exc)}")
                return
            self._flush()
            try:
                self._on_handshake(self.sslobj)
            except ValueError as exc:
                self._refuse(str(exc))
                return
            self.handshaken = True
            self.app.connection_made(self.transport)
        chunks: list[bytes] = []
        closed = False
        while True:
            try:
                chunk = self.sslobj.read(_READ_CHUNK)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                closed = True
                break
            except (ssl.SSLError, OSError) as exc:
                self._flush()
                log.warning("closing TLS connection: %s", _reason(exc))
                self.transport.abort()
                return
            if not chunk:
                closed = True
                break
            chunks.append(chunk)
        self._flush()  # reading may have produced records to send (TLS 1.3 tickets, key updates)
        if chunks:
            self.app.data_received(b"".join(chunks) if len(chunks) > 1 else chunks[0])
        if closed:
            self.transport.close()

    def eof_received(self) -> bool | None:
        return False  # close (the peer's half-close ends the TLS stream)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.handshaken:
            self.app.connection_lost(exc)
        elif not self._refused:
            self._refuse("connection closed during the TLS handshake", close=False)

    def pause_writing(self) -> None:
        if self.handshaken:
            self.app.pause_writing()

    def resume_writing(self) -> None:
        if self.handshaken:
            self.app.resume_writing()

    # ------------------------------------------------------------------ helpers
    def write(self, data: bytes) -> None:
        if not data:
            return
        self.sslobj.write(data)  # the outgoing BIO takes any amount: no SSLWantWriteError
        self._flush()

    def _flush(self) -> None:
        out = self._outgoing.read()
        raw = self.raw
        if out and raw is not None and not raw.is_closing():
            raw.write(out)

    def _refuse(self, reason: str, *, close: bool = True) -> None:
        self._refused = True
        self._on_refused(reason)
        if close and self.raw is not None:
            self.raw.close()


class TlsTransport(asyncio.Transport):
    """What the connection above a :class:`TlsProtocol` writes to."""

    def __init__(self, proto: TlsProtocol) -> None:
        super().__init__()
        self._proto = proto
        self._closing = False

    def _raw(self) -> asyncio.Transport:
        raw = self._proto.raw
        assert raw is not None
        return raw

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing:
            return
        self._proto.write(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def get_write_buffer_size(self) -> int:
        return self._raw().get_write_buffer_size()

    def pause_reading(self) -> None:
        self._raw().pause_reading()

    def resume_reading(self) -> None:
        self._raw().resume_reading()

    def is_reading(self) -> bool:
        return self._raw().is_reading()

    def is_closing(self) -> bool:
        return self._closing or self._raw().is_closing()

    def close(self) -> None:
        """Send close_notify, then close the socket once what is buffered is written."""
        if self._closing:
            return
        self._closing = True
        with contextlib.suppress(ssl.SSLError, OSError, ValueError):
            self._proto.sslobj.unwrap()  # sends close_notify; the peer's is not awaited
        self._proto._flush()
        self._raw().close()

    def abort(self) -> None:
        self._closing = True
        self._raw().abort()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "ssl_object":
            return self._proto.sslobj
        if name == "peercert":
            return self._proto.sslobj.getpeercert()
        if name == "cipher":
            return self._proto.sslobj.cipher()
        if name == "socket":
            return None  # the socket carries ciphertext: no sendfile around the TLS layer
        return self._raw().get_extra_info(name, default)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._proto.app

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._proto.app = protocol  # type: ignore[assignment]

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._raw().set_write_buffer_limits(high, low)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        raw: Any = self._raw()
        limits: tuple[int, int] = raw.get_write_buffer_limits()
        return limits

    def can_write_eof(self) -> bool:
        return False


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or exc.__class__.__name__
    return str(exc) or exc.__class__.__name__

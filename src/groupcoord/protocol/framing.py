"""Length-prefixed framing: every Kafka message is a big-endian int32 size, then that many bytes.

:class:`FrameDecoder` is fed whatever the socket delivered and hands back complete frames.
It refuses a negative size and a size above the configured maximum
(``socket.request.max.bytes``) as soon as the 4-byte prefix is known, before buffering the
body, so an oversized frame never costs memory.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

_SIZE = struct.Struct(">i")
#: Frames up to this size are copied out of the buffer by slicing (see FrameDecoder.next_frame).
_SLICE_COPY_MAX = 8192


class FrameError(ValueError):
    """The byte stream cannot be split into frames; the connection must be closed."""


class MalformedRequestError(FrameError):
    """A frame whose header or body does not parse."""


class FrameTooLargeError(FrameError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds socket.request.max.bytes={limit}")
        self.size = size
        self.limit = limit


class FrameDecoder:
    """Incremental splitter of a byte stream into frames (without their size prefix).

    :attr:`prefixed` says, as a plain attribute kept by :meth:`feed` and :meth:`next_frame`,
    whether a size prefix is buffered beyond the frames already returned: while it is False,
    :meth:`next_frame` would return None, so a reader asks it only when it is True (the
    server's connection looks once per request, without a call).
    """

    __slots__ = ("_buf", "_max", "_pos", "prefixed")

    def __init__(self, max_frame_bytes: int) -> None:
        if max_frame_bytes <= 0:
            raise ValueError("max_frame_bytes must be positive")
        self._max = max_frame_bytes
        self._buf = bytearray()
        self._pos = 0
        #: At least 4 bytes (a size prefix) are buffered past the last frame returned.
        self.prefixed = False

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as part of a frame."""
        return len(self._buf) - self._pos

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        self._buf += data
        self.prefixed = len(self._buf) - self._pos >= 4

    def next_size(self) -> int:
        """The size of the next frame once its 4-byte prefix has arrived, else -1 (a bad prefix
        is reported by :meth:`next_frame`)."""
        if len(self._buf) - self._pos < 4:
            return -1
        return int(_SIZE.unpack_from(self._buf, self._pos)[0])

    def next_frame(self) -> bytes | None:
        """The next complete frame, or None until more bytes arrive.

        Raises :class:`FrameTooLargeError` or :class:`FrameError` for a bad size prefix;
        the decoder is unusable afterwards.
        """
        buf = self._buf
        pos = self._pos
        avail = len(buf) - pos
        if avail < 4:
            return None
        (size,) = _SIZE.unpack_from(buf, pos)
        if size < 0:
            raise FrameError(f"negative frame size {size}")
        if size > self._max:
            raise FrameTooLargeError(size, self._max)
        if avail < 4 + size:
            return None
        start = pos + 4
        if size <= _SLICE_COPY_MAX:
            # A small frame (a heartbeat, a commit): a bytearray slice and then bytes copies it
            # twice, but costs less than a memoryview's creation, slicing and release.
            frame = bytes(buf[start : start + size])
        else:
            with memoryview(buf) as view:  # one copy of a large frame, not two
                frame = bytes(view[start : start + size])
        pos = self._pos = start + size
        if pos > 65536 and pos * 2 > len(buf):
            del buf[:pos]
            pos = self._pos = 0
        self.prefixed = len(buf) - pos >= 4
        return frame

    def frames(self) -> Iterator[bytes]:
        """Every complete frame buffered so far."""
        while (frame := self.next_frame()) is not None:
            yield frame


def encode_frame(payload: bytes | bytearray | memoryview) -> bytes:
    return _SIZE.pack(len(payload)) + bytes(payload)

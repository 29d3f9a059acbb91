"""Sans-I/O Kafka wire protocol: framing, headers, and the API registry.

Nothing here touches sockets or the event loop: bytes go in, frames, headers and kio
entities come out, and the reverse.
"""

from groupcoord.protocol.framing import FrameDecoder, FrameError, FrameTooLargeError, encode_frame
from groupcoord.protocol.headers import (
    MalformedRequestError,
    RequestHeaderInfo,
    decode_request_header,
    encode_response_header,
    peek_request,
)
from groupcoord.protocol.registry import (
    ApiMessages,
    ApiRegistry,
    UnknownApiError,
    UnsupportedVersionError,
)

__all__ = [
    "ApiMessages",
    "ApiRegistry",
    "FrameDecoder",
    "FrameError",
    "FrameTooLargeError",
    "MalformedRequestError",
    "RequestHeaderInfo",
    "UnknownApiError",
    "UnsupportedVersionError",
    "decode_request_header",
    "encode_frame",
    "encode_response_header",
    "peek_request",
]

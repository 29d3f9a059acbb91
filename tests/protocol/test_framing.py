import struct

import pytest

from groupcoord.protocol.framing import FrameDecoder, FrameError, FrameTooLargeError, encode_frame


def test_frame_split_across_feeds_is_returned_once_complete() -> None:
    dec = FrameDecoder(1024)
    data = encode_frame(b"hello world")
    dec.feed(data[:2])
    assert dec.next_frame() is None
    dec.feed(data[2:7])
    assert dec.next_frame() is None
    dec.feed(data[7:])
    assert dec.next_frame() == b"hello world"
    assert dec.next_frame() is None
    assert dec.buffered == 0


def test_several_frames_in_one_feed_come_out_in_order() -> None:
    dec = FrameDecoder(1024)
    dec.feed(encode_frame(b"a") + encode_frame(b"") + encode_frame(b"ccc") + encode_frame(b"dd")[:3])
    assert list(dec.frames()) == [b"a", b"", b"ccc"]
    assert dec.buffered == 3


def test_byte_at_a_time_feeding_yields_identical_frames() -> None:
    payloads = [bytes([i]) * i for i in range(1, 40)]
    stream = b"".join(encode_frame(p) for p in payloads)
    dec = FrameDecoder(1024)
    out = []
    for i in range(len(stream)):
        dec.feed(stream[i : i + 1])
        out.extend(dec.frames())
    assert out == payloads


def test_frame_of_exactly_the_limit_is_accepted() -> None:
    dec = FrameDecoder(10)
    dec.feed(encode_frame(b"x" * 10))
    assert dec.next_frame() == b"x" * 10


def test_oversized_frame_is_refused_from_its_prefix_alone() -> None:
    dec = FrameDecoder(10)
    dec.feed(struct.pack(">i", 11))
    with pytest.raises(FrameTooLargeError) as info:
        dec.next_frame()
    assert info.value.size == 11
    assert info.value.limit == 10


def test_negative_size_is_a_frame_error() -> None:
    dec = FrameDecoder(10)
    dec.feed(struct.pack(">i", -1))
    with pytest.raises(FrameError, match="negative"):
        dec.next_frame()


def test_large_stream_compacts_buffer_and_keeps_frames_intact() -> None:
    dec = FrameDecoder(1 << 20)
    payloads = [bytes([i % 251]) * 5000 for i in range(100)]
    stream = b"".join(encode_frame(p) for p in payloads)
    out = []
    for i in range(0, len(stream), 7777):
        dec.feed(stream[i : i + 7777])
        out.extend(dec.frames())
    assert out == payloads


@pytest.mark.parametrize("size", [0, 1, 8191, 8192, 8193, 300_000])
def test_frames_either_side_of_the_slice_copy_size_come_out_whole_and_independent(size: int) -> None:
    """Small frames are copied by slicing, larger ones through a memoryview (framing.next_frame):
    both give bytes equal to what was sent, not a view of the decoder's buffer, which later
    feeds and compaction overwrite."""
    dec = FrameDecoder(1 << 20)
    payload = bytes(i % 253 for i in range(size))
    after = b"\xab" * 70_000  # enough behind it for the buffer to be compacted
    dec.feed(encode_frame(payload) + encode_frame(after))
    first = dec.next_frame()
    assert type(first) is bytes and first == payload
    assert dec.next_frame() == after
    dec.feed(encode_frame(b"\x00" * 10))
    assert dec.next_frame() == b"\x00" * 10
    assert first == payload


def test_prefixed_says_whether_a_size_prefix_is_buffered_past_the_frames_taken() -> None:
    """The server's connection asks for the next frame only while ``prefixed`` is True: it must
    be True as soon as 4 bytes wait (a whole frame or not, a bad prefix too) and False once
    the frames taken leave fewer than 4, through compaction as well."""
    dec = FrameDecoder(1 << 20)
    assert dec.prefixed is False
    data = encode_frame(b"abc")
    dec.feed(data[:3])
    assert dec.prefixed is False
    dec.feed(data[3:5])
    assert dec.prefixed is True
    assert dec.next_frame() is None  # a prefix, not yet the body
    assert dec.prefixed is True
    dec.feed(data[5:] + encode_frame(b"de")[:3])
    assert dec.next_frame() == b"abc"
    assert dec.prefixed is False  # 3 bytes of the next prefix
    dec.feed(encode_frame(b"de")[3:])
    assert dec.prefixed is True
    assert dec.next_frame() == b"de"
    assert dec.prefixed is False and dec.buffered == 0
    big = b"\x01" * 70_000  # taking it compacts the buffer
    dec.feed(encode_frame(big) + encode_frame(b"z"))
    assert dec.next_frame() == big
    assert dec.prefixed is True
    assert dec.next_frame() == b"z"
    assert dec.prefixed is False
    bad = FrameDecoder(10)
    bad.feed(struct.pack(">i", -1))
    assert bad.prefixed is True  # so the bad prefix reaches next_frame, which refuses it
    with pytest.raises(FrameError, match="negative"):
        bad.next_frame()

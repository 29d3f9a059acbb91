"""The API registry: (api_key, version) -> kio request/response classes and header versions.

Only what the broker registers is known here; :meth:`ApiRegistry.ranges` is therefore exactly
what ApiVersions advertises. Readers and writers are built once per (key, version).
"""

from __future__ import annotations

import importlib
import io
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.guard import check_request
from groupcoord.protocol.headers import MalformedRequestError, encode_response_header
from groupcoord.protocol.hot import hot_reader
from groupcoord.protocol.old_versions import OLD_VERSIONS

API_VERSIONS_KEY = ApiKey.API_VERSIONS
_SIZE = struct.Struct(">i")


class UnknownApiError(LookupError):
    def __init__(self, api_key: int) -> None:
        super().__init__(f"unknown or unregistered api key {api_key}")
        self.api_key = api_key


class UnsupportedVersionError(LookupError):
    def __init__(self, api_key: int, version: int, supported: tuple[int, int]) -> None:
        super().__init__(
            f"api key {api_key} version {version} is not supported (supported {supported[0]}-{supported[1]})"
        )
        self.api_key = api_key
        self.version = version
        self.supported = supported


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiMessages:
    """Everything needed to decode one request and encode its response at one version."""

    api_key: int
    version: int
    name: str
    request_type: type[Any]
    response_type: type[Any]
    request_header_version: int
    response_header_version: int
    reader: Any
    writer: Any
    #: a hand-written reader for this (key, version) (:mod:`groupcoord.protocol.hot`): the
    #: connection uses it instead of :meth:`decode_request`; it gives the coordinator's request
    #: (OffsetCommit) or a named tuple (the entity's field names and values, except JoinGroup's
    #: timeouts in milliseconds), not a kio entity
    hot_reader: Callable[[bytes, int], Any] | None = None

    def decode_request(self, frame: bytes, offset: int) -> Any:
        # Counts and lengths are verified first: kio's native reader allocates from them.
        check_request(frame, offset, self.request_type)
        try:
            entity, _ = self.reader(frame, offset)
        except Exception as exc:  # truncated or invalid body
            raise MalformedRequestError(f"bad {self.name} v{self.version} body: {exc!r}") from exc
        return entity

    def encode_response(self, correlation_id: int, response: Any) -> bytes:
        """The complete frame (size prefix, response header, body) for ``response``."""
        if type(response) is not self.response_type:
            raise TypeError(
                f"{self.name} v{self.version} handler returned {type(response).__qualname__} "
                f"from {type(response).__module__}, expected {self.response_type.__module__}"
            )
        buf = io.BytesIO()
        buf.write(b"\0\0\0\0")
        buf.write(encode_response_header(correlation_id, self.response_header_version))
        self.writer(buf, response)
        data = buf.getbuffer()
        _SIZE.pack_into(data, 0, len(data) - 4)
        del data
        return buf.getvalue()


def _load_class(name: str, version: int, entity_type: EntityType) -> type[Any]:
    path = schema_name_map[name][version][entity_type]  # type: ignore[index]
    module_name, _, attr = path.partition(":")
    cls: type[Any] = getattr(importlib.import_module(module_name), attr)
    return cls


def load_messages(api_key: int, version: int) -> ApiMessages:
    """Build the codec pair for one (key, version) from kio's schemas, or for a version kio
    no longer has, from :mod:`groupcoord.protocol.old_versions` (in kio's form)."""
    name = api_key_map[api_key]
    old = OLD_VERSIONS.get((api_key, version))
    if old is not None:
        req, resp = old
    else:
        req = _load_class(name, version, EntityType.request)
        resp = _load_class(name, version, EntityType.response)
    flexible = bool(req.__flexible__)
    return ApiMessages(
        api_key=api_key,
        version=version,
        name=name,
        request_type=req,
        response_type=resp,
        request_header_version=2 if flexible else 1,
        # ApiVersions answers always carry header v0 so that a client can read the answer
        # before it knows which versions the broker speaks.
        response_header_version=1 if flexible and api_key != API_VERSIONS_KEY else 0,
        reader=entity_reader(req),
        writer=entity_writer(resp),
        hot_reader=hot_reader(api_key, version, name),
    )


class ApiRegistry:
    """The (api_key -> version range) table of what this broker implements."""

    def __init__(self) -> None:
        self._ranges: dict[int, tuple[int, int]] = {}
        self._messages: dict[tuple[int, int], ApiMessages] = {}

    def register(self, api_key: int, min_version: int, max_version: int) -> None:
        if api_key in self._ranges:
            raise ValueError(f"api key {api_key} registered twice")
        if api_key not in api_key_map:
            raise ValueError(f"kio has no schema for api key {api_key}")
        if min_version > max_version:
            raise ValueError(f"empty version range {min_version}-{max_version} for api key {api_key}")
        versions = schema_name_map[api_key_map[api_key]]
        for version in range(min_version, max_version + 1):
            if version not in versions and (api_key, version) not in OLD_VERSIONS:
                raise KeyError(f"kio has no schema for api key {api_key} version {version}")
        self._ranges[api_key] = (min_version, max_version)

    def ranges(self) -> list[tuple[int, int, int]]:
        """``(api_key, min_version, max_version)`` of every registered API, by key."""
        return [(key, lo, hi) for key, (lo, hi) in sorted(self._ranges.items())]

    def supported(self, api_key: int) -> tuple[int, int] | None:
        return self._ranges.get(api_key)

    def lookup(self, api_key: int, version: int) -> ApiMessages:
        messages = self._messages.get((api_key, version))
        if messages is not None:
            return messages
        supported = self._ranges.get(api_key)
        if supported is None:
            raise UnknownApiError(api_key)
        if not supported[0] <= version <= supported[1]:
            raise UnsupportedVersionError(api_key, version, supported)
        # Codecs are built on first use: building all of them up front costs ~0.3 s of startup.
        messages = self._messages[(api_key, version)] = load_messages(api_key, version)
        return messages

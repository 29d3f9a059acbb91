"""The console's HTTP side without a browser: off by default, a bad ``console.listen`` stops
startup naming the key, an address in use is one line, the assets are package data, every page
carries a Content-Security-Policy that forbids inline scripts, the console is read-only, and a
live stream is server-sent events that carry a group's change."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from console_helpers import commit_simple

from groupcoord.app import BrokerApp, StartupError
from groupcoord.config import BrokerConfig
from groupcoord.errors import ConfigError
from groupcoord.protocol.client import WireClient
from groupcoord.testing import Broker

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker({"console.listen": "127.0.0.1:0"}) as b:
        b.create_topic("t", 1)
        yield b


def url(broker: Broker, path: str) -> str:
    base = broker.console_url
    assert base is not None
    return base + path.lstrip("/")


def test_the_console_is_off_by_default(tmp_path: Path) -> None:
    config = BrokerConfig.from_properties({})
    assert config.console_listener() is None
    app = BrokerApp(config=config, data_dir=tmp_path / "d")
    try:
        assert app.console is None
    finally:
        asyncio.run(app.close())


def test_a_bad_console_listen_stops_startup_naming_the_key() -> None:
    with pytest.raises(ConfigError) as error:
        BrokerConfig.from_properties({"console.listen": "localhost"})
    assert str(error.value) == ("bad value for console.listen: 'localhost' (HOST:PORT, e.g. 127.0.0.1:9405)")


def test_an_address_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = BrokerConfig.from_properties(
            {"listeners": "PLAINTEXT://127.0.0.1:0", "console.listen": f"127.0.0.1:{port}"}
        )

        async def start() -> None:
            app = BrokerApp(config=config, data_dir=tmp_path / "d")
            try:
                await app.start()
            finally:
                await app.close()

        with pytest.raises(StartupError) as error:
            asyncio.run(start())
    assert str(error.value) == f"cannot listen on console.listen=127.0.0.1:{port}: Address already in use"


def test_assets_ship_as_package_data_and_are_served(broker: Broker) -> None:
    for package, name, path, kind in (
        ("groupcoord.ui", "ui.css", "/static/ui.css", "text/css"),
        ("groupcoord.ui", "ui.js", "/static/ui.js", "text/javascript"),
        ("groupcoord.console", "static/console.js", "/static/console.js", "text/javascript"),
    ):
        shipped = resources.files(package).joinpath(name).read_text(encoding="utf-8")
        with urllib.request.urlopen(url(broker, path), timeout=30) as answer:
            assert answer.headers["Content-Type"].startswith(kind)
            assert answer.read().decode("utf-8") == shipped


def test_pages_forbid_inline_scripts(broker: Broker) -> None:
    with urllib.request.urlopen(url(broker, "/"), timeout=30) as answer:
        policy = answer.headers["Content-Security-Policy"]
        page = answer.read().decode("utf-8")
    assert "script-src 'self';" in policy and "unsafe-inline" not in policy.split("style-src")[0]
    assert "<script src='/static/ui.js'></script><script src='/static/console.js'></script>" in page
    assert page.count("<script") == 2


def test_the_console_is_read_only(broker: Broker) -> None:
    for method in ("POST", "PUT", "DELETE"):
        request = urllib.request.Request(url(broker, "/"), data=b"", method=method)
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(request, timeout=30)
        assert answer.value.code == 405


def test_a_group_stream_is_server_sent_events_of_its_page_parts(broker: Broker) -> None:
    commit_simple(broker.bootstrap, ["streamed"], "t", 0, 0)
    with urllib.request.urlopen(url(broker, "/events?group=streamed"), timeout=30) as stream:
        assert stream.headers["Content-Type"] == "text/event-stream; charset=utf-8"
        assert stream.readline() == b"retry: 2000\n" and stream.readline() == b"\n"
        assert stream.readline() == b"event: sections\n"
        data = stream.readline()
        assert data.startswith(b"data: ")
        sections = dict(json.loads(data[len(b"data: ") :])["sections"])
        assert list(sections) == ["title", "facts", "members", "partitions", "rebalances", "lag", "events"]
        assert ">Empty</span>" in sections["title"]
        assert "<td data-v='0' class='num'>0</td>" in sections["partitions"]  # committed 0
        # a commit moves nothing in the group's state; a deletion does: the page gets "gone"
        commit_simple(broker.bootstrap, ["streamed"], "t", 0, 0)
        host, port = broker.bootstrap.rsplit(":", 1)
        with WireClient(host, int(port)) as wire:
            answer = wire.call(42, 2, groups_names=["streamed"])
            assert [int(r.error_code) for r in answer.results] == [0]
        while True:
            line = stream.readline()
            if line.startswith(b"data: ") and b"No such group any more" in line:
                break


def test_an_overview_from_before_a_restart_is_sent_every_row(broker: Broker) -> None:
    """A page served by an earlier run of the broker names another hub in its token: its stream
    is sent every group's row at the next sample (its number, past any this run reached, would
    have it sent nothing)."""
    commit_simple(broker.bootstrap, ["resync-a", "resync-b"], "t", 0, 0)
    with urllib.request.urlopen(url(broker, "/events?since=0a1b2c3d.1000000000"), timeout=60) as stream:
        while True:
            line = stream.readline()
            assert line, "the stream ended"
            if line.startswith(b"data: ") and b'"rows"' in line:
                ids = {row["id"] for row in json.loads(line[len(b"data: ") :])["rows"]}
                break
    assert {"row-g-resync-a", "row-g-resync-b"} <= ids

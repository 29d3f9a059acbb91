"""Each node's own ``listeners``, ``advertised.listeners`` and ``broker.rack`` with
``groupcoord serve --brokers N`` (``node.<id>.<key>``; docs/cluster.md, "Running it").

In Kafka each broker has its own ``server.properties``; what a client learns of the brokers is
what each one's ``advertised.listeners`` (defaulting to its ``listeners``) and ``broker.rack``
say (``KafkaConfig.effectiveAdvertisedBrokerListeners``; Metadata and DescribeCluster report
them, ``KafkaApis.handleDescribeCluster``). A bad per-node key stops startup naming it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from groupcoord.cli import main
from groupcoord.testing import Cluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _brokers_seen(bootstrap: str) -> dict[int, tuple[str, int, str | None]]:
    """node id -> (host, port, rack) as confluent-kafka's DescribeCluster reports them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_cluster(request_timeout=20).result(timeout=30)
    return {int(n.id): (n.host, int(n.port), n.rack) for n in described.nodes}


def test_a_node_listens_and_is_announced_where_its_own_keys_say() -> None:
    """Node 1 listens on its own ``node.1.listeners`` port (not the base port + 1), node 2 is
    announced at its ``node.2.advertised.listeners`` host with its bound port (port 0), and
    ``node.1.broker.rack`` wins over the cluster-wide ``broker.rack``; a client bootstrapped on
    node 1's own port alone sees the whole cluster."""
    port1 = _free_port()
    settings = {
        "broker.rack": "rack-a",
        "node.1.listeners": f"PLAINTEXT://127.0.0.1:{port1}",
        "node.1.broker.rack": "rack-b",
        "node.2.advertised.listeners": "PLAINTEXT://localhost:0",
    }
    with Cluster(settings, brokers=3) as cluster:
        assert cluster.ports[1] == port1
        seen = _brokers_seen(f"127.0.0.1:{port1}")
        assert seen == {
            0: ("127.0.0.1", cluster.ports[0], "rack-a"),
            1: ("127.0.0.1", port1, "rack-b"),
            2: ("localhost", cluster.ports[2], "rack-a"),
        }


def test_serve_reads_the_node_keys_of_its_config_file(tmp_path: Path) -> None:
    """``groupcoord serve --brokers 3 --config FILE``: the properties file holds every node's own
    listener, as a Kafka user's per-broker files would; Metadata names each node at its port."""
    ports = [_free_port() for _ in range(2)]
    props = tmp_path / "cluster.properties"
    props.write_text(
        "listeners=PLAINTEXT://127.0.0.1:0\n"
        f"node.1.listeners=PLAINTEXT://127.0.0.1:{ports[0]}\n"
        f"node.2.listeners=PLAINTEXT://127.0.0.1:{ports[1]}\n"
        "node.2.broker.rack=rack-2\n"
    )
    argv = [sys.executable, "-m", "groupcoord", "serve", "--brokers", "3", "--config", str(props)]
    argv += ["--data-dir", str(tmp_path / "data"), "--log-level", "warning"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline() if proc.stdout else ""))
        reader.start()
        reader.join(60)
        assert line and line[0].startswith("groupcoord listening on "), line
        port0 = int(line[0].strip().rsplit(":", 1)[1])
        seen = _brokers_seen(f"127.0.0.1:{ports[1]}")
        assert seen == {
            0: ("127.0.0.1", port0, None),
            1: ("127.0.0.1", ports[0], None),
            2: ("127.0.0.1", ports[1], "rack-2"),
        }
    finally:
        proc.terminate()
        assert proc.wait(30) == 0


@pytest.mark.parametrize(
    ("brokers", "settings", "named"),
    [
        (3, ["node.1.listenrs=PLAINTEXT://127.0.0.1:0"], "'node.1.listenrs'"),
        (3, ["node.1.log.dirs=/tmp/x"], "'node.1.log.dirs'"),
        (3, ["node.3.listeners=PLAINTEXT://127.0.0.1:0"], "node.3.listeners is set but there is no node 3"),
        (1, ["node.0.broker.rack=a"], "node.0.broker.rack is set but this process serves one broker"),
        (
            3,
            [
                "listeners=PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
                "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
                "node.2.listeners=PLAINTEXT://127.0.0.1:0",
            ],
            "bad value for node.2.listeners",
        ),
        (3, ["node.1.advertised.listeners=OTHER://h:1"], "bad value for node.1.advertised.listeners"),
        (3, ["node.1.broker.rack= "], "bad value for node.1.broker.rack"),
    ],
)
def test_a_bad_node_key_stops_startup_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, brokers: int, settings: list[str], named: str
) -> None:
    argv = ["serve", "--brokers", str(brokers), "--data-dir", str(tmp_path / "data")]
    if not any(item.startswith("listeners=") for item in settings):
        argv += ["--set", "listeners=PLAINTEXT://127.0.0.1:0"]  # not --listen: it would win over these
    for item in settings:
        argv += ["--set", item]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert named in err
    assert "Traceback" not in err
    assert not (tmp_path / "data").exists()  # stopped before the data dir was touched

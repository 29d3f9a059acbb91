"""``console.auth=basic``: the console asks for one of the broker's own users (HTTP Basic,
RFC 7617) over real HTTP (urllib) and in headless Chromium.

The users are those a Kafka client could log in as (``docs/operations.md``): here ``sam`` has
SCRAM-SHA-256/512 credentials in the data dir only and ``paula`` is a PLAIN user of the listener's
JAAS line only, so each is let in by one mechanism alone. A SCRAM password is checked as Kafka's
``ScramSaslServer`` checks a client's proof: ``ScramFormatter.saltedPassword`` (Hi over the
password's UTF-8 bytes, no SASLprep), then H(HMAC(SaltedPassword, "Client Key")) against the
StoredKey kept. Kafka has no console; the choice of DESCRIBE on the cluster under the authorizer
is groupcoord's (``docs/operations.md`` says why).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from chromium_cdp import Chromium
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from groupcoord.app import BrokerApp, StartupError
from groupcoord.config import BrokerConfig
from groupcoord.console.auth import parse_basic
from groupcoord.errors import ConfigError
from groupcoord.testing import Broker

pytestmark = pytest.mark.timeout(180)

SAM_PASSWORD = "sam-scram-secret"
PAULA_PASSWORD = "paula-plain-secret"
JAAS = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_paula="{PAULA_PASSWORD}";'


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(
        {
            "console.listen": "127.0.0.1:0",
            "console.auth": "basic",
            # PLAIN's users: paula alone (sam's SCRAM credentials are salted into the data dir)
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        },
        security_protocol="SASL_PLAINTEXT",
        users={"sam": SAM_PASSWORD},
    ) as b:
        yield b


def url(broker: Broker, path: str) -> str:
    base = broker.console_url
    assert base is not None
    return base + path.lstrip("/")


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def get(
    broker: Broker, path: str, authorization: str | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, the first bytes of the body) of one request."""
    request = urllib.request.Request(url(broker, path), method=method)
    if authorization is not None:
        request.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read(64) if path != "/events" else b""
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), error.read()


def test_without_credentials_every_path_is_401_with_a_basic_challenge(broker: Broker) -> None:
    for path in ("/", "/groups/g", "/events", "/events?group=g", "/static/console.js", "/favicon.ico"):
        status, headers, _ = get(broker, path)
        assert status == 401, path
        assert headers["WWW-Authenticate"] == 'Basic realm="groupcoord console", charset="UTF-8"', path
    assert get(broker, "/", method="POST")[0] == 401  # asked for a user before it is told read-only


def test_a_scram_user_and_a_plain_user_are_let_in(broker: Broker) -> None:
    status, headers, body = get(broker, "/", basic("sam", SAM_PASSWORD))
    assert (status, body[:15]) == (200, b"<!DOCTYPE html>")
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    status, _, body = get(broker, "/", basic("paula", PAULA_PASSWORD))
    assert (status, body[:15]) == (200, b"<!DOCTYPE html>")
    assert get(broker, "/static/ui.css", basic("paula", PAULA_PASSWORD))[0] == 200
    assert get(broker, "/", basic("paula", PAULA_PASSWORD), method="POST")[0] == 405


def test_a_wrong_password_is_401_and_one_log_line_without_it(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="groupcoord.console.server")
    for user, password in (
        ("sam", "not-" + SAM_PASSWORD),
        ("paula", "not-" + PAULA_PASSWORD),
        ("sam", PAULA_PASSWORD),  # each is a user by its own mechanism only
        ("paula", SAM_PASSWORD),
        ("nobody", SAM_PASSWORD),
        ("sam", ""),
    ):
        status, headers, _ = get(broker, "/", basic(user, password))
        assert status == 401, (user, password)
        assert headers["WWW-Authenticate"].startswith("Basic realm=")
    for malformed in ("Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode(), "Bearer x"):
        assert get(broker, "/", malformed)[0] == 401
    lines = [r.getMessage() for r in caplog.records if r.name == "groupcoord.console.server"]
    refused = [line for line in lines if line.startswith("console: refused user")]
    assert [line.split("'")[1] for line in refused] == ["sam", "paula", "sam", "paula", "nobody", "sam"]
    assert refused[0] == "console: refused user 'sam' from 127.0.0.1: unknown user or wrong password"
    assert len(lines) == 6 + 3  # one line each: the six refusals and the three malformed headers
    assert not any(SAM_PASSWORD in line or PAULA_PASSWORD in line for line in lines)


def test_the_event_stream_asks_for_the_same_user(broker: Broker) -> None:
    assert get(broker, "/events?group=g")[0] == 401
    assert get(broker, "/events?group=g", basic("sam", "wrong"))[0] == 401
    request = urllib.request.Request(url(broker, "/events?group=g"))
    request.add_header("Authorization", basic("paula", PAULA_PASSWORD))
    with urllib.request.urlopen(request, timeout=30) as stream:
        assert stream.status == 200
        assert stream.headers["Content-Type"] == "text/event-stream; charset=utf-8"
        assert stream.readline() == b"retry: 2000\n"


def test_a_scram_user_added_at_run_time_is_let_in_at_once(broker: Broker) -> None:
    """AlterUserScramCredentials (KIP-554) from confluent-kafka's admin client, logged in as sam:
    the console reads the credential store at each request."""
    assert get(broker, "/", basic("rita", "rita-secret"))[0] == 401
    admin = AdminClient(broker.client_config("sam", mechanism="SCRAM-SHA-512", password=SAM_PASSWORD))
    upsert = UserScramCredentialUpsertion(
        "rita", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"rita-secret"
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    assert get(broker, "/", basic("rita", "rita-secret"))[0] == 200
    assert get(broker, "/", basic("rita", "rita-wrong"))[0] == 401


def test_a_non_ascii_password_is_checked_as_kafka_clients_salt_it(tmp_path: Path) -> None:
    """UTF-8 bytes, no SASLprep normalisation (Kafka's ``ScramFormatter.normalize``): "ﬁ" (U+FB01)
    is not read as "fi"."""
    with Broker(
        {
            "console.listen": "127.0.0.1:0",
            "console.auth": "basic",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        },
        security_protocol="SASL_PLAINTEXT",
        users={"ümit": "\ufb01ve"},
        data_dir=tmp_path / "d",
    ) as b:
        assert get(b, "/", basic("ümit", "\ufb01ve"))[0] == 200
        assert get(b, "/", basic("ümit", "five"))[0] == 401


def test_under_the_authorizer_a_console_user_needs_describe_on_the_cluster(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="groupcoord.console.server")
    with Broker(
        {"console.listen": "127.0.0.1:0", "console.auth": "basic"},
        security_protocol="SASL_PLAINTEXT",
        users={"admin": "admin-secret", "alice": "alice-secret"},
        acls=True,
        super_users=["User:admin"],
        data_dir=tmp_path / "d",
    ) as b:
        assert get(b, "/", basic("admin", "admin-secret"))[0] == 200  # a super user
        status, _, body = get(b, "/", basic("alice", "alice-secret"))
        assert (status, body) == (
            403,
            b"This user may not DESCRIBE the cluster, which the console needs (docs/operations.md).",
        )
        assert get(b, "/events", basic("alice", "alice-secret"))[0] == 403
        assert "console: refused user 'alice' from 127.0.0.1: no DESCRIBE on the cluster" in caplog.messages
        b.add_acl("User:alice", "DESCRIBE", "CLUSTER", "kafka-cluster")
        assert get(b, "/", basic("alice", "alice-secret"))[0] == 200
        assert get(b, "/", basic("alice", "wrong"))[0] == 401  # the password first


def test_a_bad_console_auth_stops_startup_naming_the_key() -> None:
    with pytest.raises(ConfigError) as error:
        BrokerConfig.from_properties({"console.auth": "digest"})
    assert str(error.value) == "bad value for console.auth: 'digest' (one of none, basic)"
    assert BrokerConfig.from_properties({}).console_auth == "none"


def test_basic_without_a_sasl_listener_stops_startup_naming_the_key(tmp_path: Path) -> None:
    config = BrokerConfig.from_properties(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "console.listen": "127.0.0.1:0",
            "console.auth": "basic",
        }
    )
    with pytest.raises(StartupError) as error:
        BrokerApp(config=config, data_dir=tmp_path / "d")
    assert str(error.value).startswith("bad value for console.auth: 'basic' (no listener has SASL")
    assert not (tmp_path / "d").exists()  # refused before the data dir is touched


def test_without_console_auth_no_user_is_asked_for(tmp_path: Path) -> None:
    config = BrokerConfig.from_properties(
        {"listeners": "PLAINTEXT://127.0.0.1:0", "console.listen": "127.0.0.1:0"}
    )
    app = BrokerApp(config=config, data_dir=tmp_path / "d")
    try:
        assert app.console is not None and app.console.auth is None
    finally:
        asyncio.run(app.close())


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("Basic " + base64.b64encode(b"a:b:c").decode(), ("a", "b:c")),  # RFC 7617: the first colon
        ("basic " + base64.b64encode("ü:p".encode()).decode(), ("ü", "p")),
        ("Basic " + base64.b64encode(b":p").decode(), None),
        ("Basic " + base64.b64encode(b"\xff:p").decode(), None),
        ("Digest x", None),
    ],
)
def test_basic_credentials_are_read_as_rfc_7617_says(
    header: str | None, expected: tuple[str, str] | None
) -> None:
    assert parse_basic(header) == expected


def test_in_chromium_the_console_goes_live_only_with_a_user(broker: Broker) -> None:
    """Headless Chromium (``chromium_cdp.py``): without credentials the page is a 401;
    with them (sent on every request of the tab, the event stream's included) the overview
    loads and its stream connects."""
    with Chromium() as browser:
        page = browser.page()
        browser.send("Network.enable", session=page.session)
        mark = len(browser.events)
        page.goto(url(broker, "/"))
        statuses = [
            params["response"]["status"]
            for sid, method, params in browser.events[mark:]
            if sid == page.session and method == "Network.responseReceived"
        ]
        assert statuses == [401]  # the page only: no script, no stream asked for
        assert page.eval("document.getElementById('status')") is None
        refused = page.problems()  # the browser logs the 401
        browser.send(
            "Network.setExtraHTTPHeaders",
            {"headers": {"Authorization": basic("paula", PAULA_PASSWORD)}},
            session=page.session,
        )
        page.goto(url(broker, "/"))
        page.wait_for("document.getElementById('status').textContent==='live'")
        assert page.eval("document.querySelectorAll('table').length") >= 1
        assert page.problems() == refused  # nothing refused, no script error since
        page.close()


def test_the_users_are_those_of_every_sasl_listener_by_its_mechanisms(tmp_path: Path) -> None:
    """Two SASL listeners: PLAIN's users of both JAAS lines (one name with a password on each),
    and SCRAM for the mechanism one of them enables (SCRAM-SHA-256), not another."""
    jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required "
    config = BrokerConfig.from_properties(
        {
            "listeners": "A://127.0.0.1:0,B://127.0.0.1:0",
            "listener.security.protocol.map": "A:SASL_PLAINTEXT,B:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.b.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.a.plain.sasl.jaas.config": jaas + 'user_ann="ann-a" user_bo="bo-a";',
            "listener.name.b.plain.sasl.jaas.config": jaas + 'user_ann="ann-b";',
            "console.listen": "127.0.0.1:0",
            "console.auth": "basic",
        }
    )
    app = BrokerApp(config=config, data_dir=tmp_path / "d")
    try:
        assert app.console is not None and app.console.auth is not None
        auth = app.console.auth
        assert dict(auth.plain_users) == {"ann": ("ann-a", "ann-b"), "bo": ("bo-a",)}
        assert auth.scram_mechanisms == ("SCRAM-SHA-256",)
        assert auth.check("ann", "ann-a") and auth.check("ann", "ann-b") and auth.check("bo", "bo-a")
        assert not auth.check("bo", "ann-a") and not auth.check("ann", "bo-a")
        app.broker.scram.set_password("s256", "SCRAM-SHA-256", "pw-256")
        app.broker.scram.set_password("s512", "SCRAM-SHA-512", "pw-512")
        assert auth.check("s256", "pw-256") and not auth.check("s256", "pw-512")
        assert not auth.check("s512", "pw-512")  # no listener serves SCRAM-SHA-512
    finally:
        asyncio.run(app.close())

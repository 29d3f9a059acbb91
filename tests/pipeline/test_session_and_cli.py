"""Java detection, time parsing and the CLI's argument handling (no Spark started)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from groupcoord.pipeline import session
from groupcoord.pipeline.cli import main, parse_time_ms, register


def _no_java(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setattr(session, "_JVM_ROOT", tmp_path / "no-jvms")


def test_missing_java_gives_a_clear_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _no_java(monkeypatch, tmp_path)
    with pytest.raises(session.JavaNotFoundError) as info:
        session.find_java()
    text = str(info.value)
    assert "Java 17" in text
    assert f"{tmp_path / 'nowhere'} (no bin/java)" in text
    assert "JAVA_HOME" in text


def test_too_old_java_is_skipped_for_a_newer_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def fake_jdk(name: str, version: str) -> Path:
        home = tmp_path / "jvm" / name
        (home / "bin").mkdir(parents=True)
        java = home / "bin" / "java"
        java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2024-01-16' >&2\n")
        java.chmod(0o755)
        return home

    old = fake_jdk("java-11-openjdk", "11.0.22")
    new = fake_jdk("java-17-openjdk", "17.0.15")
    monkeypatch.setenv("JAVA_HOME", str(old))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setattr(session, "_JVM_ROOT", tmp_path / "jvm")
    found = session.find_java()
    assert (found.home, found.version) == (new, 17)


def test_analyze_exits_3_with_the_message_when_java_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_java(monkeypatch, tmp_path)
    (tmp_path / "data").mkdir()
    status = main(["analyze", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "out")])
    assert status == 3
    assert "groupcoord analyze: Spark 4 needs a Java 17 (or newer) runtime" in capsys.readouterr().err


def test_analyze_refuses_a_missing_data_dir_and_an_empty_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", "--data-dir", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err
    args = ["analyze", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o"), "--since", "2026-01-02"]
    assert main([*args, "--until", "2026-01-01"]) == 2
    assert "--since must be before --until" in capsys.readouterr().err


def test_times_are_iso_8601_or_epoch_milliseconds() -> None:
    assert parse_time_ms("1767225600000") == 1_767_225_600_000
    assert parse_time_ms("2026-01-01") == 1_767_225_600_000
    assert parse_time_ms("2026-01-01T00:00:01Z") == 1_767_225_601_000
    assert parse_time_ms("2026-01-01T02:00:00+02:00") == 1_767_225_600_000
    with pytest.raises(argparse.ArgumentTypeError):
        parse_time_ms("yesterday")


def test_register_adds_analyze_and_simulate_to_a_parent_parser() -> None:
    parser = argparse.ArgumentParser(prog="groupcoord")
    register(parser.add_subparsers(dest="command", required=True))
    a = parser.parse_args(["analyze", "--data-dir", "d", "--out", "o", "--master", "spark://127.0.0.1:7077"])
    assert (a.command, a.master, a.remote, a.intervals, a.storm_count, a.storm_minutes) == (
        "analyze",
        "spark://127.0.0.1:7077",
        None,
        10,
        3,
        10.0,
    )
    s = parser.parse_args(
        [
            "simulate",
            "--out",
            "d",
            "--groups",
            "2",
            "--members",
            "5",
            "--minutes",
            "3",
            "--seed",
            "9",
            "--assignor",
            "cooperative-sticky",
        ]
    )
    assert (s.command, s.groups, s.members, s.minutes, s.seed, s.assignor) == (
        "simulate",
        2,
        5,
        3.0,
        9,
        "cooperative-sticky",
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["analyze", "--data-dir", "d", "--out", "o", "--master", "x", "--remote", "sc://h"])


def test_simulate_command_writes_a_data_dir_and_ground_truth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sim"
    args = [
        "simulate",
        "--out",
        str(out),
        "--groups",
        "1",
        "--members",
        "2",
        "--minutes",
        "1",
        "--seed",
        "4",
        "--partitions",
        "2",
        "--offsets-partitions",
        "3",
    ]
    assert main(args) == 0
    assert "rebalances injected" in capsys.readouterr().out
    assert (out / "ground_truth.json").exists()
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
        "__consumer_offsets-0",
        "__consumer_offsets-1",
        "__consumer_offsets-2",
        "__group_events-0",
        "topic-0-0",
        "topic-0-1",
    ]
    # a second run into the same directory replaces the previous simulation
    assert main(args) == 0
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "precious.txt").write_text("keep")
    with pytest.raises(FileExistsError):
        main(["simulate", "--out", str(tmp_path / "other"), "--minutes", "1"])

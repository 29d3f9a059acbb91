"""The simulator's configuration and its ground truth (``ground_truth.json``): what
``groupcoord simulate`` was asked to do, and what it knows happened, for the tests and the
pipeline to check against. The simulation itself is :mod:`groupcoord.pipeline.simulate`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from groupcoord.pipeline.simledger import EpisodeCost

GROUND_TRUTH = "ground_truth.json"
#: Virtual time starts here (2026-01-01T00:00:00Z), so the data looks like a real broker's.
EPOCH_MS = 1_767_225_600_000
ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")
#: ``classic``: every group classic; ``consumer``: every group a KIP-848 consumer group; ``mixed``:
#: each group twice, ``group-N-classic`` and ``group-N-consumer``, on twin topics with the same
#: disruption plan (the same kinds, members and gaps), side by side in one data directory.
PROTOCOLS = ("classic", "consumer", "mixed")


@dataclass(frozen=True, kw_only=True, slots=True)
class SimulationConfig:
    groups: int = 3
    members: int = 4
    minutes: float = 30.0
    seed: int = 1
    partitions: int = 6
    offsets_partitions: int = 50
    produce_rate: float = 50.0  # records/s per partition
    consume_rate: float = 150.0  # records/s per partition a healthy consumer can process
    commit_interval_ms: int = 5_000
    heartbeat_interval_ms: int = 3_000
    session_timeout_ms: int = 10_000
    max_poll_interval_ms: int = 30_000
    static_every: int = 3  # every 3rd member is static (group.instance.id)
    min_gap_ms: int = 20_000
    max_gap_ms: int = 60_000
    assignor: str = "range"  # partition.assignment.strategy of every consumer: one of ASSIGNORS
    protocol: str = "classic"  # group.protocol of the groups: one of PROTOCOLS
    remote_assignor: str = "uniform"  # group.remote.assignor of consumer-protocol members

    def __post_init__(self) -> None:
        if self.assignor not in ASSIGNORS:
            raise ValueError(f"assignor must be one of {', '.join(ASSIGNORS)}, not {self.assignor!r}")
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, not {self.protocol!r}")
        if self.remote_assignor not in ("uniform", "range"):
            raise ValueError(f"remote_assignor must be uniform or range, not {self.remote_assignor!r}")


@dataclass(frozen=True, kw_only=True, slots=True)
class TruthRebalance:
    group_id: str
    disruption: str
    cause: str
    member: str
    earliest_start_ms: int
    latest_start_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class TruthQuiet:
    """An injected event that must NOT start a rebalance between its two times."""

    group_id: str
    disruption: str
    member: str
    from_ms: int
    to_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class GroundTruth:
    path: Path
    rebalances: tuple[TruthRebalance, ...]
    quiet: tuple[TruthQuiet, ...]
    commits: int
    produced: int
    end_ms: int
    #: what each injected disruption cost, measured from the member cores (``simledger``)
    episodes: tuple[EpisodeCost, ...] = ()
    #: group id -> its protocol (``classic`` or ``consumer``)
    protocols: tuple[tuple[str, str], ...] = ()
    #: (group id, target assignment epoch, partitions moved): a consumer group's partitions whose
    #: target owner (static instance id, else member id) differs from the previous epoch's, read
    #: from the coordinator core's memory as each epoch is computed
    target_moves: tuple[tuple[str, int, int], ...] = ()

    @staticmethod
    def load(path: Path) -> GroundTruth:
        obj = json.loads(path.read_text())
        return GroundTruth(
            path=path,
            rebalances=tuple(TruthRebalance(**r) for r in obj["rebalances"]),
            quiet=tuple(TruthQuiet(**q) for q in obj["quiet"]),
            commits=int(obj["commits"]),
            produced=int(obj["produced"]),
            end_ms=int(obj["end_ms"]),
            episodes=tuple(EpisodeCost(**e) for e in obj.get("episodes", ())),
            protocols=tuple(sorted(obj.get("protocols", {}).items())),
            target_moves=tuple((str(g), int(e), int(n)) for g, e, n in obj.get("target_moves", ())),
        )

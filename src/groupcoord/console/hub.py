"""The console's live side, on the broker's loop: group events in, updates out to open pages.

Each open page is a :class:`Subscriber` (an overview, or one group's page) with a bounded queue
its HTTP thread reads and renders. The hub feeds them from two sources:

* **Group events** (``GroupRuntime.event_listeners``): the group is marked changed and, at most
  :data:`PUMP_DELAY_S` later, each overview gets that group's row and each page of that group
  its parts again. That is what brings a rebalance onto an open page within a second. A pump
  reads at most :data:`PUMP_MAX` groups; more wait for the next one.
* **Lag sampling**, only while a page is open: every :data:`GROUP_SAMPLE_S` each open group's
  page (one group: its members and partitions), every :data:`OVERVIEW_SAMPLE_S` (or less often:
  :data:`OVERVIEW_DUTY`) every group's lag for the overviews (chunked, :meth:`Reader.summaries`),
  sending at most :data:`ROWS_PER_SAMPLE` rows that changed.

A page rendered from a snapshot subscribes right after, naming the event sequence number the
snapshot was taken at (``since``); the groups changed in between are sent to it at once. When
its queue is full (a reader that stopped reading), an overview is sent every row at the next
sample instead, and a group page simply gets the next update.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import secrets
from collections import deque
from typing import Any

from groupcoord.console.history import GroupHistory
from groupcoord.console.snapshot import Reader
from groupcoord.console.views import GroupDetail, GroupSummary, Overview, TopicView
from groupcoord.coordinator.events import GroupEvent

log = logging.getLogger(__name__)

#: delay from a group event to the pages' update (events meanwhile are sent together)
PUMP_DELAY_S = 0.05
#: groups read per pump at most
PUMP_MAX = 1000
#: sampling periods while pages are open
GROUP_SAMPLE_S = 1.0
OVERVIEW_SAMPLE_S = 10.0
#: the overview's sampling takes at most this share of the loop's time: with many groups it
#: samples less often than OVERVIEW_SAMPLE_S (a walk of 10,000 groups: ~0.1 s)
OVERVIEW_DUTY = 0.01
#: rows an overview sample sends at most (rendering 10,000 rows takes ~0.4 s of CPU): rows
#: whose state, members, lag in records or last rebalance changed first, then at most
#: TIME_LAG_ROWS whose time lag alone moved, in turn; the others wait for a later sample
ROWS_PER_SAMPLE = 1000
TIME_LAG_ROWS = 250
#: updates a page's queue holds
QUEUE_MAX = 256
#: changed groups remembered for pages that subscribe after their snapshot
RECENT_MAX = 10_000

#: what a subscriber's queue carries: (kind, payload)
#:   ("rows", (summaries, removed group ids, now_ms)), ("cards", (summaries, topics)),
#:   ("group", (group id, GroupDetail | None)), ("close", None)
Message = tuple[str, Any]


class Subscriber:
    """One open page: ``group_id`` None for an overview."""

    def __init__(self, group_id: str | None) -> None:
        self.group_id = group_id
        self.queue: queue.Queue[Message] = queue.Queue(maxsize=QUEUE_MAX)
        #: an overview that missed updates: send it every row at the next sample
        self.resync = False

    def put(self, message: Message) -> None:
        try:
            self.queue.put_nowait(message)
        except queue.Full:
            self.resync = True


class Hub:
    def __init__(self, reader: Reader, history: GroupHistory) -> None:
        self.reader = reader
        self.history = history
        self._subs: set[Subscriber] = set()
        self._dirty: dict[str, None] = {}  # ordered set
        self._pump: asyncio.TimerHandle | None = None
        self._sampler: asyncio.Task[None] | None = None
        #: this hub's id (a new one after a restart), and its event sequence number, and the
        #: groups changed at the last RECENT_MAX numbers
        self.instance = secrets.token_hex(4)
        self.seq = 0
        self._recent: deque[tuple[int, str]] = deque(maxlen=RECENT_MAX)
        #: each group's row as last sent to the overviews (or shown on a page)
        self._rows: dict[str, GroupSummary] = {}
        self._rotate = 0
        self._closed = False

    # ------------------------------------------------------------------ events (on the loop)
    def on_event(self, event: GroupEvent) -> None:
        """A group event, as the coordinator makes it (inside its call: nothing here may raise)."""
        try:
            self._on_event(event)
        except Exception:
            log.exception("console: group event %s of %r not recorded", event.type, event.group_id)

    def _on_event(self, event: GroupEvent) -> None:
        self.history.on_event(event)
        if event.to_state == "Dead":
            self.reader.lags.forget(event.group_id)
        self.seq += 1
        self._recent.append((self.seq, event.group_id))
        if self._subs:
            self._dirty[event.group_id] = None
            self._schedule()

    def _schedule(self) -> None:
        if self._pump is None and not self._closed:
            self._pump = asyncio.get_running_loop().call_later(PUMP_DELAY_S, self._run_pump)

    def _run_pump(self) -> None:
        self._pump = None
        take = list(self._dirty)[:PUMP_MAX]
        for gid in take:
            del self._dirty[gid]
        if self._dirty:
            self._schedule()
        self._send(take, [s for s in self._subs if s.group_id is None])
        taken = set(take)
        pages = [s for s in self._subs if s.group_id is not None and s.group_id in taken]
        details: dict[str, GroupDetail | None] = {}
        for sub in pages:
            page = sub.group_id
            assert page is not None
            if page not in details:
                details[page] = self.reader.group_detail(page)
            sub.put(("group", (page, details[page])))

    def _send(self, group_ids: list[str], overviews: list[Subscriber]) -> None:
        """The rows of ``group_ids`` (or their removal) to ``overviews``."""
        if not overviews or not group_ids:
            return
        rows: list[GroupSummary] = []
        removed: list[str] = []
        for gid in group_ids:
            summary = self.reader.group_summary(gid)
            if summary is None:
                removed.append(gid)
            else:
                rows.append(summary)
        message = ("rows", (tuple(rows), tuple(removed), self.reader.now_ms()))
        for sub in overviews:
            sub.put(message)

    # ------------------------------------------------------------------ pages (on the loop)
    async def overview(self) -> tuple[Overview, str]:
        """A snapshot for a new overview page, and the token of the point it is current at
        (``<this hub's id>.<event sequence number>``: a page the broker served before a restart
        names another hub and is sent every row)."""
        ov = await self.reader.overview()
        for g in ov.groups:
            self._rows.setdefault(g.group_id, g)
        return ov, f"{self.instance}.{self.seq}"

    def group(self, group_id: str) -> GroupDetail | None:
        return self.reader.group_detail(group_id, sample=True)

    def subscribe(self, sub: Subscriber, token: str) -> None:
        """A page opened its stream: it gets what changed since its snapshot (``token``, from
        :meth:`overview`), or, for a group page, its parts at once."""
        self._subs.add(sub)
        instance, _, number = token.partition(".")
        since = int(number) if instance == self.instance and number.isdigit() else None
        if sub.group_id is not None:
            sub.put(("group", (sub.group_id, self.reader.group_detail(sub.group_id, sample=True))))
        elif since is None:
            sub.resync = True  # a snapshot of another hub (a restart) or none: every row, next sample
        else:
            if self._recent and self._recent[0][0] > since + 1 and self.seq > since:
                sub.resync = True  # the changes since its snapshot are no longer all known
            else:
                changed = list(dict.fromkeys(gid for seq, gid in self._recent if seq > since))
                self._send(changed, [sub])
        if self._sampler is None and not self._closed:
            self._sampler = asyncio.get_running_loop().create_task(self._sample())

    def unsubscribe(self, sub: Subscriber) -> None:
        self._subs.discard(sub)

    # ------------------------------------------------------------------ lag sampling
    async def _sample(self) -> None:
        """While pages are open: their groups every GROUP_SAMPLE_S, every group for the
        overviews every OVERVIEW_SAMPLE_S."""
        loop = asyncio.get_running_loop()
        next_overview = loop.time()
        try:
            while self._subs and not self._closed:
                await asyncio.sleep(GROUP_SAMPLE_S)
                pages: dict[str, list[Subscriber]] = {}
                for sub in list(self._subs):
                    if sub.group_id is not None:
                        pages.setdefault(sub.group_id, []).append(sub)
                for gid, subs in pages.items():
                    detail = self.reader.group_detail(gid, sample=True)
                    for sub in subs:
                        sub.put(("group", (gid, detail)))
                overviews = [s for s in self._subs if s.group_id is None]
                if overviews and loop.time() >= next_overview:
                    await self._sample_overview(overviews)
                    period = max(OVERVIEW_SAMPLE_S, self.reader.last_walk_s / OVERVIEW_DUTY)
                    next_overview = loop.time() + period
        except Exception:  # a bug here must not go unnoticed, nor take the broker with it
            log.exception("console: lag sampling stopped")
        finally:
            self._sampler = None
            if self._subs and not self._closed:
                self._sampler = loop.create_task(self._sample())

    async def _sample_overview(self, overviews: list[Subscriber]) -> None:
        summaries = await self.reader.summaries(sample=True)
        now = self.reader.now_ms()
        current = {g.group_id: g for g in summaries}
        important: list[GroupSummary] = []
        lag_only: list[GroupSummary] = []
        for g in summaries:
            sent = self._rows.get(g.group_id)
            if sent is None or _shown(sent) != _shown(g):
                important.append(g)
            elif sent.time_lag_ms != g.time_lag_ms:
                lag_only.append(g)
        first = _rotated(important, self._rotate)[:ROWS_PER_SAMPLE]
        room = min(TIME_LAG_ROWS, ROWS_PER_SAMPLE - len(first))
        chosen = first + _rotated(lag_only, self._rotate)[:room]
        self._rotate += TIME_LAG_ROWS
        removed = tuple(gid for gid in self._rows if gid not in current)
        for gid in removed:
            del self._rows[gid]
        for g in chosen:
            self._rows[g.group_id] = g
        topics: tuple[TopicView, ...] = self.reader.topics()
        for sub in overviews:
            if sub.resync:
                sub.resync = False
                sub.put(("rows", (summaries, removed, now)))
            elif chosen or removed:
                sub.put(("rows", (tuple(chosen), removed, now)))
            sub.put(("cards", (summaries, topics)))

    # ------------------------------------------------------------------ stop
    def close(self) -> None:
        self._closed = True
        if self._pump is not None:
            self._pump.cancel()
            self._pump = None
        if self._sampler is not None:
            self._sampler.cancel()
        for sub in self._subs:
            with contextlib.suppress(queue.Full):  # its thread sees the server closing instead
                sub.queue.put_nowait(("close", None))
        self._subs.clear()


def _shown(g: GroupSummary) -> tuple[object, ...]:
    """What an overview row shows, but its time lag (which moves on while a group lags)."""
    return (g.state, g.members, g.generation, g.lag, g.last_rebalance, g.protocol_type, g.protocol_name)


def _rotated(rows: list[GroupSummary], turn: int) -> list[GroupSummary]:
    if not rows:
        return rows
    k = turn % len(rows)
    return rows[k:] + rows[:k]

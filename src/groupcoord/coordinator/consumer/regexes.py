"""The regex subscriptions of a consumer group manager's groups: when a heartbeat's new or changed
regex asks for a resolution, and the resolution itself (Kafka 4.1 ``GroupMetadataManager``'s
``maybeUpdateRegularExpressions``, ``refreshRegularExpressions`` and
``handleRegularExpressionsResult``).

A heartbeat that subscribes a regex not yet in use does not bump the epoch: it schedules a
resolution (the ``REGEX_REFRESH`` timer, due at once), which resolves every regex of the group
against the topics image, writes each resolution (record 16) and bumps the epoch if a topic set or
the metadata hash changed. A group asks again at most every
:data:`REGEX_BATCH_REFRESH_MIN_INTERVAL_MS`, when a regex comes or goes, a topic was created since
its last resolution, or the last one is older than ``group.consumer.regex.refresh.interval.ms``.

:class:`RegexResolution` is held by :class:`~groupcoord.coordinator.consumer.manager.ConsumerGroupManager`
(composition: the manager calls it from the heartbeat and from the timer, and commits the batch).
"""

from __future__ import annotations

from collections import Counter

from groupcoord.coordinator.consumer.api import Batch, ConsumerGroupEvent, TimerKind, TimerSchedule, timer_key
from groupcoord.coordinator.consumer.config import ConsumerGroupConfig
from groupcoord.coordinator.consumer.group import ConsumerGroup, ResolvedRegularExpression
from groupcoord.coordinator.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.consumer.metadata import (
    METADATA_REFRESH_INTERVAL_MS,
    TopicsImage,
    compile_regex,
    group_metadata_hash,
    resolve_regex,
)
from groupcoord.coordinator.consumer.records import (
    new_group_epoch_record,
    new_regular_expression_record,
    new_regular_expression_tombstone,
)

__all__ = ["REGEX_BATCH_REFRESH_MIN_INTERVAL_MS", "RegexResolution"]

#: Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS.
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000


class RegexResolution:
    """The resolutions asked for and not yet run, and the newest topics image that created a
    topic (a resolution older than it is stale)."""

    def __init__(self, config: ConsumerGroupConfig) -> None:
        self.config = config
        #: the groups whose resolution is scheduled (a second one is not asked for meanwhile)
        self.pending: set[str] = set()
        #: the version of the last image with a topic the one before it did not have
        self.last_image_with_new_topics = -1

    def maybe_update(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        now: int,
        batch: Batch,
    ) -> bool:
        """``maybeUpdateRegularExpressions``: whether the epoch must be bumped; may write the old
        regex's tombstone, refuse an invalid new one, or ask for a resolution."""
        old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
        bump = False
        require_refresh = False
        if old != new:
            if old and group.subscribed_regexes.get(old, 0) == 1:
                batch.records.append(new_regular_expression_tombstone(group.group_id, old))
            if new:
                if group.subscribed_regexes.get(new, 0) == 0:
                    compile_regex(new)
                    require_refresh = True
                else:
                    bump = new in group.resolved_regexes
        if not require_refresh and not group.subscribed_regexes:
            return bump
        if group.group_id in self.pending:
            return bump
        last_time, last_version = group.last_regex_refresh()
        if last_time is not None and now <= last_time + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
            return bump
        regexes = Counter(group.subscribed_regexes)
        if old:
            regexes[old] -= 1
        if new:
            regexes[new] += 1
        in_use = {k for k, v in regexes.items() if v > 0}
        require_refresh |= len(in_use) != len(group.resolved_regexes)
        require_refresh |= last_version < self.last_image_with_new_topics
        require_refresh |= last_time is None or now > last_time + self.config.regex_refresh_interval_ms
        if require_refresh and in_use:
            batch.regex_refresh = group.group_id
            batch.timers.append(
                TimerSchedule(
                    key=timer_key(TimerKind.REGEX_REFRESH, group.group_id),
                    deadline_ms=now,
                    kind=TimerKind.REGEX_REFRESH,
                    group_id=group.group_id,
                    member_id=updated.member_id,
                )
            )
        return bump

    def refresh(
        self, group_id: str, group: ConsumerGroup | None, image: TopicsImage, now: int, batch: Batch
    ) -> None:
        """The resolution task and its completion (``refreshRegularExpressions`` and
        ``handleRegularExpressionsResult``): resolve every regex in use against ``image``, write
        each resolution, and bump the epoch if a topic set or the hash changed."""
        self.pending.discard(group_id)
        if group is None or not group.subscribed_regexes:
            return
        bump = False
        topics = set(group.subscribed_names)
        for regex in sorted(group.subscribed_regexes):
            resolved = resolve_regex(regex, image.names())
            previous = group.resolved_regexes.get(
                regex, ResolvedRegularExpression(topics=frozenset(), version=-1, timestamp=-1)
            )
            if previous.topics != resolved:
                bump = True
            topics |= resolved
            batch.records.append(new_regular_expression_record(group_id, regex, resolved, image.version, now))
        metadata_hash = group_metadata_hash(topics, image)
        if metadata_hash != group.metadata_hash:
            bump = True
        if bump:
            epoch = group.group_epoch + 1
            batch.records.append(new_group_epoch_record(group_id, epoch, metadata_hash))
            batch.events.append(
                ConsumerGroupEvent(
                    kind="epoch-bump", group_id=group_id, group_epoch=epoch, cause="regex-resolved"
                )
            )
            group.metadata_refresh_deadline = (now + METADATA_REFRESH_INTERVAL_MS, epoch)

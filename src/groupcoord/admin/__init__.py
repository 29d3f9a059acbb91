"""The admin command line and its wire client: what an operator runs against any Kafka broker.

- :mod:`groupcoord.admin.client`: :class:`~groupcoord.admin.client.AdminClient`, one connection
  per broker over the package's one request codec (:mod:`groupcoord.protocol.codec`), at the
  highest version both sides know; partition reads walk record batches with
  :mod:`groupcoord.formats.batch`.
- :mod:`groupcoord.admin.groups`: ``groupcoord groups`` (list, describe, reset-offsets, delete,
  delete-offsets), like kafka-consumer-groups.sh; :mod:`groupcoord.admin.describe` describes a
  group of either type (ConsumerGroupDescribe for KIP-848 groups, else DescribeGroups).
- :mod:`groupcoord.admin.topics`: ``groupcoord topics`` (list, describe, create, delete, alter,
  delete-records), like kafka-topics.sh.
- :mod:`groupcoord.admin.quotas`: ``groupcoord quotas`` (list, alter), like kafka-configs.sh's
  client quotas; :mod:`groupcoord.admin.acls`: ``groupcoord acls`` and ``groupcoord users``.
- :mod:`groupcoord.admin.command`: what the verbs' command lines share (the options that reach a
  broker, the exit statuses of errors, a table or JSON on stdout).

Nothing here imports the broker side: the verbs see a broker only over the wire.
"""

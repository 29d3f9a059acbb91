"""The admin command line and its wire client: what an operator runs against any Kafka broker.

- :mod:`groupcoord.admin.client`: :class:`~groupcoord.admin.client.AdminClient`, one connection
  per broker over the package's one request codec (:mod:`groupcoord.protocol.codec`), at the
  highest version both sides know; partition reads walk record batches with
  :mod:`groupcoord.formats.batch`.
- :mod:`groupcoord.admin.groups`: ``groupcoord groups`` (list, describe, reset-offsets, delete,
  delete-offsets), like kafka-consumer-groups.sh.
- :mod:`groupcoord.admin.topics`: ``groupcoord topics`` (list, describe, create, delete, alter,
  delete-records), like kafka-topics.sh.

Nothing here imports the broker side: the verbs see a broker only over the wire.
"""

"""The transaction coordinator (KIP-98, KIP-447), sans-I/O like :mod:`groupcoord.coordinator`.

:mod:`.state` holds the state machine, :mod:`.records` the ``__transaction_state`` record
formats, :mod:`.shard` the coordinator shard, whose handlers return the result every shard returns
(:class:`groupcoord.coordinator.result.CoordinatorResult`).
"""

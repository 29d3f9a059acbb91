"""The transaction coordinator (KIP-98, KIP-447), sans-I/O like :mod:`groupcoord.coordinator`.

:mod:`.state` holds the state machine, :mod:`.records` the ``__transaction_state`` record
formats, :mod:`.shard` the coordinator whose handlers return :class:`.result.TxnResult` values.
"""

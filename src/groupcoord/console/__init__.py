"""The live web console (``console.listen``): every group and its rebalances, served by the
broker itself. See :mod:`groupcoord.console.server` (``BrokerConsole``) and ``docs/operations.md``.

The package imports nothing itself: the broker imports :mod:`groupcoord.console.auth` on every
start and the server only when ``console.listen`` is set."""

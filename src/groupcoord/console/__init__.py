"""The live web console (``console.listen``): every group and its rebalances, served by the
broker itself. See :mod:`groupcoord.console.server` and ``docs/operations.md``."""

from groupcoord.console.server import BrokerConsole

__all__ = ["BrokerConsole"]

"""``python -m groupcoord.testing``: the child process of ``Broker(subprocess=True)``.

Started by :class:`groupcoord.testing.Broker` only (see :mod:`groupcoord.testing.control`).
"""

from __future__ import annotations

import sys

from groupcoord.testing.control import main

sys.exit(main())

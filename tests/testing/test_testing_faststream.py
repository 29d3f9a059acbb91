"""The FastStream recipe of docs/testing.md, run as the page shows it.

The code is not copied here: this test reads the recipe's code block from the page and runs
it, so the page and the suite cannot drift apart. The block defines ``test_...`` functions
that take the ``kafka_broker`` fixture; each is called with this test's broker.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from groupcoord.testing import Broker

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def recipe(heading: str) -> str:
    """The first ```python block under ``heading`` in docs/testing.md."""
    text = DOC.read_text()
    start = text.index(f"\n{heading}\n")
    match = re.compile(r"```python\n(.*?)```", re.S).search(text, start)
    assert match is not None, f"no python block under {heading!r}"
    return match.group(1)


def test_the_faststream_recipe_of_the_docs_runs_against_the_fixture(kafka_broker: Broker) -> None:
    namespace: dict[str, Any] = {"__name__": "faststream_recipe"}
    exec(compile(recipe("### FastStream"), f"{DOC}:FastStream", "exec"), namespace)
    tests = [fn for name, fn in namespace.items() if name.startswith("test_") and callable(fn)]
    assert tests, "the recipe defines no test function"
    for fn in tests:
        fn(kafka_broker)

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from replay_assets_tests.sail_server import session


@pytest.fixture(scope="module")
def spark(sail: str) -> Iterator[SparkSession]:
    """A Spark Connect session on the session's Sail server, shared by a module's tests (each
    works in its own folders and names its own temporary views)."""
    s = session(sail)
    yield s
    s.stop()

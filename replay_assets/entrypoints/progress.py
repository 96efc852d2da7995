"""Progress for long commands (`run`, `backfill --wait`, benchmarks): a live spinner with the
latest step on a terminal (rich), plain lines otherwise (CI logs, pipes)."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console


@contextmanager
def progress(title: str) -> Iterator[Callable[[str], None]]:
    console = Console()
    if not console.is_terminal:
        yield print
        return
    with console.status(title) as status:

        def report(line: str) -> None:
            console.print(line, highlight=False)
            status.update(f"{title} — {line.strip()}")

        yield report

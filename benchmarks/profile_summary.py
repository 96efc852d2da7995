"""Where a profiled run spent its time, by the project's statement: reads the raw stacks that
``replay_bench.py --profile DIR`` has py-spy write (``DIR/<case>.txt``) and sums the samples of
each stack under its innermost frame in ``replay_assets`` (the function and line, so each SQL
statement is its own row). The benchmark samples with ``--idle``, so a stack waiting on DuckDB's
threads or a worker's pipe counts: the table is wall time of the sampled process, not CPU.

    uv run python benchmarks/profile_summary.py DIR/main.txt [--rate 50] [--top 30] [--by function]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

_FRAME = re.compile(r"^(?P<function>.+) \((?P<file>[^():]+):(?P<line>\d+)\)$")
_PROJECT = "replay_assets/"
# helpers that run any statement: the time is their caller's
_HELPERS = {("one", "storage/db/warehouse.py"), ("query_frame", "storage/db/warehouse.py"),
            ("insert_frame", "storage/db/warehouse.py")}  # fmt: skip


def bucket(stack: str, by: str) -> str:
    """The innermost project frame of a ``;``-joined stack that is not a statement helper, or
    the outermost frame for none."""
    frames = stack.split(";")
    for frame in reversed(frames):
        match = _FRAME.match(frame)
        if match and _PROJECT in match["file"]:
            where = match["file"].split(_PROJECT, 1)[1]
            if (match["function"], where) in _HELPERS:
                continue
            return (
                f"{match['function']} ({where})"
                if by == "function"
                else f"{match['function']} ({where}:{match['line']})"
            )
    return f"(outside the project) {frames[0][:60]}"


def summary(path: Path, by: str) -> tuple[Counter[str], int]:
    samples: Counter[str] = Counter()
    total = 0
    for raw in path.read_text(encoding="utf-8").splitlines():
        stack, _, count = raw.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples[bucket(stack, by)] += int(count)
        total += int(count)
    return samples, total


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("raw", type=Path, help="a py-spy raw file (-f raw)")
    p.add_argument("--rate", type=float, default=50, help="py-spy's samples a second (-r)")
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--by", choices=("line", "function"), default="line")
    args = p.parse_args(argv)
    samples, total = summary(args.raw, args.by)
    print(f"{'seconds':>8} {'share':>6}  where (innermost project frame)")
    for where, count in samples.most_common(args.top):
        print(f"{count / args.rate:8.2f} {count / total:6.1%}  {where}")
    print(f"{total / args.rate:8.2f} {1:6.0%}  all samples")


if __name__ == "__main__":
    main()

"""No call in the package passes more than four arguments by position (issue 13, item 4): a
longer call names its arguments, so a swapped pair of same-typed values cannot hide."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "replay_assets"
LIMIT = 4


def test_no_call_passes_more_than_four_positional_arguments() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and len(node.args) > LIMIT:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node.func)}")
    assert offenders == []

"""The docs stay a reference a newcomer reads in an hour, and the code's own text stays inside the
repository: docstrings and comments name the rule they follow, never a section of a document
outside it or the issue that asked for it."""

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Line budgets: a reference of a few lines a decision, a figures page, one page a decision record.
LIMITS = {"docs/design.md": 400, "benchmarks/README.md": 300, "README.md": 250}
DECISION_LINES = 80

# "SPEC" as a word (never inside SUSPECT or a name such as _SPEC_RENDERING), "issue 6", "issue #6".
OUTSIDE_REFERENCE = re.compile(r"(?<![A-Za-z_])SPEC(?![A-Za-z_])|\b[Ii]ssues? #?\d+")
CODE_ROOTS = ("replay_assets", "benchmarks")


def docstrings(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Each docstring of a module, class or function with the line it starts on."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node, clean=False)
            if text is not None:
                yield node.body[0].lineno, text


def comments(source: str) -> Iterator[tuple[int, str]]:
    """Each comment with its line (tokenize sees comments; the AST drops them)."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def outside_references(path: Path) -> list[str]:
    """`path:line: text` for each docstring or comment of the module that cites an outside
    document or an issue."""
    source = path.read_text(encoding="utf-8")
    texts = [*docstrings(ast.parse(source)), *comments(source)]
    return [
        f"{path.relative_to(ROOT)}:{line}: {match.group(0)}"
        for line, text in texts
        for match in OUTSIDE_REFERENCE.finditer(text)
    ]


@pytest.mark.parametrize("doc", sorted(LIMITS))
def test_each_doc_stays_within_its_line_budget(doc: str) -> None:
    lines = (ROOT / doc).read_text(encoding="utf-8").count("\n")
    assert lines <= LIMITS[doc], f"{doc} has {lines} lines, at most {LIMITS[doc]}"


def test_each_decision_record_is_one_page_numbered_and_linked_from_the_design_doc() -> None:
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    records = sorted((ROOT / "docs" / "decisions").glob("*.md"))
    assert records, "docs/decisions holds the decision records"
    for record in records:
        lines = record.read_text(encoding="utf-8").count("\n")
        assert lines <= DECISION_LINES, f"{record.name} has {lines} lines, at most {DECISION_LINES}"
        assert re.fullmatch(r"\d{4}-[a-z0-9-]+\.md", record.name), record.name
        assert f"decisions/{record.name}" in design, f"docs/design.md does not link {record.name}"


def test_the_verified_facts_stay_listed() -> None:
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    facts = (ROOT / "docs" / "facts.md").read_text(encoding="utf-8")
    assert "## Verified facts" in design and "docs/facts.md" in design
    assert "Dagster 1.13.27" in design and "DuckDB 2.0.1" in facts


def test_docstrings_and_comments_cite_no_document_outside_the_repository() -> None:
    found = [
        hit
        for root in CODE_ROOTS
        for path in sorted((ROOT / root).rglob("*.py"))
        for hit in outside_references(path)
    ]
    assert not found, "name the rule instead:\n" + "\n".join(found)


def test_the_reference_pattern_catches_what_it_should_and_spares_the_rest() -> None:
    assert OUTSIDE_REFERENCE.search("the fence (SPEC 6)")
    assert OUTSIDE_REFERENCE.search("cost by change (issue 14)")
    assert OUTSIDE_REFERENCE.search("see Issue #16")
    assert not OUTSIDE_REFERENCE.search("flagged SUSPECT")
    assert not OUTSIDE_REFERENCE.search("_SPEC_RENDERING, a check spec, 6 issues")

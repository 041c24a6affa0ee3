"""Repository hygiene: product modules stay small, and prose carries no references that lead nowhere.

* Every product module (``aicr_pytest/**``, ``checks/**``) has at most :data:`MAX_MODULE_LINES`
  lines, the option table's row modules included.
* Comments and docstrings (``aicr_pytest/``, ``checks/``, ``tests/``, ``docs/``), ``README.md``,
  ``CHANGELOG.md``, ``CONTRIBUTING.md``, every page of the docs site (``docs/**/*.md``, the
  generated pages included) and ``pyproject.toml`` cite no internal issue (``#17``, ``(#14)``,
  ``issue #17's``) and no section of a document outside the repository (``spec §5.2``, ``(§1.7)``).
  Upstream issues are cited as ``AICR #1234``.

The scanner is tested on sample text below, so a regex that stops matching fails here too.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 650
#: modules allowed past the limit: none (the option table is split into row modules by topic)
LINE_LIMIT_EXEMPT: frozenset[str] = frozenset()

#: ``#`` and 1-3 digits, not part of a longer token.  Not an issue reference: ``AICR #123``
#: (upstream), an HTML entity (``&#39;``), a URL fragment or markdown anchor (``/#410-gone``,
#: ``](#12)``, ``#1-intro``), a colour (``color: #333``, ``fill="#333"``), a longer number.
ISSUE_REF = re.compile(
    r"(?<!AICR )(?<![\w&#/])(?<!\]\()(?<![:=] )(?<![:=])(?<![:=]\")(?<![:=]')(?<![:=] \")"
    r"#\d{1,3}(?![\w-])"
)
#: a section sign followed by a section id: ``§5.2.1``, ``§ A.9``, ``§R6``; a public RFC's
#: section (``RFC 9110 §10.2.3``) is a reference anyone can follow
SECTION_REF = re.compile(r"(?<!RFC \d\d\d\d )§\s*[0-9A-Z]")


def violations(text: str) -> list[str]:
    """The internal issue and outside-section references in ``text``, in order."""
    found = [(m.start(), m.group()) for m in ISSUE_REF.finditer(text)]
    found += [(m.start(), m.group()) for m in SECTION_REF.finditer(text)]
    return [hit for _, hit in sorted(found)]


def python_prose(source: str) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of every comment and docstring (any string statement) in Python ``source``."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            yield node.lineno, node.value.value


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


#: this file: its docstrings and samples show what the scanner finds
SCANNER = "tests/unit/test_hygiene.py"


def _docs_files() -> Iterator[Path]:
    """The docs site's sources and the pages generated from them (never its build output)."""
    for path in sorted((REPO / "docs").rglob("*")):
        if path.suffix in (".md", ".py") and "_build" not in path.relative_to(REPO / "docs").parts:
            yield path


def _scanned_files() -> Iterator[Path]:
    for top in ("aicr_pytest", "checks", "tests"):
        yield from sorted((REPO / top).rglob("*.py"))
    yield from _docs_files()
    for name in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md", "pyproject.toml"):
        yield REPO / name


def reference_violations() -> list[str]:
    out: list[str] = []
    for path in _scanned_files():
        rel = _rel(path)
        if rel == SCANNER or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".py":
            pieces = list(python_prose(text))
        else:
            pieces = list(enumerate(text.splitlines(), start=1))
        for line, piece in pieces:
            out.extend(f"{rel}:{line}: {hit}" for hit in violations(piece))
    return out


# --- the rules, on the repository -------------------------------------------------------------------


def test_no_product_module_over_the_line_limit() -> None:
    modules = sorted((REPO / "aicr_pytest").rglob("*.py")) + sorted((REPO / "checks").rglob("*.py"))
    assert modules
    too_long = [
        f"{_rel(p)}: {n} lines"
        for p in modules
        if _rel(p) not in LINE_LIMIT_EXEMPT
        and (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert too_long == [], f"split these along a real seam (at most {MAX_MODULE_LINES} lines):\n" + "\n".join(
        too_long
    )


#: the README says what aicr-pytest is and links into the docs site, which holds the rest
MAX_README_LINES = 250
#: the two commands CI and the examples rely on, byte for byte
QUICK_START = (
    "./scripts/example.sh    # main job: the embedded H100/EKS training recipe against a SIMULATED cluster\n"
    "./scripts/test.sh       # the test command: ruff, mypy and the whole test suite\n"
)


def test_the_readme_is_short_and_keeps_the_quick_start() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_README_LINES, "move the detail into a page under docs/"
    quick_start = text[text.index("\n## Quick start\n") :]
    assert f"```\n{QUICK_START}```\n" in quick_start.split("\n## ", 2)[1]
    assert "python -m http.server -d docs/_build/html" in text


def test_the_scan_covers_the_user_documents() -> None:
    scanned = {_rel(path) for path in _scanned_files()}
    assert {"README.md", "CHANGELOG.md", "CONTRIBUTING.md", "docs/index.md", "docs/conf.py"} <= scanned
    assert "docs/_ext/aicr_docs.py" in scanned and "docs/checks/gpu-health.md" in scanned
    assert not any(path.startswith("docs/_build/") for path in scanned)


def test_no_internal_issue_or_outside_section_references() -> None:
    found = reference_violations()
    assert found == [], "drop the reference and say the fact (upstream issues: 'AICR #1234'):\n" + "\n".join(
        found
    )


# --- the scanner, on sample text ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hits"),
    [
        ("the drop-in flags (#17)", ["#17"]),
        ("issue #17's side-by-side runs", ["#17"]),
        ("#14 and #15, then #1", ["#14", "#15", "#1"]),
        ("item 8 of #17.", ["#17"]),
        ("(see #123)", ["#123"]),
        ("#9: the nine", ["#9"]),
        ("as spec §5.2.1 says", ["§5"]),
        ("(conformance spec §1.5, §1.7)", ["§1", "§1"]),
        ("performance spec §B.4", ["§B"]),
        ("(§ A.9)", ["§ A"]),
        ("(spec R6 §1.4) and #3", ["§1", "#3"]),
    ],
)
def test_scanner_finds_references(text: str, hits: list[str]) -> None:
    assert violations(text) == hits


@pytest.mark.parametrize(
    "text",
    [
        "an upstream bug (AICR #1615)",
        "fixed upstream in AICR #123",
        "a four-digit upstream number #1643",
        "&#39;INJECTED&#39;",
        "https://kubernetes.io/docs/reference/using-api/api-concepts/#410-gone-responses",
        "[the section](#12) and [more](#3-setup)",
        "a colour: color: #333; fill=#fff; stroke='#999' fill=\"#444\" border: 1px solid #ccc",
        "background:#123",
        "a hex #1a2b3c and #12345",
        "#!/usr/bin/env python",
        "# a comment and ## a heading",
        "section signs alone § are not references",
        "a 429's Retry-After (RFC 9110 §10.2.3)",
        "x#1 in a token",
    ],
)
def test_scanner_leaves_other_text_alone(text: str) -> None:
    assert violations(text) == []


def test_python_prose_is_comments_and_docstrings_only() -> None:
    source = (
        '"""Module doc (#17)."""\n'
        "X = '#18 is data, not prose'\n"
        "def f() -> str:\n"
        '    """Function doc, spec §2.1."""\n'
        "    return '§3.1 in a value'  # a comment citing #19\n"
        "#: attribute doc (#20)\n"
        "Y = 1\n"
    )
    prose = dict(python_prose(source))
    assert sorted(prose) == [1, 4, 5, 6]
    assert [hit for _, text in sorted(prose.items()) for hit in violations(text)] == [
        "#17",
        "§2",
        "#19",
        "#20",
    ]

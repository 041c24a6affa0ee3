"""A small DOM for assertions about aicr-pytest's HTML report (stdlib ``html.parser``)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path


class Dom(HTMLParser):
    """Start tags with their attributes, and the text inside each element (for assertions)."""

    VOID = frozenset({"meta", "link", "img", "br", "hr", "input", "source", "col", "area", "base", "wbr"})

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []
        self._open: list[list[str]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        chunks: list[str] = []
        self.elements.append((tag, {k: v or "" for k, v in attrs}, chunks))
        if tag not in self.VOID:
            self._open.append(chunks)

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for chunks in self._open:
            chunks.append(data)

    def find(self, tag: str | None = None, **attrs: str) -> list[tuple[dict[str, str], str]]:
        return [
            (a, "".join(t))
            for name, a, t in self.elements
            if (tag is None or name == tag) and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]


def read_page(path: Path) -> Dom:
    return Dom(path.read_text(encoding="utf-8"))


def table_rows(dom: Dom, **row_attrs: str) -> list[list[str]]:
    """Cell texts of each ``<tr>`` matching ``row_attrs`` (cells are the th/td until the next row)."""
    rows: list[list[str]] = []
    current: list[str] | None = None
    for tag, attrs, chunks in dom.elements:
        if tag == "tr":
            match = all(attrs.get(k.replace("_", "-")) == v for k, v in row_attrs.items())
            current = [] if match else None
            if current is not None:
                rows.append(current)
        elif tag in ("td", "th") and current is not None:
            current.append("".join(chunks).strip())
        elif tag in ("table", "tbody", "thead") and current is not None:
            current = None
    return rows

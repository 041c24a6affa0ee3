"""Inline SVG that cannot run anything: an allowlist re-serializer for the HTML report's figures.

A figure comes from a check (ours draw plain charts, a user's check could hand over anything).
Inline ``<svg>`` in HTML is live markup: ``<script>``, ``on*`` attributes, links and
``<foreignObject>`` would run or load.  So the SVG is parsed and written out again keeping only
drawing elements and presentation attributes; anything else makes the figure unreadable
(:class:`UnsafeSvg`) and the page shows why instead of the figure (fail closed, never a partial
figure).  Entity declarations are refused before parsing (no entity expansion).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from markupsafe import Markup, escape

SVG_NS = "http://www.w3.org/2000/svg"

ELEMENTS = frozenset(
    {
        "svg",
        "g",
        "rect",
        "line",
        "polyline",
        "polygon",
        "circle",
        "ellipse",
        "path",
        "text",
        "tspan",
        "title",
        "desc",
    }
)
ATTRIBUTES = frozenset(
    {
        "width",
        "height",
        "viewBox",
        "preserveAspectRatio",
        "x",
        "y",
        "x1",
        "y1",
        "x2",
        "y2",
        "cx",
        "cy",
        "r",
        "rx",
        "ry",
        "dx",
        "dy",
        "points",
        "d",
        "fill",
        "fill-opacity",
        "fill-rule",
        "stroke",
        "stroke-width",
        "stroke-dasharray",
        "stroke-opacity",
        "stroke-linecap",
        "stroke-linejoin",
        "opacity",
        "font-family",
        "font-size",
        "font-weight",
        "font-style",
        "text-anchor",
        "dominant-baseline",
        "transform",
    }
)
#: values that could reach outside the figure (url(#x) references, script URLs, CSS expressions)
_BAD_VALUE = re.compile(r"url\s*\(|javascript:|expression\s*\(", re.IGNORECASE)
_NUMBER = re.compile(r"^\s*\d+(?:\.\d+)?\s*(?:px)?\s*$")


class UnsafeSvg(ValueError):
    """The SVG is not plain drawing markup; the message says what was found."""


def _local(tag: str) -> str:
    if tag.startswith("{"):
        ns, _, name = tag[1:].partition("}")
        if ns != SVG_NS:
            raise UnsafeSvg(f"element from another namespace: {name}")
        return name
    return tag


def _write(elem: ET.Element, out: list[str], *, root: bool) -> None:
    name = _local(elem.tag) if isinstance(elem.tag, str) else ""
    if name not in ELEMENTS:
        raise UnsafeSvg(f"element <{name or '?'}> is not allowed")
    if root and name != "svg":
        raise UnsafeSvg("the root element is not <svg>")
    attrs: list[str] = []
    if root:
        attrs.append(f' xmlns="{SVG_NS}"')
    items = dict(elem.attrib)
    if (
        root
        and "viewBox" not in items
        and _NUMBER.match(items.get("width", ""))
        and _NUMBER.match(items.get("height", ""))
    ):
        width = items["width"].strip().removesuffix("px")
        height = items["height"].strip().removesuffix("px")
        items["viewBox"] = f"0 0 {width} {height}"
    for key, value in items.items():
        if key.startswith("{") or key not in ATTRIBUTES:
            raise UnsafeSvg(f"attribute {key!r} on <{name}> is not allowed")
        if _BAD_VALUE.search(value):
            raise UnsafeSvg(f"attribute {key!r} on <{name}> has a disallowed value")
        attrs.append(f' {key}="{escape(value)}"')
    out.append(f"<{name}{''.join(attrs)}>")
    if elem.text:
        out.append(str(escape(elem.text)))
    for child in elem:
        _write(child, out, root=False)
        if child.tail:
            out.append(str(escape(child.tail)))
    out.append(f"</{name}>")


def sanitize(svg: str) -> Markup:
    """The SVG re-serialized from allowlisted elements and attributes, safe to inline."""
    if re.search(r"<!(?:DOCTYPE|ENTITY)", svg, re.IGNORECASE):
        raise UnsafeSvg("DOCTYPE or entity declarations are not allowed")
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as err:
        raise UnsafeSvg(f"not well-formed XML ({err})") from None
    out: list[str] = []
    _write(root, out, root=True)
    return Markup("".join(out))


__all__ = ["ATTRIBUTES", "ELEMENTS", "UnsafeSvg", "sanitize"]

"""The docs site builds with warnings as errors, catches a broken link, and reads offline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.conftest import copy_site
from tests.harness import docs

#: a tag that makes a browser fetch something: <script src>, <link href>, <img src>, <iframe src>
FETCHING_TAG = re.compile(r"<(script|link|img|iframe|source)\b[^>]*\b(src|href)=[\"']([^\"']+)[\"']", re.I)
#: what a stylesheet fetches: url(...) and @import
CSS_FETCH = re.compile(r"@import\s+(?:url\()?[\"']?([^\"');]+)|url\(\s*[\"']?([^\"')]+)", re.I)


def remote_fetches(html_dir: Path) -> list[str]:
    """Every ``http(s)://`` or protocol-relative URL a page or stylesheet of the site would fetch."""
    found: list[str] = []
    for page in sorted(html_dir.rglob("*.html")):
        for match in FETCHING_TAG.finditer(page.read_text(encoding="utf-8")):
            if re.match(r"(https?:)?//", match[3]):
                found.append(f"{page.relative_to(html_dir)}: {match[0]}")
    for sheet in sorted(html_dir.rglob("*.css")):
        for match in CSS_FETCH.finditer(sheet.read_text(encoding="utf-8")):
            url = (match[1] or match[2] or "").strip()
            if re.match(r"(https?:)?//", url):
                found.append(f"{sheet.relative_to(html_dir)}: {url}")
    return found


def test_the_site_builds_and_has_every_generated_page(built_site: Path) -> None:
    for page in ("index", "getting-started", "cli", "phases", "differences", "troubleshooting"):
        assert (built_site / f"{page}.html").is_file(), page
    for name in ("cli-validate", "cli-snapshot", "cli-evidence-verify", "checks-deployment"):
        assert (built_site / "generated" / f"{name}.html").is_file(), name
    assert (built_site / "maintainers" / "upstream-aicr-v1.html").is_file()


def test_the_built_site_fetches_nothing_from_the_network(built_site: Path) -> None:
    assert list(built_site.rglob("*.css")), "the theme's stylesheets are part of the site"
    assert remote_fetches(built_site) == []


def test_the_offline_scan_finds_a_remote_script_and_stylesheet(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text(
        '<script src="https://cdn.example/x.js"></script><link rel="stylesheet" href="//fonts.example/f.css">'
        '<script src="_static/local.js"></script><a href="https://example.com/">a link is not a fetch</a>',
        encoding="utf-8",
    )
    (tmp_path / "s.css").write_text(
        "@import url('https://fonts.example/css2'); .x { background: url(img/local.png) }", encoding="utf-8"
    )
    assert remote_fetches(tmp_path) == [
        'a.html: <script src="https://cdn.example/x.js"',
        'a.html: <link rel="stylesheet" href="//fonts.example/f.css"',
        "s.css: https://fonts.example/css2",
    ]


@pytest.mark.parametrize(
    ("link", "message"),
    [
        ("[gone](outputs.md#no-such-heading)", "local id not found in doc 'outputs': 'no-such-heading'"),
        ("[gone](no-such-page.md)", "cross-reference target not found: 'no-such-page.md'"),
    ],
)
def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path, link: str, message: str) -> None:
    site = copy_site(tmp_path)
    page = site / "troubleshooting.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\nSee {link}.\n", encoding="utf-8")
    proc = docs.build(site, tmp_path / "html")
    assert proc.returncode != 0
    assert message in proc.stderr


#: a Markdown link or image target: ``[text](target)``
LINK = re.compile(r"\]\(([^)\s]+)\)")


def local_link_targets(text: str) -> list[str]:
    """The targets of ``text``'s links that point into the repository (no URL, no bare anchor)."""
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:|#", t)]


def test_every_link_of_the_readme_and_the_guides_leads_to_a_file() -> None:
    for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md"):
        text = (docs.REPO / name).read_text(encoding="utf-8")
        targets = local_link_targets(text)
        missing = [t for t in targets if not (docs.REPO / t.split("#", 1)[0]).exists()]
        assert missing == [], f"{name} links to files that do not exist"
    readme = local_link_targets((docs.REPO / "README.md").read_text(encoding="utf-8"))
    assert "docs/getting-started.md" in readme and "docs/differences.md" in readme


def test_the_link_scan_reads_local_targets_only() -> None:
    text = "[a](docs/x.md#y) [b](https://e.com) [c](#z) <http://127.0.0.1:8000> [d](CONTRIBUTING.md)"
    assert local_link_targets(text) == ["docs/x.md#y", "CONTRIBUTING.md"]

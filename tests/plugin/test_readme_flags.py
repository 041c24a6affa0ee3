"""The docs name exactly the flags that exist.

* Every subcommand's generated page (``docs/_ext/aicr_docs.py``, from the option table) lists
  exactly the flags of its ``--help``: a flag cannot be undocumented, and a page row cannot name a
  flag that does not exist.
* Every ``--flag`` the hand-written docs mention (``README.md``, ``CHANGELOG.md``,
  ``CONTRIBUTING.md``, ``docs/**/*.md``) is a flag of the option table, one of pytest's own (its
  ``--help``), an option of a benchmark script, or one of the few other tools' flags listed in
  :data:`OTHER_FLAGS` with the reason a page names it: a doc cannot mention a flag that does not exist.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aicr_pytest.plugin import options
from aicr_pytest.plugin.options import EntryPoint
from tests.harness import docs

gen = docs.generator()

#: a flag: ``-r``, ``--recipe``, ``--fail-on-error=false`` (-> ``--fail-on-error``)
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
LONG_FLAG = re.compile(r"(?<![\w/-])(--[A-Za-z][\w-]*)")
CODE = re.compile(r"`([^`]+)`")

#: flags a hand-written page may name that are no option of aicr-pytest, and why it names them
OTHER_FLAGS = {
    "--aicr-": "the prefix of every plain-pytest spelling (`--aicr-<flag>`)",
    "--junitxml": "pytest's own spelling of --junit-xml (its --help shows only the other)",
    "--X": "the placeholder of the message `flag --X can only be specified once`",
    "--enable-multi-networking": "the GKE cluster setting gke-gpu-nic-networks' failure names",
    "--egress-selector-config-file": "the kube-apiserver flag the control-plane test stage uses",
    "--cluster-config": "an aicr snapshot flag aicr-pytest does not offer (Differences from AICR)",
    "--discover-network": "an aicr snapshot flag aicr-pytest does not offer (Differences from AICR)",
    "--criteria-strict": "an aicr recipe flag aicr-pytest does not offer (Differences from AICR)",
    "--cluster": "gcloud's, in the command whose output --gke-gpu-pools reads",
    "--cluster-id": "oci's, in the command whose output --oke-addons reads",
    "--all": "oci's, in the command whose output --oke-addons reads",
    "--keep-going": "sphinx-build's, in the test command's docs stage (CONTRIBUTING)",
    "--no-cache": "lint-imports', in the test command's import-linter stage (CONTRIBUTING)",
    "--raw": "kubectl's, in the health probe troubleshooting suggests for an unhealthy control plane",
}
#: the upstream research note describes today's AICR, flags aicr-pytest does not have included
NOT_SCANNED = ("maintainers",)


def column_flags(text: str, column: int = 1) -> set[str]:
    """The flags in cell ``column`` of every table row (header and separator rows name none)."""
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells = re.split(r"(?<!\\)\|", line)
            flags |= {flag for span in CODE.findall(cells[column]) for flag in FLAG.findall(span)}
    return flags


@functools.cache
def generated_pages() -> dict[str, str]:
    return dict(gen.pages(docs.DOCS))


def page_flags(entry_point: EntryPoint) -> set[str]:
    """The flags the generated page of ``entry_point`` lists in its table's spelling column.

    ``validate`` and plain ``pytest`` share one page: a column each.
    """
    run = entry_point in options.RUN
    page = generated_pages()["cli-validate.md" if run else f"cli-{gen.slug(entry_point)}.md"]
    generated = page[page.index("\n## Every option" if run else "\n## Flags and arguments") :]
    table = generated[generated.index("\n| ") :]
    return column_flags(table, 2 if entry_point == options.PYTEST else 1)


def declared(entry_point: EntryPoint) -> set[str]:
    return {
        flag
        for opt in options.entries(entry_point)
        if not opt.positional and not opt.hidden
        for flag in gen.spellings(opt, entry_point)
    }


@pytest.mark.parametrize("entry_point", [options.PYTEST, options.VALIDATE, *options.COMMANDS])
def test_the_generated_page_lists_exactly_the_flags_of(entry_point: EntryPoint) -> None:
    listed, in_table = page_flags(entry_point), declared(entry_point)
    assert in_table - listed == set(), f"{entry_point}: flags its page does not list"
    assert listed - in_table == set(), f"{entry_point}: its page lists flags that do not exist"


def hand_written_pages() -> list[Path]:
    pages = [docs.REPO / name for name in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md")]
    for path in sorted(docs.DOCS.rglob("*.md")):
        parts = path.relative_to(docs.DOCS).parts
        if parts[0] not in ("_build", gen.GENERATED, *NOT_SCANNED):
            pages.append(path)
    return pages


@functools.cache
def known_flags() -> frozenset[str]:
    """The option table's flags, pytest's own (``pytest --help``, every plugin installed here) and
    the benchmark scripts' options."""
    table = {flag for opt in options.OPTIONS for ep in opt.entry_points for flag in opt.flags_for(ep)}
    helped = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=docs.REPO,
    ).stdout
    assert "--junit-xml" in helped and "--recipe" in helped, helped[-2000:]
    bench = " ".join(p.read_text(encoding="utf-8") for p in (docs.REPO / "benchmarks").glob("*.py"))
    scripts = {flag for flag in LONG_FLAG.findall(bench)}
    return frozenset(table | set(LONG_FLAG.findall(helped)) | scripts | set(OTHER_FLAGS))


def unknown_flags(text: str) -> set[str]:
    return set(LONG_FLAG.findall(text)) - known_flags()


def test_every_flag_the_docs_mention_exists() -> None:
    pages = hand_written_pages()
    assert docs.DOCS / "getting-started.md" in pages and docs.REPO / "README.md" in pages
    found = {
        f"{path.relative_to(docs.REPO)}: {flag}"
        for path in pages
        for flag in unknown_flags(path.read_text(encoding="utf-8"))
    }
    assert found == set(), "these pages name flags that exist nowhere:\n" + "\n".join(sorted(found))


def test_a_flag_that_does_not_exist_is_caught_and_a_real_one_is_not() -> None:
    assert unknown_flags("run `aicr-pytest validate --recipe r.yaml --no-such-flag`") == {"--no-such-flag"}
    assert unknown_flags("`pytest -n 2 --junit-xml j.xml --timeout 5 --snapshot-update`") == set()
    assert unknown_flags("a URL https://example.com/--not-a-flag and a-b--c") == set()


def test_a_flag_missing_from_a_generated_page_is_caught() -> None:
    table = gen.command_table(options.RECIPE)
    assert "--no-embedded-data" in column_flags(table)
    assert "--no-embedded-data" not in column_flags(table.replace("`--no-embedded-data`", "`x`"))

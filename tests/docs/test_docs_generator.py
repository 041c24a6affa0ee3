"""The generated pages: every option of the option table, every check of the catalog with its fragment."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from aicr_pytest.core import catalog
from aicr_pytest.plugin import options
from tests.harness import docs

gen = docs.generator()


def test_a_table_cell_escapes_pipes_and_joins_lines() -> None:
    assert gen.cell("a|b\n  c") == "a\\|b c"
    assert gen.code("PATH|-") == "`PATH\\|-`"


def test_every_run_option_is_a_row_with_both_spellings_env_default_and_config_key() -> None:
    page = gen.run_options_page("# intro\n")
    assert page.startswith("# intro\n\n## Every option\n")
    row = next(line for line in page.splitlines() if line.startswith("| `-n`, `--namespace`"))
    expected = "| `-n`, `--namespace` | `--aicr-namespace` | `NAME` | `aicr-validation` | `AICR_NAMESPACE` |"
    assert row.startswith(expected)
    assert "`spec.validate.agent.namespace`" in row
    for opt in options.OPTIONS:
        if opt.run_option and not opt.hidden:
            assert gen.cell(opt.help) in page, opt.name
            for entry_point in (options.VALIDATE, options.PYTEST):
                for flag in gen.spellings(opt, entry_point) if opt.takes(entry_point) else ():
                    assert f"`{flag}`" in page, flag


def test_a_validate_only_and_a_pytest_only_option_show_a_dash_on_the_other_side() -> None:
    table = gen.run_options_table()
    output = next(line for line in table.splitlines() if line.startswith("| `-o`, `--output`"))
    ctrf = next(line for line in table.splitlines() if "`--aicr-ctrf-report`" in line)
    assert output.split(" | ")[1] == "—" and ctrf.startswith("| — | `--aicr-ctrf-report` |")


def test_an_option_added_to_the_table_appears_on_its_subcommand_page() -> None:
    extra = options.Option(
        "widgets",
        ("--widgets",),
        "how many widgets",
        setting=None,
        entry_points=(options.RECIPE,),
        metavar="N",
        once=True,
    )
    page = gen.command_page(options.RECIPE, "# recipe\n", (*options.OPTIONS, extra))
    assert "| `--widgets` | `N` | — | — | how many widgets; given at most once |" in page
    assert "`--widgets`" not in gen.command_page(options.RECIPE, "# recipe\n")


def test_a_typed_value_names_its_type() -> None:
    typed = [opt for opt in options.OPTIONS if opt.type in (int, float)]
    assert typed
    for opt in typed:
        assert gen.value_text(opt).endswith(("(integer)", "(number)", "(integer), repeatable")), opt.name
    assert gen.value_text(options.by_name()["data"]) == "`DIR`"


def test_a_subcommand_page_lists_its_positional_arguments() -> None:
    page = gen.command_page(options.PARSE_DCGM, "# parse dcgm\n")
    positional = [opt for opt in options.entries(options.PARSE_DCGM) if opt.positional]
    assert positional
    for opt in positional:
        assert f"`{gen.spellings(opt, options.PARSE_DCGM)[0]}`" in page


def _fragments(tmp_path: Path, names: list[str]) -> dict[str, str]:
    return {name: f"what {name} passes on\n" for name in names}


def test_a_phase_page_has_every_check_with_its_catalog_facts_and_fragment(tmp_path: Path) -> None:
    names = [spec.name for spec in catalog.CATALOG if spec.phase == "deployment"]
    page = gen.checks_page("deployment", "# Deployment phase\n", _fragments(tmp_path, names))
    for spec in catalog.CATALOG:
        if spec.phase == "deployment":
            assert f"\n## {spec.name}\n" in page
            assert f"what {spec.name} passes on" in page
            assert spec.description in page
    assert "| [`gpu-health`](#gpu-health) | 5 min | — | `health` |" in page
    dra = gen.checks_page("conformance", "# c\n", _fragments(tmp_path, [s.name for s in catalog.CATALOG]))
    assert "- **CNCF feature:** `dra-support`" in dra and "- **timeout:** 5 min" in dra


def test_a_catalog_check_without_a_fragment_fails_with_its_name() -> None:
    row = dataclasses.replace(catalog.CATALOG[0], name="toy-check")
    with pytest.raises(gen.MissingFragment, match=r"catalog check\(s\): toy-check \(write"):
        gen.checks_page("deployment", "# d\n", {"operator-health": "x"}, rows=(catalog.CATALOG[0], row))


def test_the_repository_has_a_fragment_for_every_catalog_check_and_no_stray_one(tmp_path: Path) -> None:
    written = {path.stem for path in (docs.DOCS / "checks").glob("*.md")}
    assert written == {spec.name for spec in catalog.CATALOG}
    pages = gen.pages(docs.DOCS)
    assert set(pages) == {
        "cli-validate.md",
        *(f"cli-{gen.slug(ep)}.md" for ep in options.COMMANDS),
        *(f"checks-{phase}.md" for phase in catalog.PHASES),
    }


def test_a_stray_fragment_or_missing_intro_fails(tmp_path: Path) -> None:
    site = tmp_path / "docs"
    for sub in ("cli", "phases", "checks"):
        (site / sub).mkdir(parents=True)
    with pytest.raises(gen.MissingFragment, match=r"missing .*/cli/validate\.md"):
        gen.pages(site)
    for ep in ("validate", *map(gen.slug, options.COMMANDS)):
        (site / "cli" / f"{ep}.md").write_text(f"# {ep}\n", encoding="utf-8")
    (site / "checks" / "no-such-check.md").write_text("x\n", encoding="utf-8")
    with pytest.raises(gen.MissingFragment, match="fragments for no catalog check: no-such-check"):
        gen.pages(site)


def test_write_pages_writes_the_generated_folder_and_drops_stale_pages(tmp_path: Path) -> None:
    import shutil

    site = tmp_path / "docs"
    shutil.copytree(docs.DOCS, site, ignore=shutil.ignore_patterns("_build", "generated"))
    (site / "generated").mkdir()
    (site / "generated" / "cli-gone.md").write_text("old\n", encoding="utf-8")
    written = gen.write_pages(site)
    assert {p.name for p in (site / "generated").glob("*.md")} == {p.name for p in written}
    assert "cli-gone.md" not in {p.name for p in written}

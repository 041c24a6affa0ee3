"""The generated pages of the docs site: every flag from the option table, every check from the catalog.

The pages are plain Markdown (MyST) built by plain functions, so a test can read them without
Sphinx:

* :func:`run_options_page`: ``aicr-pytest validate`` and plain ``pytest --recipe``, one row per
  option of a validation run (both spellings, value, default, environment variable, ``--config``
  key, help);
* :func:`command_page`: every other subcommand, one row per flag or argument;
* :func:`checks_page`: one page per phase, every catalog check with its phase, timeout, CNCF
  feature, group and description, followed by its hand-written fragment ``docs/checks/<name>.md``.

Each page starts with its hand-written introduction (``docs/cli/<slug>.md``,
``docs/phases/<phase>.md``).  :func:`write_pages` writes them all under ``docs/generated/``
(ignored by git); the Sphinx extension (:func:`setup`) calls it before any page is read, and a
catalog check without a fragment, or a subcommand without an introduction, fails the build.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aicr_pytest.core import catalog
from aicr_pytest.plugin import options
from aicr_pytest.plugin.options import EntryPoint, Option

#: where the generated pages go, under the docs source folder
GENERATED = "generated"


#: how a value's type reads on a page (a string, the default, is not named)
TYPE_NAMES: Mapping[Any, str] = {int: "integer", float: "number"}


class MissingFragment(Exception):
    """A hand-written piece a generated page needs does not exist."""


def slug(entry_point: EntryPoint) -> str:
    """``evidence verify`` → ``evidence-verify``; ``aicr-pytest`` (the program) stays itself."""
    return entry_point.replace(" ", "-")


def command_line(entry_point: EntryPoint) -> str:
    """How a user types the subcommand."""
    return "aicr-pytest" if entry_point == options.PROGRAM else f"aicr-pytest {entry_point}"


def cell(text: str) -> str:
    """``text`` made safe for one table cell: pipes escaped, lines joined."""
    return " ".join(text.split()).replace("|", "\\|")


def code(text: str) -> str:
    """``text`` as a code span inside a table cell."""
    return f"`{cell(text)}`"


def documented_options(entry_point: EntryPoint, table: Sequence[Option] | None = None) -> list[Option]:
    """The options ``entry_point`` lists in its ``--help`` (hidden internal channels left out)."""
    return [opt for opt in options.entries(entry_point, table) if not opt.hidden]


def spellings(opt: Option, entry_point: EntryPoint) -> tuple[str, ...]:
    """Every spelling of ``opt`` on ``entry_point`` (plain pytest's are namespaced ``--aicr-…``)."""
    if opt.positional:
        return (opt.name.upper() if opt.metavar is None else opt.metavar,)
    return opt.flags_for(entry_point)


def value_text(opt: Option) -> str:
    """What the option takes: a value, a switch, a repeatable value, an optional boolean."""
    metavar = opt.metavar or opt.name.upper()
    if opt.choices:
        metavar = "|".join(opt.choices)
    if opt.action == "store_true":
        return "switch"
    if opt.action == "version":
        return "prints the version and exits"
    if opt.action == "bool":
        return "`[=BOOL]`"
    shown = f"{code(metavar)}"
    if opt.type in TYPE_NAMES:
        shown += f" ({TYPE_NAMES[opt.type]})"
    if opt.positional and opt.nargs in ("+", "*"):
        shown += " (one or more)" if opt.nargs == "+" else " (any number)"
    if opt.action == "append":
        shown += ", repeatable"
    return shown


def default_text(opt: Option) -> str:
    shown = opt.shown_default()
    if opt.action == "version":
        return "—"
    if shown is None and not opt.run_option and opt.action not in ("store_true", "append"):
        shown = None if opt.default is None else str(opt.default)
    return "—" if shown is None or shown == "" else code(shown)


def config_text(opt: Option) -> str:
    return code(f"spec.validate.{opt.config_key}") if opt.config_key else "—"


def flags_text(flags: Sequence[str]) -> str:
    return ", ".join(code(flag) for flag in flags) if flags else "—"


def run_options_table(table: Sequence[Option] | None = None) -> str:
    """The validation run's options: ``validate`` and plain ``pytest`` side by side."""
    rows = [
        "| `aicr-pytest validate` | plain `pytest` | value | default | env | `--config` key | what it does |",
        "|---|---|---|---|---|---|---|",
    ]
    for opt in options.table(table):
        if not opt.run_option or opt.hidden:
            continue
        validate = spellings(opt, options.VALIDATE) if opt.takes(options.VALIDATE) else ()
        plain = spellings(opt, options.PYTEST) if opt.takes(options.PYTEST) else ()
        env = code(opt.env) if opt.env else "—"
        rows.append(
            f"| {flags_text(validate)} | {flags_text(plain)} | {value_text(opt)} | {default_text(opt)} "
            f"| {env} | {config_text(opt)} | {cell(opt.help)} |"
        )
    return "\n".join(rows) + "\n"


def command_table(entry_point: EntryPoint, table: Sequence[Option] | None = None) -> str:
    """Every flag and argument of one subcommand."""
    rows = ["| flag or argument | value | default | env | what it does |", "|---|---|---|---|---|"]
    for opt in documented_options(entry_point, table):
        note = "; given at most once" if opt.once else ""
        rows.append(
            f"| {flags_text(spellings(opt, entry_point))} | {value_text(opt)} | {default_text(opt)} "
            f"| {code(opt.env) if opt.env else '—'} | {cell(opt.help)}{note} |"
        )
    return "\n".join(rows) + "\n"


def run_options_page(intro: str, table: Sequence[Option] | None = None) -> str:
    """The page of ``aicr-pytest validate`` and ``pytest --recipe``: the introduction, then every option."""
    return (
        f"{intro.rstrip()}\n\n## Every option\n\n"
        "Generated from the option table (`aicr_pytest/plugin/options/`). Precedence: the flag "
        "(or its environment variable) > `--config` > the default.\n\n"
        f"{run_options_table(table)}"
    )


def command_page(entry_point: EntryPoint, intro: str, table: Sequence[Option] | None = None) -> str:
    """One subcommand's page: the introduction, then every flag and argument."""
    return (
        f"{intro.rstrip()}\n\n## Flags and arguments of `{command_line(entry_point)}`\n\n"
        "Generated from the option table (`aicr_pytest/plugin/options/`).\n\n"
        f"{command_table(entry_point, table)}"
    )


def _minutes(seconds: int) -> str:
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"


def check_section(spec: catalog.CheckSpec, fragment: str) -> str:
    """One check: its catalog facts, then its hand-written fragment."""
    facts = [
        f"- **phase:** {spec.phase}",
        f"- **timeout:** {_minutes(spec.timeout_s)}",
        f"- **CNCF feature:** `{spec.cncf_feature}`" if spec.cncf_feature else "- **CNCF feature:** none",
        f"- **group:** `{spec.group}` (opt-in)" if spec.group else "- **group:** none (AICR's catalog)",
        f"- **what it checks:** {spec.description}",
    ]
    return f"## {spec.name}\n\n" + "\n".join(facts) + f"\n\n{fragment.strip()}\n"


def checks_page(
    phase: str, intro: str, fragments: Mapping[str, str], rows: Sequence[catalog.CheckSpec] | None = None
) -> str:
    """One phase's page: the introduction, a table of its checks, then each check with its fragment.

    Raises :class:`MissingFragment` naming every check of the phase that has no fragment.
    """
    specs = [spec for spec in (catalog.CATALOG if rows is None else rows) if spec.phase == phase]
    missing = [spec.name for spec in specs if spec.name not in fragments]
    if missing:
        raise MissingFragment(
            "no docs/checks/<name>.md for catalog check(s): " + ", ".join(missing) + " (write what "
            "passes, fails and skips, and its knobs)"
        )
    table = ["| check | timeout | CNCF feature | group | description |", "|---|---|---|---|---|"]
    for spec in specs:
        table.append(
            f"| [`{spec.name}`](#{spec.name}) | {_minutes(spec.timeout_s)} | "
            f"{code(spec.cncf_feature) if spec.cncf_feature else '—'} | "
            f"{code(spec.group) if spec.group else '—'} | {cell(spec.description)} |"
        )
    sections = "\n".join(check_section(spec, fragments[spec.name]) for spec in specs)
    return f"{intro.rstrip()}\n\n## The checks\n\n" + "\n".join(table) + f"\n\n{sections}"


def _read(path: Path) -> str:
    if not path.is_file():
        raise MissingFragment(f"missing {path.as_posix()}")
    return path.read_text(encoding="utf-8")


def pages(srcdir: Path) -> dict[str, str]:
    """``{path under GENERATED: text}`` of every generated page, read from the fragments under ``srcdir``."""
    out: dict[str, str] = {}
    out["cli-validate.md"] = run_options_page(_read(srcdir / "cli" / "validate.md"))
    for entry_point in options.COMMANDS:
        intro = _read(srcdir / "cli" / f"{slug(entry_point)}.md")
        out[f"cli-{slug(entry_point)}.md"] = command_page(entry_point, intro)
    fragments = {path.stem: path.read_text(encoding="utf-8") for path in (srcdir / "checks").glob("*.md")}
    known = {spec.name for spec in catalog.CATALOG}
    stray = sorted(set(fragments) - known)
    if stray:
        raise MissingFragment("docs/checks/ has fragments for no catalog check: " + ", ".join(stray))
    for phase in catalog.PHASES:
        out[f"checks-{phase}.md"] = checks_page(phase, _read(srcdir / "phases" / f"{phase}.md"), fragments)
    return out


def write_pages(srcdir: Path) -> list[Path]:
    """Write :func:`pages` under ``srcdir/generated`` (only files whose text changed), drop stale ones."""
    target = srcdir / GENERATED
    target.mkdir(exist_ok=True)
    texts = pages(srcdir)
    written = []
    for name, text in texts.items():
        path = target / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    for old in target.glob("*.md"):
        if old.name not in texts:
            old.unlink()
    return written


def _on_builder_inited(app: Any) -> None:
    from sphinx.errors import ExtensionError

    try:
        write_pages(Path(app.srcdir))
    except MissingFragment as exc:
        raise ExtensionError(str(exc)) from exc


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

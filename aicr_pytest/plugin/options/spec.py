"""The option mechanism's vocabulary: entry points and :class:`Option`, one option of the table.

Light on purpose: pytest imports it at start-up for every run (``pytest_addoption``), so it
imports no model, no cluster client and no template engine.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from aicr_pytest.core.defaults import parse_bool

#: where an option is given: plain ``pytest``, and each ``aicr-pytest`` subcommand (``aicr-pytest``
#: itself for ``--version``)
EntryPoint = Literal[
    "pytest",
    "validate",
    "aicr-pytest",
    "simulate",
    "recipe",
    "snapshot",
    "evidence verify",
    "parse nccl",
    "parse aiperf",
    "cncf check",
    "parse dcgm",
    "history",
    "compare",
    "schedule",
]
PYTEST: Final = "pytest"
VALIDATE: Final = "validate"
PROGRAM: Final = "aicr-pytest"
SIMULATE: Final = "simulate"
RECIPE: Final = "recipe"
SNAPSHOT: Final = "snapshot"
EVIDENCE_VERIFY: Final = "evidence verify"
PARSE_NCCL: Final = "parse nccl"
PARSE_AIPERF: Final = "parse aiperf"
CNCF_CHECK: Final = "cncf check"
PARSE_DCGM: Final = "parse dcgm"
HISTORY: Final = "history"
COMPARE: Final = "compare"
SCHEDULE: Final = "schedule"
BOTH: Final[tuple[EntryPoint, ...]] = (PYTEST, VALIDATE)
#: the entry points of a validation run, whose options resolve through :func:`resolve`
RUN: Final[tuple[EntryPoint, ...]] = BOTH
#: every other subcommand: its options resolve through :func:`command_values`
COMMANDS: Final[tuple[EntryPoint, ...]] = (
    PROGRAM,
    SIMULATE,
    RECIPE,
    SNAPSHOT,
    EVIDENCE_VERIFY,
    PARSE_NCCL,
    PARSE_AIPERF,
    CNCF_CHECK,
    PARSE_DCGM,
    HISTORY,
    COMPARE,
    SCHEDULE,
)

#: ``store`` a value; ``store_true`` a switch; ``append`` a repeatable value; ``bool`` ``--x[=BOOL]``;
#: ``version`` prints ``default`` and exits
Action = Literal["store", "store_true", "append", "bool", "version"]

#: the settings object an option's ``setting`` names a field of: the run's :class:`Settings`, or
#: the evidence family's :class:`~aicr_pytest.evidence.settings.EvidenceSettings`
Model = Literal["run", "evidence"]

#: the pytest option group every entry goes to
PYTEST_GROUP = ("aicr", "aicr-pytest: validate a GPU Kubernetes cluster against a recipe")

#: ``aicr-pytest snapshot``'s ``--namespace`` default (``aicr snapshot``'s; validate's differs)
SNAPSHOT_NAMESPACE: Final = "default"

#: a single-value subcommand flag given twice (AICR's words)
MSG_REPEATED: Final = "flag --{flag} can only be specified once"
#: a subcommand's boolean environment variable that is not a boolean
MSG_BAD_ENV_BOOL: Final = 'invalid {name}="{value}" (use true or false)'


#: the prefix of every plain-pytest spelling but ``--recipe`` and ``--snapshot``: pytest options
#: share one namespace with every other plugin and conftest.py in the environment
PYTEST_PREFIX: Final = "--aicr-"


def namespaced(flags: tuple[str, ...]) -> tuple[str, ...]:
    """``--kubeconfig`` -> ``--aicr-kubeconfig`` (a flag already namespaced is kept)."""
    return tuple(f if f.startswith(PYTEST_PREFIX) else PYTEST_PREFIX + f.removeprefix("--") for f in flags)


@dataclass(frozen=True)
class Option:
    """One option, on every entry point that takes it."""

    #: the value's key: argparse dest under ``validate``, ``aicr_<name>`` under pytest
    name: str
    #: the long flag(s), on every entry point that takes the option
    flags: tuple[str, ...]
    help: str
    #: the field the value fills (of :class:`Settings`, or of the ``model`` named below;
    #: ``placement.<field>``: of the run's :class:`~aicr_pytest.core.settings.Placement`);
    #: ``None``: the entry point consumes it itself
    setting: str | None
    entry_points: tuple[EntryPoint, ...] = BOTH
    #: spellings that differ per entry point (pytest reserves lowercase short flags: ``-k``, ``-o``);
    #: plain pytest's default is each long flag namespaced (:func:`namespaced`)
    pytest_flags: tuple[str, ...] | None = None
    validate_flags: tuple[str, ...] | None = None
    action: Action = "store"
    type: Callable[[str], Any] | None = None
    #: what the run uses when neither the flag nor the environment variable gives a value
    default: Any = None
    #: how the help shows the default when it is not a plain value (e.g. a lookup order)
    default_text: str | None = None
    env: str | None = None
    metavar: str | None = None
    required_by: tuple[EntryPoint, ...] = ()
    #: an internal channel between entry points: not listed in any ``--help``
    hidden: bool = False
    model: Model = "run"
    #: dotted key under an AICRConfig's ``spec.validate`` (``--config``): flag/env > config > default
    config_key: str | None = None
    #: a positional argument (``flags`` is then its name), with ``nargs`` when it takes several
    positional: bool = False
    nargs: str | None = None
    choices: tuple[str, ...] | None = None
    #: a single-value subcommand flag that may be given only once (:data:`MSG_REPEATED`)
    once: bool = False
    #: the ``--help`` group it is listed under (a subcommand's); ``None``: the parser's own list
    group: str | None = None
    #: made by :meth:`on` from the option's one declaration (the table test counts declarations)
    derived: bool = field(default=False, repr=False, compare=False)

    def on(self, *entry_points: EntryPoint, **changes: Any) -> Option:
        """This option on other entry points (subcommands): the same name, and the same flags and
        help unless ``changes`` give them; every other attribute is ``changes``' or the default
        (a subcommand consumes its values itself: no ``setting``)."""
        flags = changes.pop("flags", self.flags)
        text = changes.pop("help", self.help)
        return Option(self.name, flags, text, None, entry_points, derived=True, **changes)

    def takes(self, entry_point: EntryPoint) -> bool:
        return entry_point in self.entry_points

    @property
    def run_option(self) -> bool:
        """An option of a validation run (plain pytest or ``validate``), not of another subcommand."""
        return any(ep in RUN for ep in self.entry_points)

    def flags_for(self, entry_point: EntryPoint) -> tuple[str, ...]:
        if self.positional:
            return (self.name,)
        if entry_point == PYTEST:
            return self.pytest_flags if self.pytest_flags is not None else namespaced(self.flags)
        return self.validate_flags if self.validate_flags is not None else self.flags

    def dest_for(self, entry_point: EntryPoint) -> str:
        return f"aicr_{self.name}" if entry_point == PYTEST else self.name

    def shown_default(self) -> str | None:
        """The default as the help states it (``None``: the help states none)."""
        if self.default_text is not None:
            return self.default_text
        if self.default is None or self.action in ("store_true", "append"):
            return None
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return str(self.default)

    def help_text(self) -> str:
        """The help line: a run option's ends ``(default: X; env AICR_Y)``; a subcommand's help is
        its own words (they state its default and env var where it has them)."""
        if not self.run_option:
            return self.help
        notes = []
        default = self.shown_default()
        if default is not None:
            notes.append(f"default: {default}")
        if self.env:
            notes.append(f"env {self.env}")
        return f"{self.help} ({'; '.join(notes)})" if notes else self.help

    def add_kwargs(self, entry_point: EntryPoint) -> dict[str, Any]:
        """Keyword arguments for ``add_argument``/``addoption``: the same on both parsers.

        The parser default is always ``None`` so that :func:`resolve` can tell "not given" from
        "given"; the declared default applies after the environment variable.
        """
        help_text = argparse.SUPPRESS if self.hidden else self.help_text()
        if self.action == "version":
            return {"action": "version", "version": self.default, "help": help_text}
        kwargs: dict[str, Any] = {} if self.positional else {"dest": self.dest_for(entry_point)}
        if not self.positional:
            # a subcommand's own default goes to argparse, unless the value still has an
            # environment variable or a repeat check to go through (:func:`command_values`)
            plain = entry_point in COMMANDS and not (self.env or self.once)
            kwargs["default"] = self.default if plain else None
        kwargs["help"] = help_text
        if self.action == "bool":
            kwargs.update(type=self.type or parse_bool, nargs="?", const=True)
            if self.once:
                kwargs["action"] = "append"
        else:
            kwargs["action"] = "append" if self.once else self.action
            if self.type is not None:
                kwargs["type"] = self.type
        if self.nargs is not None:
            kwargs["nargs"] = self.nargs
        if self.choices is not None:
            kwargs["choices"] = self.choices
        if self.metavar is not None and self.action != "store_true":
            kwargs["metavar"] = self.metavar
        if entry_point in self.required_by:
            kwargs["required"] = True
        return kwargs

    def long_flag(self, entry_point: EntryPoint) -> str:
        """The spelling :meth:`to_args` uses: the first long flag."""
        flags = self.flags_for(entry_point)
        return next((f for f in flags if f.startswith("--")), flags[0])

    def to_args(self, entry_point: EntryPoint, value: Any) -> list[str]:
        """The command-line arguments that give ``value`` on ``entry_point`` (``[]`` for none).

        Values are attached with ``=``, so one that starts with ``-`` is never read as a flag.
        """
        flag = self.long_flag(entry_point)
        if value is None:
            return []
        if self.action == "store_true":
            return [flag] if value else []
        if self.action == "append":
            return [f"{flag}={item}" for item in value]
        if self.action == "bool":
            return [f"{flag}={'true' if value else 'false'}"]
        return [f"{flag}={value}"]


def model_fields(values: Mapping[str, Any], model: Model, options: Sequence[Option]) -> dict[str, Any]:
    """``{field: value}`` of ``model``'s fields among ``options``, from values already resolved."""
    return {
        opt.setting: values.get(opt.name)
        for opt in options
        if opt.setting is not None and opt.model == model and opt.takes(PYTEST)
    }

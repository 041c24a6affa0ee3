"""THE option table: every option and argument of aicr-pytest, each declared once.

The mechanism lives here and in :mod:`.spec` (:class:`Option`); the rows live in one module per
topic, each a ``ROWS`` tuple:

* :mod:`.inputs`: what a run validates and against which cluster (recipe, snapshot, data,
  ``--config``, kubeconfig, namespace, the simulator, provider data);
* :mod:`.execution`: how it runs (phases, placement, timeouts, node health, logging);
* :mod:`.outputs`: where its reports go (CTRF, HTML);
* :mod:`.evidence`: evidence directory, CNCF evidence and submission kit, recipe evidence;
* :mod:`.subcommands` and :mod:`.snapshot_command`: the other subcommands.

An option a subcommand shares with a run (``--kubeconfig``, ``--namespace`` ...) is declared once, as
a named row, and reused there with :meth:`Option.on` (its own help, defaults and group).

One :class:`Option` per option says how it is spelled on each entry point (plain ``pytest``,
``aicr-pytest validate`` and every other subcommand), its action, type, default, environment
variable, metavar and help, and which :class:`~aicr_pytest.core.settings.Settings` field it fills.
Generated from :data:`OPTIONS`:

* ``pytest_addoption`` (:func:`add_pytest_options`), under ``pytest`` dest ``aicr_<name>``;
* every subcommand's argparse arguments (:func:`add_argparse_options`, the only place the command
  line declares any), dest ``<name>``;
* a run's options resolved once into one :class:`~.run.RunSettings` (flag, else the environment
  variable, else ``--config``, else the default; the ``--config`` file read once), by plain pytest
  (:func:`session_run`) and by ``validate`` (:func:`resolve_validate`), which hands its resolution
  to its pytest session (:class:`~.run.RunCarrier`) and passes on what was given
  (:meth:`~.run.RunSettings.pytest_args`); an xdist worker takes its controller's; its typed views
  are the run's :class:`Settings`, the evidence and the CNCF options;
* the evidence family's :class:`~aicr_pytest.evidence.settings.EvidenceSettings`
  (:func:`build_evidence_settings`), the same way, from the entries whose ``model`` is
  ``"evidence"`` (the family itself declares no option and never imports the plugin);
* the values the other subcommands run with (:func:`command_values`): a single-value flag given
  once, else its environment variable, else its default.  The families (snapshot, recipegen,
  evidence, nccl, inference) receive those values and declare no argument of their own.

An entry belongs either to a validation run (:data:`RUN`: pytest and ``validate``) or to other
subcommands (:data:`COMMANDS`); a name is unique per entry point.

Plain pytest spells every option ``--aicr-<flag>`` (``--aicr-kubeconfig``), except the design's
``--recipe`` and ``--snapshot``: pytest options share one namespace with every plugin and
``conftest.py`` in the environment, so a generic name (``--config``, ``--timeout``, ``--html``) would
clash.  ``aicr-pytest validate`` keeps ``aicr validate``'s names; ``validate`` forwards the
namespaced spellings (:meth:`~.run.RunSettings.pytest_args`); one of ours given again after ``--``
is refused when ``validate`` resolves it itself (:func:`after_dashdash`).

Adding a flag is one row in the module of its topic (plus, when checks read it, the ``Settings``
field it names; a test keeps the table and the model in step).  The help of every run option ends
the same way:
``(default: X; env AICR_Y)`` for whichever of the two it has; a subcommand's help is its own text.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from aicr_pytest.core.defaults import parse_bool
from aicr_pytest.core.errors import UsageError
from aicr_pytest.plugin.options import (
    evidence,
    execution,
    history,
    inputs,
    outputs,
    schedule_command,
    snapshot_command,
    subcommands,
)
from aicr_pytest.plugin.options.run import (
    CARRIER_NAME,
    RUN_OUTPUTS,
    SET_BY_VALIDATE,
    WORKER_KEY,
    RunCarrier,
    RunSettings,
    given_names,
)
from aicr_pytest.plugin.options.spec import (
    BOTH,
    CNCF_CHECK,
    COMMANDS,
    COMPARE,
    EVIDENCE_VERIFY,
    HISTORY,
    MSG_BAD_ENV_BOOL,
    MSG_REPEATED,
    PARSE_AIPERF,
    PARSE_DCGM,
    PARSE_NCCL,
    PROGRAM,
    PYTEST,
    PYTEST_GROUP,
    PYTEST_PREFIX,
    RECIPE,
    RUN,
    SCHEDULE,
    SIMULATE,
    SNAPSHOT,
    SNAPSHOT_NAMESPACE,
    VALIDATE,
    Action,
    EntryPoint,
    Model,
    Option,
    model_fields,
    namespaced,
)

if TYPE_CHECKING:  # models are imported when settings are built, not at pytest start-up
    from aicr_pytest.core.settings import Settings
    from aicr_pytest.evidence.settings import EvidenceSettings

#: every option, run options first (by topic), then the subcommands'; tests may extend it
OPTIONS: tuple[Option, ...] = (
    *inputs.ROWS,
    *execution.ROWS,
    *outputs.ROWS,
    *history.RUN_ROWS,
    *evidence.ROWS,
    *subcommands.ROWS,
    *snapshot_command.ROWS,
    *history.COMMAND_ROWS,
    *schedule_command.ROWS,
)


def table(options: Sequence[Option] | None = None) -> Sequence[Option]:
    """``options``, or :data:`OPTIONS` as it is now (read at call time, so a test can extend it)."""
    return OPTIONS if options is None else options


def entries(entry_point: EntryPoint, options: Sequence[Option] | None = None) -> list[Option]:
    """The options ``entry_point`` takes, in table order."""
    return [opt for opt in table(options) if opt.takes(entry_point)]


def by_name(
    options: Sequence[Option] | None = None, entry_point: EntryPoint | None = None
) -> dict[str, Option]:
    """``{name: option}`` of ``entry_point`` (``None``: the run options, pytest's and validate's)."""
    return {
        opt.name: opt
        for opt in table(options)
        if (opt.takes(entry_point) if entry_point is not None else opt.run_option)
    }


class _AddOption(Protocol):
    def addoption(self, *opts: str, **attrs: Any) -> None: ...


#: another plugin or ``conftest.py`` registers a pytest option of ours (pytest's own error names no plugin)
MSG_CLASH = (
    "option {flag} belongs to aicr-pytest (pytest plugin 'aicr'), and another plugin or conftest.py "
    "registers it too: rename that option, or run without aicr-pytest (-p no:aicr)"
)


def clash_message(exc: BaseException, options: Sequence[Option] | None = None) -> str | None:
    """:data:`MSG_CLASH` for pytest's error on registering an option twice (argparse's conflict or
    pytest's shared ``dest``) when the option is ours; ``None`` when it is not."""
    text = str(exc)
    ours = {opt.dest_for(PYTEST): opt.long_flag(PYTEST) for opt in entries(PYTEST, options)}
    flags = set(ours.values())
    named = [f for f in re.findall(r"--[a-z][a-z0-9-]*", text) if f in flags]
    named += [ours[d] for d in re.findall(r"'(aicr_[a-z0-9_]+)'", text) if d in ours]
    return MSG_CLASH.format(flag=named[0]) if named else None


def add_pytest_options(group: _AddOption, options: Sequence[Option] | None = None) -> None:
    """Every pytest entry, on a pytest ``OptionGroup`` (or anything with ``addoption``)."""
    for opt in table(options):
        if opt.takes(PYTEST):
            group.addoption(*opt.flags_for(PYTEST), **opt.add_kwargs(PYTEST))


def add_argparse_options(
    parser: argparse.ArgumentParser,
    options: Sequence[Option] | None = None,
    entry_point: EntryPoint = VALIDATE,
) -> None:
    """Every entry of ``entry_point`` (a subcommand, or ``aicr-pytest`` itself), on its argparse
    parser, each under its ``group``: the one place the command line's arguments are declared."""
    groups: dict[str, Any] = {}
    for opt in entries(entry_point, options):
        target: Any = parser
        if opt.group is not None:
            if opt.group not in groups:
                groups[opt.group] = parser.add_argument_group(opt.group)
            target = groups[opt.group]
        target.add_argument(*opt.flags_for(entry_point), **opt.add_kwargs(entry_point))


def values_from(
    namespace: Any, entry_point: EntryPoint, options: Sequence[Option] | None = None
) -> dict[str, Any]:
    """``{name: value as parsed}`` for the entry point's options (``None``: not given)."""
    return {
        opt.name: getattr(namespace, opt.dest_for(entry_point), None)
        for opt in table(options)
        if opt.takes(entry_point)
    }


def any_given(namespace: Any, options: Sequence[Option] | None = None) -> bool:
    """Whether any pytest option of ours was given (a run is asked for): a value, a switch set."""
    return any(value not in (None, False, []) for value in values_from(namespace, PYTEST, options).values())


def resolve(
    opt: Option,
    value: Any,
    environ: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> Any:
    """The option's value for this run: the flag, else its environment variable, else the
    ``--config`` value (``config`` keyed by ``spec.validate`` path), else its default.

    For an option with an environment variable an empty flag value counts as not given; a switch's
    environment variable that is not a boolean is a :class:`UsageError`.  A switch given on the
    command line (``store_true``) counts as given only when true, so a config ``true`` is kept.
    """
    env = os.environ if environ is None else environ
    if opt.action == "store_true" and value is False:
        value = None
    if value is not None and not (opt.env and value == ""):
        return value
    if opt.env and env.get(opt.env):
        raw = env[opt.env]
        if opt.action in ("store_true", "bool"):
            try:
                return parse_bool(raw)
            except argparse.ArgumentTypeError:
                raise UsageError(f"{opt.env}={raw!r}: invalid boolean value (use true or false)") from None
        return opt.type(raw) if opt.type is not None else raw
    if config and opt.config_key and opt.config_key in config:
        return config[opt.config_key]
    return opt.default


def _single(opt: Option, entry_point: EntryPoint, value: Any) -> Any:
    """The one value of a flag that may be given once (``None``: not given)."""
    if not value:
        return None
    if len(value) > 1:
        raise UsageError(MSG_REPEATED.format(flag=opt.long_flag(entry_point).lstrip("-")))
    return value[0]


def _command_env(opt: Option, environ: Mapping[str, str]) -> Any:
    """A subcommand option's environment variable (``None``: unset or empty)."""
    raw = environ.get(opt.env) if opt.env else None
    if not raw or (opt.action == "bool" and not raw.strip()):
        return None
    if opt.action == "bool":
        try:
            return parse_bool(raw)
        except argparse.ArgumentTypeError:
            raise UsageError(MSG_BAD_ENV_BOOL.format(name=opt.env, value=raw)) from None
    return opt.type(raw) if opt.type is not None else raw


def command_values(
    namespace: Any,
    entry_point: EntryPoint,
    options: Sequence[Option] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``{name: value}`` of a subcommand as parsed: a flag given once is unwrapped (given twice, a
    :class:`UsageError`; every flag is checked before anything else); an option not given takes
    its environment variable, else its default.  An empty flag value is kept (the subcommand
    judges it)."""
    env = os.environ if environ is None else environ
    opts = entries(entry_point, options)
    values = values_from(namespace, entry_point, opts)
    for opt in opts:
        if opt.once:
            values[opt.name] = _single(opt, entry_point, values[opt.name])
    for opt in opts:
        if values[opt.name] is None and not opt.positional:
            from_env = _command_env(opt, env)
            values[opt.name] = from_env if from_env is not None else opt.default
    return values


def config_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``spec.validate`` values of ``--config`` (``{}`` without one; raises UsageError)."""
    path = values.get("config")
    if not path:
        return {}
    from aicr_pytest.core.aicrconfig import load_validate_config

    return load_validate_config(str(path))


def resolved(
    values: Mapping[str, Any],
    entry_point: EntryPoint,
    options: Sequence[Option] | None = None,
    environ: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every option of ``entry_point`` resolved (see :func:`resolve`)."""
    return {
        opt.name: resolve(opt, values.get(opt.name), environ, config)
        for opt in table(options)
        if opt.takes(entry_point)
    }


def fields_of(
    values: Mapping[str, Any], model: Model, options: Sequence[Option] | None = None
) -> dict[str, Any]:
    """``{field: value}`` of ``model``'s fields, from values already resolved (:func:`resolved`)."""
    return model_fields(values, model, table(options))


def setting_values(
    values: Mapping[str, Any],
    model: Model,
    options: Sequence[Option] | None = None,
    environ: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``{field: resolved value}`` of ``model``'s fields, from pytest option values."""
    mine = [opt for opt in table(options) if opt.setting is not None and opt.model == model]
    return fields_of(resolved(values, PYTEST, mine, environ, config), model, mine)


def run_settings(
    flags: Mapping[str, Any],
    options: Sequence[Option] | None = None,
    environ: Mapping[str, str] | None = None,
) -> RunSettings:
    """A plain pytest session's options (``flags``: the pytest values as parsed), resolved once:
    the ``--config`` file read once (raises ``UsageError``)."""
    config = config_values(flags)
    return RunSettings(
        resolved(flags, PYTEST, options, environ, config), given_names(flags), tuple(table(options))
    )


#: a session's :class:`RunSettings` (:func:`session_run`)
SESSION_RUN = pytest.StashKey[RunSettings]()


def session_run(config: pytest.Config) -> RunSettings:
    """The session's :class:`RunSettings`, kept in ``config.stash``: the one ``aicr-pytest
    validate`` handed over (:class:`RunCarrier`), or an xdist worker's controller
    (``workerinput``), else this session's options resolved once (:func:`run_settings`).  The run's
    settings, the CNCF and the evidence options all read it.  Raises ``UsageError`` (nothing is
    kept then)."""
    run = config.stash.get(SESSION_RUN, None)
    if run is None:
        carrier = config.pluginmanager.get_plugin(CARRIER_NAME)
        from_controller = getattr(config, "workerinput", {}).get(WORKER_KEY)
        if isinstance(carrier, RunCarrier):
            run = carrier.run
        elif from_controller is not None:
            run = RunSettings.from_worker(from_controller, table())
        else:
            run = run_settings(values_from(config.option, PYTEST))
        config.stash[SESSION_RUN] = run
    return run


#: an option ``validate`` resolves itself, given again after ``--`` (in pytest's spelling)
MSG_AFTER_DASHDASH = "{flag} after --: validate sets it from its own options; give {instead} before --"


def after_dashdash(args: Sequence[str], options: Sequence[Option] | None = None) -> dict[str, Any]:
    """``{name: value}`` of the pytest options of ours among ``validate``'s arguments after ``--``
    (``--aicr-no-bundled-checks``); one that ``validate`` resolves itself (it has a ``validate``
    spelling, or :data:`SET_BY_VALIDATE`) would disagree with it: a :class:`UsageError`."""
    flags = {flag: opt for opt in entries(PYTEST, options) for flag in opt.flags_for(PYTEST)}
    found: dict[str, Any] = {}
    rest = list(args)
    for i, arg in enumerate(rest):
        flag, eq, text = arg.partition("=")
        opt = flags.get(flag)
        if opt is None:
            continue
        if opt.takes(VALIDATE) or opt.name in SET_BY_VALIDATE:
            instead = SET_BY_VALIDATE.get(opt.name) or opt.long_flag(VALIDATE)
            raise UsageError(MSG_AFTER_DASHDASH.format(flag=flag, instead=instead))
        value: Any = True if opt.action == "store_true" and not eq else text
        if not eq and opt.action in ("store", "append"):
            value = rest[i + 1] if i + 1 < len(rest) else None
        if opt.type is not None and isinstance(value, str):
            value = opt.type(value)
        found[opt.name] = [*found.get(opt.name, []), value] if opt.action == "append" else value
    return found


def resolve_validate(
    flags: Mapping[str, Any],
    after: Mapping[str, Any] | None = None,
    options: Sequence[Option] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], RunSettings]:
    """``validate``'s options resolved once (the ``--config`` file read once): its own values (for
    its :class:`~aicr_pytest.plugin.options.request.ValidateRequest`) and the :class:`RunSettings`
    its pytest session takes, equal to what plain pytest resolves from the same options.

    ``after``: our pytest options given after ``--`` (:func:`after_dashdash`).  An empty value
    counts as not given on the pytest side (``--data ''`` means no data tree)."""
    config = config_values(flags)
    values = resolved(flags, VALIDATE, options, environ, config)
    extra = after or {}
    session: dict[str, Any] = {}
    given: dict[str, Any] = {}
    for opt in entries(PYTEST, options):
        value = flags.get(opt.name) if opt.takes(VALIDATE) else extra.get(opt.name)
        if value == "" and VALIDATE not in opt.required_by:
            value = None
        given[opt.name] = value
        shared = opt.takes(VALIDATE) and value is not None
        session[opt.name] = values[opt.name] if shared else resolve(opt, value, environ, config)
    return values, RunSettings(session, given_names(given), tuple(table(options)))


def build_run_settings(
    values: Mapping[str, Any],
    options: Sequence[Option] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """The run's :class:`Settings` from pytest option values and ``--config`` (raises ``UsageError``)."""
    from aicr_pytest.core.settings import build_settings

    return build_settings(setting_values(values, "run", options, environ, config_values(values)))


def build_evidence_settings(
    values: Mapping[str, Any],
    options: Sequence[Option] | None = None,
    environ: Mapping[str, str] | None = None,
) -> EvidenceSettings:
    """The evidence options of a run, from pytest option values (raises ``UsageError``)."""
    from aicr_pytest.evidence import settings as evidence_settings

    return evidence_settings.build_evidence_settings(setting_values(values, "evidence", options, environ))


__all__ = [
    "BOTH",
    "CARRIER_NAME",
    "CNCF_CHECK",
    "COMMANDS",
    "COMPARE",
    "EVIDENCE_VERIFY",
    "HISTORY",
    "MSG_AFTER_DASHDASH",
    "MSG_BAD_ENV_BOOL",
    "MSG_CLASH",
    "MSG_REPEATED",
    "OPTIONS",
    "PARSE_AIPERF",
    "PARSE_DCGM",
    "PARSE_NCCL",
    "PROGRAM",
    "PYTEST",
    "PYTEST_GROUP",
    "PYTEST_PREFIX",
    "RECIPE",
    "RUN",
    "RUN_OUTPUTS",
    "SCHEDULE",
    "SESSION_RUN",
    "SET_BY_VALIDATE",
    "SIMULATE",
    "SNAPSHOT",
    "SNAPSHOT_NAMESPACE",
    "VALIDATE",
    "WORKER_KEY",
    "Action",
    "EntryPoint",
    "Model",
    "Option",
    "RunCarrier",
    "RunSettings",
    "add_argparse_options",
    "add_pytest_options",
    "after_dashdash",
    "any_given",
    "build_evidence_settings",
    "build_run_settings",
    "by_name",
    "clash_message",
    "command_values",
    "config_values",
    "entries",
    "fields_of",
    "given_names",
    "namespaced",
    "parse_bool",
    "resolve",
    "resolve_validate",
    "resolved",
    "run_settings",
    "session_run",
    "setting_values",
    "table",
    "values_from",
]

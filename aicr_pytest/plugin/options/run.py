"""A run's options, resolved once: :class:`RunSettings`, the one object both entry points share.

Plain pytest resolves its session's options once (:func:`aicr_pytest.plugin.options.session_run`);
``aicr-pytest validate`` resolves its own once (:func:`aicr_pytest.plugin.options.resolve_validate`),
into the same type, and hands the result to its in-process pytest session as a plugin object
(:class:`RunCarrier`), so the session neither parses aicr-pytest's options again nor reads
``--config`` a second time.  Everything downstream reads the typed views: :attr:`RunSettings.settings`
(the run's :class:`~aicr_pytest.core.settings.Settings`), :attr:`RunSettings.evidence`,
:attr:`RunSettings.cncf` and the few properties below.

Light on purpose (pytest imports it at start-up): the models are imported when a view is built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final

from aicr_pytest.plugin.options.spec import PYTEST, Option, model_fields

if TYPE_CHECKING:
    from aicr_pytest.core.settings import Settings
    from aicr_pytest.evidence.cncf.settings import CncfSettings
    from aicr_pytest.evidence.settings import EvidenceSettings

#: the pytest options ``validate`` sets itself, each with the ``validate`` option that drives it
SET_BY_VALIDATE: Final = {
    "check_kubeconfig": "--kubeconfig",
    "ctrf_report": "-o/--output",
    "simulated": "--simulate",
}
#: the run's outputs that, next to ``--cncf-submission``, make the phases run too
RUN_OUTPUTS: Final = ("emit_attestation", "html", "ctrf_report")
#: the name :class:`RunCarrier` is registered under (``config.pluginmanager.get_plugin``)
CARRIER_NAME: Final = "aicr-run-settings"
#: the key of the controller's :class:`RunSettings` in an xdist worker's ``workerinput``
WORKER_KEY: Final = "aicr_run_settings"


def given_names(flags: Mapping[str, Any]) -> frozenset[str]:
    """The options given a value on the command line (a switch set, a list not empty)."""
    return frozenset(name for name, value in flags.items() if value not in (None, False, []))


@dataclass(frozen=True)
class RunSettings:
    """Every pytest-side option of a run, resolved once (the flag, else its environment variable,
    else ``--config``, else the default), and which of them the command line gave.

    Equal for equal inputs, whichever entry point resolved it; its typed views are built on first
    use (a bad value raises :class:`~aicr_pytest.core.errors.UsageError` there, where the session
    reports it as it always has)."""

    #: ``{option name: resolved value}`` for every option plain pytest takes
    values: Mapping[str, Any]
    #: the options the command line gave (``validate``: also those it set itself)
    given: frozenset[str] = frozenset()
    #: the option table it was resolved against (not part of its value)
    table: tuple[Option, ...] = field(default=(), compare=False, repr=False)

    def given_with(self, **values: Any) -> RunSettings:
        """This resolution with ``values`` given on the command line (``validate``'s own: the
        simulated cluster's kubeconfig, the captured snapshot, :data:`SET_BY_VALIDATE`)."""
        return RunSettings({**self.values, **values}, self.given | given_names(values), self.table)

    def to_worker(self) -> dict[str, Any]:
        """This resolution as an xdist worker receives it (plain values): :meth:`from_worker`."""
        return {"values": dict(self.values), "given": sorted(self.given)}

    @classmethod
    def from_worker(cls, wire: Mapping[str, Any], table: Sequence[Option]) -> RunSettings:
        return cls(dict(wire["values"]), frozenset(wire["given"]), tuple(table))

    @cached_property
    def settings(self) -> Settings:
        """The run's :class:`Settings` (raises ``UsageError``)."""
        from aicr_pytest.core.settings import build_settings

        return build_settings(model_fields(self.values, "run", self.table))

    @cached_property
    def evidence(self) -> EvidenceSettings:
        """The recipe-evidence options (raises ``UsageError``)."""
        from aicr_pytest.evidence.settings import build_evidence_settings

        return build_evidence_settings(model_fields(self.values, "evidence", self.table))

    @cached_property
    def cncf(self) -> CncfSettings:
        """The CNCF submission options, validated (raises ``UsageError``)."""
        from aicr_pytest.evidence.cncf.settings import settings_from_values

        return settings_from_values(self.values)

    @property
    def inputs(self) -> list[tuple[str, str | None]]:
        """The ``(flag, path)`` of every file the run reads (no output may land on one)."""
        from aicr_pytest.core.writable import inputs_of

        return inputs_of(dict(self.values))

    @property
    def cncf_submission(self) -> bool:
        return bool(self.values.get("cncf_submission"))

    @property
    def alongside(self) -> bool:
        """``--cncf-submission`` with a recipe and one of :data:`RUN_OUTPUTS`: the phases run in
        the same session, and the collector after them."""
        outputs = any(self.values.get(name) for name in RUN_OUTPUTS)
        return self.cncf_submission and bool(self.values.get("recipe")) and outputs

    @property
    def no_bundled_checks(self) -> bool:
        return bool(self.values.get("no_bundled_checks"))

    @property
    def run_timeout(self) -> str | None:
        """``--timeout`` when the command line gave it: only then does it also bound the whole run
        (its 5m default is the snapshot agent's wait)."""
        return str(self.values["timeout"]) if "timeout" in self.given else None

    def pytest_args(self, leave_out: frozenset[str] = frozenset()) -> list[str]:
        """The pytest arguments that give what the command line gave, in table order (``validate``
        passes them on, so its session's ``config.option`` agrees with this object); ``leave_out``:
        options already among the arguments."""
        return [
            arg
            for opt in self.table
            if opt.takes(PYTEST) and opt.name in self.given and opt.name not in leave_out
            for arg in opt.to_args(PYTEST, self.values.get(opt.name))
        ]


class RunCarrier:
    """pytest plugin object: hands ``validate``'s :class:`RunSettings` to its in-process session.

    pluggy names a plugin object by its ``__name__`` (:data:`CARRIER_NAME`), so the session finds
    it with ``config.pluginmanager.get_plugin``."""

    def __init__(self, run: RunSettings) -> None:
        self.__name__ = CARRIER_NAME
        self.run = run


__all__ = [
    "CARRIER_NAME",
    "RUN_OUTPUTS",
    "SET_BY_VALIDATE",
    "WORKER_KEY",
    "RunCarrier",
    "RunSettings",
    "given_names",
]

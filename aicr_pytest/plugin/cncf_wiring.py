"""CNCF AI-conformance evidence in the pytest plugin: ``--cncf-submission`` and path A.

A feature module (:mod:`~aicr_pytest.plugin.features`); its hooks call the functions below and
unregister its objects in ``pytest_unconfigure``.

* :func:`configure` (``pytest_aicr_configure``, first of the features): the options
  ``--cncf-submission``, ``--feature``, ``--evidence-dir``, ``--cncf-checklist`` and its metadata
  (flags or ``--config``) are checked and the template loaded before anything else happens (one
  line, exit 4 under pytest, 2 under ``aicr-pytest validate``).  With ``--cncf-submission`` the
  recipe, when given, is loaded and its GPU allocation policy resolved (errors are usage errors
  too), a :class:`CncfSubmission` is registered, and the phases are not prepared at all
  (``pytest_aicr_replaces_run``).
* :func:`submit` (``pytest_aicr_main``, after ``pytest_configure``): with ``--cncf-submission``
  the session is replaced by the registered :class:`CncfSubmission`, which runs the collector
  (:mod:`aicr_pytest.evidence.cncf.collector`), the way pytest's own ``--markers`` replaces it,
  and with ``--cncf-checklist`` writes ``PRODUCT.yaml`` and ``results/``
  (:mod:`~aicr_pytest.evidence.cncf.kit`).  It publishes the result through
  ``pytest_aicr_cncf_finished`` and returns pytest's code: 0, or 1 when a feature FAILed or the
  overall budget ran out (``aicr-pytest validate`` maps the result to 8 or 5); Ctrl-C/SIGTERM
  clean up and end 2.
* one invocation (:func:`alongside_run`): ``--cncf-submission`` with a ``--recipe`` and one of the
  run's outputs (``--emit-attestation``, ``--html``, ``--ctrf-report``/``-o``) runs the phases as
  well, so each output is what it would be alone; the collector runs on the controller once the
  phases are over (:meth:`CncfSubmission.pytest_runtestloop`), and a FAIL fails the run.
* :class:`CncfRenderer` (``--evidence-dir`` without ``--cncf-submission``, registered by
  :func:`register_renderer` from ``pytest_aicr_configure_run`` on the controller of an active
  run): path A, the run's CNCF conformance checks rendered from the final CTRF document
  (``pytest_aicr_report``); a failure is noted as the run's ``render_error``.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence.cncf import settings as cncf_settings
from aicr_pytest.plugin import options
from aicr_pytest.plugin.state import ClusterHandle, OutcomeNotes, is_worker

if TYPE_CHECKING:
    from aicr_pytest.core.settings import Settings
    from aicr_pytest.evidence.cncf.collector import SubmissionResult
    from aicr_pytest.plugin.state import FinishedRun

#: what :class:`CncfRenderer` reports when the renderer fails (``validate`` exits 8)
MSG_RENDER_FAILED = "[INTERNAL] evidence rendering failed"
#: the plugin names of the two objects (``config.pluginmanager.get_plugin``)
SUBMISSION_NAME = "aicr-cncf-submission"
RENDERER_NAME = "aicr-cncf-evidence"
#: the CNCF settings :func:`configure` validated, for the renderer the run registers later
SETTINGS_KEY = pytest.StashKey[cncf_settings.CncfSettings]()


@dataclass(frozen=True)
class SubmissionInputs:
    """What the recipe gives the collector."""

    component_refs: tuple[dict[str, Any], ...] = ()
    has_recipe: bool = False
    allocation_policy: str = "unspecified"


def validate(config: pytest.Config) -> cncf_settings.CncfSettings:
    try:
        return options.session_run(config).cncf
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None


def load_inputs(settings: Settings, handle: ClusterHandle) -> SubmissionInputs:
    """The recipe's componentRefs and allocation policy (no recipe: none, ``unspecified``)."""
    if settings.recipe is None:
        return SubmissionInputs()
    from aicr_pytest.core import components
    from aicr_pytest.core.datatree import DataTree, embedded_data_root
    from aicr_pytest.core.policy import resolve_allocation_policy
    from aicr_pytest.core.recipe import is_overlay, parse_recipe
    from aicr_pytest.core.sources import load_yaml_document

    try:
        raw = load_yaml_document(settings.recipe, "recipe", handle.read_configmap)
        data = DataTree(embedded_data_root(), settings.data)
        if is_overlay(raw):
            from aicr_pytest.recipegen.hydrate import hydrate_overlay

            raw, _note = hydrate_overlay(raw, settings.recipe, data)  # type: ignore[arg-type]
        recipe, _ = parse_recipe(raw, settings.recipe)
        policy = resolve_allocation_policy(recipe, data)
    except UsageError as err:
        raise pytest.UsageError(str(err)) from None
    return SubmissionInputs(
        component_refs=tuple(components.ref_dict(r) for r in recipe.component_refs),
        has_recipe=True,
        allocation_policy=policy.mode,
    )


def _kubeconfig_paths(settings: Settings) -> list[str]:
    paths = [settings.kubeconfig] if settings.kubeconfig else []
    paths += [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    paths.append(str(Path("~/.kube/config").expanduser()))
    return [p for p in paths if p]


def _say(config: pytest.Config, line: str) -> None:
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(line)
    else:
        print(line, file=sys.stderr, flush=True)


class CncfSubmission:
    """``--cncf-submission``: the collector that replaces the test session, with what it needs;
    ``alongside``: the collector that runs after the phases of the same session."""

    def __init__(
        self, cncf: cncf_settings.CncfSettings, settings: Settings, *, alongside: bool = False
    ) -> None:
        self.cncf = cncf
        self.settings = settings
        self.alongside = alongside
        self.cluster_handle = ClusterHandle(settings)
        self.inputs = load_inputs(settings, self.cluster_handle)
        self.failed = False

    def pytest_aicr_replaces_run(self, config: pytest.Config) -> bool | None:
        """Alone, the collector replaces the session: no phases are prepared."""
        return None if self.alongside else True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """Alongside a run: collect once the phases are over (also after ``-x`` stopped them; not
        after ``--collect-only``, nor after an interrupt, which ends the session before this)."""
        result = yield
        if self.alongside and not session.config.option.collectonly:
            outcome = self.run(session.config)
            session.config.hook.pytest_aicr_cncf_finished(config=session.config, result=outcome)
            self.failed = outcome.exit_code() != 0
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def run(self, config: pytest.Config) -> SubmissionResult:
        """Connect and collect every requested feature (raises ``pytest.UsageError``,
        ``KeyboardInterrupt``)."""
        from aicr_pytest.core.clock import SYSTEM_CLOCK
        from aicr_pytest.evidence.cncf import collector
        from aicr_pytest.evidence.cncf.secrets import secret_values
        from aicr_pytest.kube.run import RunScope, install_signal_handlers

        assert self.cncf.evidence_dir is not None
        settings, inputs = self.settings, self.inputs
        clock = config.hook.pytest_aicr_cncf_clock(config=config) or SYSTEM_CLOCK
        try:
            cluster = self.cluster_handle.get()
        except UsageError as err:
            raise pytest.UsageError(str(err)) from None
        run_id = uuid.uuid4().hex[:8]
        plan = collector.SubmissionPlan(
            features=self.cncf.features,
            evidence_dir=self.cncf.evidence_dir,
            component_refs=inputs.component_refs,
            has_recipe=inputs.has_recipe,
            allocation_policy=inputs.allocation_policy,
            placement=settings.placement,
            env=collector.checks_env(os.environ),
            secrets=secret_values(os.environ, _kubeconfig_paths(settings)),
        )

        def new_run() -> RunScope:
            return RunScope(
                lambda: cluster,
                run_id,
                clock=clock,
                no_cleanup=settings.no_cleanup,
                allow_fake_nodes=settings.allow_fake_nodes,
            )

        _say(config, f"CNCF submission evidence: {len(plan.features)} feature(s) -> {plan.evidence_dir}")
        with install_signal_handlers():
            result = collector.collect(plan, cluster, new_run, clock=clock, emit=lambda s: _say(config, s))
        for line in result.summary_lines():
            _say(config, line)
        if self.cncf.checklist is not None:  # --cncf-checklist: PRODUCT.yaml and the hybrid files
            from aicr_pytest.evidence.cncf.kit import write_kit

            kit = write_kit(
                self.cncf.checklist, result, plan.evidence_dir, self.cncf.metadata, secrets=plan.secrets
            )
            for line in kit.lines:
                _say(config, line)
        _mark_simulated(config, settings, plan.evidence_dir)
        return result


class CncfRenderer:
    """``--evidence-dir`` without ``--cncf-submission`` (path A): the run's CNCF conformance checks
    rendered from the final CTRF document; :attr:`error` is why that failed (``validate`` exits 8)."""

    def __init__(self, cncf: cncf_settings.CncfSettings) -> None:
        assert cncf.evidence_dir is not None
        self.evidence_dir = cncf.evidence_dir
        self.error: str | None = None

    def pytest_aicr_report(self, session: pytest.Session, report: dict[str, Any], run: FinishedRun) -> None:
        self.error = self.render(session.config, report, run.inputs.settings)
        if self.error is not None:
            run.notes.render_error = self.error
        if self.error is not None and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def render(self, config: pytest.Config, report: dict[str, Any], settings: Settings) -> str | None:
        """Render the files; the error line when rendering failed (``None``: fine)."""
        from aicr_pytest.evidence.cncf import renderer
        from aicr_pytest.evidence.cncf.secrets import secret_values

        try:
            written = renderer.render(
                report, self.evidence_dir, secrets=secret_values(os.environ, _kubeconfig_paths(settings))
            )
        except (renderer.RenderError, OSError) as exc:
            line = f"{MSG_RENDER_FAILED}: {exc}"
            _say(config, f"ERROR: {line}")
            return line
        if not written:
            _say(config, f"WARNING: {renderer.MSG_NOTHING}")
        else:
            _say(config, f"CNCF evidence: {len(written)} file(s) written to {self.evidence_dir}")
        try:
            _mark_simulated(config, settings, self.evidence_dir)
        except OSError as exc:
            line = f"{MSG_RENDER_FAILED}: {exc}"
            _say(config, f"ERROR: {line}")
            return line
        return None


def _mark_simulated(config: pytest.Config, settings: Settings, evidence_dir: Path) -> None:
    """A ``--simulate`` run's CNCF evidence says so in every file it wrote (evidence.cncf.simulated)."""
    if not settings.simulated or settings.no_cluster:
        return
    from aicr_pytest.evidence.cncf import simulated

    simulated.mark(evidence_dir, settings.simulated)
    _say(config, simulated.MSG_MARKED.format(path=evidence_dir / simulated.MARKER_FILE))


def configure(config: pytest.Config, settings: Settings) -> cncf_settings.CncfSettings:
    """Validate the CNCF options (every process); with ``--cncf-submission`` register the collector
    (alongside a run: on the controller only)."""
    cncf = validate(config)  # before anything touches the cluster
    config.stash[SETTINGS_KEY] = cncf
    if not cncf.submission:
        return cncf
    alongside = alongside_run(config)
    if not alongside or not is_worker(config):
        config.pluginmanager.register(CncfSubmission(cncf, settings, alongside=alongside), SUBMISSION_NAME)
    return cncf


def _session_run(config: pytest.Config) -> options.RunSettings | None:
    try:
        return options.session_run(config)
    except UsageError:
        return None  # pytest_configure says why


def alongside_run(config: pytest.Config) -> bool:
    """``--cncf-submission`` with a recipe and one of the run's outputs: the phases run in the
    same session, and the collector after them (the guide: one invocation writes both)."""
    run = _session_run(config)
    return run is not None and run.alongside


def register_renderer(config: pytest.Config, cncf: cncf_settings.CncfSettings) -> None:
    """Path A: on the controller of an active run with ``--evidence-dir``, render after the run."""
    if cncf.render_after_run:
        config.pluginmanager.register(CncfRenderer(cncf), RENDERER_NAME)


def wanted(config: pytest.Config) -> bool:
    """``--cncf-submission`` replaces the session: given (not only ``--help``/``--version``) and
    not :func:`alongside_run`."""
    run = _session_run(config)
    if run is None or not run.cncf_submission:
        return False
    return not (config.option.help or config.option.version or run.alongside)


def submit(config: pytest.Config) -> int:
    """Collect after ``pytest_configure`` ran; pytest's exit code (see the module doc)."""
    submission = config.pluginmanager.get_plugin(SUBMISSION_NAME)
    assert isinstance(submission, CncfSubmission)
    try:
        result = submission.run(config)
    except KeyboardInterrupt:
        _say(config, "CNCF submission evidence: interrupted")
        return int(pytest.ExitCode.INTERRUPTED)
    config.hook.pytest_aicr_cncf_finished(config=config, result=result)
    return int(pytest.ExitCode.OK if result.exit_code() == 0 else pytest.ExitCode.TESTS_FAILED)


# --- the feature's hooks ------------------------------------------------------------------------


def pytest_aicr_main(config: pytest.Config) -> int | None:
    """``--cncf-submission``: the evidence collector instead of a test session, the way
    pytest's own ``--markers`` replaces it."""
    if not wanted(config):
        return None
    config._do_configure()  # pytest_configure: option validation, recipe and policy (usage errors)
    return submit(config)


# first of the features: the CNCF options are checked before any other's
@pytest.hookimpl(tryfirst=True)
def pytest_aicr_configure(config: pytest.Config, settings: Settings) -> None:
    configure(config, settings)


def pytest_aicr_configure_run(config: pytest.Config, notes: OutcomeNotes) -> None:
    cncf = config.stash.get(SETTINGS_KEY, None)
    if cncf is not None and not is_worker(config):
        register_renderer(config, cncf)


def pytest_unconfigure(config: pytest.Config) -> None:
    config.pluginmanager.unregister(name=RENDERER_NAME)
    config.pluginmanager.unregister(name=SUBMISSION_NAME)


__all__ = [
    "MSG_RENDER_FAILED",
    "RENDERER_NAME",
    "SETTINGS_KEY",
    "SUBMISSION_NAME",
    "CncfRenderer",
    "CncfSubmission",
    "SubmissionInputs",
    "alongside_run",
    "configure",
    "load_inputs",
    "pytest_aicr_configure",
    "pytest_aicr_configure_run",
    "pytest_aicr_main",
    "pytest_unconfigure",
    "register_renderer",
    "submit",
    "validate",
    "wanted",
]

"""``aicr-pytest``: AICR-compatible command line built on ``pytest.main``.

Subcommands:

* ``validate`` — mirrors ``aicr validate`` (flags, CTRF output, exit codes) and runs the bundled
  checks through pytest.  Arguments after ``--`` go to pytest unchanged.
* ``simulate`` — serve a simulated GPU cluster on loopback (for trying the flow without GPUs).
* ``parse nccl|aiperf|dcgm`` — run a check's parser on a saved log, for offline debugging.
* ``recipe`` — generate a recipe from criteria, like ``aicr recipe`` (:mod:`aicr_pytest.recipegen`).
* ``snapshot`` — capture a live cluster's snapshot, like ``aicr snapshot`` (:mod:`aicr_pytest.snapshot`).
* ``evidence verify`` — verify a recipe evidence bundle (pointer, directory or OCI reference).
* ``history`` / ``compare`` — the runs ``--history`` recorded and their trends; two CTRF reports
  side by side (:mod:`aicr_pytest.plugin.history_cli`).
* ``schedule`` — render and apply the CronJob (and its RBAC) that runs ``validate`` in the cluster
  on a schedule (:mod:`aicr_pytest.schedule`); ``--dry-run`` prints it, ``--delete`` removes it.
* ``cncf check`` — apply the CNCF AI Conformance program's submission rules to a PRODUCT.yaml,
  offline (:mod:`aicr_pytest.evidence.cncf.offline_check`).

Exit codes of ``validate``: 0 all passed/skipped; 2 invalid input or readiness pre-flight
failure; 5 interrupted (SIGINT/SIGTERM), or the snapshot agent timed out; 6 recipe evidence could
not be emitted (``--emit-attestation``: bundle, push or signing failed, or keyless signing was
declined); 8 a phase failed or ended ``other``, or the snapshot agent failed.  Without
``--snapshot`` (and without ``--no-cluster``) ``validate`` captures one first
(:mod:`aicr_pytest.snapshot.capture`).

``evidence verify`` exits 0 (valid, all recorded phases passed), 1 (valid, recorded phase failures)
or 2 (invalid, tampered, unverifiable, or a bad argument).  ``cncf check`` exits 0 (no problem),
1 (problems, one line each on stdout) or 2 (unusable input).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from aicr_pytest.core import gcpause
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.logsetup import configure_logging, traceback_style
from aicr_pytest.core.settings import build_placement, parse_timeout
from aicr_pytest.core.writable import check_distinct, check_writable
from aicr_pytest.plugin import options
from aicr_pytest.plugin.interrupt import RunInterrupted, signal_reason
from aicr_pytest.plugin.options.request import ValidateRequest
from aicr_pytest.plugin.validate_outputs import (
    junitxml_of,
    not_run_report,
    probe_report_configmap,
    write_report_configmap,
)

if TYPE_CHECKING:
    from aicr_pytest.evidence.cncf.collector import SubmissionResult
    from aicr_pytest.plugin.state import RunOutcome

EXIT_OK = 0
EXIT_INVALID = 2
EXIT_INTERRUPTED = 5
EXIT_EVIDENCE = 6
EXIT_FAILED = 8


#: ``aicr-pytest validate --help`` ends with these
VALIDATE_EPILOG = """\
exit codes:
  0  every phase passed or skipped (or --fail-on-error=false)
  2  invalid input, caught before any check runs (flags, recipe, snapshot, kubeconfig, output
     path), or the readiness pre-flight failed
  5  interrupted (SIGINT/SIGTERM), or the snapshot agent timed out
  6  --emit-attestation: the evidence bundle could not be emitted, pushed or signed
  8  a phase failed or ended other, or the snapshot agent failed

container-per-check flags: aicr-pytest runs every check in-process, so --image and --job-name
only shape the snapshot agent (when --snapshot is omitted), and --service-account-name is accepted
and has no effect.  Under plain pytest every option but --recipe and --snapshot is spelled
--aicr-<flag> (--aicr-namespace, --aicr-debug, --aicr-timeout ...).
"""


_MISSING_VALUE = re.compile(r"argument (\S+): expected one argument")
MSG_MISSING_VALUE = "{flag} needs a value (write {flag}=VALUE for one that starts with '-')"

#: ``aicr-pytest cncf check --help`` ends with these
CNCF_CHECK_EPILOG = """\
exit codes:
  0  no problem found
  1  problems found (one line each on stdout)
  2  unusable input: PRODUCT.yaml or the template missing, unreadable or not one
"""


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        missing = _MISSING_VALUE.fullmatch(message)
        if missing is not None:  # e.g. `--timeout -5s`: argparse took the value for a flag
            flag = missing.group(1).split("/")[-1]
            message = MSG_MISSING_VALUE.format(flag=flag)
        self.exit(EXIT_INVALID, f"{self.prog}: error: {message}\n")


def build_parser(table: Sequence[options.Option] | None = None) -> argparse.ArgumentParser:
    """The command line: every subcommand's arguments come from the option table (``table`` for tests)."""
    parser = _Parser(prog="aicr-pytest", description="pytest-native validator for GPU Kubernetes clusters")
    options.add_argparse_options(parser, entry_point=options.PROGRAM)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    v = sub.add_parser(
        "validate",
        help="validate a cluster against a recipe (like `aicr validate`)",
        epilog=VALIDATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    options.add_argparse_options(v, table)
    for action in v._actions:  # --recipe: required unless --cncf-submission (cmd_validate says so)
        if action.dest == "recipe":
            action.required = False

    def command(parser: argparse.ArgumentParser, entry_point: options.EntryPoint) -> None:
        options.add_argparse_options(parser, table, entry_point)

    command(
        sub.add_parser("simulate", help="serve a SIMULATED GPU cluster on 127.0.0.1 until Ctrl-C"),
        options.SIMULATE,
    )
    command(sub.add_parser("recipe", help="generate a recipe (like `aicr recipe`)"), options.RECIPE)

    ev = sub.add_parser("evidence", help="recipe evidence bundles")
    evsub = ev.add_subparsers(dest="what", parser_class=_Parser, required=True)
    command(evsub.add_parser("verify", help="verify an evidence bundle"), options.EVIDENCE_VERIFY)

    command(sub.add_parser("snapshot", help="capture a cluster snapshot"), options.SNAPSHOT)
    command(
        sub.add_parser("schedule", help="run validate in the cluster on a schedule (a CronJob)"),
        options.SCHEDULE,
    )

    p = sub.add_parser("parse", help="run a check's parser on a saved log")
    psub = p.add_subparsers(dest="what", parser_class=_Parser, required=True)
    command(psub.add_parser("nccl", help="NCCL all_reduce_perf launcher log"), options.PARSE_NCCL)
    command(
        psub.add_parser("aiperf", help="AIPerf profile export JSON or the Job log that carries it"),
        options.PARSE_AIPERF,
    )
    command(
        psub.add_parser("dcgm", help="a saved `dcgmi diag -j` document (gpu-diagnostics)"),
        options.PARSE_DCGM,
    )

    command(sub.add_parser("history", help="the runs recorded with --history, and trends"), options.HISTORY)
    command(
        sub.add_parser("compare", help="two CTRF reports: status changes and values that moved"),
        options.COMPARE,
    )

    c = sub.add_parser("cncf", help="CNCF AI Conformance submissions")
    csub = c.add_subparsers(dest="what", parser_class=_Parser, required=True)
    command(
        csub.add_parser(
            "check",
            help="check a PRODUCT.yaml against the program's rules, offline",
            epilog=CNCF_CHECK_EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        ),
        options.CNCF_CHECK,
    )
    return parser


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP (a closed terminal) unwind like Ctrl-C, so every ``finally:`` cleanup runs."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise RunInterrupted(signal_reason(signum))

    wanted = [signal.SIGTERM]
    hup = getattr(signal, "SIGHUP", None)
    if hup is not None and signal.getsignal(hup) is not signal.SIG_IGN:  # `nohup` keeps it ignored
        wanted.append(hup)
    previous = {s: signal.signal(s, handler) for s in wanted}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


#: what ``validate`` always passes to pytest
PYTEST_BASE_ARGS = ("-p", "no:cacheprovider", "-rN", "-W", "ignore::pytest.PytestAssertRewriteWarning")

#: plugins a validate run has no use for, blocked for start-up time (each costs import or exit
#: time): the unraisable-exception hook collects garbage twice at exit, platformdirs ships a
#: pytest plugin for its own tests.  Arguments after ``--`` can load them again (``-p NAME``).
PYTEST_LEAN_ARGS = ("-p", "no:unraisableexception", "-p", "no:platformdirs")

#: pytest-xdist is loaded only when an argument after ``--`` asks for it
XDIST_FLAGS = ("-n", "--numprocesses", "--dist", "--maxprocesses", "--tx", "-d", "--looponfail", "-f")


def _wants_xdist(extra: Sequence[str]) -> bool:
    for arg in extra:
        flag = arg.split("=", 1)[0]
        if flag in XDIST_FLAGS or (arg.startswith("-n") and arg[2:].isalnum()):
            return True
        if arg in ("-pxdist", "xdist", "xdist.plugin"):
            return True
    return False


class _OutcomeReceiver:
    """pytest plugin object: receives the run's :class:`RunOutcome` from the aicr plugin."""

    def __init__(self) -> None:
        self.outcome: RunOutcome | None = None
        self.cncf: SubmissionResult | None = None

    # optional: without the aicr plugin (``-- -p no:aicr``) the hook has no spec and never runs
    @pytest.hookimpl(optionalhook=True)
    def pytest_aicr_run_finished(self, config: pytest.Config, outcome: RunOutcome) -> None:
        self.outcome = outcome

    @pytest.hookimpl(optionalhook=True)
    def pytest_aicr_cncf_finished(self, config: pytest.Config, result: SubmissionResult) -> None:
        self.cncf = result


#: without ``--debug``, a failure is its one-line reason in the ``aicr failures`` summary, not a
#: traceback; pytest's own ``--tb`` after ``--`` comes later on the command line and wins
CONCISE_ARGS = ("--tb=no",)


def _rootdir_args(extra: Sequence[str]) -> list[str]:
    """``--rootdir`` = the bundled checks, so pytest's header and node ids name them rather than the
    directory ``validate`` was started in (unless ``--rootdir`` is given after ``--``)."""
    if any(a == "--rootdir" or a.startswith("--rootdir=") for a in extra):
        return []
    from aicr_pytest.plugin.bundled import checks_dir

    return [f"--rootdir={checks_dir()}"]


def _pytest_args(run: options.RunSettings, *, extra: Sequence[str], debug: bool = False) -> list[str]:
    """pytest's arguments: the options given (``run.pytest_args``, so the session's command line
    says what the handed ``run`` holds), ``--tb=long`` with ``--debug``; the arguments after ``--``
    (last, so a ``--tb`` there wins)."""
    rest = _extra_args(extra)
    after = options.after_dashdash(rest)
    args = [
        *run.pytest_args(leave_out=frozenset(after)),
        *PYTEST_BASE_ARGS,
        *PYTEST_LEAN_ARGS,
        *_rootdir_args(extra),
    ]
    if not _wants_xdist(rest):
        args += ["-p", "no:xdist", "-p", "no:xdist.looponfail"]
    tb = traceback_style(debug)
    args += [f"--tb={tb}"] if tb is not None else list(CONCISE_ARGS)
    return args + rest


def _extra_args(extra: Sequence[str]) -> list[str]:
    """The pytest arguments after ``--`` (anything else left over is a usage error)."""
    rest = list(extra)
    if rest and rest[0] == "--":
        return rest[1:]
    if rest:
        raise UsageError(f"unexpected arguments: {' '.join(rest)} (pass pytest arguments after --)")
    return rest


def exit_code_for(outcome: RunOutcome | None, pytest_exit: int, fail_on_error: bool) -> int:
    """Map a finished run to ``aicr validate``'s exit codes."""
    if pytest_exit == pytest.ExitCode.USAGE_ERROR:
        return EXIT_INVALID
    if pytest_exit == pytest.ExitCode.INTERRUPTED:
        return EXIT_INTERRUPTED
    if outcome is None:
        return EXIT_INVALID if pytest_exit else EXIT_OK
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    if outcome.readiness_blocked or outcome.usage_error:
        return EXIT_INVALID
    if outcome.evidence_error:  # emission failed or signing was declined: 6 wins over 8
        return EXIT_EVIDENCE
    if outcome.render_error:  # --evidence-dir: the CNCF evidence could not be rendered
        return EXIT_FAILED
    if outcome.output_errors:  # a report could not be written (it went to a temporary file)
        return EXIT_FAILED
    if pytest_exit == pytest.ExitCode.INTERNAL_ERROR:
        return EXIT_FAILED
    if outcome.failing and fail_on_error:
        return EXIT_FAILED
    return EXIT_OK


MSG_RECIPE_REQUIRED = "--recipe is required (or set spec.validate.input.recipe in --config)"


def cmd_validate(ns: argparse.Namespace) -> int:
    """``aicr validate``'s pipeline: resolve the options once (:func:`_resolve`), check every input
    before any work, bring up the simulated cluster (``--simulate``), capture a snapshot (no
    ``--snapshot``), run the checks through pytest (handed the resolved options), and publish the
    report and the exit code."""
    given, request, run = _resolve(ns)
    timeout_s, configmap, provider_data = _check_inputs(request, run, given)
    junitxml = junitxml_of(ns.pytest_args)
    outputs = [("--output", request.output or ""), ("--html", request.html), ("--junitxml", junitxml)]
    check_distinct(outputs, run.inputs)
    with _simulated_cluster(request) as sim:
        if sim is not None:
            run = run.given_with(kubeconfig=str(sim.kubeconfig_path), simulated=request.simulate)
            request = dataclasses.replace(request, kubeconfig=str(sim.kubeconfig_path))
        if configmap is not None:  # before the capture and the first check: the report has a home
            probe_report_configmap(configmap, request)
        if request.captures:
            start_ms = int(time.time() * 1000)
            try:
                captured, code, reason = _capture_snapshot(request, timeout_s, provider_data)
            except KeyboardInterrupt:
                interrupted = "the snapshot capture was interrupted"
                not_run_report(request, configmap, interrupted, start_ms, interrupted="SIGINT")
                return EXIT_INTERRUPTED
            if captured is None:  # the capture failed: the report says so rather than being lost
                not_run_report(request, configmap, reason, start_ms)
                return code
            run = run.given_with(snapshot=captured)
        to_file = request.output and request.output != "-" and configmap is None
        run = run.given_with(check_kubeconfig=True, ctrf_report=request.output if to_file else None)
        args = _pytest_args(run, extra=ns.pytest_args or (), debug=request.debug)
        return _run_checks(request, run, args, configmap)


def _resolve(ns: argparse.Namespace) -> tuple[dict[str, Any], ValidateRequest, options.RunSettings]:
    """The options as given, resolved once (the ``--config`` file read once): ``validate``'s own
    request and the :class:`~aicr_pytest.plugin.options.RunSettings` its pytest session takes.
    One of our pytest options after ``--`` that ``validate`` resolves itself is refused."""
    given = options.values_from(ns, options.VALIDATE)
    after = options.after_dashdash(_extra_args(ns.pytest_args or ()))
    values, run = options.resolve_validate(given, after)
    return given, ValidateRequest.of(values), run


def _check_inputs(
    request: ValidateRequest, run: options.RunSettings, given: Mapping[str, Any]
) -> tuple[float, tuple[str, str] | None, list[dict[str, Any]]]:
    """Every input that can be checked before any work, each a one-line ``UsageError``: the CNCF
    options, ``--recipe``, ``--timeout``, the report destination, the provider files,
    ``--emit-attestation`` with ``--simulate`` (a simulated run signs nothing), ``--fault``.
    Returns the timeout in seconds, the ``-o cm://`` target and the provider data."""
    _ = run.cncf  # --cncf-submission/--feature/--evidence-dir/--cncf-checklist, validated
    if not request.recipe and not request.cncf_submission:  # --recipe is optional only there
        raise UsageError(MSG_RECIPE_REQUIRED)
    configure_logging(debug=request.debug, log_json=request.log_json)
    timeout_s = parse_timeout(str(request.timeout))
    configmap = _output_configmap(request.output)
    if request.output and request.output != "-" and configmap is None:
        check_writable(request.output, "--output")
    provider_data = _provider_data(given, request)  # a bad provider file: exit 2 before cluster work
    if request.simulate and request.emit_attestation:  # before the simulator starts
        from aicr_pytest.plugin.evidence_wiring import MSG_SIMULATED

        raise UsageError(MSG_SIMULATED)
    if request.fault and not request.simulate:
        raise UsageError("--fault needs --simulate PROFILE")
    return timeout_s, configmap, provider_data


@contextlib.contextmanager
def _simulated_cluster(request: ValidateRequest) -> Iterator[Any]:
    """``--simulate PROFILE``: a simulated cluster serves while the run lasts (``None``: none)."""
    if not request.simulate:
        yield None
        return
    from aicr_pytest.testing.serve import simulated_cluster

    gcpause.resume()  # the simulated cluster serves before (and while) pytest runs
    with simulated_cluster(request.simulate, list(request.fault or ())) as sim:
        print(
            f"SIMULATED cluster: profile {request.simulate}, kubeconfig {sim.kubeconfig_path}",
            file=sys.stderr,
        )
        yield sim


def _capture_snapshot(
    request: ValidateRequest, timeout_s: float, provider_data: list[dict[str, Any]]
) -> tuple[str | None, int, str]:
    """No ``--snapshot``: the snapshot agent captures one (``None``, the exit code and the last
    error line: it failed)."""
    from aicr_pytest.snapshot.capture import capture_for_validate

    gcpause.resume()  # the capture waits on the cluster before pytest starts
    errors: list[str] = []

    def emit(line: str) -> None:
        print(line, file=sys.stderr, flush=True)
        if line.startswith("aicr-pytest: error: "):
            errors.append(line.removeprefix("aicr-pytest: error: "))

    captured, code = capture_for_validate(
        recipe=str(request.recipe),
        kubeconfig=request.kubeconfig,
        kube_context=request.kube_context,
        placement=build_placement(
            node_selector=request.node_selector,
            tolerations=request.toleration,
            image_pull_secrets=request.image_pull_secret,
            namespace=request.namespace,
        ),
        image=str(request.image or request.nvidia_smi_image),
        no_cleanup=request.no_cleanup,
        emit=emit,
        require_gpu=request.require_gpu,
        timeout=timeout_s,
        job_name=request.job_name,
        provider_subtypes=provider_data,
        reach_timeout=request.reach_s,
    )
    return captured, code, errors[-1] if errors else "the snapshot capture failed"


def _run_checks(
    request: ValidateRequest, run: options.RunSettings, args: list[str], configmap: tuple[str, str] | None
) -> int:
    """pytest runs the checks; the CTRF report goes to stdout (no ``-o``) or a ConfigMap; the exit
    code is ``aicr validate``'s (:func:`exit_code_for`), or the CNCF collector's."""
    receiver = _OutcomeReceiver()
    to_stdout = (not request.output or request.output == "-") and configmap is None
    real_stdout = sys.stdout
    try:
        with _sigterm_as_interrupt():
            # logs and progress go to stderr, as AICR's do; stdout carries only the CTRF report
            # (without -o), so `aicr-pytest validate ... > ctrf.json` is always valid JSON
            sys.stdout = sys.stderr
            try:
                code = int(pytest.main(args, plugins=[receiver, options.RunCarrier(run)]))
            finally:
                sys.stdout = real_stdout
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    outcome = receiver.outcome
    if to_stdout and outcome is not None and outcome.report is not None:
        real_stdout.write(_dumps(outcome.report))
        real_stdout.flush()
    ran = exit_code_for(outcome, code, request.fail_on_error)
    report = outcome.report if outcome is not None else None
    if configmap and report and not write_report_configmap(configmap, report, request):
        ran = ran or EXIT_FAILED
    collected = receiver.cncf is not None and code != pytest.ExitCode.INTERRUPTED
    if receiver.cncf is not None and collected and (outcome is None or ran == EXIT_OK):
        return receiver.cncf.exit_code()  # --cncf-submission: 0, 8 on a FAIL, 5 out of time
    return ran


def _output_configmap(output: object) -> tuple[str, str] | None:
    """``-o cm://ns/name``: ``(ns, name)``, checked before any work (``None``: a file or stdout)."""
    from aicr_pytest.report.configmap import is_configmap_uri, parse_output_uri

    return parse_output_uri(str(output)) if is_configmap_uri(str(output or "")) else None


def _provider_data(given: Mapping[str, Any], request: ValidateRequest) -> list[dict[str, Any]]:
    """The provider flags' ``K8s`` subtypes for the snapshot validate captures; with ``--snapshot``
    they are ignored, and each one given on the command line says so (as AICR warns)."""
    r = request
    files = {"aks-gpu-pools": r.aks_gpu_pools, "gke-gpu-pools": r.gke_gpu_pools, "oke-addons": r.oke_addons}
    if not any(files.values()):
        return []  # the usual run: nothing to read, nothing imported
    from aicr_pytest.snapshot import providers

    if request.snapshot:
        named = [flag for flag in files if given.get(flag.replace("-", "_"))]
        for line in providers.ignored_warnings(named):
            print(f"WARNING: {line}", file=sys.stderr)
        return []
    if request.no_cluster or (request.cncf_submission and not request.alongside):
        return []  # no snapshot is captured
    return providers.project_all({p.flag: files[p.flag] for p in providers.PROVIDERS})


def _dumps(report: dict[str, Any]) -> str:
    from aicr_pytest.report.ctrf import dumps

    return dumps(report)


def simulate_listing() -> list[str]:
    """``aicr-pytest simulate --list``: every profile and fault, each with its one-line summary."""
    from aicr_pytest.testing.profiles import PROFILES
    from aicr_pytest.testing.profiles.descriptions import describe_fault, describe_profile
    from aicr_pytest.testing.profiles.faults import FAULTS

    width = max(len(name) for name in [*PROFILES, *FAULTS]) + 1
    lines = ["profiles:"]
    lines += [f"  {name:<{width}} {describe_profile(name, fn.__doc__)}" for name, fn in PROFILES.items()]
    lines.append("faults (--fault, repeatable):")
    lines += [f"  {name:<{width}} {describe_fault(name, fn.__doc__)}" for name, fn in sorted(FAULTS.items())]
    return lines


def cmd_simulate(ns: argparse.Namespace) -> int:
    args = options.command_values(ns, options.SIMULATE)
    if args["list"]:
        print("\n".join(simulate_listing()))
        return EXIT_OK
    if not args["profile"]:
        raise UsageError("simulate needs --profile PROFILE (aicr-pytest simulate --list shows them)")
    from aicr_pytest.testing.serve import serve

    return serve(args["profile"], list(args["fault"] or ()), args["kubeconfig"], args["duration"])


def _parse_nccl(ns: argparse.Namespace) -> int:
    from aicr_pytest.nccl.cli import run_parse_nccl

    nccl = options.command_values(ns, options.PARSE_NCCL)
    return run_parse_nccl(nccl["logfile"], nccl["variant"], nccl["format"], sys.stdout)


def _parse_dcgm(ns: argparse.Namespace) -> int:
    from aicr_pytest.health.dcgm import run_parse_dcgm

    dcgm = options.command_values(ns, options.PARSE_DCGM)
    return run_parse_dcgm(dcgm["file"], "json" if dcgm["json"] else "text", sys.stdout)


def _parse_aiperf(ns: argparse.Namespace) -> int:
    from aicr_pytest.inference.cli import run_parse_aiperf

    aiperf = options.command_values(ns, options.PARSE_AIPERF)
    return run_parse_aiperf(aiperf["file"], aiperf["format"], sys.stdout)


#: ``parse WHAT``: each parser's command
PARSERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "nccl": _parse_nccl,
    "dcgm": _parse_dcgm,
    "aiperf": _parse_aiperf,
}


def cmd_parse(ns: argparse.Namespace) -> int:
    return PARSERS[ns.what](ns)


def cmd_recipe(ns: argparse.Namespace) -> int:
    from aicr_pytest.recipegen.cli import run as run_recipe

    return run_recipe(options.command_values(ns, options.RECIPE))


def cmd_evidence(ns: argparse.Namespace) -> int:
    from aicr_pytest.evidence.cli import run_verify

    return run_verify(options.command_values(ns, options.EVIDENCE_VERIFY))


def cmd_snapshot(ns: argparse.Namespace) -> int:
    from aicr_pytest.snapshot.cli import run as run_snapshot

    return run_snapshot(options.command_values(ns, options.SNAPSHOT))


def cmd_schedule(ns: argparse.Namespace) -> int:
    from aicr_pytest.schedule.command import run_values

    return run_values(options.command_values(ns, options.SCHEDULE), sys.stdout)


def cmd_cncf(ns: argparse.Namespace) -> int:
    """``cncf check``: one line per problem on stdout; 0 clean, 1 problems (2: ``UsageError``)."""
    from aicr_pytest.evidence.cncf import offline_check

    args = options.command_values(ns, options.CNCF_CHECK)
    problems = offline_check.check_product(args["product"], args["checklist"])
    for line in problems:
        print(line)
    return offline_check.exit_code(problems)


def cmd_history(ns: argparse.Namespace) -> int:
    """``history`` and ``compare`` (:mod:`aicr_pytest.plugin.history_cli`)."""
    from aicr_pytest.plugin.history_cli import run

    return run(ns)


#: every subcommand: ``ns.command`` → its command.  A new subcommand is its parser in
#: :func:`build_parser`, its option rows (``aicr_pytest/plugin/options/``) and one entry here.
SUBCOMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": cmd_validate,
    "simulate": cmd_simulate,
    "parse": cmd_parse,
    "recipe": cmd_recipe,
    "evidence": cmd_evidence,
    "snapshot": cmd_snapshot,
    "cncf": cmd_cncf,
    "history": cmd_history,
    "compare": cmd_history,
    "schedule": cmd_schedule,
}

#: subcommands that keep the start-up GC pause: ``validate``'s plugin ends it after collection; every
#: other subcommand may run long (``simulate`` serves until Ctrl-C)
KEEP_GC_PAUSE = frozenset({"validate"})


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(list(argv) if argv is not None else None)
    command = SUBCOMMANDS.get(ns.command)
    if command is None:
        parser.print_help()
        return EXIT_INVALID
    try:
        if ns.command not in KEEP_GC_PAUSE:
            gcpause.resume()
        return command(ns)
    except UsageError as err:
        print(f"aicr-pytest: error: {err}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print("aicr-pytest: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

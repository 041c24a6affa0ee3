"""``aicr-pytest``: AICR-compatible command line built on ``pytest.main``.

Subcommands:

* ``validate`` — mirrors ``aicr validate`` (flags, CTRF output, exit codes) and runs the bundled
  checks through pytest.  Arguments after ``--`` go to pytest unchanged.
* ``simulate`` — serve a simulated GPU cluster on loopback (for trying the flow without GPUs).
* ``parse nccl|aiperf`` — run a check's parser on a saved log, for offline debugging.
* ``snapshot`` — capture a live cluster's snapshot, like ``aicr snapshot`` (:mod:`aicr_pytest.snapshot`).

Exit codes of ``validate``: 0 all passed/skipped; 2 invalid input or readiness pre-flight
failure; 5 interrupted (SIGINT/SIGTERM); 8 a phase failed or ended ``other``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any, NoReturn

from aicr_pytest import __version__
from aicr_pytest.core.errors import UsageError

EXIT_OK = 0
EXIT_INVALID = 2
EXIT_INTERRUPTED = 5
EXIT_FAILED = 8


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INVALID, f"{self.prog}: error: {message}\n")


def _bool_flag(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes", "t"):
        return True
    if lowered in ("false", "0", "no", "f"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {value!r} (use true or false)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="aicr-pytest", description="pytest-native validator for GPU Kubernetes clusters")
    parser.add_argument("--version", action="version", version=f"aicr-pytest {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    v = sub.add_parser("validate", help="validate a cluster against a recipe (like `aicr validate`)")
    v.add_argument("-r", "--recipe", required=True, help="recipe: file, https:// URL or cm://namespace/name")
    v.add_argument("-s", "--snapshot", help="snapshot: file, https:// URL or cm://namespace/name")
    v.add_argument("--phase", action="append", help="deployment|conformance|performance|all (repeatable)")
    v.add_argument("--no-cluster", action="store_true", help="offline: snapshot only; behavioral checks skip")
    v.add_argument("--fail-fast", action="store_true", help="skip later phases after a failing phase")
    v.add_argument(
        "--fail-on-error",
        type=_bool_flag,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="exit 8 when a phase fails (default true); --fail-on-error=false reports only",
    )
    v.add_argument("-o", "--output", help="CTRF report destination: a file path or - for stdout (default)")
    v.add_argument("--data", help="external data directory layered over the embedded data")
    v.add_argument(
        "--node-selector",
        action="append",
        metavar="KEY=VALUE",
        help="node selector for inner GPU workloads (repeatable)",
    )
    v.add_argument(
        "--toleration",
        action="append",
        metavar="KEY=VALUE:EFFECT",
        help="toleration for inner GPU workloads (repeatable; * tolerates all)",
    )
    v.add_argument(
        "-k", "--kubeconfig", help="kubeconfig path (default: KUBECONFIG, in-cluster, ~/.kube/config)"
    )
    v.add_argument("--kube-context", help="kubeconfig context")
    v.add_argument("--no-cleanup", action="store_true", help="keep created objects; print kubectl commands")
    v.add_argument("--nvidia-smi-image", help="CUDA image for check-nvidia-smi")
    v.add_argument("--evidence-dir", help="directory for evidence files")
    v.add_argument(
        "--simulate",
        metavar="PROFILE",
        help="run against a SIMULATED cluster started in-process with this profile",
    )
    v.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME",
        help="with --simulate: inject a simulated fault (repeatable)",
    )
    v.add_argument("pytest_args", nargs=argparse.REMAINDER, help="after --: extra pytest arguments")

    s = sub.add_parser("simulate", help="serve a SIMULATED GPU cluster on 127.0.0.1 until Ctrl-C")
    s.add_argument("--profile", required=True, help="cluster profile, e.g. h100-eks-training")
    s.add_argument("--fault", action="append", default=[], metavar="NAME", help="inject a fault (repeatable)")
    s.add_argument("--kubeconfig", help="where to write the kubeconfig (default: a temp file)")
    s.add_argument("--for", dest="duration", type=float, help="serve for SECONDS, then exit")

    from aicr_pytest.snapshot.cli import add_arguments as add_snapshot_arguments  # snapshot wiring (#16)

    sn = sub.add_parser("snapshot", help="capture a cluster snapshot")  # snapshot wiring (#16)
    add_snapshot_arguments(sn)  # snapshot wiring (#16)

    p = sub.add_parser("parse", help="run a check's parser on a saved log")
    psub = p.add_subparsers(dest="what", parser_class=_Parser, required=True)
    pn = psub.add_parser("nccl", help="NCCL all_reduce_perf launcher log")
    pn.add_argument("logfile")
    pn.add_argument("--variant", choices=["default", "net", "nvls"], default="default")
    pn.add_argument("--format", choices=["text", "json"], default="text")
    pa = psub.add_parser("aiperf", help="AIPerf profile export JSON or the Job log that carries it")
    pa.add_argument("file")
    pa.add_argument("--format", choices=["text", "json"], default="text")
    return parser


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, so every ``finally:`` cleanup runs."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Capture:
    """pytest plugin object that keeps the aicr plugin's state for the exit-code decision."""

    def __init__(self) -> None:
        self.state: Any = None

    def pytest_unconfigure(self, config: Any) -> None:
        from aicr_pytest.plugin import STATE_KEY

        self.state = config.stash.get(STATE_KEY, None)


def _pytest_args(ns: argparse.Namespace, kubeconfig: str | None) -> list[str]:
    args = [
        "--recipe",
        ns.recipe,
        "-p",
        "no:cacheprovider",
        "-rN",
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
    ]
    if ns.snapshot:
        args += ["--snapshot", ns.snapshot]
    for phase in ns.phase or ():
        args += ["--phase", phase]
    if ns.no_cluster:
        args.append("--no-cluster")
    if ns.fail_fast:
        args.append("--fail-fast")
    if ns.data:
        args += ["--data", ns.data]
    for sel in ns.node_selector or ():
        args += ["--node-selector", sel]
    for tol in ns.toleration or ():
        args += ["--toleration", tol]
    if kubeconfig:
        args += ["--kubeconfig", kubeconfig]
    if ns.kube_context:
        args += ["--kube-context", ns.kube_context]
    if ns.no_cleanup:
        args.append("--no-cleanup")
    if ns.nvidia_smi_image:
        args += ["--nvidia-smi-image", ns.nvidia_smi_image]
    if ns.evidence_dir:
        args += ["--evidence-dir", ns.evidence_dir]
    if ns.output and ns.output != "-":
        args += ["--ctrf-report", ns.output]
    extra = list(ns.pytest_args or ())
    if extra and extra[0] == "--":
        extra = extra[1:]
    elif extra:
        raise UsageError(f"unexpected arguments: {' '.join(extra)} (pass pytest arguments after --)")
    return args + extra


def exit_code_for(state: Any, pytest_exit: int, fail_on_error: bool) -> int:
    """Map a finished run to ``aicr validate``'s exit codes."""
    import pytest

    if pytest_exit == pytest.ExitCode.USAGE_ERROR:
        return EXIT_INVALID
    if pytest_exit == pytest.ExitCode.INTERRUPTED:
        return EXIT_INTERRUPTED
    if state is None or state.run is None:
        return EXIT_INVALID if pytest_exit else EXIT_OK
    if state.run.readiness.blocked or state.usage_error_in_check:
        return EXIT_INVALID
    if pytest_exit == pytest.ExitCode.INTERNAL_ERROR:
        return EXIT_FAILED
    failing = any(a.status in ("failed", "other") for a in state.results)
    if failing and fail_on_error:
        return EXIT_FAILED
    return EXIT_OK


def cmd_validate(ns: argparse.Namespace) -> int:
    import pytest

    sim_ctx: contextlib.AbstractContextManager[Any] = contextlib.nullcontext(None)
    if ns.simulate:
        from aicr_pytest.testing.serve import simulated_cluster

        sim_ctx = simulated_cluster(ns.simulate, ns.fault)
    elif ns.fault:
        raise UsageError("--fault needs --simulate PROFILE")
    with sim_ctx as sim:
        kubeconfig = ns.kubeconfig
        if sim is not None:
            kubeconfig = str(sim.kubeconfig_path)
            os.environ["AICR_PYTEST_SIMULATED"] = "1"
            print(f"SIMULATED cluster: profile {ns.simulate}, kubeconfig {kubeconfig}", file=sys.stderr)
        args = _pytest_args(ns, kubeconfig)
        capture = _Capture()
        to_stdout = not ns.output or ns.output == "-"
        real_stdout = sys.stdout
        try:
            with _sigterm_as_interrupt():
                if to_stdout:
                    sys.stdout = sys.stderr  # terminal progress to stderr, the report to stdout
                try:
                    code = int(pytest.main(args, plugins=[capture]))
                finally:
                    sys.stdout = real_stdout
        except KeyboardInterrupt:
            return EXIT_INTERRUPTED
        state = capture.state
        if to_stdout and state is not None and state.report is not None:
            real_stdout.write(_dumps(state.report))
            real_stdout.flush()
        return exit_code_for(state, code, ns.fail_on_error)


def _dumps(report: dict[str, Any]) -> str:
    from aicr_pytest.report.ctrf import dumps

    return dumps(report)


def cmd_simulate(ns: argparse.Namespace) -> int:
    from aicr_pytest.testing.serve import serve

    return serve(ns.profile, ns.fault, ns.kubeconfig, ns.duration)


def cmd_parse(ns: argparse.Namespace) -> int:
    if ns.what == "nccl":
        from aicr_pytest.nccl.cli import run_parse_nccl

        return run_parse_nccl(ns.logfile, ns.variant, ns.format, sys.stdout)
    from aicr_pytest.inference.cli import run_parse_aiperf

    return run_parse_aiperf(ns.file, ns.format, sys.stdout)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(list(argv) if argv is not None else None)
    try:
        if ns.command == "validate":
            return cmd_validate(ns)
        if ns.command == "simulate":
            return cmd_simulate(ns)
        if ns.command == "parse":
            return cmd_parse(ns)
        if ns.command == "snapshot":  # snapshot wiring (#16)
            from aicr_pytest.snapshot.cli import run as run_snapshot  # snapshot wiring (#16)

            return run_snapshot(ns)  # snapshot wiring (#16)
        parser.print_help()
        return EXIT_INVALID
    except UsageError as err:
        print(f"aicr-pytest: error: {err}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print("aicr-pytest: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

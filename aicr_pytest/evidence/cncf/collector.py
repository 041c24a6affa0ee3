"""Path B: ``--cncf-submission``, one evidence file per feature.

Each feature runs the behavioural check of :mod:`aicr_pytest.conformance` that covers it (the same
``run_<check>(ctx)`` function the conformance phase runs, so the two never disagree) with its own
budget, records what the check recorded, and writes ``<evidence-dir>/<file>`` with the header
block and exactly one verdict line:

* **PASS** -- the check passed: the capability was exercised and behaved;
* **SKIP** ``(prerequisite absent)`` -- the check found an optional prerequisite absent;
* **FAIL** -- the check failed, could not decide (a required query failed: ``other``), raised
  anything unexpected, ran past its budget, or the written file does not carry exactly one valid
  verdict (read back with :func:`~aicr_pytest.evidence.cncf.verdict.file_verdict`: fail closed).

Without a recipe the inference gateway and the AI operator are detected on the cluster (like
AICR's collector), since the checks otherwise only look for what the recipe names.  The recipe's
GPU allocation policy reaches the checks through their context; the ambient
``AICR_GPU_ALLOCATION_POLICY`` never does.  Every file is scrubbed of the run's secret values and
of AWS ELB hostnames.  Features run in order until the overall budget (20 minutes) is spent; the
rest are not started (``[TIMEOUT]``, exit 5) and an earlier run's files for them are removed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from aicr_pytest.conformance import check_function
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.core import catalog, components
from aicr_pytest.core.artifacts import Artifact
from aicr_pytest.core.clock import SYSTEM_CLOCK, Clock
from aicr_pytest.core.errors import CheckSkip, Inconclusive, UsageError
from aicr_pytest.core.settings import Placement
from aicr_pytest.evidence.cncf.features import Feature
from aicr_pytest.evidence.cncf.markdown import ClusterInfo, FeatureDocument, cluster_info, feature_markdown
from aicr_pytest.evidence.cncf.secrets import scrub
from aicr_pytest.evidence.cncf.verdict import Status, file_verdict, redact_elb
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.run import CleanupReport, RunScope

log = logging.getLogger("aicr_pytest.evidence.cncf")

#: AICR's ``CNCFSubmissionTimeout``
OVERALL_BUDGET_S: Final = 20 * 60
MSG_CANCELED: Final = "[TIMEOUT] evidence collection canceled before completing all sections"
MSG_NO_CLUSTER: Final = "Cannot connect to Kubernetes cluster. Check KUBECONFIG."
QUALIFIER_SKIP: Final = "prerequisite absent"
AMBIENT_POLICY_ENV: Final = "AICR_GPU_ALLOCATION_POLICY"


@dataclass(frozen=True)
class SubmissionPlan:
    """What to collect, where, and what the checks are given."""

    features: tuple[Feature, ...]
    evidence_dir: Path
    #: the recipe's componentRefs (``()`` without a recipe)
    component_refs: tuple[dict[str, Any], ...] = ()
    has_recipe: bool = False
    allocation_policy: str = "unspecified"
    #: the run's placement: the checks' inner pods take its tolerations
    placement: Placement = field(default_factory=Placement)
    #: what of the environment the checks may read (``AICR_*`` knobs), never secrets
    env: Mapping[str, str] = field(default_factory=dict)
    #: values scrubbed from every file
    secrets: tuple[str, ...] = ()
    overall_budget_s: float = OVERALL_BUDGET_S


@dataclass(frozen=True)
class FeatureResult:
    feature: Feature
    status: Status
    explanation: str
    path: Path


@dataclass(frozen=True)
class SubmissionResult:
    results: tuple[FeatureResult, ...]
    #: features not started because the overall budget ran out
    canceled: tuple[Feature, ...] = ()

    @property
    def failed(self) -> tuple[FeatureResult, ...]:
        return tuple(r for r in self.results if r.status == "FAIL")

    def exit_code(self) -> int:
        """``aicr validate``'s code: 5 when the overall budget ran out, 8 on any FAIL, else 0."""
        if self.canceled:
            return 5
        return 8 if self.failed else 0

    def summary_lines(self) -> list[str]:
        counts = {s: sum(1 for r in self.results if r.status == s) for s in ("PASS", "FAIL", "SKIP")}
        lines = [f"{r.feature.title}: {r.status} ({r.path.name})" for r in self.results]
        lines.append(
            f"Total: {len(self.results)} | Passed: {counts['PASS']} | Failed: {counts['FAIL']} | "
            f"Skipped: {counts['SKIP']}"
        )
        if self.canceled:
            lines.append(f"{MSG_CANCELED}: not collected: {', '.join(f.name for f in self.canceled)}")
        return lines


def checks_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The ``AICR_*`` knobs the checks read, without the ambient allocation policy."""
    return {k: v for k, v in environ.items() if k.startswith("AICR_") and k != AMBIENT_POLICY_ENV}


def verdict_of(error: BaseException | None) -> tuple[Status, str, str | None]:
    """A check's ending -> (status, explanation, qualifier)."""
    if error is None:
        return "PASS", "the capability was exercised and behaved as expected", None
    if isinstance(error, CheckSkip):
        return "SKIP", error.reason, QUALIFIER_SKIP
    if isinstance(error, Inconclusive):
        return "FAIL", f"a required query or wait could not complete: {error}", None
    if isinstance(error, AssertionError | UsageError):
        return "FAIL", str(error) or type(error).__name__, None
    return "FAIL", f"[INTERNAL] unexpected {type(error).__name__}: {error}", None


def describe_cluster(cluster: Cluster) -> ClusterInfo:
    """The header facts; raises when the API server cannot be read (every feature then FAILs)."""
    return cluster_info(cluster.server_version(), list(cluster.list("v1", "nodes")))


def feature_refs(
    feature: Feature, cluster: Cluster, refs: tuple[dict[str, Any], ...]
) -> tuple[tuple[dict[str, Any], ...], list[str]]:
    """The component refs the feature's check gets, and what detection found."""
    wanted = feature.detected
    if not wanted:
        return refs, []
    named = {str(r.get("name")) for r in refs}
    added: list[dict[str, Any]] = []
    lines: list[str] = []
    for component, namespace, deployment in wanted:
        if component in named:
            source = "enabled" if components.enabled_ref(refs, component) else "disabled"
            lines.append(f"- `{component}`: named by the recipe ({source})")
            continue
        selector = None if deployment is None else f"metadata.name={deployment}"
        # a failed query raises: the feature FAILs rather than reporting an absent operator
        found = next(iter(cluster.list("apps/v1", "deployments", namespace, field_selector=selector)), None)
        if found is not None:
            added.append({"name": component, "namespace": namespace, "type": "Detected"})
            lines.append(f"- `{component}`: not in the recipe; detected in namespace `{namespace}`")
        else:
            lines.append(f"- `{component}`: not in the recipe; not found in namespace `{namespace}`")
    return (*refs, *added), lines


def cleanup_lines(report: CleanupReport) -> list[str]:
    lines = [f"deleted {item}" for item in report.deleted]
    lines += [f"kept (--no-cleanup) {item}" for item in report.kept]
    lines += [f"inspect/delete: `{cmd}`" for cmd in report.commands]
    lines += [f"WARNING: {w}" for w in report.warnings]
    return lines


def redact_directory(directory: Path) -> None:
    """AWS ELB hostnames redacted in every ``*.md`` of the evidence directory."""
    for path in sorted(directory.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        redacted = redact_elb(text)
        if redacted != text:
            path.write_text(redacted, encoding="utf-8")


@dataclass
class _Collector:
    plan: SubmissionPlan
    cluster: Cluster
    new_run: Callable[[], RunScope]
    clock: Clock
    emit: Callable[[str], None]
    now: Callable[[], float]
    info: ClusterInfo | None = None
    cluster_error: str | None = None

    def write(self, doc: FeatureDocument) -> FeatureResult:
        """Write the file, read it back and take the verdict it carries (fail closed)."""
        path = self.plan.evidence_dir / doc.feature.file
        text = redact_elb(scrub(feature_markdown(doc), self.plan.secrets))
        path.write_text(text, encoding="utf-8")
        verdict = file_verdict(path.read_text(encoding="utf-8"))
        if verdict.problem is not None:
            return FeatureResult(doc.feature, "FAIL", f"evidence file rejected: {verdict.problem}", path)
        explanation = scrub(doc.explanation, self.plan.secrets)
        return FeatureResult(doc.feature, verdict.status, explanation, path)

    def document(self, feature: Feature, status: Status, explanation: str, **kw: Any) -> FeatureDocument:
        generated = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.now()))
        return FeatureDocument(feature, self.info or ClusterInfo(), generated, status, explanation, **kw)

    def run_feature(self, feature: Feature, budget: float) -> FeatureResult:
        path = self.plan.evidence_dir / feature.file
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            return FeatureResult(feature, "FAIL", f"could not remove the previous {path.name}: {exc}", path)
        if self.cluster_error is not None:
            return self.write(self.document(feature, "FAIL", f"{MSG_NO_CLUSTER} ({self.cluster_error})"))
        preamble: list[tuple[str, Sequence[str]]] = []
        if feature.allocation_block:
            source = "the recipe" if self.plan.has_recipe else "no recipe: detected from the cluster"
            preamble.append(
                (
                    "GPU Allocation Mode",
                    [
                        f"- Configured policy: `{self.plan.allocation_policy}` ({source})",
                        "- Resolved and verified by the check's allocation-mode probe (evidence below)",
                    ],
                )
            )
        run = self.new_run()
        ctx: ConformanceContext | None = None
        error: BaseException | None = None
        started = self.clock.time()
        interrupted: BaseException | None = None
        detected: list[str] = []
        try:
            refs, detected = feature_refs(feature, self.cluster, self.plan.component_refs)
            if detected:
                preamble.append(("Component Detection", detected))
            ctx = ConformanceContext.create(
                feature.check,
                self.cluster,
                run,
                lambda line: log.debug("%s: %s", feature.name, line),
                component_refs=refs,
                allocation_policy=self.plan.allocation_policy,
                tolerations=self.plan.placement.tolerations_k8s(),
                clock=self.clock,
                timeout_s=budget,
                env=self.plan.env,
                secrets=self.plan.secrets,
            )
            check_function(feature.check)(ctx)
        except (KeyboardInterrupt, SystemExit) as exc:
            interrupted = exc
        except Exception as exc:
            error = exc
        finally:
            report = run.cleanup()
        elapsed = self.clock.time() - started
        status, explanation, qualifier = verdict_of(error)
        if status == "SKIP" and any("not found in namespace" in line for line in detected):
            explanation = f"{explanation}; not installed on the cluster either"
        if interrupted is not None:
            status, explanation, qualifier = "FAIL", "the run was interrupted before a verdict", None
        elif status != "FAIL" and elapsed > budget:
            status, qualifier = "FAIL", None
            explanation = f"[TIMEOUT] the check took {elapsed:.0f}s, past its budget of {budget:.0f}s"
        artifacts: Sequence[Artifact] = ctx.artifacts.artifacts if ctx is not None else ()
        doc = self.document(
            feature,
            status,
            explanation,
            qualifier=qualifier,
            artifacts=artifacts,
            preamble=preamble,
            notes=[f"Budget: {budget:.0f}s; took {elapsed:.1f}s."],
            cleanup=cleanup_lines(report),
        )
        result = self.write(doc)
        if interrupted is not None:
            raise interrupted
        return result


def collect(
    plan: SubmissionPlan,
    cluster: Cluster,
    new_run: Callable[[], RunScope],
    *,
    clock: Clock = SYSTEM_CLOCK,
    emit: Callable[[str], None] = print,
    now: Callable[[], float] = time.time,
) -> SubmissionResult:
    """Collect every planned feature (module docstring); ``emit`` gets one line per feature."""
    plan.evidence_dir.mkdir(parents=True, exist_ok=True)
    collector = _Collector(plan, cluster, new_run, clock, emit, now)
    try:
        collector.info = describe_cluster(cluster)
    except Exception as exc:
        collector.cluster_error = scrub(" ".join(str(exc).split()) or type(exc).__name__, plan.secrets)
    deadline = clock.time() + plan.overall_budget_s
    results: list[FeatureResult] = []
    canceled: tuple[Feature, ...] = ()
    for index, feature in enumerate(plan.features):
        remaining = deadline - clock.time()
        if remaining <= 0:
            canceled = plan.features[index:]
            for stale in canceled:  # a file from an earlier run must not pass for this one's
                (plan.evidence_dir / stale.file).unlink(missing_ok=True)
            break
        budget = min(float(catalog.BY_NAME[feature.check].timeout_s), remaining)
        emit(f"cncf: collecting {feature.name} (budget {budget:.0f}s)")
        result = collector.run_feature(feature, budget)
        redact_directory(plan.evidence_dir)
        emit(f"cncf: {feature.name}: {result.status} — {result.explanation} -> {result.path}")
        results.append(result)
    return SubmissionResult(tuple(results), canceled)


__all__ = [
    "MSG_CANCELED",
    "MSG_NO_CLUSTER",
    "OVERALL_BUDGET_S",
    "QUALIFIER_SKIP",
    "FeatureResult",
    "SubmissionPlan",
    "SubmissionResult",
    "checks_env",
    "collect",
    "describe_cluster",
    "feature_refs",
    "redact_directory",
    "verdict_of",
]

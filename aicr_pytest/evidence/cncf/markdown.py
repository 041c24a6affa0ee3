"""Markdown of the CNCF evidence files: the submission feature files (path B) and the renderer of a
normal run's conformance results (path A).  Pure functions over plain data.

Feature file::

    # <title>

    **Cluster:** `<cluster description>`
    **Generated:** <YYYY-MM-DD HH:MM:SS> UTC
    **Kubernetes Version:** v<major>.<minor>
    **Platform:** <os>/<arch>

    ---

    <description, the recorded evidence blocks>

    **Result: PASS|SKIP|FAIL[ (qualifier)]** — <explanation>

    ## Cleanup                      (when the feature created objects)

Rendered check file (path A)::

    # <title>
    **Generated:** <YYYY-MM-DDTHH:MM:SSZ> / **Requirement:** `<id>` / **Result:** PASSED|FAILED|OTHER
    ---  <description>  ## Checks  ### <check>  - **Status:** …  - **Duration:** <ms>ms
    **Error:** (fenced)  **Evidence Output:** (the check's artifacts, fenced, ``--- label ---`` blocks)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.core.artifacts import Artifact
from aicr_pytest.evidence.cncf.features import Feature
from aicr_pytest.evidence.cncf.verdict import Status, neutralize_verdicts, verdict_line

UNKNOWN = "unknown"


@dataclass(frozen=True)
class ClusterInfo:
    """The header block's facts: ``description`` is ``EKS / <instance> / <product>`` etc."""

    description: str = UNKNOWN
    kubernetes_version: str = UNKNOWN
    platform: str = UNKNOWN


def _label(labels: Mapping[str, Any], key: str) -> str:
    value = labels.get(key)
    return str(value) if isinstance(value, str) and value else UNKNOWN


def cluster_info(version: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]]) -> ClusterInfo:
    """The header facts from ``/version`` and the node list (first node; first GPU node)."""
    major = str(version.get("major") or "").strip()
    minor = re.sub(r"\D+$", "", str(version.get("minor") or "").strip())
    k8s = f"v{major}.{minor}" if major.isdigit() and minor.isdigit() else UNKNOWN
    first = nodes[0] if nodes else {}
    info = (first.get("status") or {}).get("nodeInfo") or {}
    os_name, arch = str(info.get("operatingSystem") or ""), str(info.get("architecture") or "")
    platform = f"{os_name}/{arch}" if os_name and arch else UNKNOWN
    provider = str((first.get("spec") or {}).get("providerID") or "")
    gpu = next(
        (
            n
            for n in nodes
            if ((n.get("metadata") or {}).get("labels") or {}).get("nvidia.com/gpu.present") == "true"
        ),
        None,
    )
    labels: Mapping[str, Any] = ((gpu or {}).get("metadata") or {}).get("labels") or {}
    instance = _label(labels, "node.kubernetes.io/instance-type")
    if provider.startswith("aws://"):
        desc = f"EKS / {instance} / {_label(labels, 'nvidia.com/gpu.product')}"
    elif provider.startswith("gce://"):
        desc = f"GKE / {instance} / {_label(labels, 'cloud.google.com/gke-accelerator')}"
    else:
        desc = f"{instance} / {_label(labels, 'nvidia.com/gpu.product')}"
    return ClusterInfo(description=desc, kubernetes_version=k8s, platform=platform)


def fence(text: str, info: str = "") -> list[str]:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    marker = "`" * max(3, longest + 1)
    return [f"{marker}{info}", *text.split("\n"), marker]


def artifact_block(artifact: Artifact) -> list[str]:
    """One recorded artifact as a capture block: ``**label**`` and a fence (``$ equivalent`` first)."""
    body = artifact.data if not artifact.equivalent else f"$ {artifact.equivalent}\n{artifact.data}"
    return ["", f"**{artifact.label.replace('*', '')}**", "", *fence(neutralize_verdicts(body))]


@dataclass(frozen=True)
class FeatureDocument:
    """Everything a feature file says."""

    feature: Feature
    cluster: ClusterInfo
    generated: str  # ``YYYY-MM-DD HH:MM:SS`` (UTC)
    status: Status
    explanation: str
    qualifier: str | None = None
    artifacts: Sequence[Artifact] = ()
    #: ``(heading, lines)`` sections placed before the evidence (allocation mode, detection)
    preamble: Sequence[tuple[str, Sequence[str]]] = ()
    notes: Sequence[str] = ()
    cleanup: Sequence[str] = field(default_factory=list)


def feature_markdown(doc: FeatureDocument) -> str:
    f = doc.feature
    lines = [
        f"# {f.title}",
        "",
        f"**Cluster:** `{doc.cluster.description.replace('`', '')}`",
        f"**Generated:** {doc.generated} UTC",
        f"**Kubernetes Version:** {doc.cluster.kubernetes_version}",
        f"**Platform:** {doc.cluster.platform}",
        "",
        "---",
        "",
        f.description,
        "",
        f"Feature `{f.name}` · CNCF requirement `{f.requirement}` · collected by the "
        f"`{f.check}` check of aicr-pytest.",
    ]
    for heading, body in doc.preamble:
        lines += ["", f"## {heading}", "", *(neutralize_verdicts(line) for line in body)]
    lines += ["", "## Evidence"]
    if doc.artifacts:
        for artifact in doc.artifacts:
            lines += artifact_block(artifact)
    else:
        lines += ["", "(the check recorded no evidence before it ended)"]
    for note in doc.notes:
        lines += ["", neutralize_verdicts(note)]
    lines += ["", verdict_line(doc.status, doc.explanation, doc.qualifier)]
    if doc.cleanup:
        lines += ["", "## Cleanup", "", *(neutralize_verdicts(f"- {c}") for c in doc.cleanup)]
    return "\n".join(lines) + "\n"


# --- path A: the renderer of a normal run --------------------------------------------------------


@dataclass(frozen=True)
class RenderedCheck:
    """One CTRF test of a rendered file."""

    name: str
    status: str  # CTRF status: passed | failed | other
    duration_ms: int
    message: str | None
    artifacts: Sequence[Artifact]


@dataclass(frozen=True)
class RenderedFile:
    feature: Feature
    checks: Sequence[RenderedCheck]

    @property
    def status(self) -> str:
        """``failed`` if any check failed, else ``other`` if any ended other (fail closed, unlike
        AICR, which calls such a group passed), else ``passed``."""
        statuses = {c.status for c in self.checks}
        if "failed" in statuses:
            return "failed"
        if statuses - {"passed"}:
            return "other"
        return "passed"


def check_file_markdown(rendered: RenderedFile, generated: str) -> str:
    """One path-A file (``generated``: ``YYYY-MM-DDTHH:MM:SSZ``)."""
    f = rendered.feature
    lines = [
        f"# {f.title}",
        "",
        f"**Generated:** {generated}",
        f"**Requirement:** `{f.requirement}`",
        f"**Result:** {rendered.status.upper()}",
        "",
        "---",
        "",
        f.description,
        "",
        "## Checks",
    ]
    for check in rendered.checks:
        lines += [
            "",
            f"### {check.name}",
            "",
            f"- **Status:** {check.status.upper()}",
            f"- **Duration:** {check.duration_ms}ms",
        ]
        if check.message:
            lines += ["", "**Error:**", "", *fence(neutralize_verdicts(check.message))]
        if check.artifacts:
            blocks = "\n\n".join("\n".join(a.block()) for a in check.artifacts)
            lines += ["", "**Evidence Output:**", "", *fence(neutralize_verdicts(blocks))]
    return "\n".join(lines) + "\n"


def index_markdown(files: Sequence[RenderedFile], generated: str) -> str:
    lines = [
        "# CNCF AI Conformance Evidence",
        "",
        f"**Generated:** {generated}",
        "",
        "## Results",
        "",
        "| # | Requirement | Feature | Result | Evidence |",
        "|---|---|---|---|---|",
    ]
    for number, rendered in enumerate(files, start=1):
        f = rendered.feature
        lines.append(
            f"| {number} | `{f.requirement}` | {f.title} | {rendered.status.upper()} | [{f.file}]({f.file}) |"
        )
    return "\n".join(lines) + "\n"


__all__ = [
    "UNKNOWN",
    "ClusterInfo",
    "FeatureDocument",
    "RenderedCheck",
    "RenderedFile",
    "artifact_block",
    "check_file_markdown",
    "cluster_info",
    "feature_markdown",
    "fence",
    "index_markdown",
]

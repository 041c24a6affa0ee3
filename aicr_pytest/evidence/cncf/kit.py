"""The submission kit of ``--cncf-submission --cncf-checklist FILE``, written after the collector ran.

:func:`write_kit` turns the run's :class:`~aicr_pytest.evidence.cncf.collector.SubmissionResult`
into verdicts (:func:`~aicr_pytest.evidence.cncf.outcomes.from_submission`), writes
``results/junit.xml`` and ``results/e2e.log`` (:func:`~aicr_pytest.evidence.cncf.hybrid.write_hybrid`)
and ``PRODUCT.yaml`` (:func:`~aicr_pytest.evidence.cncf.product.fill_product`, its evidence linking
the per-feature files and the JUnit test cases) into the evidence directory, and answers the lines
the caller prints: what was written, then every placeholder or missing metadata field still to fill.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from aicr_pytest.evidence.cncf import hybrid, outcomes, product
from aicr_pytest.evidence.cncf.checklist import IMPLEMENTED, NOT_APPLICABLE, NOT_IMPLEMENTED, Checklist
from aicr_pytest.evidence.cncf.collector import SubmissionResult

MSG_WRITTEN: Final = (
    "CNCF checklist: {path} ({total} requirements: {implemented} Implemented, {not_implemented} "
    "Not Implemented, {na} N/A, {manual} left to manual evidence)"
)
MSG_HYBRID: Final = "CNCF hybrid verification: {junit}, {log}"
MSG_FILL: Final = "WARNING: {line}"


@dataclass(frozen=True)
class Kit:
    """What :func:`write_kit` wrote and the lines to print."""

    product: product.Product
    product_path: Path
    junit: Path
    e2e_log: Path
    lines: tuple[str, ...]


def summary_line(filled: product.Product, path: Path) -> str:
    """One line: where PRODUCT.yaml went and how many requirements got each status."""
    statuses = [r.status for r in filled.requirements]
    return MSG_WRITTEN.format(
        path=path,
        total=len(statuses),
        implemented=statuses.count(IMPLEMENTED),
        not_implemented=statuses.count(NOT_IMPLEMENTED),
        na=statuses.count(NOT_APPLICABLE),
        manual=statuses.count(""),
    )


def write_kit(
    checklist: Checklist,
    result: SubmissionResult,
    evidence_dir: Path,
    metadata: Mapping[str, str] | None = None,
    *,
    secrets: Sequence[str] = (),
) -> Kit:
    """Write the hybrid-verification files and ``PRODUCT.yaml`` (module docstring); raises ``OSError``."""
    verdicts = outcomes.from_submission(result, evidence_dir)
    junit, log = hybrid.write_hybrid(verdicts, evidence_dir, secrets=secrets)
    filled = product.fill_product(
        checklist, verdicts, product.ProductMetadata(**dict(metadata or {})), hybrid=True, secrets=secrets
    )
    path = product.write_product(filled, evidence_dir)
    lines = (
        MSG_HYBRID.format(junit=junit, log=log),
        summary_line(filled, path),
        *(MSG_FILL.format(line=line) for line in filled.placeholders),
    )
    return Kit(filled, path, junit, log, lines)


__all__ = ["MSG_FILL", "MSG_HYBRID", "MSG_WRITTEN", "Kit", "summary_line", "write_kit"]

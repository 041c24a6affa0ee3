"""Path A: ``--evidence-dir`` without ``--cncf-submission``.

After a normal run, one markdown file per CNCF conformance check that ran (skipped tests are left
out), built from the check's structured artifacts (CTRF ``extra["aicr.artifacts"]``, never
re-parsed stdout), plus ``index.md`` linking each file with its result.  No matching test: nothing
is written.  Every file is scrubbed of secrets and AWS ELB hostnames.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aicr_pytest.core.artifacts import artifacts_from_extra
from aicr_pytest.evidence.cncf import features as cncf_features
from aicr_pytest.evidence.cncf.markdown import (
    RenderedCheck,
    RenderedFile,
    check_file_markdown,
    index_markdown,
)
from aicr_pytest.evidence.cncf.secrets import scrub
from aicr_pytest.evidence.cncf.verdict import redact_elb

INDEX = "index.md"
MSG_NOTHING = "no CNCF conformance check ran; no evidence files written"


class RenderError(Exception):
    """The report could not be rendered (``[INTERNAL] evidence rendering failed``)."""


def rendered_files(report: Mapping[str, Any]) -> list[RenderedFile]:
    """The report's CNCF checks grouped per evidence file, in first-appearance order."""
    tests = ((report.get("results") or {}).get("tests")) or []
    if not isinstance(tests, list):
        raise RenderError("CTRF results.tests is not a list")
    groups: dict[str, list[RenderedCheck]] = {}
    for test in tests:
        if not isinstance(test, Mapping):
            raise RenderError("CTRF test is not an object")
        feature = cncf_features.BY_CHECK.get(str(test.get("name")))
        status = str(test.get("status") or "")
        if feature is None or status == "skipped":
            continue
        try:
            artifacts = artifacts_from_extra(test.get("extra"))
        except ValueError as exc:
            raise RenderError(str(exc)) from exc
        duration = test.get("duration")
        groups.setdefault(feature.name, []).append(
            RenderedCheck(
                name=str(test.get("name")),
                status=status if status in ("passed", "failed") else "other",
                duration_ms=int(duration) if isinstance(duration, int | float) else 0,
                message=str(test["message"]) if test.get("message") else None,
                artifacts=artifacts,
            )
        )
    return [RenderedFile(cncf_features.BY_NAME[name], checks) for name, checks in groups.items()]


def render(
    report: Mapping[str, Any], directory: Path, *, secrets: Sequence[str] = (), now: float | None = None
) -> list[Path]:
    """Write the files for ``report`` into ``directory``; ``[]`` when no CNCF check ran."""
    files = rendered_files(report)
    if not files:
        return []
    generated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    outputs: Iterable[tuple[str, str]] = [
        *((r.feature.file, check_file_markdown(r, generated)) for r in files),
        (INDEX, index_markdown(files, generated)),
    ]
    for name, text in outputs:
        path = directory / name
        path.write_text(redact_elb(scrub(text, secrets)), encoding="utf-8")
        written.append(path)
    return written


__all__ = ["INDEX", "MSG_NOTHING", "RenderError", "render", "rendered_files"]

"""Hybrid verification: ``junit.xml`` and ``e2e.log`` for the run's CNCF verdicts.

From v1.37 the program accepts automated test output as evidence (cncf/k8s-ai-conformance
``instructions.md``, "Hybrid Verification & Automated Tests"): a submission directory may hold
``e2e.log`` (the raw ``go test -v`` log of kubernetes-sigs/ai-conformance ``test/``) and
``junit.xml``, and a requirement's evidence may point into them, e.g.
``file://results/junit.xml#TestSecureAcceleratorAccess``.

:func:`write_hybrid` writes both under ``<evidence-dir>/results/``, one test case per CNCF check
that has a verdict.  A test case takes the name of the program's suite test for the same
requirement where the suite has one (:func:`~aicr_pytest.evidence.cncf.requirements.junit_name`),
else our check's name; the log says it comes from aicr-pytest, not from the program's suite.
The JUnit layout is the one gotestsum and go-junit-report write (``testsuites`` > ``testsuite`` >
``testcase`` with ``failure``/``skipped``); the log follows ``go test -v`` (``=== RUN``,
``--- PASS|FAIL|SKIP: name (1.23s)``, a final ``PASS``/``FAIL``).  Every text is scrubbed of the
run's secret values and AWS ELB hostnames; control characters become ``\\xNN`` escapes.
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from aicr_pytest.core.textsafe import printable
from aicr_pytest.core.version import __version__
from aicr_pytest.evidence.cncf import requirements
from aicr_pytest.evidence.cncf.outcomes import CheckVerdict
from aicr_pytest.evidence.cncf.secrets import scrub
from aicr_pytest.evidence.cncf.verdict import Status, redact_elb

#: where the files go, relative to the evidence directory (and to PRODUCT.yaml beside it)
RESULTS_DIR: Final = "results"
JUNIT_PATH: Final = f"{RESULTS_DIR}/junit.xml"
E2E_LOG_PATH: Final = f"{RESULTS_DIR}/e2e.log"
SUITE: Final = "aicr-pytest/cncf"

_GO_WORD: Final[dict[Status, str]] = {"PASS": "PASS", "FAIL": "FAIL", "SKIP": "SKIP"}
#: characters XML 1.0 cannot carry (besides those :func:`printable` escapes)
_XML_INVALID: Final = re.compile("[\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class JUnitCase:
    """One test case: the name it is filed under and the check's verdict."""

    name: str
    verdict: CheckVerdict


def junit_cases(verdicts: Iterable[CheckVerdict]) -> tuple[JUnitCase, ...]:
    """One case per CNCF check with a verdict (first verdict of a check wins), in run order."""
    cases: list[JUnitCase] = []
    seen: set[str] = set()
    for v in verdicts:
        if v.check in seen or v.check not in requirements.BY_CHECK:
            continue
        seen.add(v.check)
        cases.append(JUnitCase(requirements.junit_name(v.check), v))
    return tuple(cases)


def junit_fragment(check: str) -> str:
    """The evidence link into ``junit.xml`` for ``check`` (relative to PRODUCT.yaml)."""
    return f"file://{JUNIT_PATH}#{requirements.junit_name(check)}"


def _clean(text: str, secrets: Sequence[str]) -> str:
    """One line of text safe for the files: scrubbed, control characters escaped."""
    return _XML_INVALID.sub("\ufffd", printable(redact_elb(scrub(text, secrets))))


def _lines(text: str, secrets: Sequence[str]) -> list[str]:
    return [_clean(line, secrets) for line in text.splitlines() if line.strip()]


def junit_xml(cases: Sequence[JUnitCase], *, timestamp: str, secrets: Sequence[str] = ()) -> str:
    """The ``junit.xml`` text for ``cases``."""
    failures = sum(1 for c in cases if c.verdict.status == "FAIL")
    skipped = sum(1 for c in cases if c.verdict.status == "SKIP")
    total = f"{sum(c.verdict.duration_s for c in cases):.3f}"
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0", "skipped": str(skipped)}
    root = ET.Element("testsuites", {**counts, "time": total})
    suite = ET.SubElement(root, "testsuite", {**counts, "time": total, "name": SUITE, "timestamp": timestamp})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "generator", "value": f"aicr-pytest {__version__}"})
    for case in cases:
        v = case.verdict
        element = ET.SubElement(
            suite, "testcase", {"classname": SUITE, "name": case.name, "time": f"{v.duration_s:.3f}"}
        )
        message = _clean(" ".join(v.message.split()), secrets)
        if v.status == "FAIL":
            ET.SubElement(
                element, "failure", {"message": message or "failed", "type": "Failed"}
            ).text = message
        elif v.status == "SKIP":
            ET.SubElement(element, "skipped", {"message": message or "skipped"})
        out = [f"aicr-pytest check {v.check}", *_lines("\n".join(v.log), secrets)]
        ET.SubElement(element, "system-out").text = "\n".join(out)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def e2e_log(cases: Sequence[JUnitCase], *, timestamp: str, secrets: Sequence[str] = ()) -> str:
    """The ``e2e.log`` text for ``cases`` (``go test -v`` shape)."""
    lines = [
        f"# aicr-pytest {__version__} CNCF AI-conformance checks, {timestamp}",
        "# test names follow kubernetes-sigs/ai-conformance test/ where that suite has a test for the"
        " requirement; the checks themselves are aicr-pytest's",
    ]
    for case in cases:
        v = case.verdict
        lines.append(f"=== RUN   {case.name}")
        lines.append(f"    aicr-pytest check {v.check}")
        lines += [f"    {line}" for line in _lines("\n".join(v.log), secrets)]
        lines.append(f"--- {_GO_WORD[v.status]}: {case.name} ({v.duration_s:.2f}s)")
        if v.status != "PASS" and v.message.strip():
            lines.append(f"    {_clean(' '.join(v.message.split()), secrets)}")
    lines.append("FAIL" if any(c.verdict.status == "FAIL" for c in cases) else "PASS")
    return "\n".join(lines) + "\n"


def write_hybrid(
    verdicts: Iterable[CheckVerdict],
    evidence_dir: Path,
    *,
    secrets: Sequence[str] = (),
    now: float | None = None,
) -> tuple[Path, Path]:
    """Write ``results/junit.xml`` and ``results/e2e.log`` under ``evidence_dir``; their paths."""
    cases = junit_cases(verdicts)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))
    junit = evidence_dir / JUNIT_PATH
    log = evidence_dir / E2E_LOG_PATH
    junit.parent.mkdir(parents=True, exist_ok=True)
    junit.write_text(junit_xml(cases, timestamp=stamp, secrets=secrets), encoding="utf-8")
    log.write_text(e2e_log(cases, timestamp=stamp, secrets=secrets), encoding="utf-8")
    return junit, log


__all__ = [
    "E2E_LOG_PATH",
    "JUNIT_PATH",
    "RESULTS_DIR",
    "SUITE",
    "JUnitCase",
    "e2e_log",
    "junit_cases",
    "junit_fragment",
    "junit_xml",
    "write_hybrid",
]

"""CNCF evidence from a simulated cluster, marked so that no reader takes it for a cluster's.

``aicr-pytest validate --simulate`` may write CNCF evidence (``--cncf-submission``,
``--evidence-dir``): it shows what a submission looks like without GPUs.  :func:`mark` then
stamps every file it wrote: a ``SIMULATED.md`` beside them; a banner at the top of each evidence
page, of ``PRODUCT.yaml`` (a YAML comment) and of ``results/e2e.log``; ``aicr.simulated`` properties
on every test suite of ``results/junit.xml``.  :func:`problem` is what the offline check reports for
such a directory, so our own verifier refuses it.  (The recipe evidence bundle is refused outright:
``--emit-attestation`` with ``--simulate`` is a usage error.)
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Final

from aicr_pytest.evidence.cncf.hybrid import E2E_LOG_PATH, JUNIT_PATH

MARKER_FILE: Final = "SIMULATED.md"
BANNER: Final = (
    "SIMULATED: written by `aicr-pytest validate --simulate {profile}`. No cluster was validated; "
    "this is not conformance evidence."
)
MSG_PROBLEM: Final = (
    "{path}: written from a SIMULATED cluster (aicr-pytest validate --simulate): not evidence of a cluster"
)
PRODUCT_FILE: Final = "PRODUCT.yaml"
MSG_MARKED: Final = "SIMULATED: every CNCF evidence file says it comes from a simulated cluster ({path})"


def _prepend(path: Path, line: str) -> None:
    text = path.read_text(encoding="utf-8")
    if not text.startswith(line):
        gap = "\n\n" if path.suffix == ".md" else "\n"
        path.write_text(line + gap + text, encoding="utf-8")


def _junit(path: Path, profile: str) -> None:
    tree = ET.parse(path)
    root = tree.getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    for suite in suites:
        props = suite.find("properties")
        if props is None:
            props = ET.Element("properties")
            suite.insert(0, props)
        names = {p.get("name") for p in props.iter("property")}
        for name, value in (("aicr.simulated", "true"), ("aicr.simulatedProfile", profile)):
            if name not in names:
                ET.SubElement(props, "property", {"name": name, "value": value})
    tree.write(path, encoding="utf-8", xml_declaration=True)


def mark(evidence_dir: Path, profile: str) -> list[Path]:
    """Stamp the evidence files in ``evidence_dir`` (module docstring); the files touched, the
    marker first.  Idempotent; raises ``OSError``."""
    banner = BANNER.format(profile=profile)
    evidence_dir.mkdir(parents=True, exist_ok=True)
    marker = evidence_dir / MARKER_FILE
    marker.write_text(f"# SIMULATED\n\n{banner}\n", encoding="utf-8")
    touched = [marker]
    for page in sorted(evidence_dir.glob("*.md")):
        if page.name != MARKER_FILE:
            _prepend(page, f"> **{banner}**")
            touched.append(page)
    product = evidence_dir / PRODUCT_FILE
    if product.is_file():
        _prepend(product, f"# {banner}")
        touched.append(product)
    log = evidence_dir / E2E_LOG_PATH
    if log.is_file():
        _prepend(log, banner)
        touched.append(log)
    junit = evidence_dir / JUNIT_PATH
    if junit.is_file():
        _junit(junit, profile)
        touched.append(junit)
    return touched


def problem(product_path: Path) -> str | None:
    """The offline check's line for a ``PRODUCT.yaml`` written from a simulated cluster (``None``:
    not marked)."""
    marked = (product_path.parent / MARKER_FILE).exists()
    if not marked and product_path.is_file():
        marked = product_path.read_text(encoding="utf-8", errors="replace").startswith("# SIMULATED")
    return MSG_PROBLEM.format(path=product_path) if marked else None


__all__ = ["BANNER", "MARKER_FILE", "MSG_MARKED", "MSG_PROBLEM", "mark", "problem"]

"""CNCF evidence from a simulated cluster: every file says so, and the offline check refuses it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from aicr_pytest.evidence.cncf import simulated

BANNER = (
    "SIMULATED: written by `aicr-pytest validate --simulate h100-eks-training`. No cluster was "
    "validated; this is not conformance evidence."
)


def _kit(ev: Path) -> None:
    (ev / "results").mkdir(parents=True)
    (ev / "robust-operator.md").write_text("# Robust operator\n\n**Result: PASS**\n")
    (ev / "PRODUCT.yaml").write_text("metadata:\n  productName: x\n")
    (ev / "results" / "e2e.log").write_text("PASS robust-operator\n")
    (ev / "results" / "junit.xml").write_text(
        '<?xml version="1.0"?><testsuites><testsuite name="aicr-pytest/cncf" tests="1">'
        '<testcase name="TestRobustOperator"/></testsuite></testsuites>'
    )


def test_every_file_is_marked_once(tmp_path: Path) -> None:
    ev = tmp_path / "ev"
    _kit(ev)
    touched = simulated.mark(ev, "h100-eks-training")
    simulated.mark(ev, "h100-eks-training")  # idempotent
    assert [p.relative_to(ev).as_posix() for p in touched] == [
        "SIMULATED.md",
        "robust-operator.md",
        "PRODUCT.yaml",
        "results/e2e.log",
        "results/junit.xml",
    ]
    assert (ev / "SIMULATED.md").read_text() == f"# SIMULATED\n\n{BANNER}\n"
    assert (ev / "robust-operator.md").read_text() == (
        f"> **{BANNER}**\n\n# Robust operator\n\n**Result: PASS**\n"
    )
    assert (ev / "PRODUCT.yaml").read_text() == f"# {BANNER}\nmetadata:\n  productName: x\n"
    assert (ev / "results" / "e2e.log").read_text() == f"{BANNER}\nPASS robust-operator\n"
    suite = ET.parse(ev / "results" / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    props = [(p.get("name"), p.get("value")) for p in suite.iter("property")]
    assert props == [("aicr.simulated", "true"), ("aicr.simulatedProfile", "h100-eks-training")]
    assert [c.get("name") for c in suite.iter("testcase")] == ["TestRobustOperator"]


def test_the_offline_check_refuses_a_marked_product(tmp_path: Path) -> None:
    ev = tmp_path / "ev"
    _kit(ev)
    product = ev / "PRODUCT.yaml"
    assert simulated.problem(product) is None
    simulated.mark(ev, "h100-eks-training")
    line = (
        f"{product}: written from a SIMULATED cluster (aicr-pytest validate --simulate): "
        "not evidence of a cluster"
    )
    assert simulated.problem(product) == line
    (ev / "SIMULATED.md").unlink()  # the banner alone still gives it away
    assert simulated.problem(product) == line
    from aicr_pytest.evidence.cncf.offline_check import check_product

    assert check_product(product)[0] == line

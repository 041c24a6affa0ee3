"""The Grace-Blackwell NET preflight's decisions (:mod:`aicr_pytest.nccl.nvreg`), upstream's rules
(AICR #2459): the driver version first, R595+ fails, an undetermined driver is never a pass."""

from __future__ import annotations

import pytest

from aicr_pytest.nccl import nvreg
from aicr_pytest.nccl.nvreg import NodeResult, Verdict
from aicr_pytest.testing.players import nvreg_probe

R580 = "NVRM version: NVIDIA UNIX aarch64 Kernel Module  580.173.02  Wed Nov 12 01:02:03 UTC 2025\n"
GCC = "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
SET = "RmLogonRC: 1\nGrdmaPciTopoCheckOverride: 1\n"
UNSET = "RmLogonRC: 1\nGrdmaPciTopoCheckOverride: 0\n"


def banner(version: str) -> str:
    return f"NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  {version}  Release Build\n{GCC}"


def probe(version_file: str | None, params_file: str | None) -> str:
    """The probe's output when each file was read (``None``: the read failed)."""
    out = "" if version_file is None else version_file + nvreg.VERSION_OK_MARKER + "\n"
    out += nvreg.SEPARATOR + "\n"
    return out + ("" if params_file is None else params_file + nvreg.PARAMS_OK_MARKER + "\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (R580 + GCC, ("580.173.02", 580)),
        (banner("595.58.03"), ("595.58.03", 595)),
        (banner("610.12"), ("610.12", 610)),
        (GCC + banner("570.86.15"), ("570.86.15", 570)),  # anchored on its own line
        (GCC, None),  # only the GCC version: never read as the driver's
        ("NVRM version: NVIDIA UNIX Kernel Module  release build\n", None),
        ("", None),
        ("garbage 580.1.2\n", None),
    ],
)
def test_the_driver_version_comes_from_the_nvrm_banner(text: str, expected: tuple[str, int] | None) -> None:
    assert nvreg.parse_nvrm_version(text) == expected


@pytest.mark.parametrize(
    ("version", "params", "expected"),
    [
        # R595 and later: fails whatever params say (the flag cannot exist there)
        (banner("595.58.03"), SET, NodeResult(Verdict.OVERRIDE_REMOVED, "595.58.03")),
        (banner("595.0"), None, NodeResult(Verdict.OVERRIDE_REMOVED, "595.0")),
        (banner("600.10.01"), UNSET, NodeResult(Verdict.OVERRIDE_REMOVED, "600.10.01")),
        # below R595: the override decides
        (banner("594.99.99"), SET, NodeResult(Verdict.OK, "594.99.99")),
        (R580, SET, NodeResult(Verdict.OK, "580.173.02")),
        (R580, UNSET, NodeResult(Verdict.FLAG_MISSING, "580.173.02")),
        (R580, "# GrdmaPciTopoCheckOverride: 1\n", NodeResult(Verdict.FLAG_MISSING, "580.173.02")),
        (R580, None, NodeResult(Verdict.PARAMS_UNREADABLE, "580.173.02")),
        # the version unreadable or unparsable: undetermined, never a pass
        (None, SET, NodeResult(Verdict.UNDETERMINED)),
        ("NVRM version: something new\n", SET, NodeResult(Verdict.UNDETERMINED)),
        ("", SET, NodeResult(Verdict.UNDETERMINED)),
    ],
)
def test_a_node_verdict(version: str | None, params: str | None, expected: NodeResult) -> None:
    assert nvreg.evaluate_probe(probe(version, params)) == expected


def test_output_without_its_markers_is_not_the_file() -> None:
    # a truncated version read (no marker) is discarded: undetermined, not the version it shows
    truncated = R580 + nvreg.SEPARATOR + "\n" + SET + nvreg.PARAMS_OK_MARKER + "\n"
    assert nvreg.evaluate_probe(truncated) == NodeResult(Verdict.UNDETERMINED)
    assert nvreg.split_probe_output(R580 + SET) == ("", "", False)  # no separator at all
    assert nvreg.evaluate_probe("") == NodeResult(Verdict.UNDETERMINED)


def test_the_test_kit_plays_the_probe_script() -> None:
    node = {"metadata": {"name": "n", "labels": {"kubernetes.io/arch": "arm64"}}}
    assert nvreg.evaluate_probe(nvreg_probe.probe_output(node)) == NodeResult(Verdict.OK, "580.95.05")
    r595 = nvreg.evaluate_probe(nvreg_probe.probe_output(node, r595=True))
    assert r595 == NodeResult(Verdict.OVERRIDE_REMOVED, nvreg_probe.R595_DRIVER)
    # the markers the test kit repeats are the check's own
    assert nvreg_probe._VERSION_OK == nvreg.VERSION_OK_MARKER
    assert nvreg_probe._SEPARATOR == nvreg.SEPARATOR
    assert nvreg_probe._PARAMS_OK == nvreg.PARAMS_OK_MARKER


def test_the_probe_script_always_exits_zero_and_marks_clean_reads() -> None:
    script = nvreg.PROBE_SCRIPT
    assert script.endswith("exit 0")
    assert "cat /host-proc-nvidia/version 2>/dev/null && echo '===AICR-NVREG-VERSION-OK==='" in script
    assert "cat /host-proc-nvidia/params 2>/dev/null && echo '===AICR-NVREG-PARAMS-OK==='" in script


def test_every_failing_category_is_reported_most_fundamental_first() -> None:
    results = {
        "n4": NodeResult(Verdict.FLAG_MISSING, "580.95.05"),
        "n3": NodeResult(Verdict.PARAMS_UNREADABLE, "580.95.05"),
        "n2": NodeResult(Verdict.UNDETERMINED),
        "n1": NodeResult(Verdict.OVERRIDE_REMOVED, "595.58.03"),
        "n0": NodeResult(Verdict.OK, "580.95.05"),
    }
    found = nvreg.outcome(results)
    assert found is not None and found.measured
    assert found.message == " ".join(
        [
            "GPUDirect RDMA cannot be verified on GPU nodes running driver R595 or later: "
            "n1 (driver 595.58.03). " + nvreg.HINT_OVERRIDE_REMOVED,
            "NVIDIA driver version could not be determined on GPU nodes: n2. " + nvreg.HINT_UNDETERMINED,
            "NVreg_GrdmaPciTopoCheckOverride state could not be determined on GPU nodes: "
            "n3 (driver 580.95.05). " + nvreg.HINT_PARAMS_UNREADABLE,
            "NVreg_GrdmaPciTopoCheckOverride=1 missing on GPU nodes: n4 (driver 580.95.05). "
            + nvreg.HINT_FLAG_MISSING,
        ]
    )


def test_only_undetermined_nodes_are_not_a_measurement_and_all_ok_passes() -> None:
    found = nvreg.outcome({"a": NodeResult(Verdict.UNDETERMINED), "b": NodeResult(Verdict.OK, "580.1")})
    assert found is not None and not found.measured  # the check reports other, never passed
    assert found.message.startswith("NVIDIA driver version could not be determined on GPU nodes: a. ")
    unreadable = nvreg.outcome({"a": NodeResult(Verdict.PARAMS_UNREADABLE, "580.1")})
    assert unreadable is not None and not unreadable.measured
    assert nvreg.outcome({"a": NodeResult(Verdict.OK, "580.1"), "b": NodeResult(Verdict.OK, "590.2")}) is None
    # the zero value of the verdicts is undetermined: an empty result never reads as a pass
    assert nvreg.evaluate_node("", "", False).verdict is Verdict.UNDETERMINED


def test_node_lists_are_bounded_and_count_the_rest() -> None:
    many = {f"node-{i:02d}": NodeResult(Verdict.OVERRIDE_REMOVED, "595.1") for i in range(13)}
    text = nvreg.describe_nodes(many, sorted(many))
    assert text.endswith(", node-09 (driver 595.1) (+3 more)") and text.count("(driver") == 10
    long = {("x" * 300) + str(i): NodeResult(Verdict.UNDETERMINED) for i in range(3)}
    names = sorted(long)
    assert nvreg.describe_nodes(long, names) == f"{names[0]} (+2 more)"  # the first is always named


@pytest.mark.parametrize(
    ("variant", "accelerator", "service", "applies"),
    [
        ("net", "gb200", "eks", True),
        ("net", "gb200", "oke", True),
        ("net", "gb300", "eks", True),
        ("net", "gb300", "oke", False),
        ("net", "h100", "eks", False),
        ("nvls", "gb200", "eks", False),
        ("default", "gb200", "any", False),
    ],
)
def test_where_the_net_preflight_applies(variant: str, accelerator: str, service: str, applies: bool) -> None:
    assert nvreg.applies(variant, accelerator, service) is applies

"""``check-nvidia-smi``'s host-driver floor (``Deployment.gpu-driver.version``, AICR #1995): the rules."""

from __future__ import annotations

import pytest

from aicr_pytest.deployment import driver_floor as df
from aicr_pytest.deployment.nvidia_smi_plan import GpuNode, verify_node_output
from aicr_pytest.testing.players.nvidia_smi import Gpus, run_verify_script

BANNER = "| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |\n"


@pytest.mark.parametrize(
    ("logs", "version"),
    [
        (BANNER, "580.95.05"),
        ("| NVIDIA-SMI 600.10   KMD Version: 600.10.01   CUDA UMD Version: 13.2 |", "600.10.01"),
        ("driver version:\t535.247.01\n", "535.247.01"),  # any case, tab after the colon
        ("Driver Version: 580", "580"),  # fewer parts, at the end of the log
    ],
)
def test_the_banner_version_is_read(logs: str, version: str) -> None:
    assert df.banner_driver_version(logs) == version


@pytest.mark.parametrize(
    ("logs", "cause"),
    [
        ("NVIDIA-SMI has failed\n", df.CAUSE_NO_VERSION),
        ("Driver\nVersion: 580.95.05\n", df.CAUSE_NO_VERSION),  # a split label is no field
        ("Driver Version:\n580.95.05\n", df.CAUSE_NO_VERSION),  # nor a version on the next line
        ("Driver Version: 580.95.05.1 |", df.CAUSE_NOT_THREE_PARTS),  # never truncated into a pass
        ("Driver Version: 580.95.05-rc1 |", df.CAUSE_NOT_THREE_PARTS),
    ],
)
def test_an_unreadable_banner_is_no_version(logs: str, cause: str) -> None:
    with pytest.raises(df.UnreadableDriver, match=cause):
        df.banner_driver_version(logs)


def test_a_driver_at_the_floor_passes_with_its_line() -> None:
    verdict = df.enforce_floor(">= 580.95.05", BANNER, "h100-0")
    assert verdict.error is None
    assert verdict.line == "  h100-0: host driver 580.95.05, constraint >= 580.95.05 → true"


def test_a_driver_below_the_floor_fails_naming_node_and_version() -> None:
    verdict = df.enforce_floor(">= 590.0.0", BANNER, "h100-3")
    assert verdict.error == (
        "[INTERNAL] host driver version 580.95.05 on node h100-3 does not satisfy "
        'Deployment.gpu-driver.version ">= 590.0.0"'
    )
    assert verdict.line == "  h100-3: host driver 580.95.05, constraint >= 590.0.0 → false"


def test_an_unreadable_banner_under_a_floor_fails_closed() -> None:
    verdict = df.enforce_floor(">= 580.95.05", "Driver Version: 580.95.05.1\n", "h100-1")
    assert verdict.error == (
        '[NOT_FOUND] Deployment.gpu-driver.version constraint ">= 580.95.05" is set but could not parse '
        "the host driver version from nvidia-smi on node h100-1: "
        "nvidia-smi driver version is not a three-component numeric field"
    )
    assert verdict.line is None


@pytest.mark.parametrize("expr", [">=", ">= not-a-version"])
def test_an_unusable_floor_is_invalid_request(expr: str) -> None:
    verdict = df.enforce_floor(expr, BANNER, "h100-0")
    assert verdict.error is not None
    assert verdict.error.startswith("[INVALID_REQUEST] invalid Deployment.gpu-driver.version constraint: ")


def test_a_bare_version_is_an_exact_match() -> None:
    assert df.enforce_floor("580.95.05", BANNER, "n").error is None
    assert df.enforce_floor("580.95.06", BANNER, "n").error is not None


def test_the_unmeasurable_message() -> None:
    assert df.unmeasurable(">= 580.95.05", "no GPU nodes found in the cluster") == (
        '[NOT_FOUND] Deployment.gpu-driver.version ">= 580.95.05" is set but the host driver version '
        "could not be measured (no GPU nodes found in the cluster)"
    )


def _verify_logs(driver: str) -> str:
    from aicr_pytest.deployment.nvidia_smi_plan import VERIFY_SCRIPT

    text, code = run_verify_script(VERIFY_SCRIPT, Gpus(8, "NVIDIA H100 80GB HBM3", 81559, driver, "n"), 0.0)
    assert code == 0
    return text


def test_the_verify_pod_output_carries_the_floor_verdict() -> None:
    node = GpuNode("h100-3", 8)
    ok = verify_node_output(
        node, namespace="ns", pod_name="p", logs=_verify_logs("580.95.05"), floor=">= 580"
    )
    assert ok.ok and ok.floor_line == "  h100-3: host driver 580.95.05, constraint >= 580 → true"
    low = verify_node_output(
        node, namespace="ns", pod_name="p", logs=_verify_logs("535.247.01"), floor=">= 580"
    )
    assert not low.ok and not low.inconclusive
    assert low.error is not None and "host driver version 535.247.01 on node h100-3" in low.error
    # no floor declared: none is invented
    plain = verify_node_output(node, namespace="ns", pod_name="p", logs=_verify_logs("535.247.01"))
    assert plain.ok and plain.floor_line is None

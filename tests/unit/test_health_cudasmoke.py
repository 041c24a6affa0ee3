"""gpu-cuda-smoke's pure half: the pod, its output protocol read fail-closed, and the verdict."""

from __future__ import annotations

import pytest

from aicr_pytest.health import cudasmoke as cs
from aicr_pytest.health.common import HealthCheckFailed, HealthInconclusive
from aicr_pytest.testing.players.cuda_smoke import KERNEL_ERROR, smoke_output

POD = "cuda-smoke-gpu-a-123456-run1"


def _parse(text: str, gpus: int = 2) -> cs.SmokeResult:
    return cs.parse_smoke(text, "gpu-a", POD, gpus)


def test_a_healthy_report_passes() -> None:
    text, code = smoke_output(2)
    assert code == 0
    result = _parse("some sample chatter\n" + text)
    assert result.missing == () and dict(result.gpus) == {0: None, 1: None}
    assert cs.check_cuda_smoke([result]) == (
        "CUDA smoke passed on 1 node: 2 GPUs, a CUDA kernel ran on each; "
        "/dev/nvidia-uvm and /dev/nvidia-uvm-tools present"
    )


def test_uvm_missing_fails_naming_node_device_and_each_gpu() -> None:
    text, code = smoke_output(2, uvm_missing=True)
    assert code == 1
    with pytest.raises(HealthCheckFailed) as err:
        cs.check_cuda_smoke([_parse(text)])
    assert err.value.lines == (
        f"node gpu-a: /dev/nvidia-uvm is missing in the CUDA pod {POD} (CUDA cannot run)",
        f"node gpu-a GPU 0: the CUDA kernel failed: exit 1: {KERNEL_ERROR}",
        f"node gpu-a GPU 1: the CUDA kernel failed: exit 1: {KERNEL_ERROR}",
    )


def test_one_failing_gpu_alone_fails_and_inconclusive_lines_ride_along() -> None:
    text = "\n".join(
        [
            "aicr-cuda-smoke uvm /dev/nvidia-uvm ok",
            "aicr-cuda-smoke uvm /dev/nvidia-uvm-tools ok",
            "aicr-cuda-smoke gpu 0 ok",
            "aicr-cuda-smoke gpu 1 fail",
            "aicr-cuda-smoke end 2",
        ]
    )
    with pytest.raises(HealthCheckFailed) as err:
        cs.check_cuda_smoke([_parse(text)], ["node gpu-b: x"])
    assert err.value.lines == ("node gpu-a GPU 1: the CUDA kernel failed", "inconclusive: node gpu-b: x")


GOOD = smoke_output(2)[0]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "no end line: the script did not finish"),
        (GOOD.replace("aicr-cuda-smoke end 2\n", ""), "no end line: the script did not finish"),
        (GOOD.replace("end 2", "end 3"), "it ran on 3 GPUs but holds 2"),
        (GOOD.replace("aicr-cuda-smoke gpu 1 ok\n", ""), "GPUs reported [0], expected 0 to 1"),
        (GOOD.replace("gpu 1 ok", "gpu 0 ok"), "GPU 0 reported twice"),
        (GOOD.replace("gpu 1 ok", "gpu 1 maybe"), "unreadable line 'aicr-cuda-smoke gpu 1 maybe'"),
        (GOOD + "aicr-cuda-smoke gpu 2 ok\n", "a line after the end line"),
        (
            GOOD.replace("aicr-cuda-smoke uvm /dev/nvidia-uvm-tools ok\n", ""),
            "/dev/nvidia-uvm-tools not checked",
        ),
    ],
)
def test_missing_or_garbled_output_is_inconclusive_never_a_pass(text: str, why: str) -> None:
    with pytest.raises(cs.SmokeOutputError) as err:
        _parse(text)
    assert str(err.value) == (
        f"node gpu-a: the CUDA smoke pod {POD} printed output that cannot be read ({why})"
    )


def test_no_node_judged_is_inconclusive() -> None:
    with pytest.raises(HealthInconclusive) as err:
        cs.check_cuda_smoke([])
    assert str(err.value) == "no GPU node was smoke-tested"
    with pytest.raises(HealthInconclusive):
        cs.check_cuda_smoke([], ["node gpu-a: the CUDA smoke pod p vanished before it finished"])


def test_the_pod_holds_every_gpu_pinned_to_its_node_and_the_script_covers_them() -> None:
    pod = cs.smoke_pod("gpu-a", 8, name="p", image="img", tolerations=None, active_deadline_seconds=300)
    (container,) = pod["spec"]["containers"]
    assert pod["spec"]["nodeName"] == "gpu-a" and pod["spec"]["restartPolicy"] == "Never"
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert pod["metadata"]["labels"] == {"app.kubernetes.io/name": "aicr-cuda-smoke"}
    script = container["args"][0]
    assert "while [ $i -lt 8 ]" in script and 'echo "aicr-cuda-smoke end 8"' in script
    assert "for d in /dev/nvidia-uvm /dev/nvidia-uvm-tools" in script
    assert cs.pod_base("GPU.Node_1").startswith("cuda-smoke-gpu-node-1-")

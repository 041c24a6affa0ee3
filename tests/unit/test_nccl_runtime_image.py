"""``AICR_NCCL_RUNTIME_IMAGE`` (AICR #1751, PR #2386): validated as an image reference, rendered into
every workload container of our embedded runtimes and into nothing else; a recipe-supplied runtime
owns its image (the variable is neither read nor validated for it)."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest import nccl
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.imageref import is_image_reference
from aicr_pytest.nccl import runtimeimage
from tests.unit.test_nccl_variants import GOOD_RUNTIME
from tests.unit.test_templates import inputs, jobs, pod

IMAGE = "nvcr.io/nvidia/pytorch:25.09-py3"
ENV = "AICR_NCCL_RUNTIME_IMAGE"


@pytest.mark.parametrize(
    "text",
    [
        "busybox",
        "busybox:1.37",
        "nvcr.io/nvidia/pytorch:25.09-py3",
        "localhost:5000/team/nccl-tests:cuda13",
        "[::1]:5000/nccl:v1",
        "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9",
        "ghcr.io/x/y@sha256:" + "a" * 64,
        "ghcr.io/x/y:tag@sha512:" + "0" * 128,
    ],
)
def test_image_references(text: str) -> None:
    assert is_image_reference(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " busybox",
        "NVCR.io/Nvidia/PyTorch:1",  # a path component must be lowercase
        "nvcr.io/nvidia/pytorch:",
        "nvcr.io/nvidia/pytorch:-x",
        "nvcr.io/nvidia/pytorch:1 2",
        "nvcr.io//pytorch:1",
        "ghcr.io/x/y@sha256:abc",
        "ghcr.io/x/y@sha256:" + "A" * 64,  # go-digest: lowercase hex
        "ghcr.io/x/y@md5:" + "a" * 32,
        "a" * 64,  # an image id, not a name
        "x/" + "a" * 260 + ":1",
        "nvcr.io/nvidia/pytorch:ünïcode",
    ],
)
def test_not_image_references(text: str) -> None:
    assert not is_image_reference(text)


def test_the_override_is_read_trimmed_and_validated() -> None:
    assert runtimeimage.resolve_runtime_image({}) is None
    assert runtimeimage.resolve_runtime_image({ENV: ""}) is None
    assert runtimeimage.resolve_runtime_image({ENV: f"  {IMAGE}\n"}) == IMAGE
    with pytest.raises(UsageError) as blank:
        runtimeimage.resolve_runtime_image({ENV: "   "})
    assert str(blank.value) == "AICR_NCCL_RUNTIME_IMAGE is set but blank after trimming whitespace"
    with pytest.raises(UsageError) as bad:
        runtimeimage.resolve_runtime_image({ENV: "NVCR.io/Bad Image:1"})
    assert str(bad.value) == (
        'invalid AICR_NCCL_RUNTIME_IMAGE="NVCR.io/Bad Image:1": not a well-formed image reference '
        "([registry/]repository[:tag][@digest])"
    )


def _images(runtime: dict[str, Any]) -> dict[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for job_name, job in jobs(runtime).items():
        for key in ("initContainers", "containers"):
            for c in pod(job).get(key) or []:
                out[(job_name, key, c["name"])] = c["image"]
    return out


@pytest.mark.parametrize(
    ("check", "service", "accelerator", "env"),
    [
        (nccl.CHECK_DEFAULT, "eks", "h100", {}),
        (nccl.CHECK_DEFAULT, "gke", "h100", {}),
        (nccl.CHECK_NET, "eks", "gb200", {}),
        (nccl.CHECK_NET, "eks", "gb300", {"AICR_NCCL_FABRIC": "roce"}),
        (nccl.CHECK_NVLS, "oke", "gb200", {}),
    ],
)
def test_the_override_reaches_every_workload_container_and_no_sidecar(
    check: str, service: str, accelerator: str, env: dict[str, str]
) -> None:
    sched = nccl.WorkerScheduling({}, [])
    plain = nccl.resolve_variant(check, nccl.Criteria(service, accelerator), {check: ">= 1"}, env)
    assert plain.runtime_image is None
    before = _images(nccl.render_benchmark(plain, inputs(), sched).runtime)
    plan = nccl.resolve_variant(
        check, nccl.Criteria(service, accelerator), {check: ">= 1"}, {**env, ENV: IMAGE}
    )
    assert plan.runtime_image == IMAGE
    after = _images(nccl.render_benchmark(plan, inputs(), sched).runtime)
    assert after.keys() == before.keys()
    workload = {k for k in after if k[2] in ("fix-ssh-perms", "node")}
    assert {("launcher", "containers", "node"), ("node", "containers", "node")} <= workload
    for key, image in after.items():
        assert image == (IMAGE if key in workload else before[key]), key
    if service == "gke":  # the TCPXO daemon is not part of the NCCL workload
        assert (
            after[("node", "initContainers", "tcpxo-daemon")]
            == before[("node", "initContainers", "tcpxo-daemon")]
        )


def test_a_runtime_without_workload_containers_is_template_drift() -> None:
    runtime = {"spec": {"template": {"spec": {"replicatedJobs": [{"name": "x", "template": {}}]}}}}
    with pytest.raises(runtimeimage.RuntimeImageDrift) as err:
        runtimeimage.apply_runtime_image(runtime, IMAGE)
    assert str(err.value) == (
        "AICR_NCCL_RUNTIME_IMAGE set but no [fix-ssh-perms node] containers found in TrainingRuntime — "
        "template/override drift"
    )
    assert isinstance(err.value, AssertionError)  # the check fails (CTRF failed), never passes


def test_a_recipe_supplied_runtime_owns_its_image() -> None:
    # neither read nor validated: a malformed override does not fail a private runtime
    plan = nccl.resolve_variant(
        nccl.CHECK_DEFAULT,
        nccl.Criteria("mycloud", "gb300"),
        {nccl.CHECK_DEFAULT: ">= 1", "nccl-benchmark-runtime": GOOD_RUNTIME},
        {ENV: "NOT AN IMAGE"},
    )
    assert plan.private_runtime is not None and plan.runtime_image is None
    objs = nccl.render_benchmark(plan, inputs(), nccl.WorkerScheduling({}, []))
    assert IMAGE not in str(objs.runtime) and "NOT AN IMAGE" not in str(objs.runtime)


def test_a_bad_override_fails_before_applicability() -> None:
    # upstream resolves it before the applicability matrix: an unsupported pair still exits 2
    with pytest.raises(UsageError):
        nccl.resolve_variant(
            nccl.CHECK_DEFAULT, nccl.Criteria("eks", "a100"), {nccl.CHECK_DEFAULT: ">= 1"}, {ENV: "Bad:1"}
        )

"""Every NCCL template under runtimes/nccl renders (StrictUndefined) to the objects the checks need."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aicr_pytest import nccl
from aicr_pytest.core import templates, yamlio

ROOT = templates.runtimes_root()
NCCL_DIR = ROOT / "nccl"

EXPECTED_FILES = {
    "trainjob.yaml",
    "b200/any/runtime.yaml",
    "gb200/any/runtime.yaml",
    "gb200/eks/runtime-net.yaml",
    "gb200/eks/runtime-nvls.yaml",
    "gb200/oke/runtime-nvls.yaml",
    "h100/aks/runtime.yaml",
    "h100/eks/runtime.yaml",
    "h100/gke/runtime.yaml",
    "h200/eks/runtime.yaml",
    "roce/eks/runtime-net.yaml",
    "roce/eks/roce-claim.yaml",
}
NAMES = nccl.benchmark_names("20260713-101500-0123456789abcdef", nccl.CHECK_NET, "gw0")
LABELS = {
    "app.kubernetes.io/managed-by": "aicr-pytest",
    "aicr.run/run-id": "20260713-101500-0123456789abcdef",
}
GKE_NETS = nccl.gke_network_interfaces([f"demo-gpu-nic-{i}" for i in range(8)])


def inputs(
    gpus: int = 8, workers: int = 2, efa: int = 32, rdma: int = 1, max_size: str = "16G"
) -> nccl.RenderInputs:
    return nccl.RenderInputs(
        namespace="aicr-validation",
        names=NAMES,
        sizing=nccl.WorkerSizing(workers, gpus, tuple(f"n{i}" for i in range(workers))),
        labels=LABELS,
        max_message_size=max_size,
        efa_count=efa,
        rdma_count=rdma,
        gke_network_interfaces=GKE_NETS,
    )


def render(rel: str, inp: nccl.RenderInputs | None = None) -> dict[str, Any]:
    inp = inp or inputs()
    docs = templates.render(f"nccl/{rel}", inp.context(), placeholders=inp.placeholders())
    assert len(docs) == 1
    doc: dict[str, Any] = docs[0]
    return doc


def jobs(runtime: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {j["name"]: j for j in runtime["spec"]["template"]["spec"]["replicatedJobs"]}


def pod(job: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = job["template"]["spec"]["template"]["spec"]
    return spec


def container(job: dict[str, Any], name: str = "node") -> dict[str, Any]:
    return next(c for c in pod(job)["containers"] if c["name"] == name)


def launcher_argv(runtime: dict[str, Any]) -> list[str]:
    c = container(jobs(runtime)["launcher"])
    return [str(a) for a in [*c.get("command", []), *c.get("args", [])]]


def env_flags(argv: list[str]) -> set[str]:
    return {argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-x"}


RUNTIMES = sorted(f for f in EXPECTED_FILES if "/runtime" in f)  # TrainingRuntime templates


def test_every_template_is_accounted_for() -> None:
    on_disk = {p.relative_to(NCCL_DIR).as_posix() for p in NCCL_DIR.rglob("*.yaml")}
    assert on_disk == EXPECTED_FILES


@pytest.mark.parametrize(
    ("variant", "service", "accelerator"),
    sorted(
        (variant, svc, acc)
        for variant, combos in nccl.SUPPORTED_COMBINATIONS.items()
        for svc, accs in combos.items()
        for acc in accs
    ),
)
def test_every_supported_combination_has_a_template(
    variant: nccl.Variant, service: str, accelerator: str
) -> None:
    rel = nccl.template_path(variant, "efa", accelerator, service)
    assert (NCCL_DIR / rel).is_file()
    assert render(rel)["kind"] == "TrainingRuntime"


def test_roce_templates_for_every_roce_service() -> None:
    for svc in nccl.ROCE_NET_SERVICES:
        assert (NCCL_DIR / nccl.template_path("net", "roce", "whatever", svc)).is_file()
        assert (NCCL_DIR / nccl.ROCE_CLAIM_TEMPLATE.format(service=svc)).is_file()


@pytest.mark.parametrize("rel", RUNTIMES)
def test_training_runtime_shape(rel: str) -> None:
    rt = render(rel)
    assert rt["apiVersion"] == "trainer.kubeflow.org/v1alpha1" and rt["kind"] == "TrainingRuntime"
    meta = rt["metadata"]
    assert meta["name"] == NAMES.runtime and meta["namespace"] == "aicr-validation"
    assert meta["labels"]["trainer.kubeflow.org/framework"] == "mpi"
    assert LABELS.items() <= meta["labels"].items()
    mpi = rt["spec"]["mlPolicy"]["mpi"]
    assert mpi == {
        "mpiImplementation": "OpenMPI",
        "numProcPerNode": 8,
        "runLauncherAsNode": False,
        "sshAuthMountPath": "/tmp/mpi-keys",
    }
    spec = rt["spec"]["template"]["spec"]
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert spec["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["launcher"]}
    js = jobs(rt)
    assert set(js) == {"launcher", "node"}
    assert js["launcher"]["replicas"] == 1
    assert pod(js["launcher"])["tolerations"] == [{"operator": "Exists"}]
    # the launcher runs all_reduce_perf over the whole cohort
    argv = launcher_argv(rt)
    assert "--allow-run-as-root" in argv
    assert argv[argv.index("-np") + 1] == "16"
    assert any(a.endswith("/all_reduce_perf") or a.endswith("/all_reduce_perf_mpi") for a in argv)
    for flag, value in (("-b", "1K"), ("-e", "16G"), ("-f", "2"), ("-g", "1")):
        assert argv[argv.index(flag) + 1] == value
    # workers: container "node" with the per-node GPUs, IPC_LOCK, /dev/shm in memory
    worker = container(js["node"])
    res = worker["resources"]
    assert res["limits"]["nvidia.com/gpu"] == 8 and res["requests"]["nvidia.com/gpu"] == 8
    assert "IPC_LOCK" in worker["securityContext"]["capabilities"]["add"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in worker["volumeMounts"]
    assert any("sshd" in str(part) for part in [*worker.get("command", []), *worker.get("args", [])])
    # our rendered templates satisfy the same shape rules as a recipe-supplied runtime
    nccl.validate_private_runtime(yamlio.dump(rt))


@pytest.mark.parametrize(
    ("rel", "debug"),
    [
        ("gb200/eks/runtime-net.yaml", "INFO"),
        ("gb200/eks/runtime-nvls.yaml", "INFO"),
        ("gb200/oke/runtime-nvls.yaml", "INFO"),
        ("roce/eks/runtime-net.yaml", "INFO"),
        ("h100/eks/runtime.yaml", "WARN"),
        ("h100/gke/runtime.yaml", "WARN"),
        ("h100/aks/runtime.yaml", "WARN"),
        ("b200/any/runtime.yaml", "WARN"),
    ],
)
def test_nccl_debug_level(rel: str, debug: str) -> None:
    assert f"NCCL_DEBUG={debug}" in env_flags(launcher_argv(render(rel)))


def test_net_runtime_disables_nvlink_paths_and_uses_efa() -> None:
    flags = env_flags(launcher_argv(render("gb200/eks/runtime-net.yaml")))
    assert {"NCCL_NVLS_ENABLE=0", "NCCL_MNNVL_ENABLE=0", "FI_PROVIDER=efa"} <= flags
    env = {
        e["name"]: e["value"]
        for e in container(jobs(render("gb200/eks/runtime-net.yaml"))["launcher"])["env"]
    }
    assert "aarch64-linux-gnu" in env["LD_LIBRARY_PATH"]


@pytest.mark.parametrize("rel", ["gb200/eks/runtime-nvls.yaml", "gb200/oke/runtime-nvls.yaml"])
def test_nvls_runtime_claims_imex_channel(rel: str) -> None:
    rt = render(rel)
    flags = env_flags(launcher_argv(rt))
    assert {"NCCL_NVLS_ENABLE=1", "NCCL_NET_PLUGIN=none"} <= flags
    worker_pod = pod(jobs(rt)["node"])
    assert worker_pod["resourceClaims"] == [
        {"name": "imex-channel", "resourceClaimTemplateName": NAMES.imex_claim_template}
    ]
    assert container(jobs(rt)["node"])["resources"]["claims"] == [{"name": "imex-channel"}]
    assert "vpc.amazonaws.com/efa" not in container(jobs(rt)["node"])["resources"]["limits"]


def test_roce_runtime_and_claim() -> None:
    rt = render("roce/eks/runtime-net.yaml")
    flags = env_flags(launcher_argv(rt))
    assert {"NCCL_NET_PLUGIN=none", "NCCL_IB_HCA=rocep", "NCCL_NVLS_ENABLE=0", "NCCL_MNNVL_ENABLE=0"} <= flags
    assert not any(f.startswith("FI_") for f in flags)
    worker_pod = pod(jobs(rt)["node"])
    assert worker_pod["resourceClaims"] == [
        {"name": "roce", "resourceClaimTemplateName": NAMES.roce_claim_template}
    ]
    assert container(jobs(rt)["node"])["resources"]["claims"] == [{"name": "roce"}]
    claim = render("roce/eks/roce-claim.yaml", inputs(gpus=4))
    assert claim["apiVersion"] == "resource.k8s.io/v1" and claim["kind"] == "ResourceClaimTemplate"
    assert claim["metadata"]["name"] == NAMES.roce_claim_template
    assert claim["spec"]["spec"]["devices"]["requests"] == [
        {"name": "roce", "exactly": {"deviceClassName": "roce.networking.k8s.aws", "count": 4}}
    ]


@pytest.mark.parametrize(
    "rel", ["h100/eks/runtime.yaml", "h200/eks/runtime.yaml", "gb200/eks/runtime-net.yaml"]
)
def test_efa_resources_follow_the_node_count(rel: str) -> None:
    res = container(jobs(render(rel, inputs(efa=32)))["node"])["resources"]
    assert res["limits"]["vpc.amazonaws.com/efa"] == 32 and res["requests"]["vpc.amazonaws.com/efa"] == 32
    res0 = container(jobs(render(rel, inputs(efa=0, max_size="4G")))["node"])["resources"]
    assert "vpc.amazonaws.com/efa" not in res0["limits"] and "vpc.amazonaws.com/efa" not in res0["requests"]
    argv = launcher_argv(render(rel, inputs(efa=0, max_size="4G")))
    assert argv[argv.index("-e") + 1] == "4G"


def test_aks_rdma_pool() -> None:
    res = container(jobs(render("h100/aks/runtime.yaml", inputs(rdma=16)))["node"])["resources"]
    assert res["limits"]["rdma/hca_shared_devices_a"] == 1
    res0 = container(jobs(render("h100/aks/runtime.yaml", inputs(rdma=0)))["node"])["resources"]
    assert "rdma/hca_shared_devices_a" not in res0["limits"]
    flags = env_flags(launcher_argv(render("h100/aks/runtime.yaml")))
    assert {"NCCL_NET_PLUGIN=none", "NCCL_IB_DISABLE=0"} <= flags


def test_gke_runtime() -> None:
    rt = render("h100/gke/runtime.yaml", inputs(gpus=8))
    node_tpl = jobs(rt)["node"]["template"]["spec"]["template"]
    ann = node_tpl["metadata"]["annotations"]
    devices = ann["devices.gke.io/container.tcpxo-daemon"].splitlines()
    assert devices[:8] == [f"- path: /dev/nvidia{i}" for i in range(8)]
    assert devices[8:] == [
        "- path: /dev/nvidiactl",
        "- path: /dev/nvidia-uvm",
        "- path: /dev/dmabuf_import_helper",
    ]
    assert ann["networking.gke.io/interfaces"] == GKE_NETS
    assert ann["networking.gke.io/default-interface"] == "eth0"
    sidecar = node_tpl["spec"]["initContainers"][0]
    assert sidecar["name"] == "tcpxo-daemon" and sidecar["restartPolicy"] == "Always"
    assert "--num_nics 8" in sidecar["args"][0]
    launcher = container(jobs(rt)["launcher"])
    assert launcher["terminationMessagePolicy"] == "FallbackToLogsOnError"
    script = launcher["command"][2]
    assert "${PIPESTATUS[0]}" in script and '"$@"' in script and "/dev/termination-log" in script
    assert "Avg bus bandwidth" in script


def test_gke_runtime_requires_network_interfaces() -> None:
    inp = nccl.RenderInputs(namespace="ns", names=NAMES, sizing=nccl.WorkerSizing(2, 8, ("a", "b")))
    with pytest.raises(templates.TemplateRenderError, match="gke_network_interfaces"):
        templates.render("nccl/h100/gke/runtime.yaml", inp.context())


def test_h200_eks_renders_like_h100_eks() -> None:
    assert render("h200/eks/runtime.yaml") == render("h100/eks/runtime.yaml")


def test_b200_and_gb200_any_render_alike() -> None:
    assert render("b200/any/runtime.yaml") == render("gb200/any/runtime.yaml")


def test_trainjob() -> None:
    tj = render("trainjob.yaml", inputs(workers=3))
    assert tj == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": NAMES.trainjob,
            "namespace": "aicr-validation",
            "labels": {**LABELS, "app.kubernetes.io/component": "nccl-all-reduce"},
        },
        "spec": {
            "runtimeRef": {
                "apiGroup": "trainer.kubeflow.org",
                "kind": "TrainingRuntime",
                "name": NAMES.runtime,
            },
            "trainer": {"numNodes": 3},
        },
    }


@pytest.mark.parametrize("rel", sorted(EXPECTED_FILES))
def test_no_generic_placeholder_left(rel: str) -> None:
    inp = inputs()
    text = templates.render_text(f"nccl/{rel}", inp.context(), placeholders=inp.placeholders())
    for var in templates.GENERIC_VARIABLES:
        assert "${" + var + "}" not in text


@pytest.mark.parametrize("rel", sorted(EXPECTED_FILES))
def test_strict_undefined(rel: str) -> None:
    with pytest.raises(templates.TemplateRenderError, match="undefined"):
        templates.render(f"nccl/{rel}", {})


def test_render_benchmark_for_every_embedded_plan() -> None:
    cases = [
        (nccl.CHECK_DEFAULT, "eks", "h100", {}),
        (nccl.CHECK_DEFAULT, "gke", "h100", {}),
        (nccl.CHECK_DEFAULT, "any", "gb200", {}),
        (nccl.CHECK_NET, "eks", "gb200", {}),
        (nccl.CHECK_NET, "eks", "gb300", {"AICR_NCCL_FABRIC": "roce"}),
        (nccl.CHECK_NVLS, "oke", "gb200", {}),
    ]
    for check_name, svc, acc, env in cases:
        plan = nccl.resolve_variant(check_name, nccl.Criteria(svc, acc), {check_name: ">= 1"}, env)
        sched = nccl.WorkerScheduling({"k": "v"}, [{"operator": "Exists"}])
        objs = nccl.render_benchmark(plan, inputs(), sched)
        assert objs.runtime["metadata"]["name"] == NAMES.runtime
        assert pod(jobs(objs.runtime)["node"])["nodeSelector"] == {"k": "v"}
        assert objs.trainjob["spec"]["runtimeRef"]["name"] == NAMES.runtime
        assert (objs.claim_template is not None) == (env.get("AICR_NCCL_FABRIC") == "roce")


# --- the engine -----------------------------------------------------------------------------------


def test_placeholders_replace_known_keys_only() -> None:
    text = 'a: "${NAMESPACE}" b: ${EFA_RESOURCE_LIMITS} c: $PATH "$@" ${PIPESTATUS[0]} ${GPU_COUNT}'
    out = templates.substitute_placeholders(
        text, {"NAMESPACE": "ns", "GPU_COUNT": 16, "EFA_RESOURCE_LIMITS": "x"}
    )
    assert out == 'a: "ns" b: ${EFA_RESOURCE_LIMITS} c: $PATH "$@" ${PIPESTATUS[0]} 16'


def test_private_runtime_is_a_drop_in(tmp_path: Path) -> None:
    # a ${VAR}-style runtime copied into a runtimes tree renders like it does from --data
    text = (
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\nmetadata: {name: x}\n"
        'spec: {n: "${GPU_COUNT_PER_NODE}", np: "${GPU_COUNT}", ns: "${NAMESPACE}",\n'
        '  keep: "${EFA_RESOURCE_LIMITS}",\n'
        '  shell: "n=${#arr[@]} $PATH"}\n'
    )
    (tmp_path / "nccl/gb200/mycloud").mkdir(parents=True)
    (tmp_path / "nccl/gb200/mycloud/runtime.yaml").write_text(text)
    inp = inputs()
    via_tree = templates.render(
        "nccl/gb200/mycloud/runtime.yaml", {}, root=tmp_path, placeholders=inp.placeholders()
    )
    via_data = list(yamlio.load_all(templates.substitute_placeholders(text, inp.placeholders())))
    assert via_tree == via_data
    assert via_tree[0]["spec"] == {
        "n": "8",
        "np": "16",
        "ns": "aicr-validation",
        "keep": "${EFA_RESOURCE_LIMITS}",
        "shell": "n=${#arr[@]} $PATH",
    }


def test_sandbox_blocks_attribute_escapes(tmp_path: Path) -> None:
    (tmp_path / "evil.yaml").write_text("x: {{ ''.__class__.__mro__[1].__subclasses__() }}\n")
    with pytest.raises(templates.TemplateRenderError):
        templates.render("evil.yaml", {}, root=tmp_path)


def test_missing_template_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(templates.TemplateRenderError, match="not found"):
        templates.render("nope.yaml", {}, root=tmp_path)
    (tmp_path / "bad.yaml").write_text("a: [b\n")
    with pytest.raises(templates.TemplateRenderError, match="did not render to valid YAML"):
        templates.render("bad.yaml", {}, root=tmp_path)
    (tmp_path / "syntax.yaml").write_text("a: {% if %}\n")
    with pytest.raises(templates.TemplateRenderError, match="line 1"):
        templates.render("syntax.yaml", {}, root=tmp_path)


def test_values_are_yaml_safe(tmp_path: Path) -> None:
    inp = nccl.RenderInputs(
        namespace='ns"\n  injected: true',
        names=NAMES,
        sizing=nccl.WorkerSizing(2, 8, ("a", "b")),
        labels={"k": "v: [x]"},
    )
    tj = templates.render("nccl/trainjob.yaml", inp.context())[0]
    assert tj["metadata"]["namespace"] == 'ns"\n  injected: true'
    assert tj["metadata"]["labels"]["k"] == "v: [x]"
    assert "injected" not in tj["metadata"]

"""inference-perf end to end: real plugin + real facade + the fake cluster's inference player.

Each scenario runs the bundled check through pytester against the ``h100-eks-inference`` profile;
the check's clock is the fake cluster's clock (``tests/cluster/shared_clock.py``) and the fake
auto-advances it while the check blocks in a watch, so the 10-minute waits of a failing run cost
no real time.  The player (Dynamo operator, endpoint,
AIPerf) is tuned through ``fc.state["inference"]`` (see :mod:`aicr_pytest.testing.players.inference`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import aicr_pytest.core.inputs
import aicr_pytest.inference.cluster
import aicr_pytest.kube
import aicr_pytest.plugin  # noqa: F401 - one copy of each module across in-process runs
from aicr_pytest import cli
from aicr_pytest import inference as inf
from aicr_pytest.core import yamlio
from aicr_pytest.core.errors import UsageError
from aicr_pytest.testing.clock import RealClock
from aicr_pytest.testing.cluster import FakeCluster
from aicr_pytest.testing.profiles import resolve_profile
from tests.cluster.check_runner import requests_beyond_preflight, run_on_fake

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-inference.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-inference-snapshot.yaml"
PROFILE = "h100-eks-inference"
RUN_LABEL = "aicr.run/run-id"
SENTINEL_TOKEN = "hf_SENTINELtoken0123456789abcdef"

PASS_LINES = [
    "RESULT: Inference throughput: 108000.00 tokens/sec",
    "RESULT: Inference TTFT p99: 702.40 ms",
    "Throughput constraint: >= 50000 → PASS",
    "TTFT p99 constraint: <= 2000 → PASS",
]


def _recipe() -> dict[str, Any]:
    doc: dict[str, Any] = yamlio.load(RECIPE.read_text())
    return doc


def _constraints(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = doc["validation"]["performance"]["constraints"]
    return out


def _data_dir(root: Path, env: dict[str, str]) -> Path:
    """A ``--data`` directory whose catalog overlay sets the inference-perf entry's env."""
    data = root / "data"
    (data / "validators").mkdir(parents=True, exist_ok=True)
    (data / "registry.yaml").write_text(
        "apiVersion: aicr.run/v1alpha2\nkind: ComponentRegistry\ncomponents: []\n"
    )
    catalog = {
        "apiVersion": "aicr.run/v1alpha1",
        "kind": "ValidatorCatalog",
        "validators": [
            {
                "name": "inference-perf",
                "phase": "performance",
                "timeout": "65m",
                "env": [{"name": k, "value": v} for k, v in env.items()],
            }
        ],
    }
    (data / "validators" / "catalog.yaml").write_text(yamlio.dump(catalog))
    return data


class Outcome:
    def __init__(self, result: pytest.RunResult, report: dict[str, Any], ctrf_text: str) -> None:
        self.result = result
        self.report = report
        self.ctrf_text = ctrf_text
        self.test: dict[str, Any] = next(
            t for t in report["results"]["tests"] if t["name"] == "inference-perf"
        )
        self.run_id = str(report["extra"]["aicr.runId"])

    @property
    def status(self) -> str:
        return str(self.test["status"])

    @property
    def message(self) -> str:
        return str(self.test.get("message") or "")

    @property
    def stdout(self) -> list[str]:
        return list(self.test.get("stdout") or [])


def run_perf(
    pytester: pytest.Pytester,
    fc: FakeCluster,
    *extra: str,
    recipe: dict[str, Any] | None = None,
    data: Path | None = None,
) -> Outcome:
    run = run_on_fake(
        pytester,
        fc,
        phase="performance",
        recipe=RECIPE if recipe is None else recipe,
        snapshot=SNAPSHOT,
        extra=[*(["--aicr-data", str(data)] if data is not None else []), *extra],
    )
    return Outcome(run.result, run.report, run.ctrf_text)


def _state(fc: FakeCluster) -> dict[str, Any]:
    st: dict[str, Any] = fc.state.setdefault("inference", {})
    return st


def _workload_namespaces(fc: FakeCluster) -> list[str]:
    return sorted(
        n["metadata"]["name"]
        for n in fc.list("v1", "Namespace")
        if n["metadata"]["name"].startswith(inf.NAMESPACE_PREFIX)
    )


def _leftovers(fc: FakeCluster, run_id: str) -> list[str]:
    found: list[str] = []
    for api, kind in (
        ("v1", "Namespace"),
        ("v1", "Pod"),
        ("v1", "Service"),
        ("v1", "Secret"),
        ("v1", "PersistentVolumeClaim"),
        ("batch/v1", "Job"),
        ("nvidia.com/v1beta1", "DynamoGraphDeployment"),
        ("scheduling.run.ai/v2", "Queue"),
    ):
        for obj in fc.list(api, kind, label_selector=f"{RUN_LABEL}={run_id}"):
            found.append(f"{kind} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}")
    return found


def _occupy(fc: FakeCluster, node: str, gpus: int, name: str) -> None:
    fc.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "nodeName": node,
                "restartPolicy": "Always",
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                    }
                ],
            },
            "status": {"phase": "Running"},
        }
    )


# --- pass, evidence, cleanup -------------------------------------------------------------------


def test_pass_prints_exact_lines_and_cleans_up(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    out = run_perf(pytester, fc, "-v")
    assert out.status == "passed", out.message
    assert out.stdout[-4:] == PASS_LINES
    assert "--- GPU allocation policy ---" in out.stdout
    assert "configured policy: device-plugin-extended-resource" in out.stdout
    assert "--- GPU allocation mode (worker GPU wiring) ---" in out.stdout
    assert (
        "worker GPU wiring: device plugin (resources.limits nvidia.com/gpu) (node-local decision for h100-0)"
        in out.stdout
    )
    # RESULT lines are echoed to the terminal, progress lines show in -v
    out.result.stdout.fnmatch_lines(
        ["Inference throughput: 108000.00 tokens/sec", "Inference TTFT p99: 702.40 ms"]
    )
    out.result.stdout.fnmatch_lines(
        ["inference-perf: waiting for DynamoGraphDeployment aicr-inference-perf-*"]
    )
    # the endpoint was probed through the API server's service proxy with a real chat completion
    assert (
        fc.request_count("POST", r"/services/aicr-inference-perf-frontend:8000/proxy/v1/chat/completions$")
        >= 1
    )
    # the DGD pinned 8 workers to the chosen node; AIPerf got concurrency 256 x 8
    assert _state(fc)["dgd_workers"] == 8
    # nothing with the run id is left, the per-run namespace is gone
    assert _leftovers(fc, out.run_id) == []
    assert _workload_namespaces(fc) == []


def test_cleanup_after_failure(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    _state(fc)["throughput"] = 30_000.0
    out = run_perf(pytester, fc)
    assert out.status == "failed"
    assert _leftovers(fc, out.run_id) == []
    assert _workload_namespaces(fc) == []


# --- guards --------------------------------------------------------------------------------------


def test_guard_a_no_constraints_skips(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    doc = _recipe()
    doc["validation"]["performance"]["constraints"] = [
        c for c in _constraints(doc) if c["name"] not in (inf.CONSTRAINT_THROUGHPUT, inf.CONSTRAINT_TTFT)
    ]
    out = run_perf(pytester, fc, recipe=doc)
    assert (out.status, out.message) == (
        "skipped",
        "no inference-throughput or inference-ttft-p99 constraint in recipe",
    )
    assert fc.request_count("POST") == 0


def test_guard_b_no_dynamo_component_skips(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    doc = _recipe()
    doc["componentRefs"] = [c for c in doc["componentRefs"] if c["name"] != "dynamo-platform"]
    doc["deploymentOrder"] = [c for c in doc["deploymentOrder"] if c != "dynamo-platform"]
    out = run_perf(pytester, fc, recipe=doc)
    assert (out.status, out.message) == ("skipped", "skipped - dynamo-platform not in recipe components")
    # a check-level skip: the guide's troubleshooting table finds the reason in stdout too
    assert out.stdout[-1] == 'level=INFO msg=SKIP reason="skipped - dynamo-platform not in recipe components"'
    assert requests_beyond_preflight(fc) == []  # guards A/B: the check itself asks the cluster nothing


def test_guard_c_crd_missing_skips(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["dynamo-crd-missing"])
    out = run_perf(pytester, fc)
    assert out.status == "skipped"
    assert out.message == (
        "skipped - DynamoGraphDeployment CRD not installed on cluster "
        "(dynamo-platform component declared but operator not deployed yet)"
    )
    assert fc.request_count("POST") == 0
    assert fc.request_count("GET", "customresourcedefinitions/dynamographdeployments.nvidia.com") == 1


def test_guard_c_other_error_is_not_a_skip(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    fc.faults.deny("GET", r"customresourcedefinitions/dynamographdeployments")
    out = run_perf(pytester, fc)
    assert out.status == "other"
    assert out.message.startswith("failed to check for DynamoGraphDeployment CRD: RBAC denied")
    assert fc.request_count("POST") == 0


# --- knob and comparator errors: exit 2 before anything is created --------------------------------


def _set_constraint(doc: dict[str, Any], name: str, value: str) -> dict[str, Any]:
    cons = _constraints(doc)
    for c in cons:
        if c["name"] == name:
            c["value"] = value
            break
    else:
        cons.append({"name": name, "value": value})
    return doc


RECIPE_ERRORS = [
    (
        inf.CONSTRAINT_THROUGHPUT,
        "> 50000",
        'inference-throughput constraint must start with ">=" (got "> 50000")',
    ),
    (
        inf.CONSTRAINT_THROUGHPUT,
        ">== 50000",
        'inference-throughput constraint must start with exactly ">=" (got ">== 50000")',
    ),
    (inf.CONSTRAINT_TTFT, ">= 2000", 'inference-ttft-p99 constraint must start with "<=" (got ">= 2000")'),
    (
        inf.CONSTRAINT_TTFT,
        "<= fast",
        'invalid threshold format: cannot parse "fast" in "<= fast" as a number',
    ),
    (inf.CONSTRAINT_TTFT, "<=", 'invalid threshold: no numeric value found in "<="'),
    (
        inf.CONSTRAINT_MODEL,
        "Qwen/Qwen3 8B",
        'invalid inference model "Qwen/Qwen3 8B": must be a Hugging Face model ID '
        "(characters [A-Za-z0-9._/-])",
    ),
    (
        inf.CONSTRAINT_CONCURRENCY,
        "0",
        'invalid inference-concurrency-per-gpu="0": must be a positive integer',
    ),
    (
        inf.CONSTRAINT_ROUTING,
        "round-robin",
        'invalid inference-routing-mode="round-robin": must be "dynamo-router" or "gateway-epp"',
    ),
]

CATALOG_ERRORS = [
    (inf.ENV_MODEL, "bad model", 'invalid inference model "bad model"'),
    (
        inf.ENV_CONCURRENCY,
        " 256",
        'invalid AICR_INFERENCE_PERF_CONCURRENCY_PER_GPU=" 256": must be a positive integer',
    ),
    (
        inf.ENV_WARMUP,
        "0",
        'invalid AICR_INFERENCE_PERF_WARMUP_PER_CONCURRENCY="0": must be a positive integer',
    ),
    (
        inf.ENV_MIN_REQUESTS,
        "lots",
        'invalid AICR_INFERENCE_PERF_MIN_REQUESTS="lots": must be a positive integer',
    ),
    (
        inf.ENV_REQUESTS_PER_CONCURRENCY,
        "-8",
        'invalid AICR_INFERENCE_PERF_REQUESTS_PER_CONCURRENCY="-8": must be a positive integer',
    ),
    (
        inf.ENV_INPUT_TOKENS,
        "1.5",
        'invalid AICR_INFERENCE_PERF_INPUT_TOKENS_MEAN="1.5": must be a positive integer',
    ),
    (
        inf.ENV_OUTPUT_TOKENS,
        "0x80",
        'invalid AICR_INFERENCE_PERF_OUTPUT_TOKENS_MEAN="0x80": must be a positive integer',
    ),
    (
        inf.ENV_WORKLOAD_READY_TIMEOUT,
        "10",
        'invalid AICR_INFERENCE_PERF_WORKLOAD_READY_TIMEOUT="10": must be a positive Go duration (e.g. 30m)',
    ),
    (
        inf.ENV_HEALTH_TIMEOUT,
        "-5m",
        'invalid AICR_INFERENCE_PERF_HEALTH_TIMEOUT="-5m": must be a positive Go duration (e.g. 30m)',
    ),
    (
        inf.ENV_CACHE_SIZE,
        "huge",
        'invalid AICR_INFERENCE_PERF_MODEL_CACHE_SIZE="huge": must be a Kubernetes quantity (e.g. 100Gi) '
        "or a disable sentinel (off/0/none/disabled)",
    ),
    (
        inf.ENV_CACHE_SIZE,
        "-1Gi",
        'invalid AICR_INFERENCE_PERF_MODEL_CACHE_SIZE="-1Gi": cache size must be positive',
    ),
]


def _cli_validate(
    fc: FakeCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str], recipe: Path, *extra: str
) -> tuple[int, str]:
    code = cli.main(
        [
            "validate",
            "--recipe",
            str(recipe),
            "--snapshot",
            str(SNAPSHOT),
            "--kubeconfig",
            str(fc.kubeconfig_path),
            "--phase",
            "performance",
            "-o",
            str(tmp_path / "ctrf.json"),
            *extra,
        ]
    )
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize(
    ("name", "value", "expected"), RECIPE_ERRORS, ids=[f"{n}={v}" for n, v, _ in RECIPE_ERRORS]
)
def test_recipe_knob_errors_exit_2_before_any_object(
    name: str,
    value: str,
    expected: str,
    aicr_fake_cluster_factory: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, clock=RealClock())  # a run that got through would not hang
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yamlio.dump(_set_constraint(_recipe(), name, value)))
    code, text = _cli_validate(fc, tmp_path, capsys, recipe)
    assert code == 2, text
    assert expected in text
    assert fc.request_count() == 0  # validated at session start: the cluster was never contacted


@pytest.mark.parametrize(
    ("name", "value", "expected"), CATALOG_ERRORS, ids=[f"{n}={v}" for n, v, _ in CATALOG_ERRORS]
)
def test_catalog_knob_errors_exit_2_before_any_object(
    name: str,
    value: str,
    expected: str,
    aicr_fake_cluster_factory: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, clock=RealClock())  # a run that got through would not hang
    data = _data_dir(tmp_path, {name: value})
    # without the recipe's model/concurrency inputs the catalog env decides (recipe > catalog > default)
    doc = _recipe()
    doc["validation"]["performance"]["constraints"] = [
        c for c in _constraints(doc) if c["name"] not in (inf.CONSTRAINT_MODEL, inf.CONSTRAINT_CONCURRENCY)
    ]
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yamlio.dump(doc))
    code, text = _cli_validate(fc, tmp_path, capsys, recipe, "--data", str(data))
    assert code == 2, text
    assert expected in text
    assert fc.request_count() == 0


def test_knob_in_shell_env_is_ignored(
    aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """AICR_INFERENCE_PERF_* come from the catalog, never the shell running aicr-pytest."""
    monkeypatch.setenv(inf.ENV_MIN_REQUESTS, "not-a-number")
    settings: Any = None
    from aicr_pytest.core.datatree import DataTree
    from aicr_pytest.core.recipe import parse_recipe

    recipe, _ = parse_recipe(_recipe(), str(RECIPE))
    inf.prevalidate(recipe, settings, DataTree.default())  # no error: the shell value is not read
    with pytest.raises(UsageError, match="AICR_INFERENCE_PERF_MIN_REQUESTS"):
        inf.prevalidate(recipe, settings, DataTree.default(_data_dir(tmp_path, {inf.ENV_MIN_REQUESTS: "x"})))


def test_recipe_inputs_win_over_catalog_env(tmp_path: Path) -> None:
    """The recipe's inference-model / concurrency hide a bad catalog value (recipe > catalog > default)."""
    from aicr_pytest.core.datatree import DataTree
    from aicr_pytest.core.recipe import parse_recipe

    recipe, _ = parse_recipe(_recipe(), str(RECIPE))
    data = DataTree.default(_data_dir(tmp_path, {inf.ENV_MODEL: "bad model", inf.ENV_CONCURRENCY: " 1"}))
    inf.prevalidate(recipe, None, data)
    assert inf.catalog_env(data) == {inf.ENV_MODEL: "bad model", inf.ENV_CONCURRENCY: " 1"}


def test_no_default_storage_class_fails_fast(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, faults=["no-default-storageclass"])
    assert fc.find("storage.k8s.io/v1", "StorageClass", "gp3") is not None  # there, but not the default
    out = run_perf(pytester, fc)
    assert out.status == "failed"
    assert out.message == f"[INVALID_REQUEST] {inf.MSG_NO_DEFAULT_STORAGE_CLASS}"
    assert fc.request_count("POST", r"^/api/v1/namespaces$") == 0  # failed before creating anything


def test_the_recipe_storage_class_and_the_catalog_router_mode_reach_the_workload(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    # no default StorageClass: the recipe's inference-model-cache-storage-class names one (upstream's
    # precedence: recipe > catalog env > cluster default), so the check does not fail fast
    fc = aicr_fake_cluster_factory(PROFILE, faults=["no-default-storageclass"])
    seen: dict[str, Any] = {}
    fc.sim.on_create("", "v1", "persistentvolumeclaims", lambda _, obj: seen.setdefault("pvc", obj))
    fc.sim.on_create(
        "nvidia.com", "v1beta1", "dynamographdeployments", lambda _, obj: seen.setdefault("dgd", obj)
    )
    recipe = _recipe()
    _constraints(recipe).append({"name": "inference-model-cache-storage-class", "value": "gp3"})
    data = _data_dir(tmp_path, {inf.ENV_ROUTER_MODE: "kv", inf.ENV_CACHE_STORAGE_CLASS: "other-class"})
    out = run_perf(pytester, fc, recipe=recipe, data=data)
    assert out.status == "passed", out.message
    assert seen["pvc"]["spec"]["storageClassName"] == "gp3"
    frontend = next(c for c in seen["dgd"]["spec"]["components"] if c["type"] == "frontend")
    env = {e["name"]: e.get("value") for e in frontend["podTemplate"]["spec"]["containers"][0]["env"]}
    assert env["DYN_ROUTER_MODE"] == "kv"
    assert _leftovers(fc, out.run_id) == []


def test_no_default_storage_class_is_a_failed_phase_of_validate(tmp_path: Path) -> None:
    """The guide: the check "fails fast in seconds with guidance" (a failed phase, exit 8)."""
    examples = REPO / "recipes" / "examples"
    out = tmp_path / "ctrf.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "aicr_pytest.cli",
            "validate",
            "-r",
            str(examples / "h100-eks-inference.yaml"),
            "-s",
            str(examples / "h100-eks-inference-snapshot.yaml"),
            "--simulate",
            "h100-eks-inference",
            "--fault",
            "no-default-storageclass",
            "--phase",
            "performance",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 8, proc.stderr
    (test,) = json.loads(out.read_text())["results"]["tests"]
    assert (test["name"], test["status"]) == ("inference-perf", "failed")
    assert test["message"] == f"[INVALID_REQUEST] {inf.MSG_NO_DEFAULT_STORAGE_CLASS}"


# --- node choice and occupancy -------------------------------------------------------------------


def test_half_occupied_node_scales_the_gate(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    for i in range(4):
        _occupy(fc, f"h100-{i}", 4, f"busy-{i}")
    out = run_perf(pytester, fc)
    assert out.status == "passed", out.message
    assert "Throughput gate scaled to 4 of 8 node GPUs benchmarked: 50000 → 25000 tokens/sec" in out.stdout
    assert "RESULT: Inference throughput: 54000.00 tokens/sec" in out.stdout
    assert _state(fc)["dgd_workers"] == 4


def test_most_free_node_is_chosen(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    for i, busy in enumerate((8, 6, 2, 5)):
        _occupy(fc, f"h100-{i}", busy, f"busy-{i}")
    out = run_perf(pytester, fc)
    assert out.status == "passed", out.message
    assert any(line.endswith("(node-local decision for h100-2)") for line in out.stdout)
    assert "Throughput gate scaled to 6 of 8 node GPUs benchmarked: 50000 → 37500 tokens/sec" in out.stdout


def test_node_selector_narrows_candidates(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    out = run_perf(pytester, fc, "--aicr-node-selector", "kubernetes.io/hostname=h100-3")
    assert out.status == "passed", out.message
    assert any(line.endswith("(node-local decision for h100-3)") for line in out.stdout)


def test_saturated_cluster_fails(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    for i in range(4):
        _occupy(fc, f"h100-{i}", 8, f"busy-{i}")
    out = run_perf(pytester, fc)
    assert out.status == "failed"
    assert out.message.startswith("no eligible candidate GPU node has free GPUs (4 matched;")
    assert fc.request_count("POST") == 0


def test_pod_list_error_fails_closed(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    fc.faults.deny("GET", r"^/api/v1/pods$")
    out = run_perf(pytester, fc)
    assert out.status == "failed"
    assert out.message.startswith("failed to list pods for GPU occupancy accounting: RBAC denied")
    assert fc.request_count("POST") == 0


def test_workers_on_simulated_gpus_are_other_though_aiperf_ran_on_a_cpu_node(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    # a fresh CPU node (fewest pods) takes the AIPerf pod; the model workers hold the NVML mock's GPUs
    profile = resolve_profile(PROFILE)
    cpu = next(p for p in profile.node_pools if not p.gpus_per_node)
    profile.node_pools.append(dataclasses.replace(cpu, name_prefix="cpu", labels={}))
    fc = aicr_fake_cluster_factory(profile, faults=["nvml-mock"])
    placed: dict[str, str] = {}

    def seen(_sim: Any, pod: dict[str, Any]) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            placed[pod["metadata"]["name"]] = pod["spec"]["nodeName"]

    fc.sim.on_update("", "v1", "pods", seen)
    out = run_perf(pytester, fc)
    assert {node for name, node in placed.items() if name.startswith("aicr-aiperf-")} == {"cpu-0"}
    assert out.status == "other", out.message
    assert re.fullmatch(
        r"no proof of execution for pod aicr-inference-perf-[0-9a-f]+/aicr-inference-perf-frontend-0 on node "
        r"h100-0: NVIDIA's NVML mock simulates its GPUs \(pod nvml-mock/nvml-mock-\S+ runs image "
        r"ghcr\.io/nvidia/nvml-mock:v0\.1\.0\), so no GPU ran the pod \(--allow-fake-nodes accepts simulated "
        r"nodes\)",
        out.message,
    ), out.message
    assert _leftovers(fc, out.run_id) == []


def test_workload_pods_that_cannot_be_read_are_no_proof(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    fc.faults.deny("GET", r"^/api/v1/namespaces/aicr-inference-perf-[^/]+/pods$")
    out = run_perf(pytester, fc)
    assert out.status == "other", out.message
    assert re.fullmatch(
        r"no proof of execution for the inference workload in aicr-inference-perf-[0-9a-f]+: its pods could "
        r"not be read to rule out a fake node or a GPU simulator \(.*RBAC denied.*\)",
        out.message,
    ), out.message


# --- verdicts ------------------------------------------------------------------------------------


def test_throughput_below_gate_fails(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["inference-low-throughput"])
    out = run_perf(pytester, fc)
    assert out.status == "failed"
    assert out.message == (
        'inference throughput 20000.00 tokens/sec does not satisfy constraint ">= 50000" (with 10% tolerance)'
    )
    assert out.stdout[-4:] == [
        "RESULT: Inference throughput: 20000.00 tokens/sec",
        "RESULT: Inference TTFT p99: 702.40 ms",
        "Throughput constraint: >= 50000 → FAIL",
        "TTFT p99 constraint: <= 2000 → PASS",
    ]


def test_throughput_within_tolerance_passes(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    _state(fc)["throughput"] = 45_000.0  # exactly 0.9 x 50000
    out = run_perf(pytester, fc)
    assert out.status == "passed", out.message
    assert "Throughput constraint: >= 50000 → PASS" in out.stdout


def test_ttft_above_ceiling_fails(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    _state(fc)["ttft_p99_ms"] = 2300.0
    out = run_perf(pytester, fc)
    assert out.status == "failed"
    assert out.message == (
        'inference TTFT p99 2300.00 ms does not satisfy constraint "<= 2000" (with 10% tolerance)'
    )
    assert "TTFT p99 constraint: <= 2000 → FAIL" in out.stdout
    assert "Throughput constraint: >= 50000 → PASS" in out.stdout


def test_missing_json_key_fails_naming_it(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    _state(fc)["aiperf_json"] = {
        "output_token_throughput": {"unit": "tokens/sec", "avg": 99000.0},
        "time_to_first_token": {"unit": "ms", "avg": 300.0},
    }
    out = run_perf(pytester, fc)
    assert out.status == "failed"
    assert out.message == (
        'AIPerf output is missing "time_to_first_token.p99"; refusing to read a missing metric as 0'
    )
    assert not any(line.startswith("RESULT:") for line in out.stdout)


def test_truncated_aiperf_log_fails(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    _state(fc)["aiperf_log"] = '===AIPERF-RESULT===\n{"output_token_throughput": {"avg": 1'
    out = run_perf(pytester, fc)
    assert out.status == "failed"
    assert out.message == inf.MSG_AIPERF_NO_END_SENTINEL


def test_aiperf_pod_failure_fails_with_logs(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    _state(fc).update(aiperf_exit_code=1, aiperf_log="aiperf: error: connection refused\n")
    out = run_perf(pytester, fc)
    assert out.status == "failed"
    assert out.message.startswith("[INTERNAL] AIPerf job failed: pod aicr-validation/aicr-aiperf-")
    assert "AIPerf pod logs:" in out.stdout
    assert "aiperf: error: connection refused" in out.stdout


def test_endpoint_never_healthy_fails(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["inference-endpoint-down"])
    out = run_perf(pytester, fc, "-v")
    assert out.status == "failed"
    assert out.message == (
        "[TIMEOUT] timed out waiting for inference endpoint to serve requests: context deadline exceeded"
    )
    # a probe every 10 s for the default 5-minute health timeout
    assert 30 <= _state(fc)["probes"] <= 32
    out.result.stdout.fnmatch_lines(
        ["inference-perf: waiting for inference endpoint http://*(last probe: HTTP 503 Service Unavailable)"]
    )
    assert _workload_namespaces(fc) == []


def test_endpoint_retries_until_serving(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    _state(fc)["endpoint_failures"] = 3
    out = run_perf(pytester, fc)
    assert out.status == "passed", out.message
    assert _state(fc)["probes"] == 4


def test_dgd_never_ready_fails(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    _state(fc)["dgd_never_ready"] = True
    data = _data_dir(tmp_path, {inf.ENV_WORKLOAD_READY_TIMEOUT: "2m"})
    out = run_perf(pytester, fc, "-v", data=data)
    assert out.status == "failed"
    assert out.message.startswith(
        "[INTERNAL] DynamoGraphDeployment not ready: [TIMEOUT] timed out waiting for DynamoGraphDeployment "
        "to become ready: state=pending, Frontend 1/1 ready, VllmDecodeWorker 0/8 ready; pods:"
    )
    assert "8 Pending (ImagePullBackOff)" in out.message
    # progress at least every 30 s of the 2-minute wait
    waits = [line for line in out.result.outlines if "waiting for DynamoGraphDeployment" in line]
    assert len(waits) >= 4
    assert _state(fc).get("probes", 0) == 0
    assert _workload_namespaces(fc) == []


# --- secrets, NO_CLEANUP, isolation --------------------------------------------------------------


def _all_text_under(root: Path) -> str:
    chunks: list[str] = []
    for path in root.rglob("*"):
        if path.is_file():
            chunks.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(chunks)


@pytest.mark.parametrize("scenario", ["pass", "aiperf-failed"])
def test_hf_token_never_appears_in_output(
    scenario: str, pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    if scenario == "aiperf-failed":
        _state(fc).update(aiperf_exit_code=1, aiperf_log=f"echo token {SENTINEL_TOKEN}\n")
    monkeypatch.setenv("HF_TOKEN", SENTINEL_TOKEN)
    evidence = pytester.path / "evidence"
    out = run_perf(pytester, fc, "-v", "-rA", "--aicr-evidence-dir", str(evidence))
    assert out.status == ("passed" if scenario == "pass" else "failed"), out.message
    # the token reached the cluster only as the Secret's value
    assert fc.request_count("POST", r"/namespaces/aicr-inference-perf-[0-9a-f]{8}/secrets$") == 1
    for text in (
        out.result.stdout.str(),
        out.result.stderr.str(),
        out.ctrf_text,
        _all_text_under(pytester.path),
    ):
        assert SENTINEL_TOKEN not in text


def test_no_cleanup_keeps_everything_and_prints_commands(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fc = aicr_fake_cluster_factory(PROFILE)
    monkeypatch.setenv("AICR_INFERENCE_PERF_NO_CLEANUP", "1")
    monkeypatch.setenv("HF_TOKEN", SENTINEL_TOKEN)
    out = run_perf(pytester, fc)
    assert out.status == "passed", out.message
    ns = f"aicr-inference-perf-{out.run_id}"
    job = f"aicr-aiperf-{out.run_id}"
    assert _workload_namespaces(fc) == [ns]
    assert fc.find("nvidia.com/v1beta1", "DynamoGraphDeployment", "aicr-inference-perf", ns) is not None
    assert fc.find("batch/v1", "Job", job, "aicr-validation") is not None
    secret = fc.get("v1", "Secret", "aicr-hf-token", ns)
    assert secret["stringData"]["token"] == SENTINEL_TOKEN
    expected = [
        f"AICR_INFERENCE_PERF_NO_CLEANUP: left namespace {ns} and Job aicr-validation/{job} in place for "
        "debugging; delete them when done (the namespace keeps GPU workers running):",
        f"  kubectl -n {ns} get dynamographdeployments,pods,svc,resourceclaimtemplates",
        f"  kubectl -n {ns} port-forward svc/aicr-inference-perf-frontend 8000:8000",
        "  curl -s http://localhost:8000/v1/models",
        "  curl -s http://localhost:8000/v1/chat/completions -H 'Content-Type: application/json' -d "
        '\'{"model":"Qwen/Qwen3-8B","messages":[{"role":"user","content":"hi"}],"max_tokens":4}\'',
        f"  kubectl delete namespace {ns}",
    ]
    for line in expected:
        assert line in out.stdout
    out.result.stdout.fnmatch_lines([f"inference-perf: AICR_INFERENCE_PERF_NO_CLEANUP: left namespace {ns}*"])
    assert SENTINEL_TOKEN not in out.result.stdout.str() + out.ctrf_text


def test_sequential_runs_use_their_own_names(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs against one cluster: distinct namespaces and Jobs; the second avoids the first's GPUs."""
    fc = aicr_fake_cluster_factory(PROFILE)
    monkeypatch.setenv("AICR_INFERENCE_PERF_NO_CLEANUP", "1")
    first = run_perf(pytester, fc)
    second = run_perf(pytester, fc)
    assert first.status == second.status == "passed", (first.message, second.message)
    assert first.run_id != second.run_id
    assert _workload_namespaces(fc) == sorted(
        [f"aicr-inference-perf-{first.run_id}", f"aicr-inference-perf-{second.run_id}"]
    )
    jobs = sorted(j["metadata"]["name"] for j in fc.list("batch/v1", "Job", "aicr-validation"))
    assert jobs == sorted([f"aicr-aiperf-{first.run_id}", f"aicr-aiperf-{second.run_id}"])
    assert any(line.endswith("(node-local decision for h100-0)") for line in first.stdout)
    assert any(line.endswith("(node-local decision for h100-1)") for line in second.stdout)


def test_concurrent_runs_are_isolated(tmp_path: Path) -> None:
    """Two ``aicr-pytest validate`` processes at once on one SIMULATED cluster (wall clock)."""
    with FakeCluster(PROFILE, clock=RealClock(), kubeconfig_path=tmp_path / "kubeconfig") as fc:
        env = {**os.environ, "AICR_INFERENCE_PERF_NO_CLEANUP": "1"}
        procs = []
        for i, node in enumerate(("h100-1", "h100-2")):
            cmd = [
                sys.executable,
                "-m",
                "aicr_pytest.cli",
                "validate",
                "--recipe",
                str(RECIPE),
                "--snapshot",
                str(SNAPSHOT),
                "--kubeconfig",
                str(fc.kubeconfig_path),
                "--phase",
                "performance",
                "--node-selector",
                f"kubernetes.io/hostname={node}",
                "-o",
                str(tmp_path / f"ctrf-{i}.json"),
            ]
            procs.append(
                subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            )
        deadline = time.monotonic() + 120
        for p in procs:
            _, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            assert p.returncode == 0, err.decode()
        reports = [json.loads((tmp_path / f"ctrf-{i}.json").read_text()) for i in range(2)]
        run_ids = [r["extra"]["aicr.runId"] for r in reports]
        assert run_ids[0] != run_ids[1]
        assert _workload_namespaces(fc) == sorted(f"aicr-inference-perf-{r}" for r in run_ids)
        jobs = sorted(j["metadata"]["name"] for j in fc.list("batch/v1", "Job", "aicr-validation"))
        assert jobs == sorted(f"aicr-aiperf-{r}" for r in run_ids)
        for r in reports:
            assert r["results"]["tests"][0]["status"] == "passed"


def test_dra_policy_wires_workers_with_a_claim_template(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    """Recipe opts into DRA (dra-resource-claim): workers get a ResourceClaimTemplate, not limits."""
    from aicr_pytest.testing.profiles import resolve_profile

    profile = resolve_profile(PROFILE)
    dra = profile.component("nvidia-dra-driver-gpu")
    assert dra is not None
    dra.options["gpus"] = True  # gpu.nvidia.com DeviceClass + one node-local slice per GPU node
    fc = aicr_fake_cluster_factory(profile)
    doc = _recipe()
    for ref in doc["componentRefs"]:
        if ref["name"] == "nvidia-dra-driver-gpu":
            ref["overrides"]["gpuResourcesEnabledOverride"] = True
            ref["overrides"]["resources"]["gpus"]["enabled"] = True
        if ref["name"] == "gpu-operator":
            ref["overrides"]["devicePlugin"] = {"enabled": False}
    out = run_perf(pytester, fc, recipe=doc)
    assert out.status == "passed", out.message
    assert "configured policy: dra-resource-claim" in out.stdout
    assert (
        "worker GPU wiring: DRA (gpu.nvidia.com ResourceClaimTemplate) (node-local decision for h100-0)"
        in out.stdout
    )
    assert (
        fc.request_count(
            "POST",
            r"/apis/resource.k8s.io/v1/namespaces/aicr-inference-perf-[0-9a-f]{8}/resourceclaimtemplates$",
        )
        == 1
    )
    assert _leftovers(fc, out.run_id) == []


def test_requests_stay_within_declared_rbac(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every request of a full run (with HF token) is in REQUIRED_PERMISSIONS / deploy/rbac.yaml."""
    import functools

    import aicr_pytest.kube.client as kube_client

    monkeypatch.setattr(kube_client, "connect", functools.partial(kube_client.connect, enforce_declared=True))
    monkeypatch.setenv("HF_TOKEN", SENTINEL_TOKEN)
    fc = aicr_fake_cluster_factory(PROFILE)
    out = run_perf(pytester, fc)
    assert out.status == "passed", out.message


def test_missing_kai_queue_is_best_effort(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = aicr_fake_cluster_factory(PROFILE, ["no-kai"])
    out = run_perf(pytester, fc)
    assert out.status == "passed", out.message
    assert fc.request_count("POST", r"/queues$") == 0


# --- routing mode gateway-epp --------------------------------------------------------------------


def _gateway_cluster(fake_cluster_factory: Any, *, crds: bool = True, gateway: bool = True) -> FakeCluster:
    """The inference profile plus the opt-in inference gateway components of the player."""
    from aicr_pytest.testing.players import inference as player
    from aicr_pytest.testing.profiles import Component, resolve_profile

    profile = resolve_profile(PROFILE)
    if crds:
        profile.components.append(Component("agentgateway-crds", player.install_gateway_api))
    if gateway:
        profile.components.append(Component("agentgateway", player.install_gateway))
    fc: FakeCluster = fake_cluster_factory(profile)
    return fc


def _gateway_recipe() -> dict[str, Any]:
    return _set_constraint(_recipe(), inf.CONSTRAINT_ROUTING, "gateway-epp")


GATEWAY_PROBE = (
    r"^/api/v1/namespaces/agentgateway-system/services/inference-gateway:80/proxy/v1/chat/completions$"
)


def test_gateway_epp_passes_through_the_inference_gateway(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fc = _gateway_cluster(aicr_fake_cluster_factory)
    monkeypatch.setenv("AICR_INFERENCE_PERF_NO_CLEANUP", "1")  # inspect what was deployed
    out = run_perf(pytester, fc, recipe=_gateway_recipe())
    assert out.status == "passed", out.message
    assert out.stdout[-4:] == PASS_LINES
    ns = f"aicr-inference-perf-{out.run_id}"
    # the EPP flavour of the DGD: an Epp component and 8 decode workers with direct-mode sidecars
    dgd = fc.get("nvidia.com/v1beta1", "DynamoGraphDeployment", "aicr-inference-perf", ns)
    assert [(c["name"], c["type"]) for c in dgd["spec"]["components"]] == [
        ("Epp", "epp"),
        ("VllmDecodeWorker", "decode"),
    ]
    pods = fc.list("v1", "Pod", ns)
    epp = [p for p in pods if p["metadata"]["labels"].get("nvidia.com/dynamo-component-type") == "epp"]
    workers = [p for p in pods if p["metadata"]["labels"].get("nvidia.com/dynamo-component-type") == "decode"]
    assert len(epp) == 1 and len(workers) == 8
    assert {p["spec"]["nodeName"] for p in epp + workers} == {"h100-0"}
    assert all(p["status"]["phase"] == "Running" for p in epp + workers)
    assert fc.find("v1", "Service", "aicr-inference-perf-frontend", ns) is None  # no Frontend here
    assert fc.find("inference.networking.k8s.io/v1", "InferencePool", "aicr-inference-perf-pool", ns)
    # the HTTPRoute was created after the DGD was ready, and the gateway accepted it
    route = fc.get("gateway.networking.k8s.io/v1", "HTTPRoute", "aicr-inference-perf-route", ns)
    assert route["metadata"]["labels"][RUN_LABEL] == out.run_id
    (parent,) = route["status"]["parents"]
    assert parent["parentRef"]["name"] == "inference-gateway"
    assert parent["parentRef"]["namespace"] == "agentgateway-system"
    assert {c["type"]: c["status"] for c in parent["conditions"]} == {
        "Accepted": "True",
        "ResolvedRefs": "True",
    }
    # the endpoint was probed through the gateway Service's proxy, never a frontend Service
    assert fc.request_count("POST", GATEWAY_PROBE) >= 1
    assert fc.request_count("POST", r"/services/aicr-inference-perf-frontend") == 0
    assert _state(fc)["dgd_workers"] == 8
    # AIPerf benchmarks the gateway URL; the kept-workload hints point at the gateway Service
    job = fc.get("batch/v1", "Job", f"aicr-aiperf-{out.run_id}", "aicr-validation")
    assert "--url http://inference-gateway.agentgateway-system.svc:80" in " ".join(
        job["spec"]["template"]["spec"]["containers"][0]["command"]
    )
    assert "  kubectl -n agentgateway-system port-forward svc/inference-gateway 8000:80" in out.stdout


def test_gateway_epp_cleans_up(pytester: pytest.Pytester, aicr_fake_cluster_factory: Any) -> None:
    fc = _gateway_cluster(aicr_fake_cluster_factory)
    out = run_perf(pytester, fc, recipe=_gateway_recipe())
    assert out.status == "passed", out.message
    assert _leftovers(fc, out.run_id) == []
    assert _workload_namespaces(fc) == []
    assert fc.list("gateway.networking.k8s.io/v1", "HTTPRoute") == []
    # the shared gateway itself is not ours to delete
    assert fc.find("v1", "Service", "inference-gateway", "agentgateway-system") is not None


def test_gateway_epp_without_a_gateway_times_out_on_the_endpoint(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    """Gateway API installed, agentgateway not: the route stays unaccepted, the fallback gateway
    URL never answers, and the check fails with the spec's endpoint-timeout text."""
    fc = _gateway_cluster(aicr_fake_cluster_factory, gateway=False)
    out = run_perf(pytester, fc, "-v", recipe=_gateway_recipe())
    assert out.status == "failed"
    assert out.message == (
        "[TIMEOUT] timed out waiting for inference endpoint to serve requests: context deadline exceeded"
    )
    # probed the fallback http://inference-gateway.agentgateway-system.svc:80 every 10 s for 5 minutes
    assert 30 <= fc.request_count("POST", GATEWAY_PROBE) <= 32
    out.result.stdout.fnmatch_lines(
        [
            "inference-perf: waiting for inference endpoint "
            "http://inference-gateway.agentgateway-system.svc:80 *(last probe: HTTP 404*"
        ]
    )
    assert _workload_namespaces(fc) == []
    assert _leftovers(fc, out.run_id) == []


def test_gateway_epp_route_not_accepted_is_not_served(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any, tmp_path: Path
) -> None:
    """The gateway Service exists but the route names no Gateway it serves: 404 until the timeout."""
    fc = _gateway_cluster(aicr_fake_cluster_factory)
    fc.delete("gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", "agentgateway-system")
    data = _data_dir(tmp_path, {inf.ENV_HEALTH_TIMEOUT: "1m"})
    out = run_perf(pytester, fc, recipe=_gateway_recipe(), data=data)
    assert out.status == "failed"
    assert out.message == (
        "[TIMEOUT] timed out waiting for inference endpoint to serve requests: context deadline exceeded"
    )
    assert 6 <= _state(fc)["probes"] <= 8  # each answered by the gateway: no route
    assert _workload_namespaces(fc) == []


def test_gateway_epp_without_gateway_api_fails_creating_the_route(
    pytester: pytest.Pytester, aicr_fake_cluster_factory: Any
) -> None:
    """No Gateway API at all: creating the HTTPRoute fails (after the DGD was ready) and the run
    still cleans up; the endpoint is never probed."""
    fc = _gateway_cluster(aicr_fake_cluster_factory, crds=False, gateway=False)
    out = run_perf(pytester, fc, recipe=_gateway_recipe())
    assert out.status == "other", out.message
    assert out.message == "the server does not serve 'HTTPRoute' in gateway.networking.k8s.io/v1 (discovery)"
    assert fc.request_count("POST", GATEWAY_PROBE) == 0
    assert _workload_namespaces(fc) == []
    assert _leftovers(fc, out.run_id) == []

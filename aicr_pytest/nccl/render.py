"""NCCL benchmark rendering (section 3 of a run): the objects the benchmark creates.

:func:`render_benchmark` renders our jinja2 runtime templates under ``runtimes/nccl`` or the
recipe's private runtime (``${VAR}`` placeholders only), plus the shared TrainJob, with run-scoped
names (:func:`benchmark_names`) and the worker scheduling applied; :func:`build_compute_domain`
is the NVLS ``ComputeDomain``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from aicr_pytest.core import templates, yamlio
from aicr_pytest.nccl.runtimeimage import apply_runtime_image
from aicr_pytest.nccl.sizing import MAX_MESSAGE_SIZE, WorkerScheduling, WorkerSizing
from aicr_pytest.nccl.variant import (
    CHECK_VARIANTS,
    MSG_RUNTIME_RENDER,
    NODE_JOB,
    NcclCheckFailure,
    VariantPlan,
    _dig,
)

#: Our templates, relative to ``runtimes/nccl`` (same layout as AICR's testdata).
TRAINJOB_TEMPLATE = "trainjob.yaml"

TEST_TYPE = "all_reduce_perf"
MIN_MESSAGE_SIZE = "1K"

MSG_NO_REPLICATED_JOBS = "replicatedJobs not found in TrainingRuntime"
MSG_NO_NODE_JOB = 'replicatedJob "node" not found in TrainingRuntime'
MSG_NO_WORKER_POD_SPEC = "worker pod spec not found in TrainingRuntime node job"


@dataclass(frozen=True)
class BenchmarkNames:
    """Run-scoped object names (AICR's fixed names collide across concurrent runs)."""

    trainjob: str
    runtime: str
    compute_domain: str
    imex_claim_template: str
    roce_claim_template: str


def benchmark_names(
    run_id: str, check: str, worker: str | None = None, tag: str | None = None
) -> BenchmarkNames:
    """Short, DNS-safe names unique per (run id, xdist worker, check[, tag]).

    ``tag`` tells apart the reruns of one check (bad-node isolation).  The TrainJob name prefixes
    pod hostnames (``<tj>-node-0-0``), which must stay under 63 chars.
    """
    variant = CHECK_VARIANTS.get(check, "default")
    short = {"default": "bw", "net": "net", "nvls": "nvls"}[variant]
    key = f"{run_id}\x00{worker or ''}\x00{check}" + (f"\x00{tag}" if tag else "")
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return BenchmarkNames(
        trainjob=f"nccl-{short}-{digest}",
        runtime=f"nccl-{short}-rt-{digest}",
        compute_domain=f"nccl-{short}-cd-{digest}",
        imex_claim_template=f"nccl-{short}-imex-{digest}",
        roce_claim_template=f"nccl-{short}-roce-{digest}",
    )


@dataclass(frozen=True)
class RenderInputs:
    namespace: str
    names: BenchmarkNames
    sizing: WorkerSizing
    labels: Mapping[str, str] = field(default_factory=dict)
    max_message_size: str = MAX_MESSAGE_SIZE
    efa_count: int = 0
    rdma_count: int = 0
    gke_network_interfaces: str | None = None  #: JSON from :func:`gke_network_interfaces` (gke only)

    def placeholders(self) -> dict[str, str]:
        """The generic ``${VAR}`` values (the only ones a private runtime gets)."""
        return {
            "NAMESPACE": self.namespace,
            "WORKER_COUNT": str(self.sizing.worker_count),
            "GPU_COUNT_PER_NODE": str(self.sizing.gpu_count_per_node),
            "GPU_COUNT": str(self.sizing.gpu_count),
            "TEST_TYPE": TEST_TYPE,
            "MIN_MESSAGE_SIZE": MIN_MESSAGE_SIZE,
            "MAX_MESSAGE_SIZE": self.max_message_size,
        }

    def context(self) -> dict[str, Any]:
        """The jinja2 context of our templates (documented in runtimes/nccl/README.md)."""
        return {
            "namespace": self.namespace,
            "names": {
                "trainjob": self.names.trainjob,
                "runtime": self.names.runtime,
                "imex_claim_template": self.names.imex_claim_template,
                "roce_claim_template": self.names.roce_claim_template,
            },
            "labels": dict(self.labels),
            "worker_count": self.sizing.worker_count,
            "gpu_count_per_node": self.sizing.gpu_count_per_node,
            "gpu_count": self.sizing.gpu_count,
            "test_type": TEST_TYPE,
            "min_message_size": MIN_MESSAGE_SIZE,
            "max_message_size": self.max_message_size,
            "efa_count": self.efa_count,
            "rdma_count": self.rdma_count,
            "roce_device_count": self.sizing.gpu_count_per_node,
            # only when known, so the GKE template fails (StrictUndefined) instead of rendering null
            **(
                {"gke_network_interfaces": self.gke_network_interfaces}
                if self.gke_network_interfaces is not None
                else {}
            ),
        }


@dataclass
class BenchmarkObjects:
    runtime: dict[str, Any]
    trainjob: dict[str, Any]
    claim_template: dict[str, Any] | None = None


def _single_doc(docs: list[Any], what: str) -> dict[str, Any]:
    docs = [d for d in docs if d is not None]
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise templates.TemplateRenderError(
            f"{what}: expected exactly one YAML mapping, got {len(docs)} documents"
        )
    return docs[0]


def set_identity(obj: dict[str, Any], name: str, namespace: str, labels: Mapping[str, str]) -> None:
    """Force ``metadata.name``/``namespace`` and add our labels."""
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    meta["name"] = name
    meta["namespace"] = namespace
    if labels:
        existing = meta.get("labels")
        meta["labels"] = {**(existing if isinstance(existing, dict) else {}), **labels}


def apply_worker_scheduling(runtime: dict[str, Any], scheduling: WorkerScheduling) -> None:
    """Overwrite the ``node`` job's nodeSelector/tolerations when non-empty (AICR
    ``applyNCCLWorkerScheduling``)."""
    jobs = _dig(runtime, "spec", "template", "spec", "replicatedJobs")
    if not isinstance(jobs, list):
        raise NcclCheckFailure(MSG_NO_REPLICATED_JOBS)
    job = next((j for j in jobs if isinstance(j, dict) and j.get("name") == NODE_JOB), None)
    if job is None:
        raise NcclCheckFailure(MSG_NO_NODE_JOB)
    pod = _dig(job, "template", "spec", "template", "spec")
    if not isinstance(pod, dict):
        raise NcclCheckFailure(MSG_NO_WORKER_POD_SPEC)
    if scheduling.node_selector:
        pod["nodeSelector"] = dict(scheduling.node_selector)
    if scheduling.tolerations:
        pod["tolerations"] = [dict(t) for t in scheduling.tolerations]


def pin_to_nodes(runtime: dict[str, Any], nodes: Sequence[str]) -> None:
    """Require the ``node`` job's pods on ``nodes`` (node affinity on ``metadata.name``, added to
    every required term the runtime already has): a rerun of bad-node isolation."""
    jobs = _dig(runtime, "spec", "template", "spec", "replicatedJobs")
    job = next((j for j in jobs or [] if isinstance(j, dict) and j.get("name") == NODE_JOB), None)
    pod = _dig(job, "template", "spec", "template", "spec")
    if not isinstance(pod, dict):
        raise NcclCheckFailure(MSG_NO_WORKER_POD_SPEC)
    affinity = pod["affinity"] = dict(pod.get("affinity") or {})
    node_affinity = affinity["nodeAffinity"] = dict(affinity.get("nodeAffinity") or {})
    key = "requiredDuringSchedulingIgnoredDuringExecution"
    required = node_affinity[key] = dict(node_affinity.get(key) or {})
    field_term = {"key": "metadata.name", "operator": "In", "values": sorted(nodes)}
    terms = [dict(t) for t in required.get("nodeSelectorTerms") or [] if isinstance(t, dict)] or [{}]
    for term in terms:
        term["matchFields"] = [*(term.get("matchFields") or []), field_term]
    required["nodeSelectorTerms"] = terms


def render_benchmark(
    plan: VariantPlan,
    inputs: RenderInputs,
    scheduling: WorkerScheduling,
    *,
    runtimes_root: Path | None = None,
) -> BenchmarkObjects:
    """Render the TrainingRuntime (+ RoCE claim template) and the shared TrainJob for ``plan``."""
    ctx = inputs.context()
    placeholders = inputs.placeholders()
    if plan.private_runtime is not None:
        text = templates.substitute_placeholders(plan.private_runtime.text, placeholders)
        try:
            runtime = _single_doc(list(yamlio.load_all(text)), MSG_RUNTIME_RENDER)
        except (yaml.YAMLError, templates.TemplateRenderError):
            raise NcclCheckFailure(MSG_RUNTIME_RENDER) from None
    else:
        assert plan.runtime_template is not None
        runtime = _single_doc(
            templates.render(
                f"nccl/{plan.runtime_template}", ctx, root=runtimes_root, placeholders=placeholders
            ),
            plan.runtime_template,
        )
        if plan.runtime_image is not None:  # AICR_NCCL_RUNTIME_IMAGE: our runtimes only
            apply_runtime_image(runtime, plan.runtime_image)
    set_identity(runtime, inputs.names.runtime, inputs.namespace, inputs.labels)
    apply_worker_scheduling(runtime, scheduling)
    trainjob = _single_doc(
        templates.render(f"nccl/{TRAINJOB_TEMPLATE}", ctx, root=runtimes_root, placeholders=placeholders),
        TRAINJOB_TEMPLATE,
    )
    set_identity(trainjob, inputs.names.trainjob, inputs.namespace, inputs.labels)
    claim = None
    if plan.claim_template is not None:
        claim = _single_doc(
            templates.render(
                f"nccl/{plan.claim_template}", ctx, root=runtimes_root, placeholders=placeholders
            ),
            plan.claim_template,
        )
        set_identity(claim, inputs.names.roce_claim_template, inputs.namespace, inputs.labels)
    return BenchmarkObjects(runtime=runtime, trainjob=trainjob, claim_template=claim)


def build_compute_domain(names: BenchmarkNames, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """The NVLS ``ComputeDomain`` whose DRA reconciliation yields the IMEX claim template."""
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": names.compute_domain, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "numNodes": 0,
            "channel": {
                "allocationMode": "Single",
                "resourceClaimTemplate": {"name": names.imex_claim_template},
            },
        },
    }

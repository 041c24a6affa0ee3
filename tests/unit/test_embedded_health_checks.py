"""The embedded health checks of Kubeflow Trainer and the KAI scheduler
(``recipes/components/*/health-check.yaml``, registered in ``recipes/registry.yaml``), run against
hand-made objects: each signal they declare (controller replicas ready, CRDs Established, a ready
endpoint behind the webhook Service) fails on its own."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core import yamlio
from aicr_pytest.deployment import healthcheck
from aicr_pytest.deployment.healthcheck import NotRegistered
from aicr_pytest.testing.clock import FakeClock

REPO = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]

TRAINER_DEPLOYMENTS = [("kubeflow", "kubeflow-trainer-controller-manager")]
KAI_DEPLOYMENTS = [
    ("kai-scheduler", name)
    for name in (
        "kai-operator",
        "kai-scheduler-default",
        "binder",
        "pod-grouper",
        "podgroup-controller",
        "queue-controller",
        "admission",
    )
]
TRAINER_CRDS = [
    f"{p}.trainer.kubeflow.org" for p in ("trainjobs", "trainingruntimes", "clustertrainingruntimes")
]
KAI_CRDS = ["queues.scheduling.run.ai", "podgroups.scheduling.run.ai"]


def deployment(ns: str, name: str, ready: int = 1) -> Obj:
    status: Obj = {"replicas": 1, "availableReplicas": ready}
    if ready:
        status["readyReplicas"] = ready
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": 1},
        "status": status,
    }


def crd(name: str, established: str = "True") -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "status": {
            "conditions": [
                {"type": "NamesAccepted", "status": "True"},
                {"type": "Established", "status": established},
            ]
        },
    }


def endpoint_slice(ns: str, service: str, ready: bool = True) -> Obj:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{service}-abcde",
            "namespace": ns,
            "labels": {"kubernetes.io/service-name": service},
        },
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": ready}}],
    }


def healthy(component: str) -> list[Obj]:
    if component == "kubeflow-trainer":
        return [
            *(deployment(ns, n) for ns, n in TRAINER_DEPLOYMENTS),
            *(crd(n) for n in TRAINER_CRDS),
            endpoint_slice("kubeflow", "kubeflow-trainer-controller-manager"),
        ]
    return [
        *(deployment(ns, n) for ns, n in KAI_DEPLOYMENTS),
        *(crd(n) for n in KAI_CRDS),
        endpoint_slice("kai-scheduler", "admission"),
    ]


def fetch_over(objects: list[Obj]) -> healthcheck.Fetch:
    def fetch(
        api_version: str, kind: str, namespace: str | None, name: str | None, labels: Mapping[str, str] | None
    ) -> list[Obj]:
        if kind not in ("Deployment", "CustomResourceDefinition", "EndpointSlice"):
            raise NotRegistered(kind)
        out = []
        for obj in objects:
            meta = obj["metadata"]
            if obj["kind"] != kind or (namespace and meta.get("namespace") != namespace):
                continue
            if name is not None and meta["name"] != name:
                continue
            if labels and any((meta.get("labels") or {}).get(k) != v for k, v in labels.items()):
                continue
            out.append(copy.deepcopy(obj))
        return out

    return fetch


def run(component: str, objects: list[Obj]) -> healthcheck.HealthCheckResult:
    registry = yamlio.load((REPO / "recipes" / "registry.yaml").read_text())
    entry = next(c for c in registry["components"] if c["name"] == component)
    path = entry["healthCheck"]["assertFile"]
    check = healthcheck.parse_health_check(component, (REPO / "recipes" / path).read_text())
    return healthcheck.run_health_check(check, fetch_over(objects), clock=FakeClock(), retry_interval=10.0)


@pytest.mark.parametrize("component", ["kubeflow-trainer", "kai-scheduler"])
def test_healthy_component_passes(component: str) -> None:
    result = run(component, healthy(component))
    assert (result.passed, result.error) == (True, None)


@pytest.mark.parametrize(
    ("component", "ns", "service"),
    [
        ("kubeflow-trainer", "kubeflow", "kubeflow-trainer-controller-manager"),
        ("kai-scheduler", "kai-scheduler", "admission"),
    ],
)
def test_webhook_service_without_a_ready_endpoint_fails(component: str, ns: str, service: str) -> None:
    objects = [o for o in healthy(component) if o["kind"] != "EndpointSlice"] + [
        endpoint_slice(ns, service, ready=False)
    ]
    result = run(component, objects)
    assert not result.passed
    assert result.step == "webhook-endpoints"
    assert result.error == (
        f'step "webhook-endpoints": [INTERNAL] no EndpointSlice in "{ns}" matched (last reason: '
        f"{service}-abcde: (length(endpoints[?conditions.ready == `true`] || `[]`) > `0`): expected true, "
        "got false)"
    )


@pytest.mark.parametrize(
    ("component", "name"), [("kubeflow-trainer", TRAINER_CRDS[1]), ("kai-scheduler", KAI_CRDS[1])]
)
def test_crd_not_established_fails(component: str, name: str) -> None:
    objects = [o for o in healthy(component) if o["metadata"]["name"] != name] + [
        crd(name, established="False")
    ]
    result = run(component, objects)
    assert (result.passed, result.step) == (False, "crds-established")
    assert result.error == (
        f'step "crds-established": [INTERNAL] CustomResourceDefinition {name} does not match: '
        'status.(conditions[?type == \'Established\'].status | [0]): expected "True", got "False"'
    )

"""The backend layer without binaries: profile adaptation, kwok log/stage helpers, the skipping clock,
and the backend parametrization + count summary (through pytester, with the control plane absent)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from tests.harness import backends
from tests.harness import controlplane as cpmod

GPU = ["gpu-h100-0", "gpu-h100-1"]
OTHER = ["system-0"]


def by_kind(objs: list[dict[str, object]], kind: str) -> list[dict[str, object]]:
    return [o for o in objs if o["kind"] == kind]


def test_profile_objects_leave_nodes_and_owned_pods_to_kwok_and_the_controllers() -> None:
    objs = backends.profile_objects("h100-eks-training", gpu_nodes=GPU, other_nodes=OTHER)
    kinds = {o["kind"] for o in objs}
    assert "Node" not in kinds and "Pod" not in kinds  # every profile pod has a controller owner
    assert not any(
        (o.get("metadata") or {}).get("labels", {}).get("app.kubernetes.io/managed-by")  # type: ignore[union-attr]
        == "aicr-pytest-simulator"
        for o in objs
    )
    deployments = {o["metadata"]["name"]: o for o in by_kind(objs, "Deployment")}  # type: ignore[index]
    operator = deployments["gpu-operator"]
    pod_spec = operator["spec"]["template"]["spec"]  # type: ignore[index]
    assert pod_spec["tolerations"] == [{"operator": "Exists"}]
    assert pod_spec["nodeSelector"] == {backends.POOL_LABEL: "system"}
    assert "status" not in operator
    device_plugin = next(
        o
        for o in by_kind(objs, "DaemonSet")
        if o["metadata"]["name"] == "nvidia-device-plugin-daemonset"  # type: ignore[index]
    )
    assert device_plugin["spec"]["template"]["spec"]["nodeSelector"] == {backends.POOL_LABEL: "gpu"}  # type: ignore[index]
    # One ResourceSlice per GPU node the control plane has; the profile's extra GPU nodes are dropped.
    slices = by_kind(objs, "ResourceSlice")
    assert sorted(s["spec"]["nodeName"] for s in slices) == GPU  # type: ignore[index]
    assert sorted(s["metadata"]["name"] for s in slices) == [f"{n}-gpu.nvidia.com" for n in GPU]  # type: ignore[index]
    assert all(s["spec"]["pool"]["name"] == s["spec"]["nodeName"] for s in slices)  # type: ignore[index]
    # CRs keep their status (written through the status subresource by the seeder).
    policy = by_kind(objs, "ClusterPolicy")[0]
    assert policy["status"]["state"] == "ready"  # type: ignore[index]


def test_clean_for_create_drops_server_fields() -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "uid": "u", "resourceVersion": "7", "creationTimestamp": "t"},
        "spec": {"clusterIP": "172.20.0.1", "clusterIPs": ["172.20.0.1"], "ports": [{"port": 80}]},
    }
    cleaned = backends.clean_for_create(svc)
    assert cleaned["metadata"] == {"name": "s"}
    assert cleaned["spec"] == {"ports": [{"port": 80}]}
    assert svc["metadata"]["uid"] == "u"  # the input is not modified


@pytest.mark.parametrize(
    ("text", "records"),
    [
        ("a\nb\n", ["F a", "F b"]),
        ("a\nb", ["F a", "P b"]),
        ("", []),
        ("\n", ["F "]),
    ],
)
def test_cri_log_round_trips(text: str, records: list[str]) -> None:
    lines = cpmod.cri_log(text, timestamp="T").splitlines()
    assert lines == [f"T stdout {r}" for r in records]


def test_kwok_stages_make_pod_complete_controllable(tmp_path: Path) -> None:
    source = tmp_path / "stages.yaml"
    source.write_text(
        yaml.safe_dump_all(
            [
                {
                    "kind": "Stage",
                    "metadata": {"name": "pod-ready"},
                    "spec": {"selector": {"matchExpressions": []}},
                },
                {
                    "kind": "Stage",
                    "metadata": {"name": "pod-complete"},
                    "spec": {"selector": {"matchExpressions": [{"key": ".status.phase", "operator": "In"}]}},
                },
            ]
        )
    )
    docs = list(yaml.safe_load_all(cpmod.write_kwok_stages(source, tmp_path / "out.yaml").read_text()))
    ready, complete = docs
    assert ready["spec"]["selector"]["matchExpressions"] == []
    query = f'.metadata.annotations["{cpmod.RUN_FOR_ANNOTATION}"]'
    assert {"key": query, "operator": "NotIn", "values": ["forever"]} in complete["spec"]["selector"][
        "matchExpressions"
    ]
    assert complete["spec"]["delay"] == {"durationMilliseconds": 0, "durationFrom": {"expressionFrom": query}}


def test_kwok_stages_report_an_image_id_for_every_container(tmp_path: Path) -> None:
    """kwok writes no imageID; the checks' proof of execution needs one (a kubelet reports it)."""
    ready = (
        "containerStatuses:\n{{ range .spec.containers }}\n- image: {{ .image | Quote }}\n  name: x\n"
        "{{ end }}\n"
    )
    complete = (
        "{{ range $index, $item := .spec.containers }}\n  - image: {{ $item.image | Quote }}\n    name: y\n"
    )
    source = tmp_path / "stages.yaml"
    source.write_text(
        yaml.safe_dump_all(
            [
                {
                    "kind": "Stage",
                    "metadata": {"name": "pod-ready"},
                    "spec": {"next": {"statusTemplate": ready}},
                },
                {
                    "kind": "Stage",
                    "metadata": {"name": "pod-complete"},
                    "spec": {"selector": {"matchExpressions": []}, "next": {"statusTemplate": complete}},
                },
            ]
        )
    )
    docs = list(yaml.safe_load_all(cpmod.write_kwok_stages(source, tmp_path / "out.yaml").read_text()))
    assert docs[0]["spec"]["next"]["statusTemplate"].splitlines()[2:4] == [
        "- image: {{ .image | Quote }}",
        '  imageID: {{ printf "%s@sha256:kwok" .image | Quote }}',
    ]
    assert docs[1]["spec"]["next"]["statusTemplate"].splitlines()[1:3] == [
        "  - image: {{ $item.image | Quote }}",
        '    imageID: {{ printf "%s@sha256:kwok" $item.image | Quote }}',
    ]


def test_skipping_clock_skips_sleeps_but_follows_real_time() -> None:
    clock = backends.SkippingClock(max_real=0.01)
    start, real = clock.time(), time.monotonic()
    clock.sleep(60)
    assert clock.time() - start >= 60
    assert time.monotonic() - real < 30  # far below the 60 s it pretends to sleep
    time.sleep(0.05)
    assert clock.time() - start >= 60.05


def test_backends_are_parametrized_counted_and_skipped_with_a_reason(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-binaries"
    empty.mkdir()
    monkeypatch.setenv("AICR_CONTROLPLANE_BIN", str(empty))
    monkeypatch.delenv("AICR_REQUIRE_CONTROLPLANE", raising=False)
    pytester.makeconftest(
        """
        from tests.harness.backend_fixtures import (
            controlplane, controlplane_session, k8s_backend, pytest_configure, pytest_generate_tests,
        )
        """
    )
    pytester.makepyfile(
        """
        import pytest

        def test_both(k8s_backend):
            assert k8s_backend.name in ("fake", "controlplane")
            ns = k8s_backend.namespace("default")
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": ns}}
            k8s_backend.seed([cm])
            assert k8s_backend.find("v1", "ConfigMap", "c", ns) is not None

        @pytest.mark.fake_only("scripted faults")
        def test_fake(k8s_backend):
            assert k8s_backend.name == "fake" and k8s_backend.can_inject_faults
        """
    )
    pytester.makeini("[pytest]\nmarkers =\n    fake_only(reason): fake only\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "backend scenarios: fake=2 controlplane=0 (fake-only: 1); skipped: controlplane=1",
            "SKIPPED * control-plane binaries missing from *no-binaries: kube-apiserver*",
        ]
    )
    monkeypatch.setenv("AICR_REQUIRE_CONTROLPLANE", "1")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*AICR_REQUIRE_CONTROLPLANE=1 makes this a failure*"])


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/version", "", "get /version"),
        ("GET", "/apis/apps/v1", "", "get /apis/apps/v1"),
        ("GET", "/api/v1/nodes", "limit=500", "list nodes"),
        ("GET", "/api/v1/namespaces/ns/pods", "watch=true", "watch pods in namespace ns"),
        ("GET", "/api/v1/namespaces/ns/pods/p/log", "container=c", "get pods/log in namespace ns"),
        ("POST", "/apis/batch/v1/namespaces/ns/jobs", "", "create jobs.batch in namespace ns"),
        ("DELETE", "/api/v1/namespaces/ns", "", "delete namespaces in namespace ns"),
        ("DELETE", "/api/v1/namespaces/ns/configmaps", "", "deletecollection configmaps in namespace ns"),
        (
            "PATCH",
            "/apis/nvidia.com/v1/clusterpolicies/cp/status",
            "",
            "patch clusterpolicies/status.nvidia.com",
        ),
        (
            "POST",
            "/api/v1/namespaces/ns/services/fe:8000/proxy/v1/chat/completions",
            "",
            "create services/proxy in namespace ns",
        ),
    ],
)
def test_request_attributes_follow_the_apiservers_request_info(
    method: str, path: str, query: str, expected: str
) -> None:
    from tests.harness.authz import request_attributes

    assert str(request_attributes(method, path, query)) == expected

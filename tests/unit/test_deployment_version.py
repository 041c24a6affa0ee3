# ruff: noqa: E501  (exact user-facing messages are asserted verbatim)
"""gpu-operator-version."""

from __future__ import annotations

from typing import Any

import pytest
from _kube_store import Store, deployment

from aicr_pytest import deployment as d
from aicr_pytest.core.errors import CheckSkip, Inconclusive


# A stand-in for the constraint language (aicr_pytest.core.constraints): ">= vX.Y.Z" only.
class ConstraintError(ValueError):
    pass


def parse_expression(expr: str) -> tuple[str, tuple[int, ...]]:
    expr = expr.strip()
    for op in (">=", "<", "=="):
        if expr.startswith(op):
            value = expr[len(op) :].strip()
            if not value:
                raise ConstraintError("constraint value cannot be empty after operator")
            return op, tuple(int(p) for p in value.lstrip("v").split(".") if p.isdigit())
    raise ConstraintError(f"unsupported expression {expr!r}")


def evaluate(parsed: tuple[str, tuple[int, ...]], actual: str) -> bool:
    op, want = parsed
    text = actual.lstrip("v").split("-")[0]
    if not text.replace(".", "").isdigit():
        raise ValueError(f"cannot parse actual version {actual!r}")
    have = tuple(int(p) for p in text.split("."))
    n = min(len(want), len(have))
    if op == ">=":
        return have[:n] >= want[:n]
    if op == "<":
        return have[:n] < want[:n]
    return have == want


def operator_deployment(
    ns: str = "gpu-operator",
    name: str = "gpu-operator",
    *,
    label: str | None = None,
    image: str | None = "nvcr.io/nvidia/gpu-operator:v25.3.0-ubi9",
    annotation: str | None = None,
) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    if label is not None:
        extra["labels"] = {"app.kubernetes.io/version": label}
    if annotation is not None:
        meta["annotations"] = {"nvidia.com/gpu-operator-version": annotation}
    containers = [{"name": "sidecar", "image": "busybox:1.36"}]
    if image is not None:
        containers.append({"name": "gpu-operator", "image": image})
    return deployment(
        name, ns, spec={"template": {"spec": {"containers": containers}}}, metadata=meta, **extra
    )


def run(
    store: Store, constraints: list[Any], refs: list[dict[str, Any]] | None = None
) -> tuple[str, list[str]]:
    lines: list[str] = []
    msg = d.check_gpu_operator_version(
        store.fetch,
        constraints,
        emit=lines.append,
        parse_expression=parse_expression,
        evaluate=evaluate,
        refs=refs or [],
    )
    return msg, lines


GE = [{"name": "Deployment.gpu-operator.version", "value": ">= v24.6.0"}]


@pytest.mark.parametrize(
    ("dep", "version"),
    [
        (operator_deployment(label="v25.10.1"), "v25.10.1"),
        (operator_deployment(label=" 25.10.1 "), "v25.10.1"),
        (operator_deployment(), "v25.3.0"),
        (operator_deployment(image="nvcr.io/nvidia/gpu-operator:25.3.0"), "v25.3.0"),
        (
            operator_deployment(image="registry:5000/nvidia/gpu-operator@sha256:abc", annotation="v24.9.2"),
            "v24.9.2",
        ),
        (operator_deployment(image="registry:5000/gpu-operator:v1.2.3-rc1@sha256:abc"), "v1.2.3"),
        (operator_deployment(image=None, annotation="v24.9.2"), "v24.9.2"),
        (operator_deployment(image=None), None),
    ],
)
def test_version_extraction_order(dep: dict[str, Any], version: str | None) -> None:
    assert d.extract_operator_version(dep) == version


def test_pass() -> None:
    msg, lines = run(Store([operator_deployment()]), GE)
    assert lines == ["Detected GPU Operator version: v25.3.0", "Constraint: >= v24.6.0 → true"]
    assert msg == 'GPU Operator version v25.3.0 satisfies constraint ">= v24.6.0"'


def test_unsatisfied() -> None:
    lines: list[str] = []
    with pytest.raises(d.CheckFailed) as exc:
        d.check_gpu_operator_version(
            Store([operator_deployment(label="v24.3.0")]).fetch,
            GE,
            emit=lines.append,
            parse_expression=parse_expression,
            evaluate=evaluate,
        )
    assert (
        str(exc.value) == '[INTERNAL] GPU Operator version v24.3.0 does not satisfy constraint ">= v24.6.0"'
    )
    assert lines[-1] == "Constraint: >= v24.6.0 → false"


def test_missing_constraint_skips_never_passes() -> None:
    with pytest.raises(CheckSkip) as exc:
        run(Store([operator_deployment()]), [{"name": "Other", "value": "x"}])
    assert exc.value.reason == "no Deployment.gpu-operator.version constraint in recipe; detected v25.3.0"


def test_constraint_objects_accepted() -> None:
    from aicr_pytest.core.recipe import Constraint

    msg, _ = run(
        Store([operator_deployment()]), [Constraint(name="Deployment.gpu-operator.version", value=">= 24.6")]
    )
    assert msg.startswith("GPU Operator version v25.3.0 satisfies")


def test_invalid_expression() -> None:
    with pytest.raises(d.CheckFailed) as exc:
        run(Store([operator_deployment()]), [{"name": "Deployment.gpu-operator.version", "value": ">="}])
    assert str(exc.value) == (
        "[INVALID_REQUEST] invalid constraint expression: constraint value cannot be empty after operator"
    )


def test_invalid_expression_cause_code_not_doubled() -> None:
    def parse(expr: str) -> Any:
        raise ValueError("[INVALID_REQUEST] bad thing")

    with pytest.raises(d.CheckFailed) as exc:
        d.check_gpu_operator_version(
            Store([operator_deployment()]).fetch,
            GE,
            emit=lambda _: None,
            parse_expression=parse,
            evaluate=evaluate,
        )
    assert str(exc.value) == "[INVALID_REQUEST] invalid constraint expression: bad thing"


def test_evaluation_error() -> None:
    store = Store([operator_deployment(label="latest")])
    with pytest.raises(d.CheckFailed) as exc:
        run(store, GE)
    assert str(exc.value) == "[INTERNAL] constraint evaluation failed: cannot parse actual version 'vlatest'"


def test_not_found_anywhere_fails_even_without_constraint() -> None:
    with pytest.raises(d.CheckFailed) as exc:
        run(Store(), [])
    assert str(exc.value) == (
        "[INTERNAL] failed to detect GPU operator version: [NOT_FOUND] could not find GPU operator deployment "
        'in common namespaces: deployments.apps "nvidia-gpu-operator" not found'
    )


def test_probe_order_and_fallback_namespaces() -> None:
    store = Store([operator_deployment("kube-system", "nvidia-gpu-operator", label="v25.3.1")])
    msg, _ = run(store, GE)
    assert "v25.3.1" in msg
    assert [(ns, name) for _, _, ns, name in store.calls] == [
        ("gpu-operator", "gpu-operator"),
        ("gpu-operator", "nvidia-gpu-operator"),
        ("nvidia-gpu-operator", "gpu-operator"),
        ("nvidia-gpu-operator", "nvidia-gpu-operator"),
        ("kube-system", "gpu-operator"),
        ("kube-system", "nvidia-gpu-operator"),
    ]


def test_recipe_namespace_probed_first() -> None:
    store = Store([operator_deployment("custom-ns", label="v25.3.1")])
    msg, _ = run(store, GE, refs=[{"name": "gpu-operator", "namespace": "custom-ns"}])
    assert "v25.3.1" in msg
    assert store.calls[0][2:] == ("custom-ns", "gpu-operator")


def test_deployment_without_version_continues_search() -> None:
    store = Store([operator_deployment(image=None)])
    with pytest.raises(d.CheckFailed) as exc:
        run(store, GE)
    assert "could not find GPU operator deployment" in str(exc.value)
    store2 = Store([operator_deployment(image=None), operator_deployment("kube-system", label="v25.1.0")])
    assert "v25.1.0" in run(store2, GE)[0]


def test_undetermined_version_is_last_probe_error_when_last() -> None:
    store = Store([operator_deployment("kube-system", "nvidia-gpu-operator", image=None)])
    with pytest.raises(d.CheckFailed) as exc:
        run(store, GE)
    assert str(exc.value).endswith(
        "in common namespaces: could not determine version from deployment kube-system/nvidia-gpu-operator"
    )


def test_all_probes_api_errors_is_inconclusive() -> None:
    store = Store()
    store.errors["Deployment"] = RuntimeError("Unauthorized")
    with pytest.raises(Inconclusive) as exc:
        run(store, GE)
    assert str(exc.value).endswith("in common namespaces: Unauthorized")

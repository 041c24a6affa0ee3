"""NCCL variant resolution, profiles, private runtimes, fabric, threshold, node sizing, verdict."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest import nccl
from aicr_pytest.core.datatree import DataTree, embedded_data_root
from aicr_pytest.core.errors import CheckSkip, UsageError

BW, NET, NVLS = nccl.CHECK_DEFAULT, nccl.CHECK_NET, nccl.CHECK_NVLS
PROFILES = "b200/any, gb200/any, gb200/eks, gb200/oke, h100/aks, h100/eks, h100/gke, h200/eks"


def crit(service: str | None, accelerator: str | None) -> nccl.Criteria:
    return nccl.Criteria(service=service, accelerator=accelerator)


def resolve(
    check_name: str, service: str, acc: str, env: dict[str, str] | None = None, **cons: str
) -> nccl.VariantPlan:
    constraints = {k.replace("_", "-"): v for k, v in cons.items()}
    return nccl.resolve_variant(check_name, crit(service, acc), constraints, env or {})


# --- applicability matrix ---------------------------------------------------------

SUPPORTED = {
    (BW, "eks", "h100"): "h100/eks/runtime.yaml",
    (BW, "eks", "h200"): "h200/eks/runtime.yaml",
    (BW, "gke", "h100"): "h100/gke/runtime.yaml",
    (BW, "aks", "h100"): "h100/aks/runtime.yaml",
    (BW, "any", "b200"): "b200/any/runtime.yaml",
    (BW, "any", "gb200"): "gb200/any/runtime.yaml",
    (NET, "eks", "gb200"): "gb200/eks/runtime-net.yaml",
    (NVLS, "eks", "gb200"): "gb200/eks/runtime-nvls.yaml",
    (NVLS, "oke", "gb200"): "gb200/oke/runtime-nvls.yaml",
}


@pytest.mark.parametrize(("check_name", "service", "acc"), sorted(SUPPORTED))
def test_supported_combinations(check_name: str, service: str, acc: str) -> None:
    plan = nccl.resolve_variant(check_name, crit(service, acc), {check_name: ">= 100"}, {})
    assert plan.runtime_template == SUPPORTED[(check_name, service, acc)]
    assert (plan.target_accelerator, plan.target_service) == (acc, service)
    assert plan.profile is None and plan.embedded
    assert (nccl.template_path(plan.variant, "efa", acc, service)) == plan.runtime_template


@pytest.mark.parametrize(
    ("check_name", "service", "acc"),
    [
        (BW, "eks", "gb200"),
        (BW, "gke", "b200"),
        (BW, "oke", "a100"),
        (BW, "aks", "h200"),
        (NET, "eks", "h100"),
        (NET, "oke", "gb200"),
        (NVLS, "any", "gb200"),
        (NVLS, "eks", "h100"),
        (BW, "mycloud", "gb300"),
    ],
)
def test_unsupported_combinations_skip(check_name: str, service: str, acc: str) -> None:
    with pytest.raises(CheckSkip) as err:
        nccl.resolve_variant(check_name, crit(service, acc), {check_name: ">= 100"}, {})
    assert err.value.reason == "skipped - requires Service + Accelerator to be implemented"


def test_criteria_are_normalised() -> None:
    plan = nccl.resolve_variant(BW, {"service": " EKS ", "accelerator": "H100"}, {BW: ">= 300"}, {})
    assert plan.runtime_template == "h100/eks/runtime.yaml"


def test_known_profiles() -> None:
    assert ", ".join(nccl.KNOWN_PROFILES) == PROFILES


# --- constraints and criteria ----------------------------------------------------------------------


@pytest.mark.parametrize("check_name", [BW, NET, NVLS])
def test_absent_constraint_skips(check_name: str) -> None:
    with pytest.raises(CheckSkip) as err:
        nccl.resolve_variant(check_name, crit("eks", "gb200"), {}, {})
    assert err.value.reason == f"no {check_name} constraint in recipe"


def test_each_variant_reads_only_its_own_constraint() -> None:
    with pytest.raises(CheckSkip) as err:
        nccl.resolve_variant(NET, crit("eks", "gb200"), {BW: ">= 40"}, {})
    assert err.value.reason == "no nccl-all-reduce-bw-net constraint in recipe"
    plan = nccl.resolve_variant(NET, crit("eks", "gb200"), {BW: ">= 999", NET: ">= 40"}, {})
    assert plan.threshold.value == 40


def test_first_duplicate_constraint_wins() -> None:
    plan = nccl.resolve_variant(BW, crit("eks", "h100"), [(BW, ">= 300"), (BW, ">= 1")], {})
    assert plan.threshold.value == 300


def test_recipe_constraint_objects_are_accepted() -> None:
    from aicr_pytest.core.recipe import Constraint

    plan = nccl.resolve_variant(BW, crit("eks", "h100"), [Constraint(name=BW, value=">= 300")], {})
    assert plan.threshold.raw == ">= 300"


@pytest.mark.parametrize("criteria", [None, crit(None, "h100"), crit("eks", ""), {"service": "eks"}])
def test_missing_criteria_skip(criteria: Any) -> None:
    with pytest.raises(CheckSkip) as err:
        nccl.resolve_variant(BW, criteria, {BW: ">= 300"}, {})
    assert err.value.reason == "skipped - requires Service + Accelerator"


def test_unknown_check_name() -> None:
    with pytest.raises(UsageError):
        nccl.resolve_variant("nccl-all-reduce-bw-foo", crit("eks", "h100"), {}, {})


# --- nccl-benchmark-profile ------------------------------------------------------------


@pytest.mark.parametrize("raw", ["gb200", "gb200/eks/x", "/eks", "gb200/", " / ", "gb200//eks"])
def test_malformed_profile_fails(raw: str) -> None:
    with pytest.raises(nccl.NcclCheckFailure) as err:
        resolve(NET, "eks", "gb200", nccl_benchmark_profile=raw, nccl_all_reduce_bw_net=">= 40")
    assert (
        str(err.value)
        == f'invalid nccl-benchmark-profile="{raw}": must be "{{accelerator}}/{{service}}" (e.g. "gb200/eks")'
    )


@pytest.mark.parametrize("raw", ["a100/eks", "gb300/eks", "roce/eks", "gb200/gke"])
def test_unknown_profile_fails_listing_profiles(raw: str) -> None:
    with pytest.raises(nccl.NcclCheckFailure) as err:
        resolve(BW, "eks", "h100", nccl_benchmark_profile=raw, nccl_all_reduce_bw=">= 1")
    assert str(err.value) == f'unknown nccl-benchmark-profile="{raw}": available profiles: {PROFILES}'


@pytest.mark.parametrize("raw", ["", "   "])
def test_blank_profile_is_no_profile(raw: str) -> None:
    plan = resolve(BW, "eks", "h100", nccl_benchmark_profile=raw, nccl_all_reduce_bw=">= 300")
    assert plan.profile is None


def test_profile_is_trimmed_and_lowercased_and_wins_over_criteria() -> None:
    plan = nccl.resolve_variant(
        NET, crit("custom-svc", "gb300"), {"nccl-benchmark-profile": "  GB200 / EKS  ", NET: ">= 40"}, {}
    )
    assert plan.profile == "gb200/eks"
    assert (plan.target_accelerator, plan.target_service) == ("gb200", "eks")
    assert plan.criteria_accelerator == "gb300"  # GPU nodes still matched by the recipe's accelerator
    assert plan.runtime_template == "gb200/eks/runtime-net.yaml"
    assert plan.preflight == "nvreg"
    assert plan.narrows_instance_type


def test_profile_lacking_the_variant_skips_naming_it() -> None:
    with pytest.raises(CheckSkip) as err:
        resolve(BW, "eks", "gb200", nccl_benchmark_profile="gb200/eks", nccl_all_reduce_bw=">= 1")
    assert err.value.reason == (
        "skipped - benchmark profile gb200/eks does not implement the nccl-all-reduce-bw NCCL variant"
    )


def test_profile_wins_even_when_criteria_are_supported() -> None:
    # criteria h100/eks supports the default variant, but the profile gb200/oke does not
    with pytest.raises(CheckSkip) as err:
        resolve(BW, "eks", "h100", nccl_benchmark_profile="gb200/oke", nccl_all_reduce_bw=">= 1")
    assert "benchmark profile gb200/oke does not implement the nccl-all-reduce-bw" in err.value.reason


def test_any_profile_requires_node_selector() -> None:
    plan = resolve(BW, "mycloud", "b200", nccl_benchmark_profile="b200/any", nccl_all_reduce_bw=">= 1")
    assert plan.requires_node_selector


# --- AICR_NCCL_FABRIC -------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "fabric"), [(None, "efa"), ("", "efa"), ("efa", "efa"), (" EFA ", "efa"), ("RoCE", "roce")]
)
def test_fabric_values(value: str | None, fabric: str) -> None:
    env = {} if value is None else {"AICR_NCCL_FABRIC": value}
    assert nccl.parse_fabric(env) == fabric


def test_bad_fabric_is_a_usage_error_for_net() -> None:
    with pytest.raises(UsageError) as err:
        resolve(NET, "eks", "gb200", {"AICR_NCCL_FABRIC": "ib"}, nccl_all_reduce_bw_net=">= 40")
    assert str(err.value) == 'unsupported AICR_NCCL_FABRIC="ib" (expected "efa" or "roce")'


@pytest.mark.parametrize("check_name", [BW, NVLS])
def test_fabric_is_scoped_to_net(check_name: str) -> None:
    acc, svc = ("h100", "eks") if check_name == BW else ("gb200", "eks")
    for value in ("roce", "garbage"):
        plan = nccl.resolve_variant(
            check_name, crit(svc, acc), {check_name: ">= 1"}, {"AICR_NCCL_FABRIC": value}
        )
        assert plan.fabric == "efa"
        assert plan.claim_template is None
        assert "roce" not in (plan.runtime_template or "")


@pytest.mark.parametrize("acc", ["gb300", "h100", "anything"])
def test_roce_net_is_service_keyed(acc: str) -> None:
    plan = resolve(NET, "eks", acc, {"AICR_NCCL_FABRIC": "roce"}, nccl_all_reduce_bw_net=">= 40")
    assert plan.fabric == "roce"
    assert plan.runtime_template == "roce/eks/runtime-net.yaml"
    assert plan.claim_template == "roce/eks/roce-claim.yaml"
    assert plan.preflight is None  # NVreg applies to the EFA path only


def test_roce_net_outside_eks_skips() -> None:
    with pytest.raises(CheckSkip):
        resolve(NET, "gke", "gb200", {"AICR_NCCL_FABRIC": "roce"}, nccl_all_reduce_bw_net=">= 40")


def test_preflights() -> None:
    assert resolve(BW, "gke", "h100", nccl_all_reduce_bw=">= 300").preflight == "tcpxo"
    assert resolve(BW, "eks", "h100", nccl_all_reduce_bw=">= 300").preflight is None
    assert resolve(NVLS, "eks", "gb200", nccl_all_reduce_bw_nvls=">= 500").preflight is None
    assert resolve(NVLS, "eks", "gb200", nccl_all_reduce_bw_nvls=">= 500").provisions_compute_domain


# --- threshold ----------------------------------------------------------------------------------------


def test_floor_passes_at_ninety_percent() -> None:
    t = nccl.parse_threshold(BW, ">= 300")
    assert (t.comparator, t.value, t.effective) == (">=", 300.0, pytest.approx(270.0))
    assert t.passes(270.0) and t.passes(1000.0)
    assert not t.passes(269.99) and not t.passes(float("nan"))


def test_ceiling_passes_at_one_hundred_ten_percent() -> None:
    t = nccl.parse_threshold(BW, "<= 40")
    assert t.passes(44.0) and t.passes(0.0)
    assert not t.passes(44.01)


@pytest.mark.parametrize(
    ("raw", "value"), [(">= 300 GB/s", 300.0), (">=300GB/s", 300.0), ("  >= 100.5  ", 100.5)]
)
def test_threshold_units(raw: str, value: float) -> None:
    assert nccl.parse_threshold(BW, raw).value == value


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            "300",
            'nccl-all-reduce-bw: constraint "300" has no comparator; a bandwidth gate needs a direction — '
            'write ">= 300" (a floor, passes at >= 90% of it) or "<= 300" '
            "(a ceiling, passes at <= 110% of it)",
        ),
        (
            "== 300",
            'nccl-all-reduce-bw: constraint "== 300" uses "==", which a measured bandwidth can never meet '
            'exactly; use ">=" (a floor) or "<=" (a ceiling)',
        ),
        (
            "> 300",
            'nccl-all-reduce-bw: constraint "> 300" uses unsupported comparator ">"; NCCL bandwidth gates '
            'take ">=" (a floor, 10% tolerance) or "<=" (a ceiling, 10% tolerance)',
        ),
        ("", 'nccl-all-reduce-bw: invalid threshold: no numeric value found in ""'),
        (">=", 'nccl-all-reduce-bw: invalid threshold: no numeric value found in ">="'),
        (
            ">= abc",
            'nccl-all-reduce-bw: invalid threshold format ">= abc" (expected e.g. ">= 300" or ">= 300 GB/s")',
        ),
        (
            ">= 300 MB/s",
            'nccl-all-reduce-bw: invalid threshold format ">= 300 MB/s" '
            '(expected e.g. ">= 300" or ">= 300 GB/s")',
        ),
    ],
)
def test_threshold_usage_errors(raw: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        nccl.parse_threshold(BW, raw)
    assert str(err.value) == message


@pytest.mark.parametrize("op", ["!=", "<", "=>", ">>="])
def test_other_comparators_are_usage_errors(op: str) -> None:
    with pytest.raises(UsageError, match="unsupported comparator"):
        nccl.parse_threshold(BW, f"{op} 300")


def test_bad_threshold_is_raised_by_resolve_variant_only_when_applicable() -> None:
    with pytest.raises(UsageError):
        resolve(BW, "eks", "h100", nccl_all_reduce_bw="300")
    with pytest.raises(CheckSkip):  # not applicable: skipped before the threshold matters
        resolve(BW, "eks", "a100", nccl_all_reduce_bw="300")


# --- verdict and stdout lines -------------------------------------------------------------------------


def test_evaluate_lines_exactly_as_the_guide() -> None:
    v = nccl.evaluate(NET, nccl.parse_threshold(NET, ">= 40"), 412.3449)
    assert v.passed and v.failure is None
    assert v.lines == (
        "NCCL All Reduce bandwidth (nccl-all-reduce-bw-net): 412.34 GB/s",
        "Constraint: >= 40 → true",
    )


def test_evaluate_failure() -> None:
    v = nccl.evaluate(BW, nccl.parse_threshold(BW, ">= 300"), 250.0)
    assert not v.passed
    assert v.lines[1] == "Constraint: >= 300 → false"
    assert v.failure == 'NCCL bandwidth 250.00 GB/s does not satisfy constraint ">= 300"'


# --- nccl-benchmark-runtime-ref ------------------------------------------------------


def jobs_yaml(replicated_jobs: str) -> str:
    """A TrainingRuntime with the given flow-style ``replicatedJobs`` list."""
    return (
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n"
        f"spec: {{template: {{spec: {{replicatedJobs: {replicated_jobs}}}}}}}\n"
    )


WRONG_KIND = (
    "invalid nccl-benchmark-runtime: must be a trainer.kubeflow.org/v1alpha1 TrainingRuntime "
    '(got apiVersion="{api}" kind="{kind}")'
)

GOOD_RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: whatever
  namespace: elsewhere
spec:
  template:
    spec:
      replicatedJobs:
        - name: launcher
          template:
            spec:
              template:
                spec:
                  containers: [{name: node, image: x, args: ["-np", "${GPU_COUNT}", "$PATH"]}]
        - name: node
          template:
            spec:
              template:
                spec:
                  nodeSelector: {pool: gpu-a}
                  containers:
                    - name: node
                      image: example.com/nccl:1
                      env: [{name: NS, value: "${NAMESPACE}"}, {name: EFA, value: "${EFA_RESOURCE_LIMITS}"}]
                      resources:
                        limits:
                          nvidia.com/gpu: "${GPU_COUNT_PER_NODE}"
"""
REF_PATH = "validators/performance/testdata/gb200/mycloud/runtime.yaml"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    root = tmp_path / "mydata"
    (root / "validators/performance/testdata/gb200/mycloud").mkdir(parents=True)
    (root / "registry.yaml").write_text("components: []\n")
    (root / REF_PATH).write_text(GOOD_RUNTIME)
    return root


@pytest.fixture
def data(data_dir: Path) -> DataTree:
    return DataTree(embedded_data_root(), data_dir)


def ref_constraints(ref: str = "gb200/mycloud", **extra: str) -> dict[str, str]:
    return {
        BW: ">= 450",
        "nccl-benchmark-runtime-ref": ref,
        **{k.replace("_", "-"): v for k, v in extra.items()},
    }


def test_runtime_ref_resolves_and_bypasses_applicability(data: DataTree) -> None:
    plan = nccl.resolve_variant(BW, crit("mycloud", "gb200"), ref_constraints(), {}, data=data)
    assert plan.private_runtime is not None
    assert plan.private_runtime.source == REF_PATH
    assert plan.private_runtime.ref == "gb200/mycloud"
    assert plan.runtime_template is None and plan.claim_template is None
    assert not plan.service_steps and plan.preflight is None and not plan.requires_node_selector
    assert not plan.narrows_instance_type and not plan.provisions_compute_domain
    assert plan.sizing_selector(None) == {"pool": "gpu-a"}
    assert plan.sizing_selector({"a": "b"}) == {"a": "b"}


def test_runtime_ref_ignores_fabric_env(data: DataTree) -> None:
    cons = {**ref_constraints(), NET: ">= 40"}
    plan = nccl.resolve_variant(NET, crit("mycloud", "gb200"), cons, {"AICR_NCCL_FABRIC": "bogus"}, data=data)
    assert plan.fabric == "efa" and plan.variant == "net"


def test_runtime_ref_blank_is_noop(data: DataTree) -> None:
    assert nccl.resolve_runtime_ref(ref_constraints("  "), data) is None
    plan = nccl.resolve_variant(BW, crit("eks", "h100"), {**ref_constraints(""), BW: ">= 300"}, {}, data=data)
    assert plan.embedded


def test_runtime_ref_not_lowercased(data_dir: Path, data: DataTree) -> None:
    with pytest.raises(UsageError) as err:
        nccl.resolve_runtime_ref(ref_constraints("GB200/MyCloud"), data)
    assert 'expected "validators/performance/testdata/GB200/MyCloud/runtime.yaml"' in str(err.value)


@pytest.mark.parametrize(
    "ref",
    ["gb200", "gb200/mycloud/x", "../mycloud", "gb200/..", "./x", "/etc/passwd", "gb200\\x/y", "gb200/ "],
)
def test_malformed_runtime_ref(data: DataTree, ref: str) -> None:
    with pytest.raises(UsageError) as err:
        nccl.resolve_runtime_ref(ref_constraints(ref), data)
    expected = f'invalid nccl-benchmark-runtime-ref="{ref.strip()}": must be "{{accelerator}}/{{service}}"'
    assert str(err.value) == expected + ' (e.g. "gb200/mycloud")'


def test_runtime_ref_without_data(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        nccl.resolve_runtime_ref(ref_constraints(), None)
    assert (
        str(err.value)
        == 'nccl-benchmark-runtime-ref="gb200/mycloud" is set but no --data source is available to resolve it'
    )
    with pytest.raises(UsageError):  # an embedded-only tree is no --data source either
        nccl.resolve_runtime_ref(ref_constraints(), DataTree(embedded_data_root()))


def test_runtime_ref_missing_file(data: DataTree) -> None:
    with pytest.raises(UsageError) as err:
        nccl.resolve_runtime_ref(ref_constraints("gb200/othercloud"), data)
    assert str(err.value) == (
        'failed to resolve nccl-benchmark-runtime-ref="gb200/othercloud": expected '
        '"validators/performance/testdata/gb200/othercloud/runtime.yaml" in the --data tree: no such file'
    )


def test_runtime_ref_symlink_outside_data_is_refused(tmp_path: Path, data_dir: Path, data: DataTree) -> None:
    outside = tmp_path / "secret.yaml"
    outside.write_text(GOOD_RUNTIME)
    target = data_dir / "validators/performance/testdata/gb200/evil"
    target.mkdir()
    (target / "runtime.yaml").symlink_to(outside)
    with pytest.raises(UsageError) as err:
        nccl.resolve_runtime_ref(ref_constraints("gb200/evil"), data)
    msg = str(err.value)
    assert msg.startswith('failed to resolve nccl-benchmark-runtime-ref="gb200/evil": expected ')
    assert "in the --data tree: " in msg and "outside" in msg


def test_runtime_ref_directory_symlink_outside_data_is_refused(
    tmp_path: Path, data_dir: Path, data: DataTree
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "runtime.yaml").write_text(GOOD_RUNTIME)
    os.symlink(elsewhere, data_dir / "validators/performance/testdata/gb200/linked")
    with pytest.raises(UsageError, match="in the --data tree"):
        nccl.resolve_runtime_ref(ref_constraints("gb200/linked"), data)


def test_runtime_ref_symlink_inside_data_is_followed(data_dir: Path, data: DataTree) -> None:
    (data_dir / "validators/performance/testdata/gb200/alias").mkdir()
    (data_dir / "validators/performance/testdata/gb200/alias/runtime.yaml").symlink_to(data_dir / REF_PATH)
    private = nccl.resolve_runtime_ref(ref_constraints("gb200/alias"), data)
    assert private is not None and "TrainingRuntime" in private.text


def test_runtime_ref_directory_instead_of_file(data_dir: Path, data: DataTree) -> None:
    (data_dir / "validators/performance/testdata/gb200/dir/runtime.yaml").mkdir(parents=True)
    with pytest.raises(UsageError, match="in the --data tree: "):
        nccl.resolve_runtime_ref(ref_constraints("gb200/dir"), data)


def test_runtime_ref_empty_file(data_dir: Path, data: DataTree) -> None:
    (data_dir / REF_PATH).write_text("  \n\n")
    with pytest.raises(UsageError) as err:
        nccl.resolve_runtime_ref(ref_constraints(), data)
    assert (
        str(err.value)
        == f'nccl-benchmark-runtime-ref="gb200/mycloud" resolved to an empty file ("{REF_PATH}")'
    )


def test_runtime_ref_and_profile_are_mutually_exclusive(data: DataTree) -> None:
    with pytest.raises(UsageError) as err:
        nccl.resolve_runtime_ref(ref_constraints(nccl_benchmark_profile="gb200/eks"), data)
    assert str(err.value) == (
        "nccl-benchmark-runtime-ref and nccl-benchmark-profile are mutually exclusive — supply a runtime or "
        "borrow an embedded profile, not both"
    )


def test_runtime_ref_and_inline_runtime(data: DataTree) -> None:
    with pytest.raises(UsageError) as err:
        nccl.resolve_runtime_ref(ref_constraints(nccl_benchmark_runtime=GOOD_RUNTIME), data)
    assert (
        str(err.value)
        == "nccl-benchmark-runtime-ref and an inline nccl-benchmark-runtime are both set — supply one"
    )


@pytest.mark.parametrize("name", ["nccl-benchmark-runtime-ref", "nccl-benchmark-runtime"])
def test_duplicate_runtime_constraints(data: DataTree, name: str) -> None:
    with pytest.raises(UsageError) as err:
        nccl.resolve_runtime_ref([(name, "a/b"), (name, "a/b")], data)
    assert str(err.value) == f"declare at most one {name} constraint (found 2)"


def test_usage_errors_win_over_skips(data: DataTree) -> None:
    # the orchestrator resolves the ref before any check_name: even a check that would skip exits 2
    with pytest.raises(UsageError):
        nccl.resolve_variant(NVLS, crit("eks", "h100"), ref_constraints("bad"), {}, data=data)


def test_inline_runtime_is_a_private_runtime() -> None:
    plan = nccl.resolve_variant(
        BW, crit("mycloud", "gb300"), {BW: ">= 1", "nccl-benchmark-runtime": GOOD_RUNTIME}, {}
    )
    assert plan.private_runtime is not None and plan.private_runtime.source == "inline"


def test_inline_runtime_with_profile_fails() -> None:
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.resolve_variant(
            NET,
            crit("eks", "gb200"),
            {NET: ">= 1", "nccl-benchmark-runtime": GOOD_RUNTIME, "nccl-benchmark-profile": "gb200/eks"},
            {},
        )
    assert str(err.value) == nccl.MSG_RUNTIME_AND_PROFILE


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [unclosed", "invalid nccl-benchmark-runtime: not parseable as YAML"),
        ("just a string", "invalid nccl-benchmark-runtime: not parseable as YAML"),
        (
            "apiVersion: batch/v1\nkind: Job\n",
            WRONG_KIND.format(api="batch/v1", kind="Job"),
        ),
        (
            "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n",
            WRONG_KIND.format(api="trainer.kubeflow.org/v1alpha1", kind="ClusterTrainingRuntime"),
        ),
        (
            "kind: TrainingRuntime\n",
            WRONG_KIND.format(api="", kind="TrainingRuntime"),
        ),
        (
            jobs_yaml("[{name: launcher}]"),
            nccl.MSG_RUNTIME_NO_NODE_JOB,
        ),
        (
            jobs_yaml("[{name: node, template: {spec: {}}}]"),
            nccl.MSG_RUNTIME_NO_POD_SPEC,
        ),
        (
            jobs_yaml("[{name: node, template: {spec: {template: {spec: {nodeSelector: [a]}}}}}]"),
            nccl.MSG_RUNTIME_BAD_SELECTOR,
        ),
        (
            jobs_yaml("[{name: node, template: {spec: {template: {spec: {nodeSelector: {a: 1}}}}}}]"),
            nccl.MSG_RUNTIME_BAD_SELECTOR,
        ),
    ],
)
def test_invalid_private_runtime_fails_the_check(
    data_dir: Path, data: DataTree, text: str, message: str
) -> None:
    (data_dir / REF_PATH).write_text(text)
    private = nccl.resolve_runtime_ref(ref_constraints(), data)  # stage 1 only resolves the file
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.resolve_variant(BW, crit("mycloud", "gb200"), ref_constraints(), {}, private_runtime=private)
    assert str(err.value) == message


def test_multi_document_private_runtime_fails(data_dir: Path, data: DataTree) -> None:
    (data_dir / REF_PATH).write_text(GOOD_RUNTIME + "---\napiVersion: v1\nkind: Secret\n")
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.resolve_variant(BW, crit("mycloud", "gb200"), ref_constraints(), {}, data=data)
    assert str(err.value) == (
        "invalid nccl-benchmark-runtime: must be a single trainer.kubeflow.org/v1alpha1 TrainingRuntime "
        "document (found 2 documents)"
    )


# --- node discovery, sizing, census --------------------------------------------------------


def node(
    name: str,
    gpus: int | str | None = 8,
    product: str | None = "NVIDIA-H100-80GB-HBM3",
    itype: str | None = "p5.48xlarge",
    unschedulable: bool = False,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    lab = dict(labels or {})
    if product:
        lab["nvidia.com/gpu.product"] = product
    if itype:
        lab["node.kubernetes.io/instance-type"] = itype
    alloc: dict[str, Any] = {"cpu": "96"}
    if gpus is not None:
        alloc["nvidia.com/gpu"] = str(gpus)
    return {
        "metadata": {"name": name, "labels": lab},
        "spec": {"unschedulable": unschedulable},
        "status": {"allocatable": alloc},
    }


def names_of(nodes: list[Any]) -> list[str]:
    return [nccl.node_name(n) for n in nodes]


def test_candidates_need_schedulable_scalar_gpus() -> None:
    nodes = [
        node("a"),
        node("b", unschedulable=True),
        node("c", gpus=0),
        node("d", gpus=None),
        node("e", gpus="x"),
    ]
    assert names_of(nccl.select_target_nodes(nodes, accelerator="h100", service="eks")) == ["a"]
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.select_target_nodes([node("c", gpus=0)], accelerator="h100", service="eks")
    assert str(err.value) == "no schedulable GPU nodes found"


def test_accelerator_filter_and_products_seen() -> None:
    nodes = [
        node("h1"),
        node("g1", product="NVIDIA-GB200", itype="p6e"),
        node("h2", product="NVIDIA-H100-PCIe"),
    ]
    assert names_of(nccl.select_target_nodes(nodes, accelerator="gb200", service="oke")) == ["g1"]
    assert names_of(nccl.select_target_nodes(nodes, accelerator="h100", service="aks")) == ["h1", "h2"]
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.select_target_nodes(nodes, accelerator="b200", service="any")
    assert str(err.value) == (
        'no schedulable GPU nodes match recipe accelerator "b200" '
        "(products seen: [NVIDIA-GB200 NVIDIA-H100-80GB-HBM3 NVIDIA-H100-PCIe])"
    )


def test_no_filter_without_matcher_or_without_gfd_labels() -> None:
    nodes = [node("a", product=None), node("b", product=None)]
    assert len(nccl.select_target_nodes(nodes, accelerator="gb200", service="any")) == 2
    mixed = [node("a"), node("b", product="NVIDIA-GB200")]
    assert len(nccl.select_target_nodes(mixed, accelerator="gb300", service="any")) == 2


def test_eks_narrows_to_the_first_instance_type() -> None:
    nodes = [node("a", itype="p5.48xlarge"), node("b", itype="p5e.48xlarge"), node("c", itype="p5.48xlarge")]
    assert names_of(nccl.select_target_nodes(nodes, accelerator="h100", service="eks")) == ["a", "c"]
    assert len(nccl.select_target_nodes(nodes, accelerator="h100", service="gke")) == 3


def test_node_selector_replaces_automatic_filters() -> None:
    nodes = [
        node("a", product="NVIDIA-A100-SXM4-80GB", itype="x", labels={"pool": "gpu"}),
        node("b", itype="y", labels={"pool": "gpu"}),
        node("c", labels={"pool": "cpu"}),
    ]
    chosen = nccl.select_target_nodes(nodes, accelerator="h100", service="eks", node_selector={"pool": "gpu"})
    assert names_of(chosen) == ["a", "b"]  # no accelerator, no instance-type narrowing
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.select_target_nodes(
            nodes, accelerator="h100", service="eks", node_selector={"pool": "x", "a": "b"}
        )
    assert str(err.value) == "--node-selector a=b,pool=x matches zero of 3 GPU nodes"


def test_profile_cluster_path_mixed_source() -> None:
    # criteria custom-svc/gb300, profile gb200/eks, two GB300 nodes of different instance types:
    # the GFD filter uses gb300 (no matcher -> none), EKS narrowing leaves 1 node -> skip
    plan = nccl.resolve_variant(
        NET, crit("custom-svc", "gb300"), {"nccl-benchmark-profile": "gb200/eks", NET: ">= 40"}, {}
    )
    nodes = [
        node("a", product="NVIDIA-GB300", itype="p6e-gb300.a"),
        node("b", product="NVIDIA-GB300", itype="p6e-gb300.b"),
    ]
    targets = nccl.select_target_nodes(
        nodes,
        accelerator=plan.criteria_accelerator,
        service=plan.target_service,
        node_selector=plan.sizing_selector(None),
    )
    with pytest.raises(CheckSkip) as err:
        nccl.size_workers(targets)
    assert err.value.reason == "skipped - requires at least 2 GPU nodes for EW fabric test"


def test_sizing_and_census() -> None:
    sizing = nccl.size_workers([node("a"), node("b")])
    assert (sizing.worker_count, sizing.gpu_count_per_node, sizing.gpu_count) == (2, 8, 16)
    assert sizing.node_names == ("a", "b")
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.size_workers([node("a"), node("b", gpus=7), node("c", gpus=4)])
    assert str(err.value) == (
        "GPU census: b (7 of 8), c (4 of 8) have fewer allocatable nvidia.com/gpu than the 8 per worker the "
        "benchmark is sized for — the worker there would stay Pending; repair the node or exclude it with "
        "--node-selector"
    )
    with pytest.raises(nccl.NcclCheckFailure, match="GPU census: b \\(7 of 8\\) has fewer"):
        nccl.size_workers([node("a"), node("b", gpus=7)])


def test_fabric_uniformity() -> None:
    def efa(name: str, n: int | None) -> dict[str, Any]:
        nd = node(name)
        if n is not None:
            nd["status"]["allocatable"]["vpc.amazonaws.com/efa"] = str(n)
        return nd

    assert nccl.uniform_fabric_count([efa("a", 32), efa("b", 32)], nccl.EFA_RESOURCE) == 32
    assert nccl.uniform_fabric_count([efa("a", None), efa("b", 0)], nccl.EFA_RESOURCE) == 0
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.uniform_fabric_count([efa("a", 32), efa("b", None), efa("c", 32)], nccl.EFA_RESOURCE)
    assert str(err.value) == (
        "vpc.amazonaws.com/efa present on 2 of 3 target GPU nodes — cluster still converging or "
        "device plugin not fully rolled out; re-run once uniform"
    )
    with pytest.raises(nccl.NcclCheckFailure, match=r"counts differ across target GPU nodes \(a=32, b=16\)"):
        nccl.uniform_fabric_count([efa("a", 32), efa("b", 16)], nccl.EFA_RESOURCE)


def test_max_message_size_tcp_fallback() -> None:
    eks = resolve(BW, "eks", "h100", nccl_all_reduce_bw=">= 300")
    aks = resolve(BW, "aks", "h100", nccl_all_reduce_bw=">= 150")
    gke = resolve(BW, "gke", "h100", nccl_all_reduce_bw=">= 300")
    assert nccl.max_message_size(eks, 32) == "16G"
    assert nccl.max_message_size(eks, 0) == "4G"
    assert nccl.max_message_size(aks, 0) == "4G"
    assert nccl.max_message_size(gke, None) == "16G"


# --- worker scheduling ----------------------------------------------------------------------


def test_platform_defaults() -> None:
    eks = nccl.platform_worker_scheduling("eks", [node("a")])
    assert eks == nccl.WorkerScheduling(
        {"node.kubernetes.io/instance-type": "p5.48xlarge"}, [{"operator": "Exists"}]
    )
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.platform_worker_scheduling("eks", [node("a", itype=None)])
    assert str(err.value) == "GPU node missing node.kubernetes.io/instance-type label"
    gke_nodes = [node("a", labels={"cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb"})] * 2
    gke = nccl.platform_worker_scheduling("gke", gke_nodes)
    assert gke.node_selector == {"cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb"}
    assert gke.tolerations[1] == {
        "key": "nvidia.com/gpu",
        "operator": "Equal",
        "value": "present",
        "effect": "NoSchedule",
    }
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.platform_worker_scheduling("gke", [gke_nodes[0], node("b")])
    assert str(err.value) == nccl.MSG_GKE_MIXED_ACCELERATOR
    assert nccl.platform_worker_scheduling("oke", [node("a", product="NVIDIA-GB200")] * 2).node_selector == {
        "nvidia.com/gpu.product": "NVIDIA-GB200"
    }
    assert (
        nccl.platform_worker_scheduling(
            "aks", [node("a"), node("b", product="NVIDIA-H100-PCIe")]
        ).node_selector
        == {}
    )
    assert nccl.platform_worker_scheduling("any", [node("a")]) == nccl.WorkerScheduling({}, [])


def test_service_any_requires_node_selector() -> None:
    plan = resolve(BW, "any", "b200", nccl_all_reduce_bw=">= 1")
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.worker_scheduling(plan, [node("a")], node_selector=None, tolerations=None)
    assert str(err.value) == (
        "self-managed clusters (service=any) require --node-selector to identify GPU nodes "
        "(e.g., --node-selector nvidia.com/gpu.present=true)"
    )
    ok = nccl.worker_scheduling(plan, [node("a")], node_selector={"gpu": "yes"}, tolerations=None)
    assert ok == nccl.WorkerScheduling({"gpu": "yes"}, [])


def test_flags_override_defaults() -> None:
    plan = resolve(BW, "eks", "h100", nccl_all_reduce_bw=">= 300")
    default = nccl.worker_scheduling(plan, [node("a")], node_selector=None, tolerations=None)
    assert default.node_selector == {"node.kubernetes.io/instance-type": "p5.48xlarge"}
    flags = nccl.worker_scheduling(
        plan, [node("a")], node_selector={"x": "y"}, tolerations=[{"key": "k", "operator": "Exists"}]
    )
    assert flags == nccl.WorkerScheduling({"x": "y"}, [{"key": "k", "operator": "Exists"}])


def test_private_runtime_gets_only_explicit_scheduling(data: DataTree) -> None:
    plan = nccl.resolve_variant(BW, crit("mycloud", "gb200"), ref_constraints(), {}, data=data)
    assert nccl.worker_scheduling(
        plan, [node("a")], node_selector=None, tolerations=None
    ) == nccl.WorkerScheduling({}, [])


def test_gke_network_interfaces() -> None:
    nets = [f"c-gpu-nic-{i}" for i in (3, 1, 0, 2, 7, 5, 6, 4)] + ["default", "c-other"]
    text = nccl.gke_network_interfaces(nets)
    assert text.startswith(
        '[{"interfaceName":"eth0","network":"default"},{"interfaceName":"eth1","network":"c-gpu-nic-0"}'
    )
    assert text.endswith('{"interfaceName":"eth8","network":"c-gpu-nic-7"}]')
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.gke_network_interfaces(nets[:7])
    assert (
        str(err.value)
        == "expected 8 GPU NIC networks, found 7 — cluster may not have multi-NIC networking configured"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Foo: 1\nGrdmaPciTopoCheckOverride: 1\nBar: 0\n", True),
        ("Foo: 1\n", False),
        ("GrdmaPciTopoCheckOverride: 0\n", False),
        ("# GrdmaPciTopoCheckOverride: 1\n", False),
        ("MyCustomGrdmaPciTopoCheckOverride: 1\n", False),
        ("", False),
        ("GrdmaPciTopoCheckOverride: 1", True),
    ],
)
def test_nvreg_params(text: str, expected: bool) -> None:
    assert nccl.nvreg_override_set(text) is expected


@pytest.mark.compat
def test_nvreg_reference_samples(reference_dir: Path) -> None:
    s = reference_dir / "samples"
    assert nccl.nvreg_override_set((s / "nvidia-params-grdma-override-set.txt").read_text())
    assert not nccl.nvreg_override_set((s / "nvidia-params-grdma-override-absent.txt").read_text())
    assert not nccl.nvreg_override_set((s / "nvidia-params-grdma-override-zero.txt").read_text())


# --- names, rendering of a private runtime ------------------------------------------------------------


def test_benchmark_names_are_run_scoped_and_short() -> None:
    a = nccl.benchmark_names("20260713-101500-0123456789abcdef", NET, "gw0")
    b = nccl.benchmark_names("20260713-101500-0123456789abcdef", NET, "gw1")
    c = nccl.benchmark_names("20260713-101501-0123456789abcdef", NET, "gw0")
    assert len({a.trainjob, b.trainjob, c.trainjob}) == 3
    assert a == nccl.benchmark_names("20260713-101500-0123456789abcdef", NET, "gw0")
    for name in (a.trainjob, a.runtime, a.compute_domain, a.imex_claim_template, a.roce_claim_template):
        assert len(name) <= 40 and name.replace("-", "").isalnum() and name.islower()
    assert len(a.trainjob + "-launcher-0-0") <= 63


def render_inputs(names: nccl.BenchmarkNames) -> nccl.RenderInputs:
    return nccl.RenderInputs(
        namespace="aicr-validation",
        names=names,
        sizing=nccl.WorkerSizing(2, 4, ("a", "b")),
        labels={"app.kubernetes.io/managed-by": "aicr-pytest", "aicr.run/run-id": "r1"},
    )


def test_render_private_runtime_substitutes_generic_variables_only(data: DataTree) -> None:
    plan = nccl.resolve_variant(BW, crit("mycloud", "gb200"), ref_constraints(), {}, data=data)
    names = nccl.benchmark_names("r1", BW)
    sched = nccl.WorkerScheduling({"pool": "gpu-b"}, [{"operator": "Exists"}])
    objs = nccl.render_benchmark(plan, render_inputs(names), sched)
    rt = objs.runtime
    assert rt["metadata"]["name"] == names.runtime and rt["metadata"]["namespace"] == "aicr-validation"
    assert rt["metadata"]["labels"]["aicr.run/run-id"] == "r1"
    jobs = rt["spec"]["template"]["spec"]["replicatedJobs"]
    launcher = jobs[0]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert launcher["args"] == ["-np", "8", "$PATH"]
    worker = jobs[1]["template"]["spec"]["template"]["spec"]
    env = {e["name"]: e["value"] for e in worker["containers"][0]["env"]}
    assert env == {"NS": "aicr-validation", "EFA": "${EFA_RESOURCE_LIMITS}"}
    assert worker["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert worker["nodeSelector"] == {"pool": "gpu-b"} and worker["tolerations"] == [{"operator": "Exists"}]
    tj = objs.trainjob
    assert tj["spec"]["runtimeRef"]["name"] == names.runtime and tj["spec"]["trainer"]["numNodes"] == 2
    assert objs.claim_template is None


def test_render_private_runtime_failure(data_dir: Path, data: DataTree) -> None:
    # valid before substitution, broken after: a placeholder expands into YAML structure
    (data_dir / REF_PATH).write_text(GOOD_RUNTIME.replace("image: example.com/nccl:1", "image: ${NAMESPACE}"))
    plan = nccl.resolve_variant(BW, crit("mycloud", "gb200"), ref_constraints(), {}, data=data)
    bad = nccl.RenderInputs(
        namespace="a: [b", names=nccl.benchmark_names("r", BW), sizing=nccl.WorkerSizing(2, 4, ("a", "b"))
    )
    with pytest.raises(nccl.NcclCheckFailure) as err:
        nccl.render_benchmark(plan, bad, nccl.WorkerScheduling({}, []))
    assert str(err.value) == "failed to render recipe-supplied nccl-benchmark-runtime"


def test_apply_worker_scheduling_errors() -> None:
    sched = nccl.WorkerScheduling({"a": "b"}, [])
    with pytest.raises(nccl.NcclCheckFailure, match="replicatedJobs not found in TrainingRuntime"):
        nccl.apply_worker_scheduling({"spec": {}}, sched)
    with pytest.raises(nccl.NcclCheckFailure, match='replicatedJob "node" not found in TrainingRuntime'):
        nccl.apply_worker_scheduling({"spec": {"template": {"spec": {"replicatedJobs": []}}}}, sched)
    with pytest.raises(nccl.NcclCheckFailure, match="worker pod spec not found in TrainingRuntime node job"):
        nccl.apply_worker_scheduling(
            {"spec": {"template": {"spec": {"replicatedJobs": [{"name": "node"}]}}}}, sched
        )


def test_compute_domain() -> None:
    names = nccl.benchmark_names("r1", NVLS)
    cd = nccl.build_compute_domain(names, "aicr-validation", {"l": "v"})
    assert cd["apiVersion"] == "resource.nvidia.com/v1beta1" and cd["kind"] == "ComputeDomain"
    assert cd["spec"] == {
        "numNodes": 0,
        "channel": {"allocationMode": "Single", "resourceClaimTemplate": {"name": names.imex_claim_template}},
    }

"""CNCF AI-conformance evidence, pure parts: features and aliases, the single-verdict rule
(with its positive and negative examples), ELB redaction, secret scrubbing, the option validation,
the outcome -> verdict mapping and the header facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicr_pytest import conformance
from aicr_pytest.conformance.common import ConformanceFailure
from aicr_pytest.core import catalog
from aicr_pytest.core.errors import CheckSkip, Inconclusive, UsageError
from aicr_pytest.evidence.cncf import collector, features, markdown, secrets, settings, verdict
from aicr_pytest.evidence.cncf.verdict import file_verdict

VALID = (
    "dra-support, gang-scheduling, secure-access, accelerator-metrics, ai-service-metrics, "
    "inference-gateway, robust-operator, pod-autoscaling, cluster-autoscaling, gpu-sharing, "
    "driver-runtime-management, workload-sandboxing, high-performance-networking"
)

# -- features ---------------------------------------------------------------------------------------


def test_the_nine_features_in_the_spec_order_with_their_files_and_requirements() -> None:
    table = [(f.name, f.aliases, f.file, f.requirement, f.check) for f in features.FEATURES]
    assert table == [
        ("dra-support", ("dra",), "dra-support.md", "dra_support", "dra-support"),
        ("gang-scheduling", ("gang",), "gang-scheduling.md", "gang_scheduling", "gang-scheduling"),
        (
            "secure-access",
            ("secure",),
            "secure-accelerator-access.md",
            "secure_accelerator_access",
            "secure-accelerator-access",
        ),
        (
            "accelerator-metrics",
            ("metrics",),
            "accelerator-metrics.md",
            "accelerator_metrics",
            "accelerator-metrics",
        ),
        (
            "ai-service-metrics",
            ("service-metrics",),
            "ai-service-metrics.md",
            "ai_service_metrics",
            "ai-service-metrics",
        ),
        ("inference-gateway", ("gateway",), "inference-gateway.md", "ai_inference", "inference-gateway"),
        ("robust-operator", ("operator",), "robust-operator.md", "robust_controller", "robust-controller"),
        ("pod-autoscaling", ("hpa",), "pod-autoscaling.md", "pod_autoscaling", "pod-autoscaling"),
        ("cluster-autoscaling", (), "cluster-autoscaling.md", "cluster_autoscaling", "cluster-autoscaling"),
    ]
    assert features.valid_features_text() == VALID
    assert {f.check for f in features.FEATURES} <= set(conformance.CHECKS)  # each runs a conformance check


def test_the_catalog_rows_name_exactly_the_features() -> None:
    """Which check evidences a feature is the catalog's ``cncf_feature`` column: no row names a
    feature that does not exist, and every feature has its one row."""
    named = [c.cncf_feature for c in catalog.CATALOG if c.cncf_feature is not None]
    assert sorted(named) == sorted(features.BY_NAME)
    expected = {c.name: features.BY_NAME[str(c.cncf_feature)] for c in catalog.CATALOG if c.cncf_feature}
    assert expected == features.BY_CHECK


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("dra", "dra-support"),
        ("gang", "gang-scheduling"),
        ("secure", "secure-access"),
        ("metrics", "accelerator-metrics"),
        ("service-metrics", "ai-service-metrics"),
        ("gateway", "inference-gateway"),
        ("operator", "robust-operator"),
        ("hpa", "pod-autoscaling"),
        ("cluster-autoscaling", "cluster-autoscaling"),
    ],
)
def test_aliases_resolve(alias: str, name: str) -> None:
    assert [f.name for f in features.resolve_features([alias])] == [name]


def test_order_and_duplicates_are_the_users_and_all_or_nothing_means_every_feature() -> None:
    got = features.resolve_features(["hpa", "gang-scheduling", "hpa"])
    assert [f.name for f in got] == ["pod-autoscaling", "gang-scheduling", "pod-autoscaling"]
    assert features.resolve_features([]) == features.FEATURES
    assert features.resolve_features(None) == features.FEATURES
    assert features.resolve_features(["gang", "all"]) == features.FEATURES


def test_an_unknown_feature_lists_the_valid_ones() -> None:
    with pytest.raises(UsageError) as info:
        features.resolve_features(["dra", "gpu-magic"])
    assert str(info.value) == f'[INVALID_REQUEST] unknown feature "gpu-magic"; valid features: {VALID}'
    with pytest.raises(UsageError):  # a canonical *check* name is not a feature name
        features.resolve_features(["robust-controller"])


# -- the single-verdict rule ------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "status", "qualifier", "explanation"),
    [
        ("**Result: PASS** — DRA driver serves GPUs", "PASS", None, "DRA driver serves GPUs"),
        ("**Result: PASS**", "PASS", None, ""),
        (
            "**Result: SKIP (prerequisite absent)** — agentgateway is not installed.",
            "SKIP",
            "prerequisite absent",
            "agentgateway is not installed.",
        ),
        (
            "**Result: PASS (partial)** — ASG not verified via the AWS API",
            "PASS",
            "partial",
            "ASG not verified via the AWS API",
        ),
        (
            "**Result: FAIL** — worker-0: Timeout, worker-1: Pending",
            "FAIL",
            None,
            "worker-0: Timeout, worker-1: Pending",
        ),
        ("**Result:FAIL**", "FAIL", None, ""),
        ("**Result: PASS**   ", "PASS", None, ""),
    ],
)
def test_one_valid_verdict_line_is_read(
    line: str, status: str, qualifier: str | None, explanation: str
) -> None:
    text = f"# Title\n\nprose\n6. **Result: PASS** in the overview is ignored\n\n{line}\n\n## Cleanup\n"
    got = file_verdict(text)
    assert (got.status, got.qualifier, got.explanation, got.problem) == (status, qualifier, explanation, None)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("# Title\n\nno verdict at all\n", "no verdict line"),
        ("# T\n6. **Result: PASS**\n   **Result: PASS** — indented\n", "no verdict line"),
        ("**Result: PASS** — a\n**Result: FAIL** — b\n", "2 verdict lines (exactly one allowed)"),
        ("**Result: PASS** — a\n**Result: PASS** — a\n", "2 verdict lines (exactly one allowed)"),
        ("**Result: UNKNOWN**\n", "malformed verdict line: '**Result: UNKNOWN**'"),
        ("**Result: PASS** trailing text\n", "malformed verdict line: '**Result: PASS** trailing text'"),
        ("**Result: PASS** - ascii dash\n", "malformed verdict line: '**Result: PASS** - ascii dash'"),
        ("**Result: pass** — lower case\n", "malformed verdict line: '**Result: pass** — lower case'"),
        ("**Result:** PASSED\n", "malformed verdict line: '**Result:** PASSED'"),
        (
            "**Result: PASS ()** — empty qualifier\n",
            "malformed verdict line: '**Result: PASS ()** — empty qualifier'",
        ),
    ],
)
def test_no_single_valid_verdict_is_a_fail(text: str, problem: str) -> None:
    got = file_verdict(text)
    assert (got.status, got.problem) == ("FAIL", problem)


def test_a_missing_file_is_a_fail() -> None:
    assert file_verdict(None) == verdict.Verdict("FAIL", problem="evidence file missing")


def test_written_verdict_lines_read_back_as_written() -> None:
    for status in verdict.STATUSES:
        line = verdict.verdict_line(status, "multi\nline  explanation", "pre(req)*")
        assert line == f"**Result: {status} (prereq)** — multi line explanation"
        got = file_verdict(f"x\n{line}\n")
        assert (got.status, got.qualifier, got.explanation) == (status, "prereq", "multi line explanation")


def test_recorded_data_cannot_add_a_verdict_line() -> None:
    assert verdict.neutralize_verdicts("a\n**Result: PASS** — x\nb") == "a\n **Result: PASS** — x\nb"


# -- redaction ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "a1b2c3d4e5f6-1234567890.us-west-2.elb.amazonaws.com",
        "internal-k8s-agentgat-inferenc-0a1b2c3d-1234567890.eu-central-1.elb.amazonaws.com",
        "k8s-agentgat-inferenc-0a1b2c3d4e-0123456789abcdef.elb.us-east-1.amazonaws.com",
        "A1B2C3-99.US-WEST-2.ELB.AMAZONAWS.COM",
    ],
)
def test_elb_hostnames_are_redacted(host: str) -> None:
    text = f"ingress: {host}\nurl=http://{host}:80/v1"
    out = verdict.redact_elb(text)
    assert host not in out and host.lower() not in out.lower()
    assert out.count(verdict.ELB_REDACTED) == 2 and out.startswith("ingress: ")


def test_other_amazonaws_names_and_plain_text_are_kept() -> None:
    text = "s3.us-west-2.amazonaws.com eks.amazonaws.com my-elb-service elb.amazonaws.com.example"
    assert verdict.redact_elb(text) == text


def test_secret_values_come_from_the_environment_and_every_kubeconfig_credential(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("file-token-123456\n")
    kc = tmp_path / "kubeconfig"
    kc.write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters:\n- name: c\n"
        "  cluster: {server: 'https://h', certificate-authority-data: Q0FEQVRBQ0FEQVRB}\n"
        "users:\n"
        "- name: a\n  user: {token: bearer-123456}\n"
        "- name: b\n  user: {client-key-data: S0VZREFUQUtFWQ==, client-certificate-data: Q0VSVERBVEE=}\n"
        f"- name: c\n  user: {{tokenFile: {token_file}}}\n"
        "- name: d\n  user:\n    exec: {command: aws, args: [eks, get-token],\n"
        "           env: [{name: AWS_PROFILE, value: prof-secret-1}]}\n"
    )
    env = {
        "HF_TOKEN": "hf_abcdefgh",
        "AWS_SECRET_ACCESS_KEY": "aws-secret-xyz",
        "HOME": "/home/someone",
        "X": "1",
    }
    got = secrets.secret_values(env, [kc, None, tmp_path / "missing"])
    for value in (
        "hf_abcdefgh",
        "aws-secret-xyz",
        "bearer-123456",
        "S0VZREFUQUtFWQ==",
        "Q0VSVERBVEE=",
        "Q0FEQVRBQ0FEQVRB",
        "file-token-123456",
        "prof-secret-1",
    ):
        assert value in got
    assert "/home/someone" not in got
    assert secrets.scrub("t=bearer-123456 k=hf_abcdefgh", got) == "t=<redacted> k=<redacted>"


# -- option validation ------------------------------------------------------------------


def test_option_combinations_are_validated_with_the_specs_texts(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^\[INVALID_REQUEST\] --cncf-submission requires --evidence-dir$"):
        settings.build_cncf_settings(True, ["dra"], None)
    with pytest.raises(UsageError, match=r"^\[INVALID_REQUEST\] --feature requires --cncf-submission$"):
        settings.build_cncf_settings(False, ["dra"], tmp_path)
    got = settings.build_cncf_settings(True, ["gang", "hpa"], tmp_path / "new" / "dir")
    assert [f.name for f in got.features] == ["gang-scheduling", "pod-autoscaling"]
    assert got.submission and not got.render_after_run and (tmp_path / "new" / "dir").is_dir()
    render = settings.build_cncf_settings(False, None, tmp_path)
    assert render.render_after_run and render.features == ()
    assert settings.build_cncf_settings(False, None, None) == settings.CncfSettings()


def test_an_evidence_dir_that_is_a_file_or_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(UsageError) as info:
        settings.check_evidence_dir(afile)
    assert str(info.value) == f"[INVALID_REQUEST] --evidence-dir {afile}: exists and is not a directory"
    with pytest.raises(UsageError) as info:
        settings.check_evidence_dir(afile / "sub")
    assert (
        str(info.value)
        == f"[INVALID_REQUEST] --evidence-dir {afile / 'sub'}: cannot create the directory: Not a directory"
    )


# -- outcome -> verdict, header facts ---------------------------------------------------------------


def test_a_checks_ending_maps_to_a_verdict() -> None:
    assert collector.verdict_of(None)[0] == "PASS"
    assert collector.verdict_of(CheckSkip("no Karpenter")) == ("SKIP", "no Karpenter", "prerequisite absent")
    assert collector.verdict_of(ConformanceFailure("[NOT_FOUND] x")) == ("FAIL", "[NOT_FOUND] x", None)
    status, text, _ = collector.verdict_of(Inconclusive("[INTERNAL] list failed"))
    assert status == "FAIL" and text.endswith("[INTERNAL] list failed")
    assert collector.verdict_of(UsageError("policy mismatch"))[:2] == ("FAIL", "policy mismatch")
    assert collector.verdict_of(KeyError("x"))[1] == "[INTERNAL] unexpected KeyError: 'x'"


def test_the_checks_get_aicr_knobs_but_never_the_ambient_allocation_policy() -> None:
    env = {"AICR_GPU_ALLOCATION_POLICY": "dra-resource-claim", "AICR_X": "1", "HF_TOKEN": "t", "PATH": "/bin"}
    assert collector.checks_env(env) == {"AICR_X": "1"}


def _node(name: str, provider: str, labels: dict[str, str]) -> dict[str, object]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": provider},
        "status": {"nodeInfo": {"operatingSystem": "linux", "architecture": "arm64"}},
    }


@pytest.mark.parametrize(
    ("provider", "desc"),
    [
        ("aws:///us-west-2a/i-1", "EKS / p6e-gb200.36xlarge / NVIDIA-GB200"),
        ("gce://proj/us-central1-a/n1", "GKE / p6e-gb200.36xlarge / nvidia-h100-mega-80gb"),
        ("kind://docker/kind/n1", "p6e-gb200.36xlarge / NVIDIA-GB200"),
    ],
)
def test_the_header_describes_the_cluster_from_its_first_gpu_node(provider: str, desc: str) -> None:
    gpu = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-GB200",
        "node.kubernetes.io/instance-type": "p6e-gb200.36xlarge",
        "cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb",
    }
    nodes = [_node("system", provider, {}), _node("gpu", provider, gpu)]
    info = markdown.cluster_info({"major": "1", "minor": "33+"}, nodes)
    assert info == markdown.ClusterInfo(desc, "v1.33", "linux/arm64")
    assert markdown.cluster_info({}, []) == markdown.ClusterInfo("unknown / unknown", "unknown", "unknown")


def test_a_fence_is_longer_than_any_backtick_run_in_the_data() -> None:
    assert markdown.fence("a ```` b") == ["`````", "a ```` b", "`````"]
    assert markdown.fence("plain", "yaml") == ["```yaml", "plain", "```"]

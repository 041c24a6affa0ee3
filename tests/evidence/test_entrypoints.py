"""``--emit-attestation`` and friends through both entry points: plain pytest (pytester) and
``aicr-pytest validate`` (subprocess), including push + keyless signing against the test registries
and the private Sigstore instance, failure exit codes and the planted-secret test."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_pytest import cli
from aicr_pytest.core import yamlio
from tests.evidence.conftest import Registry
from tests.evidence.sigstore_fake import FakeSigstore
from tests.plugin.helpers import SNAPSHOT, make_recipe

USER_CHECKS = """
import os
import pytest

@pytest.mark.check("operator-health")
def test_operator_health(aicr_check):
    aicr_check.emit("operator pods on node gpu-node-7: " + os.environ.get("HF_TOKEN", "none"))

@pytest.mark.check("expected-resources")
def test_expected_resources(aicr_check):
    assert False, "Deployment gpu-operator/gpu-operator: 0/1 available on gpu-node-7"
"""


def write_inputs(where: Path, snapshot: dict[str, Any] | None = None) -> tuple[Path, Path]:
    rp, sp = where / "recipe.yaml", where / "snapshot.yaml"
    rp.write_text(
        yamlio.dump(make_recipe(constraints=[], deployment=["operator-health", "expected-resources"]))
    )
    sp.write_text(yamlio.dump(snapshot or SNAPSHOT))
    return rp, sp


def run_pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    rp, sp = write_inputs(pytester.path)
    pytester.makepyfile(test_user=USER_CHECKS)
    return pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--recipe",
        str(rp),
        "--snapshot",
        str(sp),
        "--aicr-no-bundled-checks",
        "test_user.py",
        *args,
    )


def verify(*args: str) -> tuple[int, dict[str, Any]]:
    """``aicr-pytest evidence verify … --format json`` in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["evidence", "verify", *args, "--format", "json"])
    assert out.getvalue(), err.getvalue()
    doc = json.loads(out.getvalue())
    assert doc["exit"] == code
    return code, doc


def validate(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aicr_pytest.cli", "validate", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_plain_pytest_failed_run_still_emits_a_bundle(pytester: pytest.Pytester, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_pytest(pytester, "--aicr-emit-attestation", str(out))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    pointer = out / "pointer.yaml"
    assert pointer.is_file() and (out / "summary-bundle" / "ctrf" / "deployment.json").is_file()
    err = result.stderr.str()
    assert (
        f"evidence pointer written path={pointer} copyTo=(sign and push the bundle, then commit under" in err
    )
    assert "evidence bundle built summaryDir=" in err
    code, doc = verify(str(out))
    assert code == 1, "valid bundle, recorded phase failure"
    assert doc["predicate"]["phases"]["deployment"] == {
        "ctrfDigest": doc["predicate"]["phases"]["deployment"]["ctrfDigest"],
        "failed": 1,
        "other": 0,
        "passed": 1,
        "skipped": 0,
    }
    assert "gpu-node-7" not in (out / "summary-bundle" / "ctrf" / "deployment.json").read_text()


def test_plain_pytest_evidence_flags_need_emit_and_bad_values_are_usage_errors(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    result = run_pytest(pytester, "--aicr-push", "ghcr.io/x/y", "--aicr-full")
    assert "warning: --full, --push ignored without --emit-attestation" in result.stderr.str()
    result = run_pytest(
        pytester, "--aicr-emit-attestation", str(tmp_path / "o"), "--aicr-push", "ghcr.io/UPPER/y"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "invalid OCI reference 'ghcr.io/UPPER/y': invalid repository 'UPPER/y'" in result.stderr.str()
    assert not (tmp_path / "o").exists(), "nothing runs, nothing is written"


class _TTY:
    def __init__(self, answer: str) -> None:
        self.answer = answer

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        return self.answer


def test_plain_pytest_declined_disclosure_stops_before_any_check(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_sigstore: FakeSigstore
) -> None:
    monkeypatch.setattr(sys, "__stdin__", _TTY("n\n"))
    monkeypatch.delenv("COSIGN_IDENTITY_TOKEN", raising=False)
    monkeypatch.delenv("ACTIONS_ID_TOKEN_REQUEST_URL", raising=False)
    result = run_pytest(
        pytester,
        "--aicr-emit-attestation",
        str(tmp_path / "o"),
        "--aicr-push",
        "127.0.0.1:9/x/y",
        "--aicr-oidc-device-flow",
    )
    assert result.ret == 6
    err = result.stderr.str() + result.stdout.str()
    assert "Proceed with interactive keyless signing and publish this identity? [y/N]: " in err
    assert f"certificate authority {fake_sigstore.base_url}" in err
    assert "evidence: keyless signing declined at the identity-disclosure prompt;" in err
    assert not (tmp_path / "o").exists()


def test_validate_push_and_sign_then_verify_the_pointer(
    registry: Registry, fake_sigstore: FakeSigstore, tmp_path: Path
) -> None:
    rp, sp = write_inputs(tmp_path)
    repo = registry.repo()
    proc = validate(
        "-r", str(rp), "-s", str(sp), "--no-cluster", "-o", str(tmp_path / "ctrf.json"),
        "--emit-attestation", str(tmp_path / "out"), "--push", repo, "--plain-http",
        "--identity-token", fake_sigstore.token("carol@example.com"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    pointer = yaml.safe_load((tmp_path / "out" / "pointer.yaml").read_text())
    att = pointer["attestations"][0]
    assert (
        att["signer"]["identity"] == "carol@example.com"
        and att["signer"]["issuer"] == "https://github.com/login/oauth"
    )
    assert att["bundle"]["oci"].startswith(repo + ":h100-eks-ubuntu-training-")
    assert (
        att["bundle"]["oci"].rsplit("-", 1)[1]
        == json.loads((tmp_path / "out" / "summary-bundle" / "statement.intoto.json").read_text())[
            "predicate"
        ]["manifest"]["digest"][7:19]
    ), "derived tag = slug + first 12 hex of the manifest digest"
    assert "Non-interactive stdin" not in proc.stderr, "an explicit token is not interactive: no disclosure"
    assert "evidence bundle pushed reference=" in proc.stderr
    via = "" if registry.referrers_api else " via=tag-schema-fallback"
    assert f"mainArtifactDigest={att['bundle']['digest']}{via}\n" in proc.stderr
    copy_to = next(line for line in proc.stderr.splitlines() if line.startswith("evidence pointer written"))
    assert copy_to.endswith(f"/{att['bundle']['digest'].replace(':', '-')}.yaml")
    assert (tmp_path / "out" / "summary-bundle" / "attestation.intoto.jsonl").stat().st_mode & 0o777 == 0o600
    code, doc = verify(
        str(tmp_path / "out" / "pointer.yaml"),
        "--registry-plain-http",
        "--expected-issuer",
        "https://github.com/login/oauth",
    )
    assert code == 0 and doc["signer"]["identity"] == "carol@example.com"
    code, doc = verify(str(tmp_path / "out"))
    assert code == 0 and doc["steps"][1]["status"] == "passed", "the local signed directory verifies too"


def test_validate_device_flow_signs_non_interactively(
    referrers_registry: Registry, fake_sigstore: FakeSigstore, tmp_path: Path
) -> None:
    rp, sp = write_inputs(tmp_path)
    fake_sigstore.device.answers = ["authorization_pending"]
    proc = validate(
        "-r", str(rp), "-s", str(sp), "--no-cluster", "-o", str(tmp_path / "ctrf.json"),
        "--emit-attestation", str(tmp_path / "out"), "--push", referrers_registry.repo() + ":explicit-tag",
        "--plain-http",
        env={"AICR_OIDC_DEVICE_FLOW": "1", "COSIGN_IDENTITY_TOKEN": "", "ACTIONS_ID_TOKEN_REQUEST_URL": ""},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Non-interactive stdin detected; emitting disclosure and proceeding." in proc.stderr
    assert "Enter the verification code WXYZ-1234 in your browser at: " in proc.stderr
    pointer = yaml.safe_load((tmp_path / "out" / "pointer.yaml").read_text())
    assert pointer["attestations"][0]["signer"]["identity"] == "dev@example.com"
    assert pointer["attestations"][0]["bundle"]["oci"].endswith(":explicit-tag")


def test_validate_exit_codes_for_evidence_errors(tmp_path: Path) -> None:
    rp, sp = write_inputs(tmp_path)
    base = ["-r", str(rp), "-s", str(sp), "--no-cluster", "-o", str(tmp_path / "ctrf.json")]
    proc = validate(
        *base,
        "--emit-attestation",
        str(tmp_path / "out"),
        "--push",
        "127.0.0.1:9/x/y",
        "--plain-http",
        "--no-sign",
    )
    assert proc.returncode == cli.EXIT_EVIDENCE == 6, proc.stderr
    assert "ERROR: evidence: push to 127.0.0.1:9/x/y:" in proc.stderr
    assert (tmp_path / "out" / "summary-bundle" / "manifest.json").is_file(), (
        "the local bundle is still there"
    )
    proc = validate(
        *base, "--emit-attestation", str(tmp_path / "o2"), "--bom", str(tmp_path / "missing.json")
    )
    assert proc.returncode == 2 and "--bom" in proc.stderr and "Traceback" not in proc.stderr


def test_planted_secrets_never_reach_a_bundle_file(
    pytester: pytest.Pytester,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    referrers_registry: Registry,
    fake_sigstore: FakeSigstore,
) -> None:
    hf = "hf_SENTINEL_" + "q" * 24
    token = fake_sigstore.token("dave@example.com")
    monkeypatch.setenv("HF_TOKEN", hf)
    snapshot = json.loads(json.dumps(SNAPSHOT))
    snapshot["measurements"][0]["subtypes"][0]["data"]["planted"] = hf
    rp, sp = write_inputs(pytester.path, snapshot)
    pytester.makepyfile(test_user=USER_CHECKS)
    out = tmp_path / "out"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--recipe", str(rp), "--snapshot", str(sp),
        "--aicr-no-bundled-checks", "test_user.py", "--aicr-emit-attestation", str(out), "--aicr-full",
        "--aicr-push", referrers_registry.repo(), "--aicr-plain-http", "--aicr-identity-token", token,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stderr.str()
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {
        "pointer.yaml",
        "attestation.intoto.jsonl",
        "snapshot.yaml",
        "deployment.json",
    }
    for path in files:
        data = path.read_bytes()
        assert hf.encode() not in data, path
        assert token.encode() not in data, path
        assert token.split(".")[1].encode() not in data, f"{path} holds the token's claims segment"
    ctrf = (out / "summary-bundle" / "ctrf" / "deployment.json").read_text()
    assert "operator pods on node gpu-node-7: [REDACTED]" in ctrf, "--full keeps stdout, minus the secret"
    assert "planted: '[REDACTED]'" in (out / "summary-bundle" / "snapshot.yaml").read_text()
    code, _ = verify(str(out / "pointer.yaml"), "--registry-plain-http")
    assert code == 1


def test_entry_points_do_not_import_the_signing_stack() -> None:
    code = (
        "import sys, aicr_pytest.plugin, aicr_pytest.cli, aicr_pytest.evidence; "
        "heavy = {'sigstore', 'oras', 'cyclonedx', 'requests'}; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

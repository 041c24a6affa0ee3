"""``cncf check``'s domain function: the program's submission rules applied offline to a
PRODUCT.yaml, one line per problem; a complete kit written by the filler and the hybrid writer is
clean, and each rule is shown failing on a copy with one thing wrong."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cncf_templates import CHECKLIST_136, META, V137, write

from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence.cncf import checklist, features, hybrid, product
from aicr_pytest.evidence.cncf.offline_check import check_product, evidence_problem, exit_code, url_problem
from aicr_pytest.evidence.cncf.outcomes import CheckVerdict

COMPLETE = META.model_copy(
    update={
        "repo_url": "https://github.com/yoyo/turbo",
        "product_logo_url": "https://yoyo.example/turbo.SVG",
        "k8s_conformance_url": "https://github.com/cncf/k8s-conformance/tree/main/v1.36/turbo/",
    }
)


def kit(template: Path, directory: Path) -> tuple[Path, dict[str, Any]]:
    """A complete submission: every feature passed, its file written, junit.xml and e2e.log."""
    directory.mkdir(exist_ok=True)
    verdicts = [CheckVerdict(f.check, "PASS", evidence_file=f.file) for f in features.FEATURES]
    for f in features.FEATURES:
        (directory / f.file).write_text("**Result: PASS** — fine\n", encoding="utf-8")
    hybrid.write_hybrid(verdicts, directory)
    filled = product.fill_product(checklist.load_checklist(template), verdicts, COMPLETE)
    return product.write_product(filled, directory), filled.document


def rewrite(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(product.product_yaml(document), encoding="utf-8")
    return path


def req(document: dict[str, Any], rid: str) -> dict[str, Any]:
    entry: dict[str, Any] = next(e for es in document["spec"].values() for e in es if e["id"] == rid)
    return entry


def test_a_complete_kit_is_clean(tmp_path: Path) -> None:
    path, _ = kit(CHECKLIST_136, tmp_path / "kit")
    assert check_product(path, CHECKLIST_136) == []
    assert check_product(path) == []
    assert exit_code([]) == 0


def test_the_filled_kit_without_metadata_lists_what_is_left(tmp_path: Path) -> None:
    template = checklist.load_checklist(CHECKLIST_136)
    path = tmp_path / "PRODUCT.yaml"
    path.write_text(product.fill_product(template, ()).text, encoding="utf-8")
    problems = check_product(path, CHECKLIST_136)
    assert "metadata.platformName: placeholder value [Platform Name]" in problems
    assert "metadata.k8sConformanceUrl: missing (or k8s_conformance_url)" in problems
    assert "metadata.repoUrl: placeholder value [Repository URL]" in problems
    # the eight MUSTs are unclaimed: each is reported twice (empty status; not Implemented)
    musts = [r.id for r in template.requirements if r.level == "MUST"]
    for rid in musts:
        assert any(
            p.startswith("spec.") and f".{rid}: MUST requirement with status ''" in p for p in problems
        )
    assert not any("gpu_sharing" in p for p in problems)  # an untouched SHOULD is fine
    assert exit_code(problems) == 1


Mutation = Callable[[dict[str, Any]], None]


def _set(rid: str, **fields: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        req(doc, rid).update(fields)

    return mutate


def _meta(key: str, value: Any = None, *, drop: bool = False) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        if drop:
            del doc["metadata"][key]
        else:
            doc["metadata"][key] = value

    return mutate


def _drop_requirement(category: str, rid: str) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        doc["spec"][category] = [e for e in doc["spec"][category] if e["id"] != rid]

    return mutate


GANG = "spec.schedulingOrchestration.gang_scheduling"
SHARING = "spec.accelerators.gpu_sharing"
STATUSES = "Implemented, Not Implemented, Partially Implemented, N/A"


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            _set("gang_scheduling", status="Partially Implemented"),
            [f"{GANG}: MUST requirement with status 'Partially Implemented'; it must be Implemented"],
        ),
        (
            _set("gang_scheduling", status="Done"),
            [
                f"{GANG}: status 'Done' is not one of {STATUSES}",
                f"{GANG}: MUST requirement with status 'Done'; it must be Implemented",
            ],
        ),
        (_set("gpu_sharing", status="N/A", notes=""), [f"{SHARING}: status N/A needs notes"]),
        (_set("gpu_sharing", status="N/A", notes="no MIG-capable GPUs"), []),
        (
            _set("gpu_sharing", evidence=["https://docs.example.com/sharing"]),
            [f"{SHARING}: status '' is not one of {STATUSES}"],
        ),
        (_set("gpu_sharing", status="Implemented", evidence=["https://docs.example.com/sharing"]), []),
        (
            _set("gang_scheduling", description="Gangs."),
            [f"{GANG}: description differs from the checklist's"],
        ),
        (
            _set("gang_scheduling", level="SHOULD"),
            [f"{GANG}: level 'SHOULD' differs from the checklist's 'MUST'"],
        ),
        (
            _set("gang_scheduling", id="gang"),
            [f"{GANG}: requirement missing", "spec.schedulingOrchestration.gang: not in the checklist"],
        ),
        (_drop_requirement("schedulingOrchestration", "gang_scheduling"), [f"{GANG}: requirement missing"]),
        (lambda d: d["spec"].pop("operator"), ["spec.operator: category missing"]),
        (
            lambda d: d["spec"].update(extra=[{"id": "x", "level": "SHOULD"}]),
            ["spec.extra: category not in the checklist"],
        ),
        (
            lambda d: d["spec"].update(operator="nope"),
            [
                "spec.operator: not a list of requirements",
                "spec.operator.robust_controller: requirement missing",
            ],
        ),
        (
            _set("gang_scheduling", evidence=["file://missing.md"]),
            [f"{GANG}: evidence 'file://missing.md': not found at {{dir}}/missing.md"],
        ),
        (
            _set("gang_scheduling", evidence=["gang-scheduling.md", "file://results/e2e.log", ""]),
            [],
        ),
        (
            _set("gang_scheduling", evidence=["file://results/junit.xml#TestNoSuchThing"]),
            [
                f"{GANG}: evidence 'file://results/junit.xml#TestNoSuchThing': "
                "junit.xml has no test case 'TestNoSuchThing'"
            ],
        ),
        (
            _set("gang_scheduling", evidence=["file:///etc/passwd"]),
            [f"{GANG}: evidence 'file:///etc/passwd': must be relative to PRODUCT.yaml"],
        ),
        (
            _set("gang_scheduling", evidence=["ftp://example.com/x"]),
            [
                f"{GANG}: evidence 'ftp://example.com/x': "
                "unsupported link (use a relative path, file://… or an http(s) URL)"
            ],
        ),
        (
            _set("gang_scheduling", evidence=["https://exa mple.com/x"]),
            [
                f"{GANG}: evidence 'https://exa mple.com/x': "
                "malformed URL: contains whitespace or control characters"
            ],
        ),
        (_set("gang_scheduling", evidence="gang-scheduling.md"), [f"{GANG}: evidence is not a list"]),
        (_set("gang_scheduling", evidence=[3]), [f"{GANG}: evidence entry 3 is not a string"]),
        (_meta("platformName", drop=True), ["metadata.platformName: missing (or platform_name)"]),
        (_meta("platformName", ""), ["metadata.platformName: empty"]),
        (_meta("platformName", 7), ["metadata.platformName: not a string"]),
        (_meta("vendorName", "[Vendor Name]"), ["metadata.vendorName: placeholder value [Vendor Name]"]),
        (_meta("repoUrl", drop=True), []),
        (_meta("repoUrl", ""), []),
        (
            _meta("k8sConformanceUrl", "https://github.com/cncf/k8s-conformance/tree/dev/v1.36/turbo"),
            [
                "metadata.k8sConformanceUrl: "
                "'https://github.com/cncf/k8s-conformance/tree/dev/v1.36/turbo' does not "
                "match https://github.com/cncf/k8s-conformance/tree/master/vX.Y/<product>"
            ],
        ),
        (
            _meta("productLogoUrl", "https://yoyo.example/logo.png"),
            ["metadata.productLogoUrl: must link to an SVG, EPS or AI file: https://yoyo.example/logo.png"],
        ),
        (
            _meta("websiteUrl", "yoyo.example"),
            ["metadata.websiteUrl: malformed URL 'yoyo.example': not an http(s) URL"],
        ),
        (
            _meta("documentationUrl", "https://bad_host!/docs"),
            ["metadata.documentationUrl: malformed URL 'https://bad_host!/docs': malformed host 'bad_host!'"],
        ),
        (
            _meta("kubernetesVersion", "v1.35"),
            ["metadata.kubernetesVersion: v1.35 differs from the checklist's v1.36"],
        ),
        (lambda d: d.update(spec=None), ["spec: missing (the validator requires a spec mapping)"]),
        (lambda d: d.pop("metadata"), ["metadata: missing (the validator requires a metadata mapping)"]),
    ],
)
def test_each_rule_reports_one_line(tmp_path: Path, mutate: Mutation, expected: list[str]) -> None:
    path, document = kit(CHECKLIST_136, tmp_path / "kit")
    broken = copy.deepcopy(document)
    mutate(broken)
    problems = check_product(rewrite(path, broken), CHECKLIST_136)
    assert problems == [line.replace("{dir}", str(path.parent)) for line in expected]
    assert all("\n" not in p for p in problems)
    assert exit_code(problems) == (1 if expected else 0)


def test_snake_case_metadata_is_accepted(tmp_path: Path) -> None:
    path, document = kit(CHECKLIST_136, tmp_path / "kit")
    meta = document["metadata"]
    meta["website_url"] = meta.pop("websiteUrl")
    meta["k8s_conformance_url"] = meta.pop("k8sConformanceUrl")
    assert check_product(rewrite(path, document), CHECKLIST_136) == []


def test_without_a_checklist_each_requirement_is_judged_by_its_own_level(tmp_path: Path) -> None:
    path, document = kit(CHECKLIST_136, tmp_path / "kit")
    req(document, "gang_scheduling").update(status="Not Implemented")
    req(document, "gpu_sharing").update(level="MAY")
    req(document, "ai_inference").update(description="changed, but no template to compare with")
    assert check_product(rewrite(path, document)) == [
        "spec.accelerators.gpu_sharing: level 'MAY' is not MUST or SHOULD",
        f"{GANG}: MUST requirement with status 'Not Implemented'; it must be Implemented",
    ]


def test_a_1_37_product_checked_against_the_1_36_checklist_shows_the_drift(tmp_path: Path) -> None:
    path, _ = kit(write(tmp_path, "v137.yaml", V137), tmp_path / "kit")
    problems = check_product(path, CHECKLIST_136)
    assert "metadata.kubernetesVersion: v1.37 differs from the checklist's v1.36" in problems
    assert "spec.security.workload_sandboxing: not in the checklist" in problems
    assert f"{GANG}: description differs from the checklist's" in problems


def test_unusable_input_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^\[INVALID_REQUEST\] cncf check .*nope.yaml: file not found$"):
        check_product(tmp_path / "nope.yaml")
    with pytest.raises(UsageError, match=r"^\[INVALID_REQUEST\] cncf check .*nope.yaml: file not found$"):
        check_product(tmp_path / "nope.yaml", tmp_path / "missing.yaml")  # the product is named first
    listed = write(tmp_path, "list.yaml", "- a\n")
    with pytest.raises(UsageError, match=r"not a PRODUCT.yaml \(the document is not a mapping\)$"):
        check_product(listed)
    with pytest.raises(UsageError, match=r"not valid YAML: "):
        check_product(write(tmp_path, "bad.yaml", "metadata: [\n"))
    good, _ = kit(CHECKLIST_136, tmp_path / "kit")
    with pytest.raises(UsageError, match=r"^\[INVALID_REQUEST\] --checklist .*missing.yaml: file not found$"):
        check_product(good, tmp_path / "missing.yaml")
    with pytest.raises(UsageError, match=r"--checklist .*: not a CNCF AI-conformance checklist"):
        check_product(good, listed)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://example.com", None),
        ("http://example.com:8080/a?b=c#d", None),
        ("https://[::1]/x", None),
        ("https://example.com:99999/", "Port out of range 0-65535"),
        ("mailto:someone@example.com", "not an http(s) URL"),
        ("https:///path", "no host"),
        ("https://exa\x07mple.com", "contains whitespace or control characters"),
    ],
)
def test_url_well_formedness(url: str, why: str | None) -> None:
    assert url_problem(url) == why


def test_a_junit_fragment_into_a_broken_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "junit.xml").write_text("<testsuites><testcase name='A'>", encoding="utf-8")
    why = evidence_problem("file://junit.xml#A", tmp_path)
    assert why is not None and why.startswith("junit.xml not readable as JUnit XML: ")
    assert evidence_problem("file://#frag", tmp_path) == "names no file"

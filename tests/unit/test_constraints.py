"""Parity vectors for the constraint language (after AICR's constraint/version table tests)."""

from __future__ import annotations

import pytest

from aicr_pytest.core.constraints import (
    CANNOT_PARSE_ACTUAL,
    CANNOT_PARSE_EXPECTED,
    EXPR_EMPTY,
    EXPR_EMPTY_AFTER_OPERATOR,
    ActualValueError,
    ConstraintError,
    ConstraintResult,
    Expression,
    ExpressionError,
    Operator,
    Version,
    VersionError,
    evaluate,
    evaluate_constraint,
    format_readiness_failure,
    format_readiness_line,
    is_snapshot_path,
    parse_expression,
    parse_threshold,
    parse_version,
    threshold_passes,
    validate_expression,
)
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.snapshot import Snapshot, parse_snapshot

# --- parse_expression ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "op", "value"),
    [
        (">= 1.32.4", Operator.GTE, "1.32.4"),
        ("<= 1.33", Operator.LTE, "1.33"),
        ("> 1.30", Operator.GT, "1.30"),
        ("< 2.0", Operator.LT, "2.0"),
        ("== ubuntu", Operator.EQ, "ubuntu"),
        ("!= rhel", Operator.NE, "rhel"),
        ("ubuntu", Operator.EXACT, "ubuntu"),
        ("24.04", Operator.EXACT, "24.04"),
        ("v1.33.5", Operator.EXACT, "v1.33.5"),
        (">=  1.32.4", Operator.GTE, "1.32.4"),
        (" >= 1.32.4", Operator.GTE, "1.32.4"),
        (">= 1.32.4 ", Operator.GTE, "1.32.4"),
        (">=6.8", Operator.GTE, "6.8"),
        (">1.30", Operator.GT, "1.30"),
        ("<=1.33", Operator.LTE, "1.33"),
        ("<2.0", Operator.LT, "2.0"),
        ("==ubuntu", Operator.EQ, "ubuntu"),
        ("!=rhel", Operator.NE, "rhel"),
        # not operators: the whole trimmed text is an exact-match literal
        ("= 1.30", Operator.EXACT, "= 1.30"),
        ("=> 1.30", Operator.EXACT, "=> 1.30"),
        ("!ubuntu", Operator.EXACT, "!ubuntu"),
        # ">==" is ">=" followed by the value "="
        (">== 1.0", Operator.GTE, "= 1.0"),
        ("  Ubuntu 24.04.2 LTS  ", Operator.EXACT, "Ubuntu 24.04.2 LTS"),
    ],
)
def test_parse_expression(expression: str, op: Operator, value: str) -> None:
    expr = parse_expression(expression)
    assert (expr.operator, expr.value) == (op, value)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", EXPR_EMPTY),
        ("   ", EXPR_EMPTY),
        (">=", EXPR_EMPTY_AFTER_OPERATOR),
        ("<=   ", EXPR_EMPTY_AFTER_OPERATOR),
        ("!=", EXPR_EMPTY_AFTER_OPERATOR),
        ("==", EXPR_EMPTY_AFTER_OPERATOR),
        (">", EXPR_EMPTY_AFTER_OPERATOR),
        ("<", EXPR_EMPTY_AFTER_OPERATOR),
    ],
)
def test_parse_expression_errors(expression: str, message: str) -> None:
    with pytest.raises(ExpressionError) as info:
        parse_expression(expression)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, UsageError)
    assert "\n" not in str(info.value)


def test_error_texts_are_the_upstream_ones() -> None:
    assert EXPR_EMPTY == "constraint expression cannot be empty"
    assert EXPR_EMPTY_AFTER_OPERATOR == "constraint value cannot be empty after operator"
    assert CANNOT_PARSE_EXPECTED == "cannot parse expected version"
    assert CANNOT_PARSE_ACTUAL == "cannot parse actual version"


@pytest.mark.parametrize(
    ("expression", "is_version"),
    [
        (">= banana", True),  # ordering operators always compare versions
        ("== 1.2.3", True),
        ("== v1.2", True),
        ("== ubuntu22.04", True),  # "looks like a version": a digit and a dot
        ("== ubuntu", False),
        ("!= 24", False),  # no dot
        ("24.04", True),
        ("v.", False),
    ],
)
def test_is_version_comparison(expression: str, is_version: bool) -> None:
    assert parse_expression(expression).is_version_comparison is is_version


def test_validate_expression_rejects_ranges_up_front() -> None:
    with pytest.raises(ExpressionError, match=f"^{CANNOT_PARSE_EXPECTED} '1.30, < 1.35'"):
        validate_expression(">= 1.30, < 1.35")
    assert validate_expression("== not-a-version") == Expression(Operator.EQ, "not-a-version")
    assert str(validate_expression(" >=1.2")) == ">= 1.2"


# --- evaluate --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "actual", "want"),
    [
        # AICR constraint_test.go TestParsedConstraint_Evaluate
        (">= 1.32.4", "1.32.4", True),
        (">= 1.32.4", "v1.33.5-eks-3025e55", True),
        (">= 1.32.4", "1.30.0", False),
        ("<= 1.33", "1.33.0", True),
        ("<= 1.33", "1.32.0", True),
        ("<= 1.33", "1.34.0", False),
        ("> 1.30", "1.32.0", True),
        ("> 1.30", "1.30.0", False),
        ("< 2.0", "1.30.0", True),
        ("< 2.0", "2.0.0", False),
        (">= 6.8", "6.8.0-1028-aws", True),
        (">= 6.8", "5.15.0-1050-aws", False),
        ("== ubuntu", "ubuntu", True),
        ("== ubuntu", "rhel", False),
        ("!= rhel", "ubuntu", True),
        ("!= rhel", "rhel", False),
        ("24.04", "24.04", True),
        ("24.04", "22.04", False),
        ("Ubuntu", "ubuntu", False),
        ("== 1.2.3", "v1.2.3", True),
        ("== 1.2.3", "v1.2.4", False),
        ("!= 1.2.3", "v1.2.4", True),
        ("!= 1.2.3", "v1.2.3", False),
        ("== not-a-version", "not-a-version", True),
        ("!= not-a-version", "different", True),
        ("ubuntu", "  ubuntu  ", True),
        # the operator table
        (">= 1.34", "v1.33.0-eks-abc", False),
        (">= 1.32.4", "v1.33.0", True),
        (">= 6.8", "6.8.0-1015-aws", True),
        (">= 1.33.4", "v1.33", True),  # precision 2 hides the patch
        (">= 1.5", "1.10", True),  # versions, not floats
        ("== 1.33", "1.33.5", False),  # Equals compares patch
        ("== 1.33", "1.33.0", True),
        ("<= 1.33", "1.33.5", True),
        ("24.04", "24.4", False),  # exact is string equality even when version-like
        ("== 24.04", "24.4", True),  # == is version equality
        ("!= 24.04", "24.4", False),
        ("ubuntu", "Ubuntu", False),
        ("== v1.2.3", "v1.2.3", True),
        ("!= rhel", "ubuntu", True),
        # more precision / extras vectors
        ("> 1.33", "1.33.9", False),  # equal at precision 2
        ("< 1.34", "1.33.99", True),
        (">= 1", "0.99.99", False),
        (">= 1", "1.0.0-rc1", True),
        ("> v1.2.3", "1.2.4+build.5", True),
        ("== 1.2.3", "1.2.3-gke.100", True),  # extras ignored
        ("== ubuntu22.04", "ubuntu22.04", True),  # version-like but unparsable -> string compare
        ("== ubuntu22.04", "ubuntu22.4", False),
        ("!= 1.2.3", "not-a-version", True),  # actual unparsable -> string compare
        (">= +1.2", "1.2", True),  # Go Atoi accepts a sign
        ("< 10.0.0", "9.99.99", True),
    ],
)
def test_evaluate(expression: str, actual: str, want: bool) -> None:
    assert evaluate(expression, actual) is want


@pytest.mark.parametrize(
    ("expression", "actual", "error", "message"),
    [
        (">= not-a-version", "1.0.0", ExpressionError, CANNOT_PARSE_EXPECTED),
        (">= 1.0.0", "not-a-version", ActualValueError, CANNOT_PARSE_ACTUAL),
        ("< invalid", "1.0.0", ExpressionError, CANNOT_PARSE_EXPECTED),
        (">= 1.2.3.4", "1.2.3", ExpressionError, CANNOT_PARSE_EXPECTED),  # too many components
        (">= 1.30, < 1.35", "1.31", ExpressionError, CANNOT_PARSE_EXPECTED),  # no ranges
        (">= 1.30 || >= 1.35", "1.31", ExpressionError, CANNOT_PARSE_EXPECTED),
        (">= 1.0", "", ActualValueError, CANNOT_PARSE_ACTUAL),
        (">= 1.0", "V1.2", ActualValueError, CANNOT_PARSE_ACTUAL),  # only lower-case v
        (">= 1.0", "1.-2", ActualValueError, CANNOT_PARSE_ACTUAL),
        ("<= 1.0", "1..2", ActualValueError, CANNOT_PARSE_ACTUAL),
        ("> 1.0", "latest", ActualValueError, CANNOT_PARSE_ACTUAL),
    ],
)
def test_evaluate_errors(expression: str, actual: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        evaluate(expression, actual)
    assert isinstance(info.value, ConstraintError)
    assert str(info.value).startswith(message)


# --- versions --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("1", Version(1, 0, 0, 1)),
        ("v2", Version(2, 0, 0, 1)),
        ("1.2", Version(1, 2, 0, 2)),
        ("v0.1", Version(0, 1, 0, 2)),
        ("1.2.3", Version(1, 2, 3, 3)),
        ("v1.2.3", Version(1, 2, 3, 3)),
        ("v0.0.0", Version(0, 0, 0, 3)),
        ("6.8.0-1028-aws", Version(6, 8, 0, 3, "-1028-aws")),
        ("v1.33.5-eks-3025e55", Version(1, 33, 5, 3, "-eks-3025e55")),
        ("v1.28.0-gke.1337000", Version(1, 28, 0, 3, "-gke.1337000")),
        ("1.29.2-hotfix.20240322", Version(1, 29, 2, 3, "-hotfix.20240322")),
        ("1.2+build", Version(1, 2, 0, 2, "+build")),
        ("580.105.08", Version(580, 105, 8, 3)),
    ],
)
def test_parse_version(text: str, want: Version) -> None:
    assert parse_version(text) == want


@pytest.mark.parametrize(
    "text",
    ["", "1.2.3.4", "v1.2.a", "v", "vv1.2", "1..2", "1.2.", ".1", "-1.2", "1.-2", " 1.2", "1_0.2", "١.٢"],
)
def test_parse_version_errors(text: str) -> None:
    with pytest.raises(VersionError):
        parse_version(text)


@pytest.mark.parametrize(
    ("a", "b", "cmp", "equal"),
    [
        ("1.9.9", "2.0.0", -1, False),
        ("1.2.99", "1.3.0", -1, False),
        ("1.2.3", "1.2.4", -1, False),
        ("1.2.3", "1.2.3", 0, True),
        ("1", "1.5.10", 0, False),
        ("1.2", "1.2.5", 0, False),
        ("1.2", "1.2.0", 0, True),
        ("2.0.0", "1.9.9", 1, False),
        ("1.3.0", "1.2.99", 1, False),
        ("1.34.3-eks-3025e55", "1.34.3-eks-abc", 0, True),
    ],
)
def test_version_compare_and_equals(a: str, b: str, cmp: int, equal: bool) -> None:
    va, vb = parse_version(a), parse_version(b)
    assert va.compare(vb) == cmp
    assert vb.compare(va) == -cmp
    assert va.equals(vb) is equal


def test_version_str() -> None:
    assert str(parse_version("v1.33.5-eks-3025e55")) == "1.33.5"
    assert str(parse_version("0.1")) == "0.1"


# --- constraint names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("K8s.server.version", True),
        ("OS.release.ID", True),
        ("OS.sysctl./proc/sys/kernel/osrelease", True),
        ("GPU.hardware.model", True),
        ("SystemD.containerd.service.ActiveState", True),
        ("NodeTopology.summary.node-count", True),
        ("NetworkTopology.pfs[0].rail", True),
        ("K8s.server", True),  # malformed, but snapshot-addressing: evaluation fails closed
        ("nccl-all-reduce-bw", False),
        ("nccl-all-reduce-bw-net", False),
        ("inference-throughput", False),
        ("Deployment.gpu-operator.version", False),
        ("gpu-operator.version", False),
        ("k8s.server.version", False),
        ("K8s", False),
        ("", False),
    ],
)
def test_is_snapshot_path(name: str, want: bool) -> None:
    assert is_snapshot_path(name) is want


# --- evaluate_constraint ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return parse_snapshot(
        {
            "kind": "Snapshot",
            "apiVersion": "aicr.run/v1alpha2",
            "measurements": [
                {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.33.0-eks-abc"}}]},
                {
                    "type": "OS",
                    "subtypes": [
                        {
                            "subtype": "release",
                            "data": {"ID": "ubuntu", "VERSION_ID": "24.04", "BUILD": "latest"},
                        },
                        {"subtype": "sysctl", "data": {"/proc/sys/kernel/osrelease": "6.8.0-1015-aws"}},
                    ],
                },
                {
                    "type": "GPU",
                    "subtypes": [{"subtype": "hardware", "data": {"gpu-count": 8, "model": None}}],
                },
            ],
        },
        "test",
    )


@pytest.mark.parametrize(
    ("name", "value", "passed", "actual", "kind", "error"),
    [
        ("K8s.server.version", ">= 1.32.4", True, "v1.33.0-eks-abc", None, None),
        ("K8s.server.version", ">= 1.34", False, "v1.33.0-eks-abc", None, None),
        ("OS.release.ID", "ubuntu", True, "ubuntu", None, None),
        ("OS.release.VERSION_ID", "== 24.04", True, "24.04", None, None),
        ("OS.sysctl./proc/sys/kernel/osrelease", ">= 6.8", True, "6.8.0-1015-aws", None, None),
        ("GPU.hardware.gpu-count", "8", True, "8", None, None),
        (
            "GPU.smi.driver",
            ">= 550",
            False,
            "",
            "not_found",
            "value not found in snapshot: subtype not found in measurement: type=GPU subtype=smi",
        ),
        (
            "SystemD.containerd.service.ActiveState",
            "active",
            False,
            "",
            "not_found",
            "value not found in snapshot: measurement type not found in snapshot: type=SystemD",
        ),
        (
            "OS.release.NOPE",
            "x",
            False,
            "",
            "not_found",
            "value not found in snapshot: key not found in subtype: type=OS subtype=release key=NOPE",
        ),
        (
            "GPU.hardware.model",
            "h100",
            False,
            "",
            "not_found",
            "value not found in snapshot: value is null: GPU.hardware.model",
        ),
        (
            "OS.release.BUILD",
            ">= 1.0",
            False,
            "latest",
            "unparsable_actual",
            "evaluation failed: cannot parse actual version 'latest': "
            "version component is not a number: 'latest' in 'latest'",
        ),
        (
            "K8s.server.version",
            ">= 1.30, < 1.35",
            False,
            "v1.33.0-eks-abc",
            "invalid_expression",
            "evaluation failed: cannot parse expected version '1.30, < 1.35': "
            "version component is not a number: '30, < 1' in '1.30, < 1.35'",
        ),
        ("K8s.server.version", "  ", False, "v1.33.0-eks-abc", "invalid_expression", None),
        ("k8s.server.version", ">= 1.0", False, "", "invalid_path", None),
        ("K8s.server", ">= 1.0", False, "", "invalid_path", None),
    ],
)
def test_evaluate_constraint(
    snap: Snapshot,
    name: str,
    value: str,
    passed: bool,
    actual: str,
    kind: str | None,
    error: str | None,
) -> None:
    result = evaluate_constraint(name, value, snap, severity="warning")
    assert result.passed is passed
    assert result.actual == actual
    assert result.error_kind == kind
    assert result.severity == "warning"
    if error is not None:
        assert result.error == error
    if kind is not None:
        assert result.error is not None and not result.evaluated
        assert "\n" not in result.error


def test_evaluate_constraint_error_prefixes(snap: Snapshot) -> None:
    bad_path = evaluate_constraint("k8s.server.version", ">= 1", snap)
    assert bad_path.error is not None and bad_path.error.startswith("invalid constraint path: ")
    empty = evaluate_constraint("K8s.server.version", "", snap)
    assert empty.error == f"invalid constraint expression: {EXPR_EMPTY}"
    assert evaluate_constraint("K8s.server.version", ">= 1", snap, severity=None).severity == "error"


# --- readiness messages ----------------------------------------------------------------------------------


def test_readiness_line_matches_the_guide(snap: Snapshot) -> None:
    result = evaluate_constraint("K8s.server.version", ">= 1.34", snap)
    assert format_readiness_line(result) == (
        'readiness constraint failed: name=K8s.server.version expected=">= 1.34" actual=v1.33.0-eks-abc'
    )
    assert format_readiness_failure(result) == (
        "readiness check failed: K8s.server.version expected >= 1.34, got v1.33.0-eks-abc"
    )


def test_readiness_line_passed_and_error(snap: Snapshot) -> None:
    ok = evaluate_constraint("OS.release.ID", "ubuntu", snap)
    assert (
        format_readiness_line(ok)
        == 'readiness constraint passed: name=OS.release.ID expected="ubuntu" actual=ubuntu'
    )
    missing = evaluate_constraint("GPU.smi.driver", ">= 550", snap)
    assert format_readiness_line(missing) == (
        'readiness constraint failed: name=GPU.smi.driver expected=">= 550" actual= '
        'error="[NOT_FOUND] value not found in snapshot: [NOT_FOUND] subtype not found in measurement"'
    )
    assert format_readiness_failure(missing) == (
        "readiness check could not evaluate: GPU.smi.driver: "
        "[NOT_FOUND] value not found in snapshot: [NOT_FOUND] subtype not found in measurement"
    )
    # the CTRF/evaluation error keeps our more detailed text; only the readiness texts are AICR's
    assert (
        missing.error == "value not found in snapshot: subtype not found in measurement: type=GPU subtype=smi"
    )


def test_constraint_result_is_serializable() -> None:
    r = ConstraintResult(name="a", expected="b", passed=True)
    assert r.model_dump() == {
        "name": "a",
        "expected": "b",
        "actual": "",
        "passed": True,
        "error": None,
        "error_kind": None,
        "severity": "error",
    }


# --- 10 % tolerance ----------------------------------------------------------


@pytest.mark.parametrize(
    ("comparator", "threshold", "measured", "want"),
    [
        (">=", 300, 270.0, True),
        (">=", 300, 269.99, False),
        (">=", 40, 36.0, True),
        (">=", 500, 449.99, False),
        (">=", 50000, 45000, True),
        (">=", 25000, 22500, True),  # 50000 scaled to 4 of 8 GPUs
        (">=", 150, 135.0, True),
        ("<=", 2000, 2200, True),
        ("<=", 2000, 2200.01, False),
        (" >= ", 300, 1000, True),
    ],
)
def test_threshold_passes(comparator: str, threshold: float, measured: float, want: bool) -> None:
    assert threshold_passes(comparator, threshold, measured) is want


@pytest.mark.parametrize("comparator", ["==", ">", "<", "!=", "", "=>"])
def test_threshold_rejects_other_comparators(comparator: str) -> None:
    with pytest.raises(UsageError, match="tolerance only applies to '>=' or '<='"):
        threshold_passes(comparator, 1.0, 1.0)


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (">= 300", 300.0),
        ("<= 300", 300.0),
        ("== 300", 300.0),
        ("300", 300.0),
        (">=450.5 GB/s", 450.5),
        ("  >=  1e3", 1000.0),
    ],
)
def test_parse_threshold_ignores_the_operator(value: str, want: float) -> None:
    assert parse_threshold(value) == want


@pytest.mark.parametrize("value", ["", ">=", ">= fast", ">= nan", ">= 1_000"])
def test_parse_threshold_errors(value: str) -> None:
    with pytest.raises(UsageError, match="cannot parse threshold"):
        parse_threshold(value, "nccl-all-reduce-bw")

"""AICR's constraint language: expressions, version comparison, snapshot evaluation, 10 % tolerance.

Expressions (``constraints[].value``)::

    >= 1.32.4     <= 1.33     > 1.30     < 2.0      ordering: always a version comparison
    == 24.04      != rhel                               equality: version-aware when the value looks like one
    ubuntu                                              no operator: exact, case-sensitive string match

The operators are tried in the order ``>=``, ``<=``, ``!=``, ``==``, ``>``, ``<``; the value is the
trimmed rest, so ``>=6.8`` and `` >= 6.8 `` are the same.  Anything else is an exact match on the whole
trimmed text (``= 1.30`` or ``=> 1.30`` are literal strings).  There are no ranges, lists, regexes or
wildcards.

Versions: one leading lower-case ``v`` is dropped, everything from the first ``-``/``+`` that follows a
digit is ignored (``v1.33.0-eks-abc`` → 1.33.0), then 1–3 non-negative integer parts.  Ordering compares
only as many parts as the *less precise* side has (``>= 1.33.4`` holds for ``v1.33``), while ``==``/``!=``
compare all three parts (``== 1.33`` does not hold for ``1.33.5``; ``1.33`` equals ``1.33.0``).

A constraint *name* either addresses the snapshot (``K8s.server.version``; see :func:`is_snapshot_path`)
or belongs to a check (``nccl-all-reduce-bw``, ``Deployment.gpu-operator.version``).  Performance checks
do not use these comparators but a 10 % tolerance (:func:`threshold_passes`).
"""

from __future__ import annotations

import contextlib
import enum
import json
import math
import re
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from aicr_pytest.core import snapshot as snapshot_mod
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.snapshot import (
    MEASUREMENT_TYPES,
    AmbiguousMatch,
    PathError,
    Snapshot,
    ValueNotFound,
    parse_path,
)

__all__ = [
    "ActualValueError",
    "ConstraintError",
    "ConstraintResult",
    "Expression",
    "ExpressionError",
    "Operator",
    "Version",
    "VersionError",
    "aicr_cause",
    "evaluate",
    "evaluate_constraint",
    "format_readiness_error",
    "format_readiness_failure",
    "format_readiness_line",
    "go_version_error",
    "is_snapshot_path",
    "parse_expression",
    "parse_threshold",
    "parse_version",
    "threshold_passes",
    "validate_expression",
]

# --- user-facing messages (AICR's phrases and the user guide's) ---------------------------------------

EXPR_EMPTY: Final = "constraint expression cannot be empty"
EXPR_EMPTY_AFTER_OPERATOR: Final = "constraint value cannot be empty after operator"
CANNOT_PARSE_EXPECTED: Final = "cannot parse expected version"
CANNOT_PARSE_ACTUAL: Final = "cannot parse actual version"
VERSION_EMPTY: Final = "version string cannot be empty"
VERSION_TOO_MANY_PARTS: Final = "too many version components (at most major.minor.patch)"
VERSION_BAD_PART: Final = "version component is not a number"
VERSION_NEGATIVE: Final = "version component cannot be negative"

# Wrappers of AICR's constraints.Evaluate, used in ConstraintResult.error.
WRAP_INVALID_PATH: Final = "invalid constraint path"
WRAP_NOT_FOUND: Final = "value not found in snapshot"
WRAP_INVALID_EXPRESSION: Final = "invalid constraint expression"
WRAP_EVALUATION_FAILED: Final = "evaluation failed"

# Readiness texts: the guide's log line, and AICR's actual error strings.
READINESS_LINE: Final = 'readiness constraint {status}: name={name} expected="{expected}" actual={actual}'
READINESS_FAILED: Final = "readiness check failed: {name} expected {expected}, got {actual}"
READINESS_COULD_NOT_EVALUATE: Final = "readiness check could not evaluate: {name}: {cause}"

THRESHOLD_BAD_COMPARATOR: Final = "tolerance only applies to '>=' or '<=', got {comparator!r}"
THRESHOLD_BAD_NUMBER: Final = "constraint {name!r}: cannot parse threshold from {value!r}"

#: Lower/upper tolerance factors of the performance checks.
TOLERANCE_LOW: Final = 0.9
TOLERANCE_HIGH: Final = 1.1


# --- exceptions ------------------------------------------------------------------------------------------


class ConstraintError(Exception):
    """Base class: a constraint could not be evaluated."""


class ExpressionError(ConstraintError, UsageError):
    """The expected side is unusable (empty, or an ordering operator on a non-version): a recipe error."""


class ActualValueError(ConstraintError):
    """The measured value cannot be compared (an ordering operator on a non-version actual)."""


class VersionError(ValueError):
    """:func:`parse_version` rejected its input."""


# --- versions --------------------------------------------------------------------------------------------

_ATOI_RE: Final = re.compile(r"[+-]?[0-9]+")
_MAX_INT64: Final = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Version:
    """``major.minor.patch`` with the number of parts given (``precision``) and ignored ``extras``."""

    major: int
    minor: int = 0
    patch: int = 0
    precision: int = 3
    extras: str = ""

    def __str__(self) -> str:
        return ".".join(str(x) for x in (self.major, self.minor, self.patch)[: self.precision])

    def compare(self, other: Version) -> int:
        """-1/0/1, comparing only ``min(self.precision, other.precision)`` parts (extras ignored)."""
        n = min(self.precision, other.precision)
        a = (self.major, self.minor, self.patch)[:n]
        b = (other.major, other.minor, other.patch)[:n]
        return (a > b) - (a < b)

    def equals(self, other: Version) -> bool:
        """All three parts equal, whatever the precision (``1.33`` == ``1.33.0`` != ``1.33.5``)."""
        return (self.major, self.minor, self.patch) == (other.major, other.minor, other.patch)


def parse_version(text: str) -> Version:
    """Parse like AICR's ``version.ParseVersion``; raises :class:`VersionError`.

    ``v1.33.5-eks-3025e55`` → 1.33.5 (precision 3, extras ``-eks-3025e55``); ``6.8`` → precision 2;
    ``1.2.3.4``, ``1.2.a``, ``1..2``, ``-1`` parts and ``""`` are errors.  No whitespace is trimmed.
    """
    if text == "":
        raise VersionError(VERSION_EMPTY)
    s = text[1:] if text.startswith("v") else text
    extras = ""
    for i in range(1, len(s)):
        if s[i] in "-+" and "0" <= s[i - 1] <= "9":
            s, extras = s[:i], s[i:]
            break
    parts = s.split(".")
    if len(parts) > 3:
        raise VersionError(f"{VERSION_TOO_MANY_PARTS}: {text!r}")
    nums: list[int] = []
    for part in parts:
        if not _ATOI_RE.fullmatch(part) or abs(int(part)) > _MAX_INT64:
            raise VersionError(f"{VERSION_BAD_PART}: {part!r} in {text!r}")
        value = int(part)
        if value < 0:
            raise VersionError(f"{VERSION_NEGATIVE}: {part!r} in {text!r}")
        nums.append(value)
    padded = [*nums, 0, 0]
    return Version(padded[0], padded[1], padded[2], precision=len(nums), extras=extras)


def _looks_like_version(value: str) -> bool:
    s = value[1:] if value.startswith("v") else value
    return "." in s and any("0" <= c <= "9" for c in s)


# --- expressions -----------------------------------------------------------------------------------------


class Operator(enum.StrEnum):
    GTE = ">="
    LTE = "<="
    NE = "!="
    EQ = "=="
    GT = ">"
    LT = "<"
    EXACT = ""

    @property
    def is_ordering(self) -> bool:
        return self in (Operator.GTE, Operator.LTE, Operator.GT, Operator.LT)


# prefix match order matters: two-character operators first
_PREFIX_ORDER: Final = (Operator.GTE, Operator.LTE, Operator.NE, Operator.EQ, Operator.GT, Operator.LT)


@dataclass(frozen=True, slots=True)
class Expression:
    """A parsed constraint value: ``operator`` + ``value`` (both trimmed)."""

    operator: Operator
    value: str

    @property
    def is_version_comparison(self) -> bool:
        """Ordering operators always; ``==``/``!=``/exact when the value looks like a version."""
        return self.operator.is_ordering or _looks_like_version(self.value)

    def __str__(self) -> str:
        return f"{self.operator.value} {self.value}" if self.operator is not Operator.EXACT else self.value


def parse_expression(value: str) -> Expression:
    """Parse a constraint value; raises :class:`ExpressionError` (a :class:`UsageError`) when empty.

    Purely syntactic, like AICR: ``>= banana`` parses and fails only when evaluated.  Use
    :func:`validate_expression` to also reject ordering operators on non-versions up front.
    """
    text = value.strip()
    if not text:
        raise ExpressionError(EXPR_EMPTY)
    for op in _PREFIX_ORDER:
        if text.startswith(op.value):
            rest = text[len(op.value) :].strip()
            if not rest:
                raise ExpressionError(f"{EXPR_EMPTY_AFTER_OPERATOR}: {text!r}")
            return Expression(op, rest)
    return Expression(Operator.EXACT, text)


def validate_expression(value: str) -> Expression:
    """:func:`parse_expression`, plus the expected-version check an ordering operator needs.

    ``">= 1.30, < 1.35"`` raises ``ExpressionError("cannot parse expected version ...")`` here instead of
    at evaluation time (useful when loading a recipe).
    """
    expr = parse_expression(value)
    if expr.operator.is_ordering:
        _expected_version(expr)
    return expr


def _expected_version(expr: Expression) -> Version:
    try:
        return parse_version(expr.value)
    except VersionError as err:
        raise ExpressionError(f"{CANNOT_PARSE_EXPECTED} {expr.value!r}: {err}") from None


def evaluate(expected: Expression | str, actual: str) -> bool:
    """Does ``actual`` (trimmed) satisfy ``expected``?

    Raises :class:`ExpressionError` for an unusable expected side and :class:`ActualValueError` when an
    ordering operator meets a non-version actual.  ``==``/``!=`` on version-like values compare versions
    and fall back to string comparison when either side does not parse; exact match is plain string
    equality (case-sensitive).
    """
    expr = parse_expression(expected) if isinstance(expected, str) else expected
    actual = actual.strip()
    op = expr.operator
    if op is Operator.EXACT:
        return actual == expr.value
    if op is Operator.EQ or op is Operator.NE:
        equal = actual == expr.value
        if _looks_like_version(expr.value):
            with contextlib.suppress(VersionError):
                equal = parse_version(actual).equals(parse_version(expr.value))
        return equal if op is Operator.EQ else not equal
    want = _expected_version(expr)
    try:
        got = parse_version(actual)
    except VersionError as err:
        raise ActualValueError(f"{CANNOT_PARSE_ACTUAL} {actual!r}: {err}") from None
    cmp = got.compare(want)
    if op is Operator.GTE:
        return cmp >= 0
    if op is Operator.GT:
        return cmp > 0
    if op is Operator.LTE:
        return cmp <= 0
    return cmp < 0


# --- constraint names ------------------------------------------------------------------------------------

_TYPES: Final = frozenset(MEASUREMENT_TYPES)


def is_snapshot_path(name: str) -> bool:
    """Does this constraint name address the snapshot?

    True when the text before the first ``.`` is a measurement type (``K8s``, ``GPU``, ``OS``,
    ``SystemD``, ``NodeTopology``, ``NetworkTopology``; exact case) — the prefix AICR's path parser
    accepts.  ``nccl-all-reduce-bw``, ``inference-throughput``, ``Deployment.gpu-operator.version`` or
    ``k8s.server.version`` are check constraints (or typos) and are not.  A name that passes this test
    but is malformed (``K8s.server``) still counts as a snapshot path, so that evaluating it fails
    closed with a path error rather than being silently ignored.
    """
    head, dot, _ = name.partition(".")
    return bool(dot) and head in _TYPES


# --- evaluation against a snapshot -----------------------------------------------------------------------

ErrorKind = Literal["invalid_path", "not_found", "ambiguous", "invalid_expression", "unparsable_actual"]


class ConstraintResult(BaseModel):
    """Outcome of one constraint.  ``passed`` is False whenever ``error`` is set (fail closed)."""

    model_config = ConfigDict(frozen=True)

    name: str
    expected: str
    actual: str = ""
    passed: bool
    error: str | None = None
    error_kind: ErrorKind | None = None
    severity: str = "error"

    @property
    def evaluated(self) -> bool:
        """False when the constraint could not be evaluated at all (``error`` is set)."""
        return self.error is None


def evaluate_constraint(
    constraint_name: str, value: str, snapshot: Snapshot, severity: str | None = "error"
) -> ConstraintResult:
    """Evaluate a snapshot constraint like AICR's ``constraints.Evaluate`` — never raises.

    Errors are wrapped as upstream: ``invalid constraint path: …``, ``value not found in snapshot: …``
    (``actual`` stays empty), ``invalid constraint expression: …`` and ``evaluation failed: …`` (for
    ``cannot parse expected/actual version``).  Any error gives ``passed=False``.
    """
    sev = severity or "error"

    def fail(kind: ErrorKind, message: str, actual: str = "") -> ConstraintResult:
        return ConstraintResult(
            name=constraint_name,
            expected=value,
            actual=actual,
            passed=False,
            error=message,
            error_kind=kind,
            severity=sev,
        )

    try:
        path = parse_path(constraint_name)
    except PathError as err:
        return fail("invalid_path", f"{WRAP_INVALID_PATH}: {_strip_prefix(str(err))}")
    try:
        actual = snapshot.lookup(path)
    except ValueNotFound as err:
        return fail("not_found", f"{WRAP_NOT_FOUND}: {err}")
    except AmbiguousMatch as err:
        return fail("ambiguous", f"{WRAP_NOT_FOUND}: {err}")
    try:
        expr = parse_expression(value)
    except ExpressionError as err:
        return fail("invalid_expression", f"{WRAP_INVALID_EXPRESSION}: {err}", actual)
    try:
        passed = evaluate(expr, actual)
    except ExpressionError as err:
        return fail("invalid_expression", f"{WRAP_EVALUATION_FAILED}: {err}", actual)
    except ActualValueError as err:
        return fail("unparsable_actual", f"{WRAP_EVALUATION_FAILED}: {err}", actual)
    return ConstraintResult(name=constraint_name, expected=value, actual=actual, passed=passed, severity=sev)


def _strip_prefix(message: str) -> str:
    prefix = WRAP_INVALID_PATH + " "
    return message[len(prefix) :] if message.startswith(prefix) else message


# --- readiness messages ----------------------------------------------------------------------------------


#: our snapshot lookup messages → AICR's (``[CODE] message``; extractor.go), for readiness texts
_AICR_LOOKUP: Final[tuple[tuple[str, str], ...]] = (
    (snapshot_mod.NOT_FOUND_TYPE, "[NOT_FOUND] measurement type not found in snapshot"),
    (snapshot_mod.NOT_FOUND_SUBTYPE, "[NOT_FOUND] subtype not found in measurement"),
    (snapshot_mod.NOT_FOUND_KEY, "[NOT_FOUND] key not found in subtype"),
    (snapshot_mod.NOT_FOUND_NO_ITEMS, "[NOT_FOUND] subtype has no items but path uses an item selector"),
    (snapshot_mod.NOT_FOUND_INDEX, "[NOT_FOUND] item index out of bounds"),
    (snapshot_mod.NOT_FOUND_PREDICATE, "[NOT_FOUND] no item matches predicate"),
    (snapshot_mod.NOT_FOUND_ITEM_KEY, "[NOT_FOUND] key not found in item"),
    (snapshot_mod.CONFLICT_PREDICATE, "[CONFLICT] item predicate matches multiple entries"),
)
_GO_ATOI = re.compile(r"[+-]?[0-9]+")


def go_version_error(text: str) -> str | None:
    """The error AICR's ``version.ParseVersion`` gives ``text`` (``None``: it parses), e.g.
    ``[INVALID_REQUEST] non-numeric component: "unknown": version component is not numeric``."""
    if text == "":
        return "[INVALID_REQUEST] empty version string: version string is empty"
    s = text.removeprefix("v")
    main = s
    for i, ch in enumerate(s):
        if ch in "-+" and i > 0 and s[i - 1].isdigit():
            main = s[:i]
            break
    parts = main.split(".")
    if len(parts) > 3:
        return "[INVALID_REQUEST] too many version components: version has more than 3 components"
    for part in parts:
        if part == "":
            return "[INVALID_REQUEST] empty component: version component is not numeric"
        if not _GO_ATOI.fullmatch(part):
            quoted = json.dumps(part, ensure_ascii=False)
            return f"[INVALID_REQUEST] non-numeric component: {quoted}: version component is not numeric"
        if int(part) < 0:
            return f"[INVALID_REQUEST] negative component: {int(part)}: version component cannot be negative"
    return None


def aicr_cause(result: ConstraintResult) -> str | None:
    """AICR's text for why ``result`` could not be evaluated, where it has one: a missing value
    (``[NOT_FOUND] value not found in snapshot: [NOT_FOUND] key not found in subtype``) or an
    unparsable actual version (``[INVALID_REQUEST] cannot parse actual version: …``); else ``None``."""
    if result.error is None:
        return None
    if result.error_kind in ("not_found", "ambiguous"):
        inner = result.error.removeprefix(f"{WRAP_NOT_FOUND}: ")
        for ours, theirs in _AICR_LOOKUP:
            if inner.startswith(ours):
                return f"[NOT_FOUND] {WRAP_NOT_FOUND}: {theirs}"
        return f"[NOT_FOUND] {WRAP_NOT_FOUND}: [NOT_FOUND] {inner}"
    if result.error_kind == "unparsable_actual":
        cause = go_version_error(result.actual.strip())
        if cause is not None:
            return f"[INVALID_REQUEST] {CANNOT_PARSE_ACTUAL}: {cause}"
    return None


def format_readiness_line(result: ConstraintResult) -> str:
    """The guide's log line, e.g.
    ``readiness constraint failed: name=K8s.server.version expected=">= 1.34" actual=v1.33.0-eks-abc``.

    ``status`` is ``passed``/``failed``; when the constraint could not be evaluated the line ends with
    `` error="<cause>"`` (``actual`` is whatever was read, possibly empty), the cause in AICR's words
    where it has them (:func:`aicr_cause`).
    """
    status = "passed" if result.passed else "failed"
    line = READINESS_LINE.format(
        status=status, name=result.name, expected=result.expected, actual=result.actual
    )
    if result.error is not None:
        line += f' error="{aicr_cause(result) or result.error}"'
    return line


def format_readiness_failure(result: ConstraintResult) -> str:
    """AICR's error text: ``readiness check failed: <name> expected <value>, got <actual>``, or for an
    evaluation error ``readiness check could not evaluate: <name>: <cause>``."""
    if result.error is not None:
        return format_readiness_error(result.name, aicr_cause(result) or result.error)
    return READINESS_FAILED.format(name=result.name, expected=result.expected, actual=result.actual)


def format_readiness_error(name: str, cause: str) -> str:
    return READINESS_COULD_NOT_EVALUATE.format(name=name, cause=cause)


# --- 10 % tolerance (performance checks) ------------------------------------------------------------

_LEADING_OPS: Final = "><=! "


def parse_threshold(value: str, name: str = "constraint") -> float:
    """NCCL-style threshold: trim, strip **all** leading ``><=!`` and spaces, take the first
    space-separated token, parse it as a float (``">= 300 GB/s"`` → 300.0).  The operator is ignored.
    Raises :class:`UsageError` when no number is left."""
    text = value.strip().lstrip(_LEADING_OPS)
    token = text.split(" ", 1)[0] if text else ""
    try:
        number = float(token)
    except ValueError:
        raise UsageError(THRESHOLD_BAD_NUMBER.format(name=name, value=value)) from None
    if "_" in token or math.isnan(number):
        raise UsageError(THRESHOLD_BAD_NUMBER.format(name=name, value=value))
    return number


def threshold_passes(comparator: str, threshold: float, measured: float) -> bool:
    """Apply the performance checks' 10 % tolerance.

    ``>=``: pass iff ``measured >= threshold * 0.9`` (throughput/bandwidth; ``>= 300`` passes at 270.0).
    ``<=``: pass iff ``measured <= threshold * 1.1`` (latency; ``<= 2000`` passes at 2200.0).
    Any other comparator raises :class:`UsageError`.  Arithmetic is float64 as in Go.
    """
    op = comparator.strip()
    if op == ">=":
        return measured >= threshold * TOLERANCE_LOW
    if op == "<=":
        return measured <= threshold * TOLERANCE_HIGH
    raise UsageError(THRESHOLD_BAD_COMPARATOR.format(comparator=comparator))

"""``PRODUCT.yaml``: the program's checklist template filled from the run's verdicts.

The program's rules (cncf/k8s-ai-conformance ``instructions.md``): every requirement of the
template is submitted with ``id``, ``description`` and ``level`` unchanged, and ``status``
(Implemented, Not Implemented, Partially Implemented, N/A), ``evidence`` and ``notes`` filled.
:func:`fill_product` keeps every requirement of the template in its order, each entry's keys as
they were, and sets only those three fields:

* a requirement our checks decide (:mod:`.requirements`), with a verdict in this run:
  PASS -> ``Implemented``; FAIL -> ``Not Implemented`` with the failure in ``notes``; SKIP -> ``N/A``
  with the reason in ``notes``; ``evidence`` links the per-feature evidence file and, with hybrid
  verification, the JUnit test case (``file://results/junit.xml#TestName``) and ``e2e.log``;
* any other requirement -- known but not checked by us, checked but not run this time, or an id we
  have never seen -- keeps an empty ``status`` and ``evidence`` and a note that manual evidence is
  required: never claimed.

``metadata`` is the template's, with the vendor's values (:class:`ProductMetadata`) written over
it; whatever is still a ``"[…]"`` placeholder, or a field the program's validator requires but
the template lacks (``k8sConformanceUrl``), is reported in :attr:`Product.placeholders` (lines
the caller prints).  :func:`product_yaml` writes YAML that reads back to exactly the same values
(every string that is not a plain word is double-quoted with escapes, so multi-line and
look-alike strings such as ``0o17`` or ``yes`` survive); the tests compare the re-read values
with the template's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import BaseModel, ConfigDict

from aicr_pytest.core import yamlio
from aicr_pytest.core.version import __version__
from aicr_pytest.evidence.cncf import requirements
from aicr_pytest.evidence.cncf.checklist import (
    IMPLEMENTED,
    NOT_APPLICABLE,
    NOT_IMPLEMENTED,
    Checklist,
    Requirement,
)
from aicr_pytest.evidence.cncf.hybrid import E2E_LOG_PATH, junit_fragment
from aicr_pytest.evidence.cncf.outcomes import CheckVerdict, folded_status, requirement_verdict
from aicr_pytest.evidence.cncf.secrets import scrub
from aicr_pytest.evidence.cncf.verdict import Status, redact_elb

PRODUCT_FILE: Final = "PRODUCT.yaml"
MANUAL: Final = "manual evidence required"
NOTE_UNKNOWN: Final = f"{MANUAL}: aicr-pytest has no check for this requirement id"
NOTE_UNCHECKED: Final = f"{MANUAL}: no aicr-pytest check covers this requirement yet"
NOTE_NOT_RUN: Final = f"{MANUAL}: aicr-pytest did not check it in this run (check: {{checks}})"
NOTE_PASS: Final = "verified by aicr-pytest {version} (check: {checks})"
NOTE_FAIL: Final = "aicr-pytest {version} check {checks} failed: {reason}"
NOTE_SKIP: Final = "aicr-pytest {version} check {checks} skipped: {reason}"
#: the longest reason quoted into ``notes`` (the evidence file has the rest)
NOTE_REASON_MAX: Final = 400
MSG_PLACEHOLDER: Final = '{file}: metadata.{key} is still the template placeholder "{value}"'
MSG_MISSING: Final = "{file}: metadata.{key} is missing (the program's validator requires it)"

_STATUS: Final[dict[Status, str]] = {"PASS": IMPLEMENTED, "FAIL": NOT_IMPLEMENTED, "SKIP": NOT_APPLICABLE}
#: a placeholder value of the program's templates: ``"[Platform Name]"``
PLACEHOLDER_RE: Final = re.compile(r"^\[.*\]$", re.DOTALL)


class ProductMetadata(BaseModel):
    """The vendor's metadata (from flags or ``--config``); ``None`` leaves the template's value."""

    model_config = ConfigDict(frozen=True)

    platform_name: str | None = None
    platform_version: str | None = None
    vendor_name: str | None = None
    website_url: str | None = None
    repo_url: str | None = None
    documentation_url: str | None = None
    product_logo_url: str | None = None
    description: str | None = None
    contact_email_address: str | None = None
    k8s_conformance_url: str | None = None


#: :class:`ProductMetadata` field -> the template's key (camelCase; the snake_case spelling that
#: ``instructions.md`` also shows is written instead where the template uses it)
METADATA_KEYS: Final[dict[str, str]] = {
    "platform_name": "platformName",
    "platform_version": "platformVersion",
    "vendor_name": "vendorName",
    "website_url": "websiteUrl",
    "repo_url": "repoUrl",
    "documentation_url": "documentationUrl",
    "product_logo_url": "productLogoUrl",
    "description": "description",
    "contact_email_address": "contactEmailAddress",
    "k8s_conformance_url": "k8sConformanceUrl",
}
#: what the program's validator requires besides what the templates carry
REQUIRED_EXTRA: Final[tuple[tuple[str, str], ...]] = (("k8sConformanceUrl", "k8s_conformance_url"),)


@dataclass(frozen=True)
class FilledRequirement:
    """What :func:`fill_product` wrote for one requirement."""

    category: str
    id: str
    level: str
    status: str
    evidence: tuple[str, ...]
    notes: str

    @property
    def claimed(self) -> bool:
        return self.status != ""


@dataclass(frozen=True)
class Product:
    """A filled checklist: the document, its requirements' fields and the placeholder report."""

    document: dict[str, Any]
    requirements: tuple[FilledRequirement, ...]
    placeholders: tuple[str, ...]
    template: Path

    @property
    def text(self) -> str:
        return product_yaml(self.document, self.template.name)


def _reason(text: str, secrets: Sequence[str]) -> str:
    one = " ".join(redact_elb(scrub(text, secrets)).split()) or "no reason given"
    return one if len(one) <= NOTE_REASON_MAX else one[: NOTE_REASON_MAX - 1] + "…"


def _fields(
    req: Requirement, verdicts: Sequence[CheckVerdict], hybrid: bool, secrets: Sequence[str]
) -> tuple[str, list[str], str]:
    """(status, evidence, notes) for one requirement (module docstring)."""
    row = requirements.lookup(req.id)
    if row is None:
        return "", [], NOTE_UNKNOWN
    if not row.checked:
        return "", [], NOTE_UNCHECKED
    checks = ", ".join(row.checks)
    decisive = requirement_verdict(row, verdicts)
    if not decisive:
        return "", [], NOTE_NOT_RUN.format(checks=checks)
    status = folded_status(decisive)
    evidence = [f"file://{v.evidence_file}" for v in decisive if v.evidence_file]
    if hybrid:
        evidence += [junit_fragment(v.check) for v in decisive]
        evidence.append(f"file://{E2E_LOG_PATH}")
    if status == "PASS":
        notes = NOTE_PASS.format(version=__version__, checks=checks)
    else:
        reason = "; ".join(_reason(v.message, secrets) for v in decisive if v.status == status)
        template = NOTE_FAIL if status == "FAIL" else NOTE_SKIP
        notes = template.format(version=__version__, checks=checks, reason=reason)
    return _STATUS[status], evidence, notes


def _filled_entry(entry: Mapping[str, Any], status: str, evidence: list[str], notes: str) -> dict[str, Any]:
    """The template entry with its three vendor fields set (keys kept in place, missing ones appended)."""
    out = dict(entry)
    for key, value in (("status", status), ("evidence", evidence), ("notes", notes)):
        out[key] = value
    return out


def _metadata(template: Mapping[str, Any], given: ProductMetadata) -> dict[str, Any]:
    out = dict(template)
    for name, camel in METADATA_KEYS.items():
        value = getattr(given, name)
        if value is None:
            continue
        out[name if name in template and camel not in template else camel] = value
    return out


def placeholder_lines(metadata: Mapping[str, Any], file: str = PRODUCT_FILE) -> tuple[str, ...]:
    """What is left to fill in ``metadata``: placeholders, then required fields that are missing."""
    lines = [
        MSG_PLACEHOLDER.format(file=file, key=key, value=value)
        for key, value in metadata.items()
        if isinstance(value, str) and PLACEHOLDER_RE.match(value)
    ]
    for camel, snake in REQUIRED_EXTRA:
        if metadata.get(camel) in (None, "") and metadata.get(snake) in (None, ""):
            lines.append(MSG_MISSING.format(file=file, key=camel))
    return tuple(lines)


def fill_product(
    checklist: Checklist,
    verdicts: Iterable[CheckVerdict],
    metadata: ProductMetadata | None = None,
    *,
    hybrid: bool = True,
    secrets: Sequence[str] = (),
) -> Product:
    """The template filled from ``verdicts`` (module docstring); ``hybrid``: link the JUnit cases."""
    given = tuple(verdicts)
    spec: dict[str, list[dict[str, Any]]] = {c: [] for c in checklist.categories}
    filled: list[FilledRequirement] = []
    for req in checklist.requirements:
        status, evidence, notes = _fields(req, given, hybrid, secrets)
        spec[req.category].append(_filled_entry(req.entry, status, evidence, notes))
        filled.append(FilledRequirement(req.category, req.id, req.level, status, tuple(evidence), notes))
    meta = _metadata(checklist.metadata, metadata or ProductMetadata())
    document: dict[str, Any] = {}
    for key, value in (checklist.document or {"metadata": None, "spec": None}).items():
        document[key] = meta if key == "metadata" else spec if key == "spec" else value
    return Product(document, tuple(filled), placeholder_lines(meta), checklist.path)


def write_product(product: Product, evidence_dir: Path) -> Path:
    """Write ``PRODUCT.yaml`` into ``evidence_dir``; its path."""
    path = evidence_dir / PRODUCT_FILE
    path.write_text(product.text, encoding="utf-8")
    return path


# -- YAML that reads back exactly ------------------------------------------------------------------

_WORD_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9_./ -]*[A-Za-z0-9_./]|[A-Za-z]")


def _plain_safe(text: str) -> bool:
    """A word both YAML 1.1 (PyYAML) and 1.2 (:mod:`yamlio`) read back as this very string."""
    if not _WORD_RE.fullmatch(text) or "  " in text or " -" in text:
        return False
    try:
        return bool(yamlio.load(text) == text and yaml.safe_load(text) == text)
    except yaml.YAMLError:
        return False


class _ExactDumper(yaml.SafeDumper):
    """Block style; strings plain only when :func:`_plain_safe`, else double-quoted (escapes)."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = None if _plain_safe(data) else '"'
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_ExactDumper.add_representer(str, _represent_str)


def product_yaml(document: Mapping[str, Any], template_name: str = "") -> str:
    """``document`` as YAML text with a header comment (module docstring)."""
    body = yaml.dump(
        dict(document),
        Dumper=_ExactDumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 30,
    )
    source = f" from {template_name}" if template_name else ""
    header = (
        f"# Kubernetes AI Conformance checklist filled by aicr-pytest {__version__}{source}.\n"
        f'# Requirements with an empty status say "{MANUAL}": add it before submitting.\n'
    )
    return header + body


__all__ = [
    "MANUAL",
    "METADATA_KEYS",
    "MSG_MISSING",
    "MSG_PLACEHOLDER",
    "NOTE_NOT_RUN",
    "NOTE_UNCHECKED",
    "NOTE_UNKNOWN",
    "PLACEHOLDER_RE",
    "PRODUCT_FILE",
    "FilledRequirement",
    "Product",
    "ProductMetadata",
    "fill_product",
    "placeholder_lines",
    "product_yaml",
    "write_product",
]

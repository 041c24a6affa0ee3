"""``cncf check PRODUCT.yaml [--checklist FILE]``: the program's submission rules, applied offline.

The rules are those of cncf/k8s-ai-conformance ``instructions.md`` and of its validator
(``scripts/validate.go``), which the program runs on every submission pull request:

* metadata: ``kubernetesVersion``, ``platformName``, ``platformVersion``, ``vendorName``,
  ``websiteUrl``, ``documentationUrl``, ``productLogoUrl``, ``description``,
  ``contactEmailAddress`` and ``k8sConformanceUrl`` are required (``repoUrl`` is optional; each
  may be spelled in snake_case), strings, not empty and not a ``"[…]"`` placeholder;
  ``k8sConformanceUrl`` matches ``https://github.com/cncf/k8s-conformance/tree/{master|main}/vX.Y/<dir>``;
  an ``http…`` ``productLogoUrl`` names an SVG, EPS or AI file;
* every requirement of the checklist is present in its category; ``status`` is one of
  Implemented, Not Implemented, Partially Implemented, N/A (a SHOULD with an empty status and no
  evidence is left alone, as the validator does); every MUST is Implemented; N/A has notes;
* every evidence link: a local one (``file://…`` or a bare relative path) names a file that
  exists relative to PRODUCT.yaml; an ``http(s)`` one is a well-formed URL.

With ``--checklist`` the requirements are also compared with the template: ``id``,
``description`` and ``level`` must be unchanged (a requirement the template lacks is reported)
and ``kubernetesVersion`` the template's.  Without it each requirement is judged by its own
``level``.  Offline means what needs the network is not checked: whether URLs answer and whether
``vendorName`` is a CNCF member.  Stricter than the validator, and said so in the message: a
``…Url`` metadata field must be an ``http(s)`` URL, an evidence link may not be absolute or use
another scheme, and a ``file://…junit.xml#Name`` link must name a test case of that file.

:func:`check_product` returns one line per problem; :func:`exit_code` is the CLI's rule (0 clean,
1 problems); unusable input -- a PRODUCT.yaml or template that is missing, unreadable, not YAML,
not a mapping, or a template that is not a checklist -- raises
:class:`~aicr_pytest.core.errors.UsageError` (exit 2).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence.cncf.checklist import (
    IMPLEMENTED,
    LEVELS,
    NOT_APPLICABLE,
    STATUSES,
    Checklist,
    load_checklist,
    read_yaml,
)

PRODUCT_LABEL: Final = "cncf check"
CHECKLIST_LABEL: Final = "--checklist"
#: metadata field -> required (the validator's table)
METADATA_FIELDS: Final[dict[str, bool]] = {
    "kubernetesVersion": True,
    "platformName": True,
    "platformVersion": True,
    "vendorName": True,
    "websiteUrl": True,
    "repoUrl": False,
    "documentationUrl": True,
    "productLogoUrl": True,
    "description": True,
    "contactEmailAddress": True,
    "k8sConformanceUrl": True,
}
URL_FIELDS: Final = frozenset({"websiteUrl", "repoUrl", "documentationUrl", "productLogoUrl"})
K8S_CONFORMANCE_URL_RE: Final = re.compile(
    r"^https://github\.com/cncf/k8s-conformance/tree/(master|main)/v[0-9]+\.[0-9]+/[^/]+/?$"
)
LOGO_SUFFIXES: Final = (".svg", ".eps", ".ai")
_HOST_LABEL: Final = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST_RE: Final = re.compile(rf"^{_HOST_LABEL}(?:\.{_HOST_LABEL})*\.?$")
_IPV6_RE: Final = re.compile(r"^[0-9A-Fa-f:.]+$")
#: the largest junit.xml read to look a test case up
JUNIT_MAX_BYTES: Final = 64 * 1024 * 1024

MSG_NOT_MAPPING: Final = (
    "[INVALID_REQUEST] {label} {path}: not a PRODUCT.yaml (the document is not a mapping)"
)


def _snake(name: str) -> str:
    """The validator's ``toSnakeCase``: ``contactEmailAddress`` -> ``contact_email_address``."""
    step = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", step).lower()


def url_problem(text: str) -> str | None:
    """Why ``text`` is not a well-formed ``http(s)`` URL, or ``None``."""
    if text != text.strip() or any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return "contains whitespace or control characters"
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in ("http", "https"):
        return "not an http(s) URL"
    host = parts.hostname or ""
    if not host:
        return "no host"
    if not (_HOST_RE.match(host) or ("[" in parts.netloc and _IPV6_RE.match(host))):
        return f"malformed host {host!r}"
    return None


def _metadata_problems(metadata: Any, checklist: Checklist | None) -> list[str]:
    if not isinstance(metadata, Mapping):
        return ["metadata: missing (the validator requires a metadata mapping)"]
    problems: list[str] = []
    for name, required in METADATA_FIELDS.items():
        snake = _snake(name)
        key = name if name in metadata else snake
        value = metadata.get(key)
        where = f"metadata.{key}"
        if value is None:
            if required:
                problems.append(f"metadata.{name}: missing (or {snake})")
            continue
        if not isinstance(value, str):
            problems.append(f"{where}: not a string")
            continue
        if value == "":
            if required:
                problems.append(f"{where}: empty")
            continue
        if value.startswith("[") and value.endswith("]"):
            problems.append(f"{where}: placeholder value {value}")
            continue
        if name == "k8sConformanceUrl":
            if not K8S_CONFORMANCE_URL_RE.match(value):
                problems.append(
                    f"{where}: {value!r} does not match "
                    "https://github.com/cncf/k8s-conformance/tree/master/vX.Y/<product>"
                )
            continue
        if name in URL_FIELDS:
            why = url_problem(value)
            if why is not None:
                problems.append(f"{where}: malformed URL {value!r}: {why}")
            elif name == "productLogoUrl" and not value.lower().endswith(LOGO_SUFFIXES):
                problems.append(f"{where}: must link to an SVG, EPS or AI file: {value}")
    if checklist is not None and checklist.kubernetes_version is not None:
        version = metadata.get("kubernetesVersion", metadata.get("kubernetes_version"))
        expected = checklist.kubernetes_version
        if isinstance(version, str) and version and version != expected:
            problems.append(f"metadata.kubernetesVersion: {version} differs from the checklist's {expected}")
    return problems


def _junit_has_case(path: Path, name: str) -> str | None:
    """Why ``path`` has no JUnit test case ``name`` (``None``: it has one)."""
    try:
        if path.stat().st_size > JUNIT_MAX_BYTES:
            return f"larger than {JUNIT_MAX_BYTES} bytes"
        root = ET.parse(path).getroot()  # a local file; expat bounds entity expansion
    except (OSError, ET.ParseError) as exc:
        return f"not readable as JUnit XML: {exc}"
    if any(case.get("name") == name for case in root.iter("testcase")):
        return None
    return f"has no test case {name!r}"


def evidence_problem(link: str, product_dir: Path) -> str | None:
    """Why one evidence link does not hold, or ``None`` (module docstring)."""
    if link.startswith(("http://", "https://")):
        why = url_problem(link)
        return None if why is None else f"malformed URL: {why}"
    if link.startswith("file://"):
        local = link[len("file://") :]
    elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", link):
        return "unsupported link (use a relative path, file://… or an http(s) URL)"
    else:
        local = link
    local, _, fragment = local.partition("#")
    if not local:
        return "names no file"
    if local.startswith("/"):
        return "must be relative to PRODUCT.yaml"
    target = product_dir / local
    if not target.is_file():
        return f"not found at {target}"
    if fragment and target.suffix.lower() == ".xml":
        why = _junit_has_case(target, fragment)
        return None if why is None else f"{target.name} {why}"
    return None


def _requirement_problems(where: str, level: str, entry: Mapping[str, Any], product_dir: Path) -> list[str]:
    status = entry.get("status")
    status = "" if status is None else status
    evidence = entry.get("evidence")
    evidence = [] if evidence is None else evidence
    notes = entry.get("notes")
    problems: list[str] = []
    if not isinstance(evidence, list):
        problems.append(f"{where}: evidence is not a list")
        evidence = []
    if level == "SHOULD" and status == "" and not evidence:
        return problems
    if status not in STATUSES:
        problems.append(f"{where}: status {status!r} is not one of {', '.join(STATUSES)}")
    if level == "MUST" and status != IMPLEMENTED:
        problems.append(f"{where}: MUST requirement with status {status!r}; it must be {IMPLEMENTED}")
    if status == NOT_APPLICABLE and not (isinstance(notes, str) and notes.strip()):
        problems.append(f"{where}: status N/A needs notes")
    for link in evidence:
        if not isinstance(link, str):
            problems.append(f"{where}: evidence entry {link!r} is not a string")
            continue
        if link == "":
            continue
        why = evidence_problem(link, product_dir)
        if why is not None:
            problems.append(f"{where}: evidence {link!r}: {why}")
    return problems


def _entries(category: str, entries: Any) -> tuple[dict[str, Mapping[str, Any]], list[str]]:
    """A product category's requirements by id, and what is wrong with its shape."""
    if not isinstance(entries, list):
        return {}, [f"spec.{category}: not a list of requirements"]
    by_id: dict[str, Mapping[str, Any]] = {}
    problems: list[str] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str) or not entry["id"]:
            problems.append(f"spec.{category}[{index}]: not a requirement with an id")
            continue
        if entry["id"] in by_id:
            problems.append(f"spec.{category}.{entry['id']}: appears more than once")
            continue
        by_id[entry["id"]] = entry
    return by_id, problems


def _spec_problems(spec: Any, checklist: Checklist | None, product_dir: Path) -> list[str]:
    if not isinstance(spec, Mapping):
        return ["spec: missing (the validator requires a spec mapping)"]
    problems: list[str] = []
    parsed: dict[str, dict[str, Mapping[str, Any]]] = {}
    for category, entries in spec.items():
        parsed[str(category)], shape = _entries(str(category), entries)
        problems += shape
    if checklist is None:
        for category, by_id in parsed.items():
            for rid, entry in by_id.items():
                where = f"spec.{category}.{rid}"
                level = entry.get("level")
                if level not in LEVELS:
                    problems.append(f"{where}: level {level!r} is not MUST or SHOULD")
                    continue
                problems += _requirement_problems(where, str(level), entry, product_dir)
        return problems
    for category in checklist.categories:
        if category not in spec:
            problems.append(f"spec.{category}: category missing")
            continue
        by_id = parsed.get(category, {})
        for req in checklist.in_category(category):
            where = f"spec.{category}.{req.id}"
            found = by_id.get(req.id)
            if found is None:
                problems.append(f"{where}: requirement missing")
                continue
            if found.get("description") != req.description:
                problems.append(f"{where}: description differs from the checklist's")
            if found.get("level") != req.level:
                problems.append(
                    f"{where}: level {found.get('level')!r} differs from the checklist's {req.level!r}"
                )
            problems += _requirement_problems(where, req.level, found, product_dir)
        known = {r.id for r in checklist.in_category(category)}
        problems += [f"spec.{category}.{rid}: not in the checklist" for rid in by_id if rid not in known]
    problems += [f"spec.{c}: category not in the checklist" for c in parsed if c not in checklist.categories]
    return problems


def check_product(product_path: str | Path, checklist_path: str | Path | None = None) -> list[str]:
    """Every problem of the PRODUCT.yaml at ``product_path`` (module docstring), one line each."""
    path = Path(product_path).expanduser()
    data = read_yaml(path, PRODUCT_LABEL)
    if not isinstance(data, Mapping):
        raise UsageError(MSG_NOT_MAPPING.format(label=PRODUCT_LABEL, path=path))
    checklist = load_checklist(checklist_path, CHECKLIST_LABEL) if checklist_path is not None else None
    from aicr_pytest.evidence.cncf import simulated

    marked = simulated.problem(path)
    problems = [marked] if marked else []
    problems += _metadata_problems(data.get("metadata"), checklist)
    problems += _spec_problems(data.get("spec"), checklist, path.parent)
    return problems


def exit_code(problems: Sequence[str]) -> int:
    """The future CLI's exit status: 0 clean, 1 problems (unusable input raised ``UsageError``: 2)."""
    return 1 if problems else 0


__all__ = [
    "CHECKLIST_LABEL",
    "K8S_CONFORMANCE_URL_RE",
    "METADATA_FIELDS",
    "PRODUCT_LABEL",
    "check_product",
    "evidence_problem",
    "exit_code",
    "url_problem",
]

"""``evidence verify``: the five steps over a pointer file, a bundle directory or an OCI reference.

1. materialize-bundle — the directory itself, or a pull *by digest* (tag-only refused unless
   ``--allow-unpinned-tag``), plus the Sigstore bundle found as an OCI referrer; any discovery error
   fails closed so a registry cannot downgrade a signed bundle to "unsigned";
2. signature-verify — sigstore-python against the trusted root, identity/issuer policy, payload type,
   subject lock (signed subject = pulled artifact digest), pointer cross-check; ``skipped`` for an
   unsigned bundle that claims no signer;
3. predicate-parse — from the verified DSSE payload, else the unsigned ``statement.intoto.json``;
4. manifest-hash-check — predicate.manifest.digest → manifest.json → every file; the recipe digest
   (recipe-evidence/v3's without ``metadata.version``); each phase's ctrfDigest and its summary counts;
5. render-summary.

Predicate types v1, v2 and v3 are read (AICR writes v3 today), and any redaction policy version
(AICR's minimal ``v4`` keeps its allowlisted CTRF ``extra`` keys); a pointer committed at
``recipes/evidence/<recipe>/<source>/<digest>.yaml`` must match that place.

Exit: 2 when a step failed; else 1 when a recorded phase has failed (or ``other``) checks; else 0.
The JSON ``exit`` field and the process exit code are the same number.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence import manifest as manifest_mod
from aicr_pytest.evidence import ociref
from aicr_pytest.evidence import pointer as pointer_mod
from aicr_pytest.evidence.canonical import format_time, recipe_digest_for_type, sha256_digest
from aicr_pytest.evidence.predicate import Predicate, StatementError, parse_statement

if TYPE_CHECKING:
    from sigstore.models import TrustedRoot

Status = Literal["passed", "failed", "skipped", "informational"]
InputKind = Literal["dir", "pointer", "oci"]

MSG_HTTP_INPUT = "http(s):// inputs are not supported — use oci://, a pointer file, or a local directory"
MSG_NO_BUNDLE_OCI = (
    "pointer carries no bundle.oci — re-run with --bundle <oci-ref> or point at the unpacked directory"
)
MSG_UNPINNED = (
    "OCI reference {ref} is tag-only — refusing to pull an unpinned reference. Use a digest-bound reference "
    "(registry/repo@sha256:<hex>), supply a pointer with bundle.digest set, or pass --allow-unpinned-tag for "
    "one-off debugging."
)
MSG_UNSIGNED = "no signature attached (unsigned bundle — pending signature)"
MSG_NO_PIN = "signature verified but no signer pinned — any Fulcio identity will pass"
HINT_FORBIDDEN = (
    "registry not accessible (make the fork's aicr-evidence package public, or provide registry credentials)"
)
HINT_NOT_FOUND = "bundle not found at the referenced digest (was it pushed to this registry?)"


@dataclass
class Step:
    step: int
    name: str
    status: Status
    detail: str
    sub_rows: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step,
            "name": self.name,
            "status": self.status,
            "detail": self.detail,
        }
        if self.sub_rows:
            out["subRows"] = [{"key": k, "value": v} for k, v in self.sub_rows]
        return out


@dataclass
class VerifyOptions:
    expected_issuer: str | None = None
    expected_identity_regexp: str | None = None
    bundle: str | None = None
    plain_http: bool = False
    insecure_tls: bool = False
    allow_unpinned_tag: bool = False


def _progress_line(line: str) -> None:
    """A registry retry, on stderr: verify runs outside any test session and its progress sink."""
    print(f"aicr-pytest: {line}", file=sys.stderr, flush=True)


@dataclass
class VerifyResult:
    input: InputKind
    pointer: pointer_mod.Pointer | None = None
    predicate: dict[str, Any] | None = None
    parsed: Predicate | None = None
    signer: dict[str, Any] | None = None
    recipe_name: str = ""
    bundle_digest: str = ""
    steps: list[Step] = field(default_factory=list)
    exit: int = 0
    pending: bool = False
    failure_cause: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    phase_other: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"input": self.input}
        if self.pointer is not None:
            doc = self.pointer.to_document()
            for entry in doc["attestations"]:
                entry["attestedAt"] = format_time(entry["attestedAt"])
            out["pointer"] = doc
        if self.predicate is not None:
            out["predicate"] = self.predicate
        if self.signer is not None:
            out["signer"] = self.signer
        if self.recipe_name:
            out["recipeName"] = self.recipe_name
        if self.bundle_digest:
            out["bundleDigest"] = self.bundle_digest
        out["steps"] = [s.to_json() for s in self.steps]
        out["exit"] = self.exit
        if self.pending:
            out["pending"] = True
        if self.failure_cause is not None:
            out["failureCause"] = self.failure_cause
        return out


class _StepFailed(Exception):
    def __init__(
        self, detail: str, status: int | None = None, rows: list[tuple[str, str]] | None = None
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.http_status = status
        self.rows = rows or []


MSG_NOT_FOUND = (
    "{text}: no such file or directory, and not an OCI reference "
    "(evidence verify takes a pointer file, a bundle directory or an OCI reference)"
)


def detect_input(text: str) -> tuple[InputKind, str]:
    """Classify the argument (before any result exists: errors are usage errors, exit 2)."""
    if text.startswith("oci://"):
        return "oci", text
    if re.match(r"^https?://", text):
        raise UsageError(MSG_HTTP_INPUT)
    path = Path(text)
    if path.exists():
        if path.is_dir():
            return "dir", text
        if path.suffix in (".yaml", ".yml"):
            return "pointer", text
        raise UsageError(
            f"{text} is a file but not a pointer (.yaml/.yml); pass a pointer, an OCI ref or a directory"
        )
    if ociref.looks_like_reference(text):
        return "oci", text
    raise UsageError(MSG_NOT_FOUND.format(text=text))


def _bundle_root(base: Path) -> Path | None:
    for cand in (base, base / C.SUMMARY_DIR):
        if (cand / C.RECIPE_FILE).is_file() and (cand / C.MANIFEST_FILE).is_file():
            return cand
    return None


def _read_capped(path: Path, limit: int, what: str) -> bytes:
    with path.open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise _StepFailed(f"{what} is larger than {limit >> 20} MiB")
    return data


class Verification:
    """One run of the pipeline; ``workdir`` receives pulled bundles (the caller removes it)."""

    def __init__(
        self,
        kind: InputKind,
        arg: str,
        opts: VerifyOptions,
        workdir: Path,
        trusted_root: Callable[[], TrustedRoot],
        pointer: pointer_mod.Pointer | None = None,
    ) -> None:
        self.kind = kind
        self.arg = arg
        self.opts = opts
        self.workdir = workdir
        self.trusted_root = trusted_root
        self.result = VerifyResult(input=kind, pointer=pointer)
        self.root: Path | None = None
        self.from_oci = False
        self.signed_statement: dict[str, Any] | None = None

    # -- step 1 ---------------------------------------------------------------------------------

    def _pull(self, ref: ociref.Reference) -> Path:
        from aicr_pytest.evidence import oci

        client = oci.RegistryClient(
            ref, plain_http=self.opts.plain_http, insecure_tls=self.opts.insecure_tls, notify=_progress_line
        )
        dest = self.workdir / "pull"
        try:
            pulled = oci.pull_bundle(client, ref.digest or ref.tag, dest)
        except oci.RegistryError as err:
            raise _StepFailed(f"pull {ref}: {err}", err.status) from None
        if ref.digest and pulled.digest != ref.digest:
            raise _StepFailed(f"pointer digest {ref.digest} does not match pulled digest {pulled.digest}")
        self.result.bundle_digest = pulled.digest
        root = _bundle_root(dest)
        if root is None:
            raise _StepFailed(
                f"artifact {pulled.digest} holds no evidence bundle (recipe.yaml and manifest.json)"
            )
        try:
            signature = oci.fetch_signature(client, pulled.digest)
        except oci.RegistryError as err:
            raise _StepFailed(f"Sigstore Bundle referrer discovery failed: {err}", err.status) from None
        if signature is not None:
            (root / C.ATTESTATION_FILE).write_bytes(signature)
        self.from_oci = True
        return root

    def _reference(self, text: str, pinned_digest: str = "") -> ociref.Reference:
        try:
            ref = ociref.parse(text)
        except UsageError as err:
            raise _StepFailed(str(err)) from None
        if pinned_digest:
            return ociref.Reference(ref.registry, ref.repository, "", pinned_digest)
        if not ref.digest:
            if not ref.tag:
                raise _StepFailed(f"OCI reference {text} has neither a tag nor a digest")
            if not self.opts.allow_unpinned_tag:
                raise _StepFailed(MSG_UNPINNED.format(ref=text))
        return ref

    def materialize(self) -> None:
        if self.kind == "dir":
            root = _bundle_root(Path(self.arg))
            if root is None:
                raise _StepFailed(
                    f"no evidence bundle at {self.arg} "
                    "(want recipe.yaml and manifest.json there or in summary-bundle/)"
                )
            self.root = root
            return
        if self.kind == "pointer":
            assert self.result.pointer is not None
            misplaced = pointer_mod.layout_problem(Path(self.arg), self.result.pointer)
            if misplaced is not None:
                raise _StepFailed(misplaced)
            bundle = self.result.pointer.attestation.bundle
            text = bundle.oci or self.opts.bundle or ""
            if not text:
                raise _StepFailed(MSG_NO_BUNDLE_OCI)
            self.root = self._pull(self._reference(text, bundle.digest))
            return
        self.root = self._pull(self._reference(self.arg))

    # -- step 2 ---------------------------------------------------------------------------------

    def signature(self) -> Predicate | None:
        assert self.root is not None
        claimed = self.result.pointer.attestation.signer if self.result.pointer else None
        path = self.root / C.ATTESTATION_FILE
        if not path.is_file():
            if claimed is not None:
                raise _StepFailed(
                    f"pointer claims a signer ({claimed.identity}, issuer {claimed.issuer}) but the bundle "
                    "carries no signature"
                )
            return None
        from aicr_pytest.evidence import signing

        raw = _read_capped(path, C.MAX_SIGSTORE_BUNDLE, C.ATTESTATION_FILE)
        expected = self.result.bundle_digest.removeprefix("sha256:") if self.from_oci else None
        try:
            root = self.trusted_root()
        except Exception as err:
            raise _StepFailed(f"cannot load the Sigstore trusted root: {type(err).__name__}: {err}") from None
        try:
            verified = signing.verify_bundle(
                raw,
                root,
                expected_subject_hex=expected,
                issuer=self.opts.expected_issuer,
                identity_regexp=self.opts.expected_identity_regexp,
            )
        except signing.SignatureInvalid as err:
            raise _StepFailed(str(err), rows=[(C.ATTESTATION_FILE, str(err).splitlines()[0])]) from None
        if claimed is not None:
            if claimed.identity != verified.identity:
                raise _StepFailed(
                    f"signer identity mismatch: pointer claims {claimed.identity}, "
                    f"cert says {verified.identity}"
                )
            if claimed.issuer != verified.issuer:
                raise _StepFailed(
                    f"signer issuer mismatch: pointer claims {claimed.issuer}, cert says {verified.issuer}"
                )
            if claimed.rekor_log_index:
                if not verified.rekor_log_index:
                    raise _StepFailed(
                        "pointer claims a Rekor log index but the bundle has no Rekor entry "
                        f"({claimed.rekor_log_index})"
                    )
                if claimed.rekor_log_index != verified.rekor_log_index:
                    raise _StepFailed(
                        f"Rekor log index mismatch: pointer claims {claimed.rekor_log_index}, actual entry "
                        f"{verified.rekor_log_index}"
                    )
        if not self.opts.expected_issuer and not self.opts.expected_identity_regexp:
            self.result.warnings.append(MSG_NO_PIN)
        signer: dict[str, Any] = {"identity": verified.identity, "issuer": verified.issuer}
        if verified.rekor_log_index > 0:
            signer["rekorLogIndex"] = verified.rekor_log_index
        self.result.signer = signer
        self.result.predicate = verified.statement["predicate"]
        self.signed_statement = verified.statement
        return verified.predicate

    # -- step 3 ---------------------------------------------------------------------------------

    def unsigned_predicate(self) -> Predicate:
        assert self.root is not None
        path = self.root / C.STATEMENT_FILE
        if not path.is_file():
            raise _StepFailed(f"{C.STATEMENT_FILE} is missing")
        try:
            doc, predicate = parse_statement(_read_capped(path, C.MAX_STATEMENT, C.STATEMENT_FILE))
        except StatementError as err:
            raise _StepFailed(f"{C.STATEMENT_FILE}: {err}") from None
        self.result.predicate = doc["predicate"]
        return predicate

    # -- step 4 ---------------------------------------------------------------------------------

    def _statement_problems(self, predicate: Predicate) -> list[manifest_mod.Problem]:
        """``statement.intoto.json`` must name the recipe, and agree with the signed payload when signed."""
        assert self.root is not None
        path = self.root / C.STATEMENT_FILE
        if not path.is_file():
            return [manifest_mod.Problem(C.STATEMENT_FILE, f"file missing from bundle: {C.STATEMENT_FILE}")]
        try:
            doc, _ = parse_statement(_read_capped(path, C.MAX_STATEMENT, C.STATEMENT_FILE))
        except (StatementError, _StepFailed) as err:
            return [manifest_mod.Problem(C.STATEMENT_FILE, str(err))]
        problems = []
        want = [{"name": f"recipe:{predicate.recipe.name}", "digest": {"sha256": predicate.recipe.digest}}]
        if doc.get("subject") != want:
            problems.append(
                manifest_mod.Problem(C.STATEMENT_FILE, "subject is not the recipe named by the predicate")
            )
        if self.signed_statement is not None and doc.get("predicate") != self.signed_statement.get(
            "predicate"
        ):
            problems.append(
                manifest_mod.Problem(C.STATEMENT_FILE, "predicate differs from the signed DSSE payload")
            )
        if doc.get("predicateType") != predicate.predicate_type:
            problems.append(
                manifest_mod.Problem(
                    C.STATEMENT_FILE,
                    f"predicateType differs from the signed one ({predicate.predicate_type})",
                )
            )
        if self.result.pointer is not None:
            claimed = self.result.pointer.attestation.bundle.predicate_type
            if claimed != predicate.predicate_type:
                problems.append(
                    manifest_mod.Problem(
                        C.POINTER_FILE,
                        f"pointer names predicateType {claimed}, the bundle is {predicate.predicate_type}",
                    )
                )
        return problems

    def manifest_check(self, predicate: Predicate) -> str:
        assert self.root is not None
        root = self.root
        want = predicate.manifest.digest
        if not want:
            raise _StepFailed("predicate.manifest.digest is empty")
        raw = _read_capped(root / C.MANIFEST_FILE, C.MAX_MANIFEST_JSON, C.MANIFEST_FILE)
        got = sha256_digest(raw)
        if got != want:
            raise _StepFailed(
                "manifest.json digest does not match predicate.manifest.digest — the manifest has been "
                "tampered or the predicate is wrong for this bundle",
                rows=[(C.MANIFEST_FILE, f"sha256 mismatch (got {got}, want {want})")],
            )
        try:
            doc = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise _StepFailed("manifest.json is not JSON") from None
        if not isinstance(doc, dict) or not manifest_mod.schema_ok(doc.get("schemaVersion")):
            raise _StepFailed("manifest.json has an unsupported schemaVersion")
        if not isinstance(doc.get("files"), list) or not doc["files"]:
            raise _StepFailed("manifest.json lists no files")
        problems = (
            manifest_mod.check_files(root, doc)
            + self._statement_problems(predicate)
            + _predicate_file_problems(root, predicate, doc)
        )
        recipe_path = root / C.RECIPE_FILE
        if recipe_path.is_file() and not problems:
            recipe_hex = recipe_digest_for_type(recipe_path.read_bytes(), predicate.predicate_type)
            if recipe_hex != predicate.recipe.digest:
                problems.append(
                    manifest_mod.Problem(
                        C.RECIPE_FILE,
                        f"sha256 does not match predicate.recipe.digest ({predicate.recipe.digest})",
                    )
                )
        if problems:
            raise _StepFailed(
                f"manifest inventory check failed for {len(problems)} file(s)",
                rows=[(p.key, p.value) for p in problems],
            )
        rows: list[tuple[str, str]] = []
        for phase, summary in predicate.phases.items():
            rel = f"{C.CTRF_DIR}/{phase}.json"
            if phase not in C.PHASES:
                rows.append((phase, "unknown phase in predicate.phases"))
                continue
            if not summary.ctrf_digest:
                rows.append((rel, "predicate.phases has an empty ctrfDigest"))
                continue
            path = root / rel
            if not path.is_file():
                rows.append((rel, "file missing from bundle"))
                continue
            data = _read_capped(path, C.MAX_CTRF, rel)
            got = sha256_digest(data)
            if got != summary.ctrf_digest:
                rows.append((rel, f"ctrfDigest mismatch (got {got}, want {summary.ctrf_digest})"))
                continue
            counts = _ctrf_counts(data)
            if counts is None:
                rows.append((rel, "not a CTRF report with a summary"))
                continue
            claimed = (summary.passed, summary.failed, summary.skipped)
            actual = (counts["passed"], counts["failed"], counts["skipped"])
            if claimed != actual:
                rows.append(
                    (rel, f"summary passed/failed/skipped {actual} disagrees with predicate {claimed}")
                )
                continue
            self.result.phase_other[phase] = max(summary.other, counts["other"])
        if rows:
            raise _StepFailed(f"phase report digest check failed for {len(rows)} phase(s)", rows=rows)
        return "manifest digest matches predicate; all bundle files and phase report digests verified"

    # -- the pipeline ---------------------------------------------------------------------------

    def _fail(self, number: int, name: str, err: _StepFailed) -> None:
        self.result.steps.append(Step(number, name, "failed", err.detail, err.rows))
        if self.result.failure_cause is None:
            self.result.failure_cause = _cause(number, err)

    def run(self) -> VerifyResult:
        res = self.result
        try:
            self.materialize()
        except _StepFailed as err:
            self._fail(1, "materialize-bundle", err)
            return self._finish(reached_end=False)
        res.steps.append(Step(1, "materialize-bundle", "passed", f"bundle at {self.root}"))

        verified: Predicate | None = None
        try:
            verified = self.signature()
        except _StepFailed as err:
            self._fail(2, "signature-verify", err)
        else:
            if verified is None:
                res.steps.append(Step(2, "signature-verify", "skipped", MSG_UNSIGNED))
            else:
                assert res.signer is not None
                rows = (
                    [("rekorLogIndex", str(res.signer["rekorLogIndex"]))]
                    if "rekorLogIndex" in res.signer
                    else []
                )
                detail = f"signer {res.signer['identity']} (issuer {res.signer['issuer']})"
                res.steps.append(Step(2, "signature-verify", "passed", detail, rows))

        try:
            if verified is not None:
                predicate, source = verified, "verified DSSE payload"
            else:
                res.predicate = None
                predicate, source = self.unsigned_predicate(), f"unsigned {C.STATEMENT_FILE}"
        except _StepFailed as err:
            self._fail(3, "predicate-parse", err)
            return self._finish(reached_end=False)
        res.parsed = predicate
        res.recipe_name = predicate.recipe.name
        detail = f"predicate {predicate.schema_version} for recipe {predicate.recipe.name} (from {source})"
        if predicate.predicate_type != C.PREDICATE_TYPE:
            detail += f" [{predicate.predicate_type.removeprefix('https://aicr.run/')}]"
        res.steps.append(Step(3, "predicate-parse", "passed", detail))

        try:
            res.steps.append(Step(4, "manifest-hash-check", "passed", self.manifest_check(predicate)))
        except _StepFailed as err:
            if verified is None:
                err.detail += f" (unsigned bundle: checked against {C.STATEMENT_FILE} only)"
            self._fail(4, "manifest-hash-check", err)
        except OSError as err:
            self._fail(4, "manifest-hash-check", _StepFailed(f"cannot read the bundle: {err}"))
        return self._finish(reached_end=True)

    def _finish(self, *, reached_end: bool) -> VerifyResult:
        res = self.result
        if reached_end:
            res.steps.append(Step(5, "render-summary", "informational", "report assembled"))
        if any(s.status == "failed" for s in res.steps):
            res.exit = 2
        elif res.parsed is not None and any(
            p.failed > 0 or p.other > 0 or res.phase_other.get(name, 0) > 0
            for name, p in res.parsed.phases.items()
        ):
            res.exit = 1
        else:
            res.exit = 0
        if res.exit != 2:
            res.failure_cause = None
        res.pending = res.exit == 0 and any(s.step == 2 and s.status == "skipped" for s in res.steps)
        return res


def _predicate_file_problems(root: Path, predicate: Predicate, manifest: dict[str, Any]) -> list[Any]:
    """What the predicate says about the bundle's files beyond the recipe and the phase reports,
    held against the files (AICR's verifier checks neither): ``manifest.fileCount`` against the
    manifest's list, ``bom.digest`` against ``bom.cdx.json``.  This binds an unsigned statement to
    its files; a signed one is bound by its signature as well."""
    problems = []
    listed = len(manifest.get("files") or [])
    if predicate.manifest.file_count != listed:
        problems.append(
            manifest_mod.Problem(
                C.STATEMENT_FILE,
                f"predicate.manifest.fileCount is {predicate.manifest.file_count}, "
                f"{C.MANIFEST_FILE} lists {listed} file(s)",
            )
        )
    bom = root / C.BOM_FILE
    if bom.is_file():
        got = sha256_digest(_read_capped(bom, C.MAX_BOM, C.BOM_FILE))
        if predicate.bom.digest != got:
            want = predicate.bom.digest or "empty"
            problems.append(
                manifest_mod.Problem(
                    C.STATEMENT_FILE, f"predicate.bom.digest ({want}) is not {C.BOM_FILE} ({got})"
                )
            )
    elif predicate.bom.digest:
        problems.append(
            manifest_mod.Problem(
                C.STATEMENT_FILE, f"predicate.bom.digest names {C.BOM_FILE}, which is missing"
            )
        )
    return problems


def _ctrf_counts(data: bytes) -> dict[str, int] | None:
    try:
        doc = json.loads(data)
        summary = doc["results"]["summary"]
        return {k: int(summary.get(k, 0)) for k in ("passed", "failed", "skipped", "other")}
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None


def _cause(step: int, err: _StepFailed) -> dict[str, Any]:
    status = err.http_status
    cause: dict[str, Any]
    if status in (401, 403):
        cause = {"class": "registry-forbidden", "hint": HINT_FORBIDDEN}
    elif status == 404:
        cause = {"class": "not-found", "hint": HINT_NOT_FOUND}
    elif status is not None:
        cause = {"class": "registry"}
    else:
        cause = {"class": {2: "signature", 3: "schema", 4: "integrity"}.get(step, "unknown")}
    cause["detail"] = err.detail
    if status is not None:
        cause["httpStatus"] = status
    return cause


def verify(
    arg: str,
    opts: VerifyOptions,
    workdir: Path,
    trusted_root: Callable[[], TrustedRoot],
) -> VerifyResult:
    """Classify ``arg``, load a pointer, run the pipeline.  Bad input raises :class:`UsageError`."""
    kind, value = detect_input(arg)
    pointer = pointer_mod.load(Path(value)) if kind == "pointer" else None
    return Verification(kind, value, opts, workdir, trusted_root, pointer).run()

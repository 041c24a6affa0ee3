"""Text (Markdown) and JSON renderings of a :class:`~aicr_pytest.evidence.verify.VerifyResult`."""

from __future__ import annotations

from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence.canonical import pretty_json
from aicr_pytest.evidence.verify import VerifyResult


def to_json(result: VerifyResult) -> str:
    return pretty_json(result.to_json()).decode("utf-8")


def _cell(text: str) -> str:
    return " ".join(text.split("\n")).replace("|", "\\|")


def _verdict(result: VerifyResult) -> str:
    if result.exit == 2:
        return "bundle invalid — verification failed (exit 2)"
    if result.exit == 1:
        return "bundle valid; recorded validator phase results show failures (exit 1, informational)"
    if result.pending:
        return "bundle valid but unsigned — pending signature (exit 0)"
    return "bundle valid — all checks passed (exit 0)"


def to_markdown(result: VerifyResult) -> str:
    lines: list[str] = []
    title = "## Evidence verification"
    lines.append(f"{title} — {result.recipe_name}" if result.recipe_name else title)
    lines.append("")
    step2 = next((s for s in result.steps if s.step == 2), None)
    if result.signer is not None:
        signer = f"**Signer:** {result.signer['identity']} (issuer {result.signer['issuer']})"
        if "rekorLogIndex" in result.signer:
            signer += f"  •  **Rekor:** index {result.signer['rekorLogIndex']}"
        lines.append(signer)
    elif step2 is not None and step2.status == "failed":
        lines.append("**Signer:** _signature verification failed (see Verification steps)_")
    elif step2 is not None:
        lines.append("**Signer:** _unsigned bundle_")
    parsed = result.parsed
    if parsed is not None:
        head = f"**AICR:** {parsed.aicr_version}  •  **Schema:** {parsed.schema_version}"
        if result.bundle_digest:
            head += f"  •  **Bundle digest:** {result.bundle_digest}"
        lines.append(head)
        rows = parsed.criteria_match.get("perDimension") if isinstance(parsed.criteria_match, dict) else None
        if isinstance(rows, list) and rows:
            lines += ["", "### Cluster fingerprint"]
            ok = bool(parsed.criteria_match.get("matched"))
            lines.append(
                "✓ all recipe criteria dimensions satisfied"
                if ok
                else "✗ one or more criteria dimensions mismatched"
            )
            lines += ["", "| Dimension | Outcome |", "|---|---|"]
            for row in rows:
                if not isinstance(row, dict):
                    continue
                req = row.get("recipeRequires") or "(any)"
                got = row.get("fingerprintProvides") or "(not captured)"
                dimension, match = _cell(str(row.get("dimension", ""))), _cell(str(row.get("match", "")))
                lines.append(f"| {dimension} | {match} recipe={_cell(str(req))} snapshot={_cell(str(got))} |")
        if parsed.phases:
            lines += ["", "### Phase results"]
            for name in [*C.PHASES, *sorted(p for p in parsed.phases if p not in C.PHASES)]:
                p = parsed.phases.get(name)
                if p is None:
                    continue
                other = max(p.other, result.phase_other.get(name, 0))
                mark = "✗" if p.failed or other else "✓"
                extra = f" other={other}" if other else ""
                lines.append(
                    f"- {mark} **{name}** passed={p.passed} failed={p.failed} skipped={p.skipped}{extra}"
                )
        if parsed.bom.digest:
            lines += ["", "### BOM"]
            lines.append(
                f"{parsed.bom.format} {parsed.bom.version} — {parsed.bom.image_count} components "
                f"(digest {parsed.bom.digest})"
            )
        if parsed.redaction is not None:
            lines += ["", "### Redaction"]
            lines.append(
                f"Policy **{parsed.redaction.policy}** (version {parsed.redaction.version}) — "
                "backing content "
                "minimized; the cryptographic binding is unaffected."
            )
            lines += [f"- `{rule}`" for rule in parsed.redaction.applied]
    lines += ["", "### Verification steps", "| # | Step | Status | Detail |", "|---|---|---|---|"]
    for s in result.steps:
        lines.append(f"| {s.step} | {s.name} | {s.status} | {_cell(s.detail)} |")
    failed_rows = [s for s in result.steps if s.status == "failed" and s.sub_rows]
    if failed_rows:
        lines += ["", "### Failed check details"]
        for s in failed_rows:
            lines.append(f"- **{s.name}**")
            lines += [f"  - `{k}` — {_cell(v)}" for k, v in s.sub_rows]
    lines += ["", "---", f"**Verdict:** {_verdict(result)}"]
    cause = result.failure_cause
    if cause is not None:
        line = f"**Cause:** `{cause['class']}`"
        if "httpStatus" in cause:
            line += f" (HTTP {cause['httpStatus']})"
        lines.append(line)
        if cause.get("hint"):
            lines.append(f"**Hint:** {cause['hint']}")
        lines.append(f"> {_cell(str(cause.get('detail', '')))}")
    return "\n".join(lines) + "\n"

"""``aicr-pytest evidence verify``: argument parsing and exit codes (the pipeline is in :mod:`.verify`).

Exit codes (the JSON ``exit`` field carries the same number): 0 valid and every recorded phase
passed (signed, or unsigned and pending); 1 valid, with failed phases in the recorded results;
2 invalid, tampered or unverifiable, and also a bad argument or pointer (one ``error:`` line, no
report).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

from aicr_pytest.core.errors import UsageError

if TYPE_CHECKING:
    from sigstore.models import TrustedRoot

EXIT_INVALID = 2


def add_verify_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "input",
        help="pointer.yaml, a bundle directory, or an OCI reference (oci://… or registry/repo@sha256:…)",
    )
    p.add_argument("-o", "--output", help="write the report to this file (default: stdout)")
    p.add_argument("-t", "--format", choices=["text", "json"], default="text", help="text (Markdown) or json")
    p.add_argument("--expected-issuer", help="require exactly this OIDC issuer in the signing certificate")
    p.add_argument(
        "--expected-identity-regexp",
        help="require a certificate identity (SAN) matching this regular expression",
    )
    p.add_argument(
        "--bundle", metavar="OCI_REF", help="OCI reference to use when the pointer has no bundle.oci"
    )
    p.add_argument(
        "--registry-plain-http", action="store_true", help="talk HTTP to the registry (tests only)"
    )
    p.add_argument(
        "--registry-insecure-tls", action="store_true", help="do not verify the registry's TLS certificate"
    )
    p.add_argument(
        "--allow-unpinned-tag",
        action="store_true",
        help="accept a tag-only OCI reference (one-off debugging)",
    )
    p.add_argument(
        "--update-trust-root",
        action="store_true",
        help="refresh Sigstore's trusted root over the network (TUF) before verifying",
    )


class TrustedRootLoader:
    def __init__(self, update: bool, env: Mapping[str, str], err: IO[str]) -> None:
        self.update = update
        self.env = env
        self.err = err

    def __call__(self) -> TrustedRoot:
        from aicr_pytest.evidence.signing import load_trust_config

        def warn(line: str) -> None:
            print(line, file=self.err)

        return load_trust_config(self.env, offline=not self.update, warn=warn).trusted_root


def run_verify(
    ns: argparse.Namespace,
    *,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    from aicr_pytest.evidence import render, verify

    stdout = out or sys.stdout
    stderr = err or sys.stderr
    environ = os.environ if env is None else env
    for pattern in (ns.expected_identity_regexp,):
        if pattern:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise UsageError(f"--expected-identity-regexp {pattern!r}: {exc}") from None
    opts = verify.VerifyOptions(
        expected_issuer=ns.expected_issuer,
        expected_identity_regexp=ns.expected_identity_regexp,
        bundle=ns.bundle,
        plain_http=ns.registry_plain_http,
        insecure_tls=ns.registry_insecure_tls,
        allow_unpinned_tag=ns.allow_unpinned_tag,
    )
    workdir = Path(tempfile.mkdtemp(prefix="aicr-evidence-pull-"))
    try:
        result = verify.verify(
            ns.input, opts, workdir, TrustedRootLoader(ns.update_trust_root, environ, stderr)
        )
        for line in result.warnings:
            print(f"warning: {line}", file=stderr)
        text = render.to_json(result) if ns.format == "json" else render.to_markdown(result)
        if ns.output and ns.output != "-":
            Path(ns.output).write_text(text, encoding="utf-8")
        else:
            stdout.write(text)
            stdout.flush()
        return result.exit
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Standalone entry: ``python -m aicr_pytest.evidence.cli verify …`` (same as the subcommand)."""
    parser = argparse.ArgumentParser(prog="aicr-pytest evidence")
    sub = parser.add_subparsers(dest="what", required=True)
    add_verify_arguments(sub.add_parser("verify", help="verify a recipe evidence bundle"))
    ns = parser.parse_args(argv)
    try:
        return run_verify(ns)
    except UsageError as exc:
        print(f"aicr-pytest: error: {exc}", file=sys.stderr)
        return EXIT_INVALID


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

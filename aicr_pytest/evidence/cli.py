"""``aicr-pytest evidence verify``: the run and its exit codes (the pipeline is in :mod:`.verify`; the
flags are declared in the CLI's option table, which hands :func:`run_verify` the values).

Exit codes (the JSON ``exit`` field carries the same number): 0 valid and every recorded phase
passed (signed, or unsigned and pending); 1 valid, with failed phases in the recorded results;
2 invalid, tampered or unverifiable, and also a bad argument or pointer (one ``error:`` line, no
report).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.writable import OutputError, check_writable, write_atomic

if TYPE_CHECKING:
    from sigstore.models import TrustedRoot


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
    args: Mapping[str, Any],
    *,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    from aicr_pytest.evidence import render, verify

    stdout = out or sys.stdout
    stderr = err or sys.stderr
    environ = os.environ if env is None else env
    for pattern in (args["expected_identity_regexp"],):
        if pattern:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise UsageError(f"--expected-identity-regexp {pattern!r}: {exc}") from None
    opts = verify.VerifyOptions(
        expected_issuer=args["expected_issuer"],
        expected_identity_regexp=args["expected_identity_regexp"],
        bundle=args["bundle"],
        plain_http=args["registry_plain_http"],
        insecure_tls=args["registry_insecure_tls"],
        allow_unpinned_tag=args["allow_unpinned_tag"],
    )
    if args["output"] and args["output"] != "-":
        check_writable(args["output"], "--output")  # before pulling anything (exit 2, one line)
    workdir = Path(tempfile.mkdtemp(prefix="aicr-evidence-pull-"))
    try:
        result = verify.verify(
            args["input"], opts, workdir, TrustedRootLoader(args["update_trust_root"], environ, stderr)
        )
        for line in result.warnings:
            print(f"warning: {line}", file=stderr)
        text = render.to_json(result) if args["format"] == "json" else render.to_markdown(result)
        if args["output"] and args["output"] != "-":
            try:  # whole or not at all
                write_atomic(args["output"], text, "--output")
            except OutputError as err:  # the destination changed since it was probed
                raise UsageError(str(err)) from None
        else:
            stdout.write(text)
            stdout.flush()
        return result.exit
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

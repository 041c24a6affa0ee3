"""What the in-process bad-input runners share: a scratch directory with the corpus's files, and
``aicr-pytest``'s ``main`` called the way the shell would (argparse errors exit from inside)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from aicr_pytest.cli import main

#: environment variables that would change a case's outcome; unset for every case
AICR_ENV = ("AICR_NAMESPACE", "AICR_NVIDIA_SMI_IMAGE", "AICR_REQUIRE_GPU")


#: pytest's own options the corpus passes as they are
PYTEST_OWN = ("--junitxml", "--co")


def pytest_spelling(argv: Sequence[str]) -> list[str]:
    """A case written in ``aicr-pytest validate``'s spelling, as plain pytest takes it: ``-r``/``-s``
    are ``--recipe``/``--snapshot``, and every other long flag of ours is ``--aicr-<flag>`` (a flag
    already spelled so, and pytest's own :data:`PYTEST_OWN`, are kept)."""
    short = {"-r": "--recipe", "-s": "--snapshot"}
    out = []
    for arg in argv:
        flag = arg.split("=", 1)[0]
        keep = flag in ("--recipe", "--snapshot", *PYTEST_OWN) or flag.startswith("--aicr-")
        out.append(short.get(arg, arg if keep or not arg.startswith("--") else "--aicr-" + arg[2:]))
    return out


def make_scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: Mapping[str, str]) -> Path:
    """Write ``files`` under ``tmp_path``, point KUBECONFIG at nothing, clear :data:`AICR_ENV`, cd there."""
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    for name in AICR_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def call_main(argv: Sequence[str]) -> int:
    """``main(argv)``'s exit code, also when argparse exits from inside ``parse_args``."""
    try:
        return main(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)

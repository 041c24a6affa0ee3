"""The ``aicr-pytest`` console script: the CLI with garbage collection paused for start-up.

Kept apart from :mod:`aicr_pytest.cli` so the pause (:mod:`aicr_pytest.core.gcpause`) begins before
the CLI's imports (pytest, pydantic, the check families), and so code that imports the CLI
in-process (tests, other tools) never has its collector touched.
"""

from __future__ import annotations

from aicr_pytest.core import gcpause


def main() -> int:
    gcpause.pause()
    from aicr_pytest.cli import main as cli_main

    return cli_main()

"""Bad input to `aicr-pytest evidence verify`: (argv, expected exit code, the one line on stderr).

``{tmp}`` stands for the scratch directory holding :data:`FILES`; every case ends with exactly its
line, nothing on stdout and no traceback, before any registry is contacted.
"""

from __future__ import annotations

FILES: dict[str, str] = {"notes.txt": "not a pointer\n", "bundle/.keep": ""}

E = "aicr-pytest: error: "

CASES: list[tuple[list[str], int, str]] = [
    (
        ["evidence", "verify", "{tmp}/bundle", "-o", "/proc/verify.json"],
        2,
        E + "--output /proc/verify.json: cannot write the report there: ENOENT (No such file or directory)",
    ),
    (
        ["evidence", "verify", "{tmp}/missing.yaml"],
        2,
        E + "{tmp}/missing.yaml: no such file or directory, and not an OCI reference "
        "(evidence verify takes a pointer file, a bundle directory or an OCI reference)",
    ),
    (
        ["evidence", "verify", "{tmp}/notes.txt"],
        2,
        E + "{tmp}/notes.txt is a file but not a pointer (.yaml/.yml); "
        "pass a pointer, an OCI ref or a directory",
    ),
]

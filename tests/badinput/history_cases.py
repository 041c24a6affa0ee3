"""Bad input to the run history, baselines and ``compare``: one line, exit 2 (plain pytest: 4), and
nothing of the history lost.

Each case: ``(entry point, argv, expected exit code, the one stderr line)``; ``{tmp}`` is a scratch
directory holding :data:`FILES` and ``good.db``, a history with one recorded run (the runner checks it
still holds exactly that run afterwards, and that ``corrupt.db`` is byte for byte what it was).
"""

from __future__ import annotations

import json

from tests.badinput.validate_cases import FILES as VALIDATE_FILES

E = "aicr-pytest: error: "
P = "ERROR: "
V, T = "validate", "pytest"
OFF = ["-r", "{tmp}/ok.yaml", "-s", "{tmp}/snap.yaml", "--no-cluster"]
#: plain pytest spells it --aicr-no-cluster
T_OFF = ["-r", "{tmp}/ok.yaml", "-s", "{tmp}/snap.yaml", "--aicr-no-cluster"]
NOT_DB = "not an aicr-pytest history database (file is not a database)"
FOREIGN_IDENTITY = {
    "recipe": "gb200",
    "recipeFingerprint": "sha256:0000",
    "snapshotFingerprint": "",
    "cluster": "",
}


def _ctrf(identity: dict[str, str] | None) -> str:
    extra: dict[str, object] = {"aicr.runId": "old"}
    if identity is not None:
        extra["aicr.identity"] = identity
    return json.dumps({"reportFormat": "CTRF", "results": {"tests": []}, "extra": extra})


FILES: dict[str, str] = {
    "ok.yaml": VALIDATE_FILES["ok.yaml"],
    "snap.yaml": VALIDATE_FILES["snap.yaml"],
    "corrupt.db": "this is not an SQLite database\n" * 40,
    "afile": "",
    "not-ctrf.json": '{"reportFormat": "JUnit"}\n',
    "not-json.json": "<testsuite/>\n",
    "foreign.json": _ctrf(FOREIGN_IDENTITY),
    "anonymous.json": _ctrf(None),
}

CASES: list[tuple[str, list[str], int, str]] = [
    # --history: a corrupt database, a path that cannot be a file
    (V, [*OFF, "--history", "{tmp}/corrupt.db"], 2, P + f"--history {{tmp}}/corrupt.db: {NOT_DB}"),
    (T, [*T_OFF, "--aicr-history", "{tmp}/corrupt.db"], 4, P + f"--history {{tmp}}/corrupt.db: {NOT_DB}"),
    (
        V,
        [*OFF, "--history", "{tmp}/afile/h.db"],
        2,
        P + "--history {tmp}/afile/h.db: cannot write the history ({tmp}/afile is not a directory)",
    ),
    (V, [*OFF, "--history", "{tmp}"], 2, P + "--history {tmp}: cannot write the history (it is a directory)"),
    # --history cm://: without a cluster, a bad URI, a ring of no runs
    (
        V,
        [*OFF, "--history", "cm://default/runs"],
        2,
        P + "--history cm://default/runs: a ConfigMap history needs the cluster (not --no-cluster)",
    ),
    (
        V,
        [*OFF, "--history", "cm://Default/runs"],
        2,
        P + 'invalid --history "cm://Default/runs": namespace "Default" must be a DNS-1123 label',
    ),
    (
        V,
        [*OFF, "--history", "cm://default/runs", "--history-keep", "0"],
        2,
        P + "--history-keep 0: must be at least 1",
    ),
    # --baseline: not CTRF, not JSON, missing, foreign, anonymous; auto without a history
    (
        V,
        [*OFF, "--baseline", "{tmp}/not-ctrf.json"],
        2,
        P + '--baseline {tmp}/not-ctrf.json: not a CTRF report (no "reportFormat": "CTRF")',
    ),
    (
        V,
        [*OFF, "--baseline", "{tmp}/not-json.json"],
        2,
        P + "--baseline {tmp}/not-json.json: not a CTRF report (Expecting value: line 1 column 1 (char 0))",
    ),
    (
        V,
        [*OFF, "--baseline", "{tmp}/missing.json"],
        2,
        P + "--baseline {tmp}/missing.json: cannot read it (No such file or directory)",
    ),
    (
        V,
        [*OFF, "--history", "{tmp}/good.db", "--baseline", "{tmp}/foreign.json"],
        2,
        P + "--baseline {tmp}/foreign.json: it validated another recipe (gb200, this run: recipe)",
    ),
    (
        V,
        [*OFF, "--baseline", "{tmp}/anonymous.json"],
        2,
        P + "--baseline {tmp}/anonymous.json: it does not say which recipe and cluster it validated "
        "(no extra.aicr.identity)",
    ),
    (V, [*OFF, "--baseline", "auto"], 2, P + "--baseline auto needs --history (where the previous runs are)"),
    # --max-regression: negative, above 100, not a number
    (
        V,
        [*OFF, "--history", "{tmp}/good.db", "--max-regression", "-5"],
        2,
        P + "--max-regression -5: must be a percentage between 0 and 100",
    ),
    (
        T,
        [*T_OFF, "--aicr-max-regression", "101"],
        4,
        P + "--max-regression 101: must be a percentage between 0 and 100",
    ),
    # history
    ("history", ["{tmp}/corrupt.db"], 2, E + f"history {{tmp}}/corrupt.db: {NOT_DB}"),
    ("history", ["{tmp}/missing.db"], 2, E + "history {tmp}/missing.db: no such history database"),
    (
        "history",
        ["{tmp}/good.db", "--last", "0"],
        2,
        E + "history --last 0: must be a positive number of runs",
    ),
    (
        "history",
        ["{tmp}/good.db", "--plot", "{tmp}/trend.png"],
        2,
        E + "history --plot {tmp}/trend.png: the plot is SVG; name a .svg file",
    ),
    (
        "history",
        ["{tmp}/good.db", "--plot", "{tmp}/afile/t.svg"],
        2,
        E + "history --plot {tmp}/afile/t.svg: cannot write it (Not a directory)",
    ),
    # compare
    (
        "compare",
        ["{tmp}/not-ctrf.json", "{tmp}/foreign.json"],
        2,
        E + 'compare {tmp}/not-ctrf.json: not a CTRF report (no "reportFormat": "CTRF")',
    ),
    (
        "compare",
        ["{tmp}/foreign.json", "{tmp}/missing.json"],
        2,
        E + "compare {tmp}/missing.json: cannot read it (No such file or directory)",
    ),
    (
        "compare",
        ["{tmp}/foreign.json", "{tmp}/foreign.json", "--max-regression", "-1"],
        2,
        E + "--max-regression -1: must be a percentage between 0 and 100",
    ),
]

"""``--data`` trees for tests that change one check's catalog entry (its budget, its regression gate)."""

from __future__ import annotations

from pathlib import Path


def catalog_data_tree(root: Path, check: str, **fields: str | int) -> Path:
    """A ``--data`` tree at ``root`` whose catalog overlay sets ``fields`` of one check (for example
    ``timeout="20s"`` or ``maxRegression=10``), with an empty component registry."""
    (root / "validators").mkdir(parents=True, exist_ok=True)
    (root / "registry.yaml").write_text("components: []\n")
    entry = "".join(f"\n    {key}: {value}" for key, value in fields.items())
    (root / "validators" / "catalog.yaml").write_text(f"validators:\n  - name: {check}{entry}\n")
    return root

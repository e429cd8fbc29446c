"""Rewrite the shipped URDF files: ``python -m wholebody.models [OUT_DIR]``."""

import sys
from pathlib import Path

from ._build import SHIPPED

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[3] / "models"
out.mkdir(parents=True, exist_ok=True)
for name, build in SHIPPED.items():
    (out / f"{name}.urdf").write_text(build())
    print(f"wrote {out / (name + '.urdf')}")

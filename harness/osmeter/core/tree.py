"""The osmeter tree the harness runs from: OSMETER_ROOT (the launcher sets
it), else the checkout this package was imported from."""
from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    env = os.environ.get("OSMETER_ROOT")
    return Path(env) if env else Path(__file__).resolve().parents[3]

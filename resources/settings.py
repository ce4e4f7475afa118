"""The project configuration as resources see it: `h3_config.yaml` (or $H3_CONFIG), validated."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from h3_runtime.config import H3Config

REPO_ROOT = Path(__file__).resolve().parents[1]


def config_path() -> Path | None:
    """$H3_CONFIG if set, else the repository's h3_config.yaml (None when neither exists)."""
    env = os.environ.get("H3_CONFIG")
    if env:
        return Path(env)
    default = REPO_ROOT / "h3_config.yaml"
    return default if default.exists() else None


@lru_cache(maxsize=4)
def _load(path: str | None) -> H3Config:
    return H3Config.from_any(path)


def load_config() -> H3Config:
    """The validated config (cached per path); a bad file raises ConfigError naming the key."""
    path = config_path()
    return _load(str(path) if path else None)

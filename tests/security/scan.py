"""Finding pickles among files without ever unpickling them (pickletools only parses opcodes)."""

from __future__ import annotations

import pickletools
from pathlib import Path


def is_pickle(data: bytes) -> bool:
    """A protocol 2-5 pickle: PROTO opcode first, STOP last, every opcode in between valid."""
    if len(data) < 3 or data[0] != 0x80 or data[1] not in (2, 3, 4, 5) or data[-1:] != b".":
        return False
    try:
        for _ in pickletools.genops(data):
            pass
    except Exception:
        return False
    return True


def find_pickles(root: Path, max_bytes: int = 50_000_000) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and p.stat().st_size <= max_bytes
            and is_pickle(p.read_bytes())]

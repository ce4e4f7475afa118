"""Counters of one runtime: tier hits/misses, migrations, prefetches, bytes moved per tier pair."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(slots=True)
class TierStats:
    hits: Counter = field(default_factory=Counter)  # "hot" / "warm" / "cold": where a needed block was
    migrations: Counter = field(default_factory=Counter)  # "warm->hot", "hot->warm", "warm->cold", ...
    bytes_moved: Counter = field(default_factory=Counter)  # same keys, bytes
    prefetches: int = 0
    prefetch_hits: int = 0
    integrity_errors: int = 0

    def move(self, pair: str, nbytes: int, count: int = 1) -> None:
        """`count` blocks moved along `pair`, `nbytes` in all."""
        self.migrations[pair] += count
        self.bytes_moved[pair] += nbytes

    def to_dict(self) -> dict:
        lookups = sum(self.hits.values())
        return {
            "tier_hits": dict(self.hits),
            "hot_hit_rate": round(self.hits["hot"] / lookups, 4) if lookups else None,
            "tier_misses": {"hot": lookups - self.hits["hot"], "warm": self.hits["cold"]},
            "migrations": dict(self.migrations),
            "bytes_moved": dict(self.bytes_moved),
            "prefetches": self.prefetches,
            "prefetch_hits": self.prefetch_hits,
            "integrity_errors": self.integrity_errors,
        }

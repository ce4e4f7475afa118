"""Byte accounting of the hot tier (the device the model runs on).

On a GPU this is GPU memory; on CPU it is a pool whose budget is enforced by this accounting.
Every hot KV tensor the runtime allocates goes through `reserve`, which refuses anything that
would exceed the budget, so `peak_bytes <= budget_bytes` holds by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class HotBudgetError(MemoryError):
    """A hot allocation would exceed the hot-tier budget (hbm_size_gb)."""


@dataclass(slots=True)
class HotPool:
    budget_bytes: int
    used_bytes: int = 0  # allocated hot KV bytes (buffers + transients)
    occupied_bytes: int = 0  # bytes of those holding live tokens (pressure); occupy / vacate
    peak_bytes: int = 0
    by_purpose: dict[str, int] = field(default_factory=dict)

    def reserve(self, nbytes: int, purpose: str) -> None:
        """Accounts `nbytes` more hot bytes; raises HotBudgetError (and changes nothing) if over budget."""
        if self.used_bytes + nbytes > self.budget_bytes:
            raise HotBudgetError(
                f"hot tier: {purpose} needs {nbytes} B but only "
                f"{self.budget_bytes - self.used_bytes} B of {self.budget_bytes} B are free"
            )
        self.used_bytes += nbytes
        self.by_purpose[purpose] = self.by_purpose.get(purpose, 0) + nbytes
        self.peak_bytes = max(self.peak_bytes, self.used_bytes)

    def release(self, nbytes: int, purpose: str) -> None:
        self.used_bytes -= nbytes
        self.by_purpose[purpose] = self.by_purpose.get(purpose, 0) - nbytes
        assert self.used_bytes >= 0, "hot pool released more than it reserved"

    def occupy(self, nbytes: int) -> None:
        """`nbytes` more of the reserved hot bytes hold live tokens."""
        self.occupied_bytes += nbytes

    def vacate(self, nbytes: int) -> None:
        """`nbytes` of hot bytes no longer hold live tokens."""
        self.occupied_bytes -= nbytes

    @property
    def pressure(self) -> float:
        """Fraction of the budget holding live tokens (0..1)."""
        return self.occupied_bytes / self.budget_bytes if self.budget_bytes else 1.0

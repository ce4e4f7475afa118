"""The tiers behind one small interface (in the spirit of vllm's kv_offload):
`lookup / load / store / touch / drop`, and each tier names its `medium` and reports its
`capacity_bytes` and `usage_bytes`.

- `HotSlots`: one layer's block slots in hot memory (the model's device), carved out of a
  `HotPool` reservation; a block must be here to be attended.
- `WarmTier`: host memory, full blocks (plus the per-block summaries, kept by the layer store).
- `KVBlockStore` (cold.py): checksummed files under `cold_storage_path`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Hashable

import torch

from h3_runtime.kvcache.block import KVBlock, to_hot
from h3_runtime.kvcache.hot import HotPool


class TierFullError(MemoryError):
    """A store into a tier that has no room left (the caller must evict first)."""


class Tier(ABC):
    medium: str

    @property
    @abstractmethod
    def capacity_bytes(self) -> int: ...

    @property
    @abstractmethod
    def usage_bytes(self) -> int: ...

    @abstractmethod
    def lookup(self, key: Hashable) -> bool:
        """Whether the block is held here. Changes nothing."""

    @abstractmethod
    def load(self, key: Hashable) -> KVBlock:
        """The block's tensors (KeyError if absent). Cold verifies the checksum (IntegrityError)."""

    @abstractmethod
    def store(self, key: Hashable, block: KVBlock) -> None:
        """Holds a copy of the block; the caller's tensors are never modified. TierFullError if no room."""

    @abstractmethod
    def touch(self, key: Hashable) -> None:
        """Marks the block as recently used (LRU order for eviction)."""

    @abstractmethod
    def drop(self, key: Hashable) -> None:
        """Forgets the block and frees its bytes (no-op if absent)."""

    def describe(self) -> dict:
        return {"medium": self.medium, "capacity_bytes": self.capacity_bytes,
                "usage_bytes": self.usage_bytes}


class WarmTier(Tier):
    """Host memory. Blocks are copied in (pinned when a GPU is present, for fast transfers)."""

    medium = "warm"

    def __init__(self, capacity_bytes: int, pin: bool = False):
        self._capacity = int(capacity_bytes)
        self._blocks: OrderedDict[Hashable, KVBlock] = OrderedDict()
        self._usage = 0
        self._pin = pin

    @property
    def capacity_bytes(self) -> int:
        return self._capacity

    @property
    def usage_bytes(self) -> int:
        return self._usage

    def __len__(self) -> int:
        return len(self._blocks)

    def keys(self) -> list[Hashable]:
        return list(self._blocks)

    def lookup(self, key: Hashable) -> bool:
        return key in self._blocks

    def load(self, key: Hashable) -> KVBlock:
        return self._blocks[key]

    def load_many(self, keys: list[Hashable]) -> list[KVBlock]:
        """`load` then `touch` for each key, in one pass (KeyError if one is absent)."""
        blocks, move = self._blocks, self._blocks.move_to_end
        out = [blocks[k] for k in keys]
        for k in keys:
            move(k)
        return out

    def store(self, key: Hashable, block: KVBlock, take_ownership: bool = False) -> None:
        """Copies the block to host memory (the caller's tensors stay untouched), or keeps the
        given host tensors as they are with `take_ownership` (the caller promises not to reuse them)."""
        if key in self._blocks:
            return
        if self._usage + block.nbytes > self._capacity:
            raise TierFullError(f"warm tier full: {self._usage} + {block.nbytes} B > {self._capacity} B")
        own = take_ownership and block.keys.device.type == "cpu"
        k = block.keys.detach() if own else block.keys.detach().to("cpu", copy=True)  # (H_kv, T, D)
        v = block.values.detach() if own else block.values.detach().to("cpu", copy=True)
        if self._pin:
            k, v = k.pin_memory(), v.pin_memory()
        self._blocks[key] = KVBlock(k, v, block.checksum)
        self._usage += block.nbytes

    def touch(self, key: Hashable) -> None:
        if key in self._blocks:
            self._blocks.move_to_end(key)

    def drop(self, key: Hashable) -> None:
        block = self._blocks.pop(key, None)
        if block is not None:
            self._usage -= block.nbytes


class HotSlots(Tier):
    """`n_slots` block slots of one layer in hot memory: K and V buffers (heads, n_slots * T, D),
    for every KV head or, with `head`, for that one KV head (a layer then has one HotSlots per
    head, and each head holds the blocks it chose).

    The buffers are reserved from the HotPool once (so the budget can never be exceeded by
    promotions); `bias` (n_slots * T,) is 0 for columns holding a live token, -inf otherwise,
    which is how attention skips empty slots without copying anything."""

    medium = "hot"

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, bias: torch.Tensor,
                 block_tokens: int, pool: HotPool, head: int | None = None):
        self.k, self.v, self.bias = keys, values, bias  # views into the layer's hot buffer
        self.heads = slice(None) if head is None else slice(head, head + 1)  # of a block
        self.T = block_tokens
        self.n_slots = keys.shape[1] // block_tokens
        self.block_bytes = 2 * keys.shape[0] * block_tokens * keys.shape[2] * keys.element_size()
        self.slot_of: dict[Hashable, int] = {}
        self._free = list(range(self.n_slots - 1, -1, -1))
        self._pool = pool
        self._checksums: dict[Hashable, int] = {}

    @property
    def capacity_bytes(self) -> int:
        return self.n_slots * self.block_bytes

    @property
    def usage_bytes(self) -> int:
        return len(self.slot_of) * self.block_bytes

    @property
    def free_slots(self) -> int:
        return len(self._free)

    def lookup(self, key: Hashable) -> bool:
        return key in self.slot_of

    def load(self, key: Hashable) -> KVBlock:
        s = self.slot_of[key] * self.T
        return KVBlock(self.k[:, s : s + self.T], self.v[:, s : s + self.T], self._checksums[key])

    def store(self, key: Hashable, block: KVBlock, masked_prefix: int = 0) -> None:
        """Copies the block into a free slot; `masked_prefix` leading tokens stay masked (e.g. the
        attention sinks, which are attended from their own buffer)."""
        if key in self.slot_of:
            return
        if not self._free:
            raise TierFullError("hot slots full")
        slot = self._free.pop()
        s = slot * self.T
        k, v = block.keys[self.heads], block.values[self.heads]  # (heads, T, D)
        self.k[:, s : s + self.T].copy_(to_hot(k, self.k.dtype), non_blocking=True)
        self.v[:, s : s + self.T].copy_(to_hot(v, self.v.dtype), non_blocking=True)
        self.bias[s : s + self.T] = 0.0
        if masked_prefix:
            self.bias[s : s + masked_prefix] = float("-inf")
        self.slot_of[key] = slot
        self._checksums[key] = block.checksum
        self._pool.occupy(self.block_bytes)

    def store_many(self, keys: list[Hashable], k: torch.Tensor, v: torch.Tensor,
                   checksums: list[int], masked_prefix: int = 0,
                   masked_key: Hashable | None = None) -> None:
        """`store` for several blocks given as rows already sliced to this tier's heads
        (k, v: (heads, len(keys) * T, D), block after block), in one copy per tensor: decode
        swaps ~8 blocks per head and step at 8K tokens, and a copy per block cost ~5 ms per
        token in overhead. `masked_prefix` leading tokens of block `masked_key` stay masked.
        The keys must not be held here yet."""
        if not keys:
            return
        if len(keys) > len(self._free):
            raise TierFullError("hot slots full")
        slots = [self._free.pop() for _ in keys]
        T, D = self.T, self.k.shape[2]
        idx = torch.tensor(slots, device=self.k.device)
        heads = self.k.shape[0]
        k, v = to_hot(k, self.k.dtype).to(self.k.device), to_hot(v, self.v.dtype).to(self.v.device)
        self.k.view(heads, self.n_slots, T, D)[:, idx] = k.view(heads, -1, T, D)
        self.v.view(heads, self.n_slots, T, D)[:, idx] = v.view(heads, -1, T, D)
        self.bias.view(self.n_slots, T)[idx] = 0.0
        for key, slot, checksum in zip(keys, slots, checksums, strict=True):
            self.slot_of[key] = slot
            self._checksums[key] = checksum
            if key == masked_key and masked_prefix:
                self.bias[slot * T : slot * T + masked_prefix] = float("-inf")
        self._pool.occupy(self.block_bytes * len(keys))

    def drop_many(self, keys: list[Hashable]) -> None:
        """`drop` for several blocks, one bias write for all."""
        slots = [s for s in (self.slot_of.pop(k, None) for k in keys) if s is not None]
        if not slots:
            return
        for k in keys:
            self._checksums.pop(k, None)
        self.bias.view(self.n_slots, self.T)[torch.tensor(slots, device=self.bias.device)] = float("-inf")
        self._free.extend(slots)
        self._pool.vacate(self.block_bytes * len(slots))

    def touch(self, key: Hashable) -> None:
        pass  # placement in hot is decided by the AHAS heat, not by recency

    def drop(self, key: Hashable) -> None:
        slot = self.slot_of.pop(key, None)
        if slot is None:
            return
        self._checksums.pop(key, None)
        self.bias[slot * self.T : (slot + 1) * self.T] = float("-inf")
        self._free.append(slot)
        self._pool.vacate(self.block_bytes)

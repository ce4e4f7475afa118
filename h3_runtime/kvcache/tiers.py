"""The tiers behind one small interface (in the spirit of vllm's kv_offload):
`lookup / load / store / touch / drop`, and each tier names its `medium` and reports its
`capacity_bytes` and `usage_bytes`.

- `HotSlots`: one layer's block slots in hot memory (the model's device), carved out of a
  `HotPool` reservation; a block must be here to be attended.
- `WarmTier`: host memory, full blocks (plus the per-block summaries, kept by the layer store).
- `KVBlockStore` (cold.py): checksummed files under `cold_storage_path`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

import torch

from h3_runtime.kvcache import hot_codec
from h3_runtime.kvcache.block import BlockId, KVBlock, to_hot
from h3_runtime.kvcache.hot import HotPool
from h3_runtime.kvcache.hot_codec import hot_bytes_per_token_layer

# (block indices, KV head of each) -> their (M, T, D) keys and values, or None: LayerSlots.store
Gather = Callable[[Sequence[int], Sequence[int]], "tuple[torch.Tensor, torch.Tensor] | None"]


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


class _Arena:
    """Warm blocks of one shape and dtype (in practice one layer's) as rows of two contiguous
    host tensors (rows, H_kv, T, D), so a step's blocks are gathered by one indexing op per
    tensor (`WarmTier.gather`) rather than stacked whole from scattered tensors first (decode
    at 8K tokens and 10%: a re-selection's block stores take half the time they took).

    A dropped block's row is reused (free list). The arena grows to what a prefill announces
    (`WarmTier.reserve`), else by doubling when full, while every arena's rows together fit
    the tier's capacity, and never shrinks (`WarmTier.reserved_bytes`); a row is written
    only when a block is stored in it, so on a CPU rows never used need no physical memory."""

    def __init__(self, shape: tuple[int, ...], dtype: torch.dtype, pin: bool):
        self.shape, self.dtype, self.pin = shape, dtype, pin
        self.k = self.v = torch.empty((0, *shape), dtype=dtype)
        self.free: list[int] = []  # popped from the end: the lowest free row first
        self.row_of: dict[Hashable, int] = {}
        # the rows of BlockId keys by block index (-1: not here): `WarmTier.gather` looks a
        # layer's rows up with one indexing op instead of a dict lookup per block (decode's
        # exact re-scoring gathers ~900 (block, head) slices a layer at 8K tokens)
        self.row_by_block = torch.full((0,), -1, dtype=torch.long)

    def place(self, key: Hashable, row: int) -> None:
        """Records that `key` is held in `row` (-1: dropped)."""
        if row >= 0:
            self.row_of[key] = row
        else:
            self.row_of.pop(key, None)
        if not isinstance(key, BlockId):
            return
        if key.index >= self.row_by_block.numel():
            grown = torch.full((max(64, 2 * key.index + 1),), -1, dtype=torch.long)
            grown[: self.row_by_block.numel()] = self.row_by_block
            self.row_by_block = grown
        self.row_by_block[key.index] = row

    @property
    def reserved_bytes(self) -> int:
        return self.k.nbytes + self.v.nbytes

    def grow(self, rows: int) -> None:
        """Re-allocates with `rows` rows (more than now), the held rows copied over."""
        old = self.k.shape[0]
        k = torch.empty((rows, *self.shape), dtype=self.dtype, pin_memory=self.pin)
        v = torch.empty((rows, *self.shape), dtype=self.dtype, pin_memory=self.pin)
        k[:old], v[:old] = self.k, self.v
        self.k, self.v = k, v
        self.free.extend(range(rows - 1, old - 1, -1))


class WarmTier(Tier):
    """Host memory (pinned when a GPU is present, for fast transfers). Every block is copied in,
    into a row of its layer's arena (`_Arena`), so the caller's tensors are never kept."""

    medium = "warm"

    def __init__(self, capacity_bytes: int, pin: bool = False):
        self._capacity = int(capacity_bytes)
        self._blocks: OrderedDict[Hashable, KVBlock] = OrderedDict()  # LRU order; views into arenas
        self._arena_of: dict[Hashable, _Arena] = {}
        self._arenas: dict[tuple, _Arena] = {}
        self._usage = 0
        self._pin = pin

    @property
    def capacity_bytes(self) -> int:
        return self._capacity

    @property
    def usage_bytes(self) -> int:
        return self._usage

    @property
    def reserved_bytes(self) -> int:
        """Host bytes the arenas hold, used rows or not (>= usage_bytes)."""
        return sum(a.reserved_bytes for a in self._arenas.values())

    def describe(self) -> dict:
        return super().describe() | {"reserved_bytes": self.reserved_bytes}

    def __len__(self) -> int:
        return len(self._blocks)

    def keys(self) -> list[Hashable]:
        return list(self._blocks)

    def lookup(self, key: Hashable) -> bool:
        return key in self._blocks

    def load(self, key: Hashable) -> KVBlock:
        """The block's tensors: views of its arena row, valid until the block is dropped (the
        row is then reused), so callers use them at once or copy them."""
        return self._blocks[key]

    def load_many(self, keys: list[Hashable]) -> list[KVBlock]:
        """`load` then `touch` for each key, in one pass (KeyError if one is absent)."""
        blocks, move = self._blocks, self._blocks.move_to_end
        out = [blocks[k] for k in keys]
        for k in keys:
            move(k)
        return out

    def gather(self, layer: int, blocks: Sequence[int] | torch.Tensor,
               heads: Sequence[int] | torch.Tensor, values: bool = True
               ) -> tuple[torch.Tensor, torch.Tensor | None] | None:
        """Head `heads[i]` of block `BlockId(layer, blocks[i])`, for every i, as (M, T, D) keys
        and values (None unless `values`): one indexing op per tensor, no Python per block.
        None where the blocks are not all here in one arena (the caller then stacks the blocks
        it holds, or keeps its estimates)."""
        blocks = torch.as_tensor(blocks, dtype=torch.long)
        if not blocks.numel():
            return None
        arena = self._arena_of.get(BlockId(layer, int(blocks[0])))
        if arena is None or int(blocks.max()) >= arena.row_by_block.numel():
            return None
        rows = arena.row_by_block[blocks]  # -1: not here, or in another arena
        if bool((rows < 0).any()):
            return None
        # (row, head) -> row * H_kv + head of the (rows * H_kv, T, D) view: index_select copies
        # whole (T, D) slices, ~2x faster than advanced indexing on two axes
        H, T, D = arena.shape
        flat = rows.mul_(H).add_(torch.as_tensor(heads, dtype=torch.long))
        return (arena.k.view(-1, T, D).index_select(0, flat),
                arena.v.view(-1, T, D).index_select(0, flat) if values else None)

    def store(self, key: Hashable, block: KVBlock) -> None:
        """Copies the block into its arena (the caller's tensors stay untouched)."""
        if key in self._blocks:
            return
        if self._usage + block.nbytes > self._capacity:
            raise TierFullError(f"warm tier full: {self._usage} + {block.nbytes} B > {self._capacity} B")
        k, v = block.keys.detach(), block.values.detach()  # (H_kv, T, D)
        arena = self._arena(key, tuple(k.shape), k.dtype)
        if not arena.free:
            self._grow(arena, 2 * arena.k.shape[0])
        row = arena.free.pop()
        arena.k[row].copy_(k)
        arena.v[row].copy_(v)
        arena.place(key, row)
        self._arena_of[key] = arena
        self._blocks[key] = KVBlock(arena.k[row], arena.v[row], block.checksum)
        self._usage += block.nbytes

    def reserve(self, key: Hashable, shape: tuple[int, ...], dtype: torch.dtype, rows: int) -> None:
        """Room for `rows` blocks of `shape` and `dtype` in the arena `key` would be stored in, in
        one allocation: a prefill knows how many blocks it will add, and growing the arena as
        they come copies it ~log2(rows) times (and once more wherever it fills during decode)."""
        arena = self._arena(key, shape, dtype)
        if arena.k.shape[0] < rows:
            self._grow(arena, rows, needed=False)

    def _arena(self, key: Hashable, shape: tuple[int, ...], dtype: torch.dtype) -> _Arena:
        group = (key.layer if isinstance(key, BlockId) else None, shape, dtype)
        arena = self._arenas.get(group)
        if arena is None:
            arena = self._arenas[group] = _Arena(shape, dtype, self._pin)
        return arena

    def _grow(self, arena: _Arena, rows: int, needed: bool = True) -> None:
        """Grows `arena` to `rows` rows (at least 16), as far as the tier's capacity allows: the
        arenas' reserved bytes never exceed it (pinned memory, on a GPU machine, is physical
        whether used or not). Where it allows not one more row, a store (`needed`) gets
        TierFullError: the block goes to cold, as when warm is full. The held blocks are
        pointed at the new tensors."""
        have = arena.k.shape[0]
        row_bytes = 2 * math.prod(arena.shape) * arena.dtype.itemsize
        room = (self._capacity - self.reserved_bytes) // row_bytes
        new = min(max(16, rows), have + room)
        if new <= have:
            if needed:
                raise TierFullError(f"warm tier: its {self._capacity} B are reserved by other layers' rows")
            return
        arena.grow(new)
        for key, r in arena.row_of.items():
            self._blocks[key] = KVBlock(arena.k[r], arena.v[r], self._blocks[key].checksum)

    def touch(self, key: Hashable) -> None:
        if key in self._blocks:
            self._blocks.move_to_end(key)

    def drop(self, key: Hashable) -> None:
        block = self._blocks.pop(key, None)
        if block is not None:
            arena = self._arena_of.pop(key)
            arena.free.append(arena.row_of[key])
            arena.place(key, -1)
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
                 block_tokens: int, pool: HotPool, head: int | None = None,
                 scales: tuple[torch.Tensor, torch.Tensor] | None = None):
        self.k, self.v, self.bias = keys, values, bias  # views into the layer's hot buffer
        # int8 buffers: K's and V's scales per (head, token), views too (hot_codec.py)
        self.ks, self.vs = scales if scales is not None else (None, None)
        self.heads = slice(None) if head is None else slice(head, head + 1)  # of a block
        self.T = block_tokens
        self.n_slots = keys.shape[1] // block_tokens
        self.block_bytes = block_tokens * hot_bytes_per_token_layer(keys.shape[0], keys.shape[2],
                                                                    keys.dtype)
        self.slot_of: dict[Hashable, int] = {}
        self._free = list(range(self.n_slots - 1, -1, -1))
        self._pool = pool
        self._checksums: dict[Hashable, int] = {}
        self.version = 0  # bumped on every change of the held blocks (LayerSlots.held caches)

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
        if self.ks is not None:  # int8: de-quantised copies
            cols = (slice(None), slice(s, s + self.T))
            return KVBlock(hot_codec.read(self.k, self.ks, cols, torch.float32),
                           hot_codec.read(self.v, self.vs, cols, torch.float32), self._checksums[key])
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
        if self.ks is not None:
            cols = (slice(None), slice(s, s + self.T))
            hot_codec.write(self.k, self.ks, cols, k)
            hot_codec.write(self.v, self.vs, cols, v)
        else:
            self.k[:, s : s + self.T].copy_(to_hot(k, self.k.dtype), non_blocking=True)
            self.v[:, s : s + self.T].copy_(to_hot(v, self.v.dtype), non_blocking=True)
        self.bias[s : s + self.T] = 0.0
        if masked_prefix:
            self.bias[s : s + masked_prefix] = float("-inf")
        self.slot_of[key] = slot
        self._checksums[key] = block.checksum
        self._pool.occupy(self.block_bytes)
        self.version += 1

    def claim(self, keys: list[Hashable], checksums: list[int]) -> list[int]:
        """Books free slots for blocks not held here yet (bookkeeping and the pool's occupancy
        only: the caller copies the bytes in, e.g. `LayerSlots.store`). Returns their slots."""
        if len(keys) > len(self._free):
            raise TierFullError("hot slots full")
        slots = [self._free.pop() for _ in keys]
        for key, slot, checksum in zip(keys, slots, checksums, strict=True):
            self.slot_of[key] = slot
            self._checksums[key] = checksum
        self._pool.occupy(self.block_bytes * len(keys))
        self.version += 1
        return slots

    def vacate(self, keys: list[Hashable]) -> list[int]:
        """Frees the slots of those of `keys` held here (bookkeeping only: the caller masks
        their columns). Returns the freed slots."""
        slots = [s for s in (self.slot_of.pop(k, None) for k in keys) if s is not None]
        if slots:
            for k in keys:
                self._checksums.pop(k, None)
            self._free.extend(slots)
            self._pool.vacate(self.block_bytes * len(slots))
            self.version += 1
        return slots

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
        self.version += 1


class LayerSlots(Sequence[HotSlots]):
    """One layer's block slots, per KV head: one `HotSlots` per head (its bookkeeping: which
    block is in which slot) over one shared region of the layer's hot buffer, so a step's
    swaps for every head are one copy per tensor. Decode at 8K tokens and 10% swaps ~40
    block-heads per layer and re-selection, little data: on a CPU the cost of a copy is mostly
    the op itself, so one for all heads beats one per head.

    k, v: (H_kv, n_slots * T, D) and bias: (H_kv, n_slots * T), views of the layer's buffer;
    `scales`: an int8 buffer's K and V scales, (H_kv, n_slots * T) views (hot_codec.py)."""

    def __init__(self, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor, block_tokens: int,
                 pool: HotPool, scales: tuple[torch.Tensor, torch.Tensor] | None = None):
        H, N, D = k.shape
        T = block_tokens
        self.heads = [HotSlots(k[h : h + 1], v[h : h + 1], bias[h], T, pool, head=h,
                               scales=None if scales is None
                               else (scales[0][h : h + 1], scales[1][h : h + 1]))
                      for h in range(H)]
        n = N // T
        self.k, self.v = k.view(H, n, T, D), v.view(H, n, T, D)  # (head, slot, token, dim)
        self.ks, self.vs = ((None, None) if scales is None
                            else (scales[0].view(H, n, T), scales[1].view(H, n, T)))
        self.bias = bias.view(H, n, T)
        self._held: tuple[tuple[int, ...], torch.Tensor, torch.Tensor] | None = None

    def __getitem__(self, h: int) -> HotSlots:  # Sequence: a head's slots
        return self.heads[h]

    def __len__(self) -> int:
        return len(self.heads)

    @property
    def n_slots(self) -> int:
        return self.heads[0].n_slots if self.heads else 0

    def drop(self, evict: list[list[Hashable]]) -> None:
        """Drops each head's `evict[h]` blocks (absent ones are skipped): one bias write."""
        heads, slots = [], []
        for h, (head, keys) in enumerate(zip(self.heads, evict, strict=True)):
            freed = head.vacate(keys) if keys else []
            heads += [h] * len(freed)
            slots += freed
        if slots:
            hi, si = torch.tensor([heads, slots], device=self.bias.device)
            self.bias[hi, si] = float("-inf")

    def clear(self) -> None:
        """Drops every block of every head."""
        self.drop([list(head.slot_of) for head in self.heads])

    def store(self, wanted: list[list[int]], blocks: dict[int, KVBlock], masked_prefix: int = 0,
              masked_key: int | None = None, gather: Gather | None = None) -> None:
        """Copies each head's `wanted[h]` blocks (not held yet; `blocks` has their host bytes,
        each block wanted by some head) into free slots of that head, one copy per tensor for
        every head's slices (rather than a Python view per block and head: tens of them per
        layer and step). The slices come from `gather` (block indices, heads) -> (M, T, D) keys
        and values, one indexing op each where the warm tier holds the blocks in one arena
        (`WarmTier.gather`); else, or if it returns None, the blocks are stacked once and
        indexed. `masked_prefix` leading tokens of block `masked_key` stay masked (the
        attention sinks, attended from their own buffer)."""
        heads, slots, want_blocks = [], [], []
        masked: list[tuple[int, int]] = []
        for h, (head, want) in enumerate(zip(self.heads, wanted, strict=True)):
            if not want:
                continue
            slots += head.claim(want, [blocks[b].checksum for b in want])
            heads += [h] * len(want)
            want_blocks += want
            if masked_prefix and masked_key in want:
                masked.append((h, head.slot_of[masked_key]))
        if not slots:
            return
        got = gather(want_blocks, heads) if gather is not None else None
        if got is None:  # stack every wanted block once, then take each pair's head
            row_of = {b: i for i, b in enumerate(blocks)}
            src = torch.tensor([[row_of[b] for b in want_blocks], heads])
            got = (torch.stack([blk.keys for blk in blocks.values()])[src[0], src[1]],
                   torch.stack([blk.values for blk in blocks.values()])[src[0], src[1]])
        dev = self.k.device
        hi, si = torch.tensor([heads, slots], device=dev)
        # (the gathered (M, T, D) copies are this call's own: clamped in place)
        hot_codec.write(self.k, self.ks, (hi, si), got[0], scratch=True)
        hot_codec.write(self.v, self.vs, (hi, si), got[1], scratch=True)
        self.bias[hi, si] = 0.0
        for h, slot in masked:
            self.bias[h, slot, :masked_prefix] = float("-inf")

    def held(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(head index, block index) of every block held, as two long tensors (for per-block
        scores and the heat's access counts); cached until a head's blocks change."""
        versions = tuple(head.version for head in self.heads)
        if self._held is None or self._held[0] != versions:
            blocks = [b for head in self.heads for b in head.slot_of]
            heads = [h for h, head in enumerate(self.heads) for _ in head.slot_of]
            pairs = torch.tensor([heads, blocks], dtype=torch.long)
            self._held = (versions, pairs[0], pairs[1])
        return self._held[1], self._held[2]

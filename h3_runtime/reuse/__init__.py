"""Cold-tier KV reuse: documents prefilled once, their KV stored in the cold tier and loaded for
every later question instead of being recomputed.

- `rope`      re-positions cached keys by a position delta (exact RoPE composition)
- `blocks`    the on-disk format of a document's KV: block-group files with CRC32 checksums
- `store`     `DocKVStore`: content-keyed cold-tier store of document KV with a size cap
- `assemble`  builds a prompt's cache from computed text and loaded spans (prefix reuse, RoPE
              re-positioning + selective recompute, CacheBlend-style) and generates greedily
- `quality`   compares a reused cache and its answer against a full prefill
"""

"""Cold-tier KV reuse: documents prefilled once, their KV stored in the cold tier and loaded for
every later question instead of being recomputed.

- `rope`      re-positions cached keys by a position delta (exact RoPE composition)
- `blocks`    the on-disk format of a document's KV: block-group files with CRC32 checksums
- `store`     `DocKVStore`: content-keyed store of document KV with a size cap (LRU eviction)
- `doc_kv`    prefills a document once and stores its KV
- `prompt`    the prompt layout that makes stored KV an exact prefix / a reusable chunk slice
- `cache_io`  puts loaded KV into any HF cache (DynamicCache or the runtime's tiered H3Cache)
- `assemble`  builds a prompt's cache from computed text and loaded spans (prefix reuse, RoPE
              re-positioning + selective recompute, CacheBlend-style) and decodes greedily
- `runtime`   `ReuseRuntime`: precompute / segments / answer with the stats of `h3 ask`
Quality against a full prefill is measured by `h3 bench --scenario docs|code|multihop`.
"""

"""Cold-tier KV reuse: documents prefilled once, their KV stored in the cold tier and loaded for
every later question instead of being recomputed.

- `rope`      re-positions cached keys by a position delta (exact RoPE composition)
- `doc_kv`    prefills a document once and stores its KV as blocks of the KV block store
              (kvcache/cold.py), indexed per document (`DocumentKV`)
- `prompt`    the prompt layout that makes stored KV an exact prefix / a reusable chunk slice
- `cache_io`  `ReuseCache`, what reuse needs of a cache (PlainCache, the tiered H3Cache)
- `assemble`  builds a prompt's cache from computed text and loaded spans (prefix reuse, RoPE
              re-positioning + selective recompute, CacheBlend-style) and decodes greedily
- `runtime`   `ReuseRuntime`: precompute / segments / answer with the stats of `h3 ask`
Quality against a full prefill is measured by `h3 bench --scenario docs|code|multihop`.
"""

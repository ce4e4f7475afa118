"""`h3 bench --scenario trace`: the corpus KV cache over streams of questions, AHAS vs LRU, LFU
and no cache, side by side on the same streams.

Corpus: the chunks of an ingested store (`--home`, default the development store, read only):
per half of the development split (tune / check, by company), the first `DOCS` filings and
their first `UNITS_PER_DOC` chunks of 96-200 tokens (long enough that a recalled chunk's KV is
loaded, not recomputed; short enough that head + chunk is one 256-token stored block). Each
unit's KV is the bundled model's real KV of that chunk (float16), stored once in a KV block
store under a temp folder (kept between runs: the blocks are content-addressed, so a later run
reuses exactly the same KV), never in the store read.

Streams (seeded, `QUESTIONS` questions each, a question's evidence = its focus chunk and its
`EVIDENCE - 1` most similar chunks, by the chunks' stored embeddings):
- zipf: Zipf-popular filings, Zipf-popular chunks within a filing;
- sequential: analysts reading a filing passage after passage (each question the next
  EVIDENCE chunks in reading order, 8 questions a reading);
- drift: topics (a chunk and its nearest chunks) held for a few questions, then a jump, a third
  of the jumps back to an earlier topic;
- burst: three in four questions on one company's filing, the rest Zipf.

Every policy replays the same stream with the same budgets: hot = `runtime.hbm_size_gb`
(shipped), warm = WARM_SHARE of the half's corpus KV (smaller than the corpus, as the issue
asks). Hit rates and bytes come from the real cache reading real blocks; time to first token is
measured for real (blocks from their tier, then the model prefills the question over them
through the runtime's `h3 ask` path) on every SAMPLE_EVERY-th question; the first token of each
sampled question must be the same under every policy. The ablation table replays AHAS with one
rule off at a time.

One 40-question stream is a noisy figure: a drift stream has 8 topics, and which of them return
moves AHAS's margin over LRU by several points (seed 0 of the development store: +11.7 on tune,
+3.3 on check; over 20 seeds the same halves read +7.2 and +5.2). `seed_spread` replays
SPREAD_SEEDS streams of each kind per policy with placeholder blocks (hit rates depend only on
which blocks are read) and reports the mean and the range of AHAS's margin: the figure to
compare against a target, beside the real-KV run of seed 0. `drift_misses` says where the
drift streams' misses are (a topic's first reads, later first reads a prefetch could save,
re-reads), for AHAS and LRU.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import DynamicCache

from h3_runtime.config import H3Config
from h3_runtime.kvcache.block import KVBlock
from h3_runtime.kvcache.corpus import GIB, CorpusKVCache
from h3_runtime.scheduler.corpus_policy import POLICIES, RULES, make_policy

KINDS = ("zipf", "sequential", "drift", "burst")
DOCS, UNITS_PER_DOC, QUESTIONS, EVIDENCE = 3, 40, 40, 3
QUICK = {"docs": 2, "units": 24, "questions": 16}
MIN_TOKENS, MAX_TOKENS = 96, 200
WARM_SHARE = 0.25
SAMPLE_EVERY = 5
SPREAD_SEEDS = 20  # streams per kind in `seed_spread` (seed 0 is the real-KV run's stream)
READING = 8  # questions a sequential reading lasts
DWELL = 5  # questions a drift topic lasts
RETURN = 1 / 3  # share of drift jumps back to an earlier topic


@dataclass(slots=True)
class Unit:
    key: str  # the chunk id (its stored document in the bench's KV store)
    doc: str
    order: int
    page: int
    text: str
    section: str
    vector: np.ndarray


@dataclass(slots=True)
class Question:
    focus: int
    evidence: list[int]  # unit indices, focus first
    vector: np.ndarray


# ---- corpus -------------------------------------------------------------------------------------

def load_corpus(home: Path, docs: int, per_doc: int,
                fits: Callable[[dict], bool] | None = None) -> dict[str, list[Unit]]:
    """Per half ("tune", "check"): the units (module docstring), read only from the store;
    `fits(row)`: whether a chunk row is usable (the bench: its KV is one stored block)."""
    import lancedb

    from benchmarks.documents.split import company_key, halves
    from h3.resources.store.text_once import fill_text

    if not (home / "lancedb").is_dir():
        raise FileNotFoundError(f"{home}: no document store (no lancedb folder): ingest a corpus "
                                "there first (H3_HOME=... h3 index-build --path ...)")
    db = lancedb.connect(str(home / "lancedb"))
    if not {"documents", "chunks"} <= set(db.table_names()):
        raise FileNotFoundError(f"{home / 'lancedb'}: no documents stored")
    documents = db.open_table("documents").search().select(["doc_id", "source", "status"]) \
        .limit(100_000).to_list()
    source = {d["doc_id"]: d["source"] for d in documents}
    if not source:
        raise FileNotFoundError(f"{home / 'lancedb'}: no documents stored")
    split = halves(source.values())
    # `text` is stored once (resources/store/text_once.py): filled from `fts_text` where null
    rows = fill_text(db.open_table("chunks").search().select(
        ["doc_id", "chunk_id", "page", "text", "fts_text", "section", "token_count", "vector"])
        .limit(1_000_000).to_arrow(), drop_fts_text=True).to_pylist()
    by_doc: dict[str, list[dict]] = {}
    for r in rows:
        if r["doc_id"] in source:
            by_doc.setdefault(r["doc_id"], []).append(r)

    def usable(doc: str) -> list[dict]:
        """The document's first `per_doc` usable chunks, in reading order."""
        kept = []
        for r in sorted(by_doc[doc], key=lambda r: int(r["chunk_id"].rsplit(":c", 1)[-1])):
            if len(kept) == per_doc:
                break
            if MIN_TOKENS <= r["token_count"] <= MAX_TOKENS and (fits is None or fits(r)):
                kept.append(r)
        return kept

    out: dict[str, list[Unit]] = {"tune": [], "check": []}
    for half in out:
        # whole filings of the half's companies, in a fixed order (hash of doc id): those with
        # `per_doc` usable chunks first, so that a half's corpus does not shrink to a few dozen
        # chunks when an 8-K or a release sorts first (the halves' sizes stay comparable);
        # shorter ones only where too few documents have them (a store of short files)
        full, short = [], []
        for doc in sorted(d for d in by_doc if split[company_key(source[d])] == half):
            kept = usable(doc)
            (full if len(kept) == per_doc else short).append((doc, kept))
            if len(full) == docs:  # (no need to read the rest's chunks)
                break
        for doc, kept in sorted((full + short)[:docs]):
            for i, r in enumerate(kept):
                v = np.asarray(r["vector"], dtype=np.float32)
                out[half].append(Unit(r["chunk_id"], doc, i, int(r["page"]), r["text"],
                                      r["section"] or "", v / max(np.linalg.norm(v), 1e-12)))
    return out


# ---- streams ------------------------------------------------------------------------------------

def make_trace(kind: str, units: list[Unit], n: int, k: int = EVIDENCE, seed: int = 0
               ) -> list[Question]:
    """A replayable stream of `n` questions of one kind over `units` (module docstring)."""
    if kind not in KINDS:
        raise ValueError(f"unknown trace kind {kind!r}; kinds: {', '.join(KINDS)}")
    rng = np.random.default_rng(seed + KINDS.index(kind) * 1000)
    vecs = np.stack([u.vector for u in units])
    sims = vecs @ vecs.T
    docs = sorted({u.doc for u in units})
    members = {d: [i for i, u in enumerate(units) if u.doc == d] for d in docs}

    def ask(focus: int, scope: list[int] | None = None) -> Question:
        pool = np.array(scope if scope is not None else range(len(units)))
        near = [int(j) for j in pool[np.argsort(-sims[focus, pool])] if j != focus][:k - 1]
        return Question(focus, [focus, *near], units[focus].vector)

    def zipf_pick(items: list, a: float) -> object:
        ranks = np.arange(1, len(items) + 1, dtype=np.float64) ** -a
        return items[rng.choice(len(items), p=ranks / ranks.sum())]

    doc_rank = [docs[i] for i in rng.permutation(len(docs))]
    unit_rank = {d: [members[d][i] for i in rng.permutation(len(members[d]))] for d in docs}

    def zipf_question() -> Question:
        d = zipf_pick(doc_rank, 1.2)
        return ask(zipf_pick(unit_rank[d], 1.0), members[d])

    out: list[Question] = []
    if kind == "zipf":
        out = [zipf_question() for _ in range(n)]
    elif kind == "sequential":
        readable = [d for d in docs if len(members[d]) >= k]  # a passage is k chunks
        if not readable:
            raise ValueError(f"a sequential trace needs a document with at least {k} usable "
                             f"chunks; the largest here has {max(map(len, members.values()))}")
        while len(out) < n:
            d = readable[int(rng.integers(len(readable)))]
            chain = members[d]
            start = int(rng.integers(0, max(len(chain) - k * READING, 0) + 1))
            for step in range(READING):
                part = chain[start + step * k: start + (step + 1) * k]
                if len(part) < k or len(out) >= n:
                    break
                out.append(Question(part[0], list(part), units[part[0]].vector))
    elif kind == "drift":
        topics: list[int] = []
        while len(out) < n:
            if topics and rng.random() < RETURN:
                seed_unit = topics[int(rng.integers(len(topics)))]
            else:
                seed_unit = int(rng.integers(len(units)))
                topics.append(seed_unit)
            near = [int(j) for j in np.argsort(-sims[seed_unit])[:8]]
            for _ in range(DWELL):
                if len(out) < n:
                    out.append(ask(near[int(rng.integers(len(near)))]))
    else:  # burst
        company = docs[int(rng.integers(len(docs)))]
        for _ in range(n):
            if rng.random() < 0.75:
                out.append(ask(members[company][int(rng.integers(len(members[company])))],
                               members[company]))
            else:
                out.append(zipf_question())
    return out


# ---- replay -------------------------------------------------------------------------------------

class SizeOnly:
    """A cold tier of placeholder blocks (for the ablation replays and tests: hit figures depend
    on which blocks are read, never on their bytes)."""

    def __init__(self) -> None:
        self.reads = 0

    def load(self, key: str) -> KVBlock:
        self.reads += 1
        z = torch.zeros(1, 1, 1, 1, dtype=torch.float16)
        return KVBlock(z, z, 0)


def replay(units: list[Unit], trace: list[Question], cache: CorpusKVCache,
           block_of: Callable[[str], str], sizes: dict[str, int],
           answer: Callable[[int, Question], dict] | None = None) -> dict:
    """Plays `trace` on `cache`; `answer(i, q)` (when given) answers sampled questions for real
    (it reads through the cache itself), other questions only read their evidence's blocks.
    Returns the cache's figures, the sequential first-use hits and the sampled answers."""
    _describe(cache, units, block_of, sizes)
    first_use, sampled = [], []
    prev: Question | None = None
    for i, q in enumerate(trace):
        got = answer(i, q) if answer is not None else None
        if got is None:
            tiers = _read_evidence(cache, units, q, block_of)
        else:
            tiers = got.pop("tiers")
            sampled.append(got)
        if prev is not None and units[q.focus].doc == units[prev.focus].doc \
                and units[q.focus].order == units[prev.evidence[-1]].order + 1:
            first_use.append(tiers["tiers"][0] != "cold" if tiers.get("tiers") else False)
        prev = q
    figures = cache.stats()
    figures["next_section_first_use_warm"] = (round(sum(first_use) / len(first_use), 4)
                                              if first_use else None)
    return {"figures": figures, "sampled": sampled}


def _describe(cache: CorpusKVCache, units: list[Unit], block_of: Callable[[str], str],
              sizes: dict[str, int]) -> None:
    for u in units:
        cache.describe(block_of(u.key), nbytes=sizes[u.key], group=u.doc, order=u.order,
                       vector=torch.from_numpy(u.vector))


def _read_evidence(cache: CorpusKVCache, units: list[Unit], q: Question,
                   block_of: Callable[[str], str]) -> dict:
    """One question that only reads its evidence's blocks; its reads by tier (end_question)."""
    cache.begin_question(torch.from_numpy(q.vector))
    for j in q.evidence:
        cache.get(block_of(units[j].key))
    return cache.end_question()


def policy_cache(name: str, cfg: H3Config, cold, warm_bytes: int, off=(),
                 dtype: torch.dtype | None = None) -> CorpusKVCache:
    return CorpusKVCache(cold, make_policy(name, cfg.scheduler, cfg.hbf, off),
                         hot_bytes=int(cfg.runtime.hbm_size_gb * GIB), warm_bytes=warm_bytes,
                         serve_dtype=dtype)


def dry_figures(units: list[Unit], trace: list[Question], cfg: H3Config, warm_bytes: int,
                sizes: dict[str, int], policy: str = "ahas", off=()) -> dict:
    cache = policy_cache(policy, cfg, SizeOnly(), warm_bytes, off)
    return replay(units, trace, cache, lambda k: k, sizes)["figures"]


def seed_spread(units: list[Unit], cfg: H3Config, warm_bytes: int, sizes: dict[str, int],
                kind: str, seeds: int = SPREAD_SEEDS, n: int = QUESTIONS) -> dict:
    """Warm hit rates of `seeds` streams of `kind` (seeds 0..seeds-1) replayed with placeholder
    blocks under each policy: per policy the mean, and AHAS's margin over LRU (mean, min, max,
    in hit-rate points: 0.05 = 5 points)."""
    rates: dict[str, list[float]] = {name: [] for name in POLICIES}
    for seed in range(seeds):
        trace = make_trace(kind, units, n, seed=seed)
        for name in POLICIES:
            rates[name].append(dry_figures(units, trace, cfg, warm_bytes, sizes,
                                           policy=name)["warm_hit_rate"])
    margin = [a - b for a, b in zip(rates["ahas"], rates["lru"], strict=True)]
    return {"seeds": seeds,
            "warm_hit_rate_mean": {name: round(statistics.mean(v), 4) for name, v in rates.items()},
            "ahas_minus_lru": {"mean": round(statistics.mean(margin), 4),
                               "min": round(min(margin), 4), "max": round(max(margin), 4)}}


def drift_misses(units: list[Unit], cfg: H3Config, warm_bytes: int, sizes: dict[str, int],
                 seeds: int = SPREAD_SEEDS, n: int = QUESTIONS,
                 policies: tuple[str, ...] = ("ahas", "lru")) -> dict:
    """Where the drift streams' misses are (placeholder blocks, seeds 0..seeds-1): each read is a
    block's first in the stream or a re-read, in a topic's first question or a later one (topics
    last DWELL questions). A first read in a topic's first question is a miss for any policy
    that cannot see the jump coming; a first read later in the topic is what a prefetch can
    save (`held_before`: misses of blocks that a prefetch had brought and that were dropped
    before this read); a re-read is what keeping blocks saves."""
    tally: dict[str, dict[str, dict[str, int]]] = {name: {} for name in policies}
    for seed in range(seeds):
        trace = make_trace("drift", units, n, seed=seed)
        for name in policies:
            cache = policy_cache(name, cfg, SizeOnly(), warm_bytes)
            _describe(cache, units, str, sizes)
            seen: set[str] = set()
            held: set[str] = set()  # every block in memory after some question (hot is in warm)
            for i, q in enumerate(trace):
                done = _read_evidence(cache, units, q, str)
                for key, tier in zip(done["accessed"], done["tiers"], strict=True):
                    part = ("re_read" if key in seen else
                            "first_read_topic_start" if i % DWELL == 0 else "first_read_later")
                    row = tally[name].setdefault(part, {"hit": 0, "miss": 0})
                    row["hit" if tier != "cold" else "miss"] += 1
                    if part == "first_read_later" and tier == "cold" and key in held:
                        row["held_before"] = row.get("held_before", 0) + 1
                    seen.add(key)
                held |= set(cache.warm)
    return tally


# ---- the scenario -------------------------------------------------------------------------------

def run_trace(out_dir: Path, quick: bool, home: str | None = None) -> dict:
    from h3_runtime.home import h3_home

    t_start = time.perf_counter()
    root = Path(home) if home else (Path("/work/h3-dev") if Path("/work/h3-dev/lancedb").exists()
                                    else h3_home())
    docs, per_doc, n_q = ((QUICK["docs"], QUICK["units"], QUICK["questions"]) if quick
                          else (DOCS, UNITS_PER_DOC, QUESTIONS))
    cfg = H3Config.load(Path(__file__).resolve().parents[2] / "h3_config.yaml", strict=False)
    runtime, store_info = _open_runtime(cfg)
    corpus = load_corpus(root, docs, per_doc, runtime.fits)
    bpt = runtime.store_bpt
    report: dict = {kind: {} for kind in KINDS}
    halves_out: dict = {}
    ablation: dict = {kind: {} for kind in KINDS}
    spread: dict = {kind: {} for kind in KINDS}
    misses: dict = {}
    for half, units in corpus.items():
        if not units:
            continue
        chunks = {u.key: _chunk(u) for u in units}
        keys = runtime.ensure_kv(units, chunks)  # unit key -> (doc index, block key)
        sizes = {u.key: runtime.block_bytes[keys[u.key]] for u in units}
        warm = int(WARM_SHARE * sum(sizes.values()))
        halves_out[half] = {"filings": len({u.doc for u in units}), "units": len(units),
                            "corpus_kv_bytes": sum(sizes.values()), "warm_budget_bytes": warm}
        for kind in KINDS:
            try:
                trace = make_trace(kind, units, n_q)
            except ValueError as exc:  # a store of short documents has no sequential reading
                halves_out[half].setdefault("skipped", {})[kind] = str(exc)
                continue
            for name in POLICIES:
                cache = policy_cache(name, cfg, runtime.blocks, warm, dtype=torch.float32)
                runtime.use(cache)
                result = replay(units, trace, cache, keys.__getitem__, sizes,
                                answer=runtime.answerer(units, chunks))
                report[kind].setdefault(name, {"halves": {}})["halves"][half] = result
            # ablation: the same stream, AHAS with one rule off (placeholder blocks: same reads)
            dry = {"all_rules": dry_figures(units, trace, cfg, warm, sizes)}
            for rule in RULES:
                dry[f"no_{rule}"] = dry_figures(units, trace, cfg, warm, sizes, off=(rule,))
            ablation[kind][half] = {k: _brief(v) for k, v in dry.items()}
            spread[kind][half] = seed_spread(units, cfg, warm, sizes, kind,
                                             seeds=4 if quick else SPREAD_SEEDS, n=n_q)
        misses[half] = drift_misses(units, cfg, warm, sizes, seeds=4 if quick else SPREAD_SEEDS,
                                    n=n_q)
    if not halves_out:
        raise FileNotFoundError(f"{root / 'lancedb'}: no chunk of {MIN_TOKENS}-{MAX_TOKENS} tokens "
                                "that fits one stored KV block: nothing to build a trace from")
    for kind in KINDS:
        if not report[kind]:  # no half could make this kind of stream
            report[kind] = {"skipped": {h: v["skipped"][kind] for h, v in halves_out.items()}}
            continue
        for name in POLICIES:
            report[kind][name] = _pool(report[kind][name]["halves"])
        report[kind]["answers_identical"] = _identical(report[kind])
    report.update(
        ablation=ablation, seed_spread=spread, drift_misses=misses, halves=halves_out,
        store=str(root), kv_store=store_info,
        trace={"questions": n_q, "evidence_per_question": EVIDENCE, "warm_share": WARM_SHARE,
               "hot_budget_bytes": int(cfg.runtime.hbm_size_gb * GIB),
               "ttft_sample": f"every {SAMPLE_EVERY}th question (the rest read their blocks only)",
               "bytes_per_token": bpt},
        command="h3 bench --scenario trace" + (" --quick" if quick else ""),
        load_average=os.getloadavg(), kv_prefill_s=round(runtime.prefill_s, 1),
        kv_units_computed=runtime.computed, elapsed_s=round(time.perf_counter() - t_start, 1))
    return report


def _chunk(u: Unit):
    from h3_runtime.reuse.prompt import ChunkText

    return ChunkText(u.key, u.page, u.text)


def _brief(fig: dict) -> dict:
    keep = ("warm_hit_rate", "hot_hit_rate", "cold_bytes_read", "prefetch_precision",
            "prefetch_recall", "promotions", "promoted_bytes", "next_section_first_use_warm")
    return {k: fig.get(k) for k in keep}


def _pool(halves: dict) -> dict:
    """Both halves' figures: rates over all accesses, bytes summed, TTFT over all samples."""
    figs = {h: v["figures"] for h, v in halves.items()}
    acc = sum(f["accesses"] for f in figs.values()) or 1
    out: dict = {}
    for rate in ("warm_hit_rate", "hot_hit_rate"):
        out[rate] = round(sum(f[rate] * f["accesses"] for f in figs.values()) / acc, 4)
    for total in ("cold_bytes_read", "prefetch_bytes_read", "prefetched", "accesses",
                  "promotions", "promoted_bytes"):
        out[total] = sum(f[total] for f in figs.values())
    used = sum((f["prefetch_precision"] or 0) * f["prefetched"] for f in figs.values())
    out["prefetch_precision"] = round(used / out["prefetched"], 4) if out["prefetched"] else None
    recalls = [f["prefetch_recall"] for f in figs.values() if f["prefetch_recall"] is not None]
    out["prefetch_recall"] = round(statistics.mean(recalls), 4) if recalls else None
    firsts = [f["next_section_first_use_warm"] for f in figs.values()
              if f["next_section_first_use_warm"] is not None]
    out["next_section_first_use_warm"] = round(statistics.mean(firsts), 4) if firsts else None
    ttft = sorted(s["ttft_s"] for v in halves.values() for s in v["sampled"])
    out["ttft_p50_s"] = round(float(np.percentile(ttft, 50)), 4) if ttft else None
    out["ttft_p95_s"] = round(float(np.percentile(ttft, 95)), 4) if ttft else None
    out["ttft_samples"] = len(ttft)
    out["halves"] = {h: {**_brief(f), "ttft_p50_s": _p(v["sampled"], 50)}
                     for (h, f), v in zip(figs.items(), halves.values(), strict=True)}
    out["first_tokens"] = {h: [s["first_token"] for s in v["sampled"]] for h, v in halves.items()}
    return out


def _p(samples: list[dict], q: float) -> float | None:
    return round(float(np.percentile([s["ttft_s"] for s in samples], q)), 4) if samples else None


def _identical(by_policy: dict) -> bool:
    tokens = [by_policy[p]["first_tokens"] for p in POLICIES]
    return all(t == tokens[0] for t in tokens)


class _TraceRuntime:
    """The bundled model behind `ReuseRuntime` (the `h3 ask` path), over the bench's KV store."""

    def __init__(self, cfg: H3Config, folder: Path) -> None:
        from h3_runtime.kvcache.cold import KVBlockStore
        from h3_runtime.models import load_model
        from h3_runtime.reuse.doc_kv import DocumentKV
        from h3_runtime.reuse.runtime import ReuseRuntime

        model, tok = load_model(cfg.model.path, cfg.model.dtype, "cpu")
        self.blocks = KVBlockStore(folder / "blocks", 8 * GIB)
        self.docs_root = folder / "docs"
        self.store = DocumentKV(self.blocks, self.docs_root)
        self.runtime = ReuseRuntime(model, tok, self.store)
        self.store_bpt = self.runtime.bytes_per_token // 2  # float16 KV
        self.block_bytes: dict[str, int] = {}
        self.prefill_s, self.computed = 0.0, 0

    def fits(self, row: dict) -> bool:
        """head + chunk in one stored block, and a chunk long enough to be loaded (not
        recomputed: build_cache's 16 recomputed + 64 minimum tokens)."""
        from h3_runtime.reuse.prompt import ChunkText

        layout = self.runtime.layout
        n = len(layout.chunk_ids(ChunkText(row["chunk_id"], int(row["page"]), row["text"])))
        return n >= 96 and len(layout.head_ids) + n <= self.store.block_tokens

    def use(self, cache: CorpusKVCache) -> None:
        from h3_runtime.reuse.doc_kv import DocumentKV

        self.store = DocumentKV(self.blocks, self.docs_root, cache=cache)
        self.runtime.store = self.store

    @torch.no_grad()
    def ensure_kv(self, units: list[Unit], chunks: dict) -> dict[str, str]:
        """Each unit's KV (head + chunk, float16, one block) stored unless already there; unit
        key -> its block key. Missing units are prefilled in batches (padding on the right
        changes no earlier token's KV)."""
        rt = self.runtime
        todo, keys = [], {}
        for u in units:
            index = self.store.find(u.key, rt.model_key)
            if index is None:
                todo.append(u)
            else:
                keys[u.key] = index.block_keys()[0]
                self.block_bytes[keys[u.key]] = index.nbytes
        t0 = time.perf_counter()
        for a in range(0, len(todo), 8):
            batch = todo[a:a + 8]
            laid = [rt.layout.document([chunks[u.key]]) for u in batch]
            longest = max(len(ids) for ids, *_ in laid)
            pad = rt.tokenizer.pad_token_id or 0
            ids = torch.tensor([ids + [pad] * (longest - len(ids)) for ids, *_ in laid])
            mask = torch.tensor([[1] * len(i) + [0] * (longest - len(i)) for i, *_ in laid])
            cache = DynamicCache()
            rt.model(input_ids=ids, attention_mask=mask, cache=cache, use_cache=True,
                     logits_to_keep=1)
            layers = cache.layers
            for b, (u, (tok_ids, spans, cids, digests)) in enumerate(zip(batch, laid, strict=True)):
                n = len(tok_ids)
                if n > self.store.block_tokens:
                    raise ValueError(f"chunk {u.key}: {n} tokens exceed one stored block")
                k = torch.stack([layer.keys[b, :, :n] for layer in layers]).half()
                v = torch.stack([layer.values[b, :, :n] for layer in layers]).half()
                index = self.store.put(u.key, rt.model_key, tok_ids, k, v, spans=spans,
                                       span_ids=cids, span_digests=digests)
                keys[u.key] = index.block_keys()[0]
                self.block_bytes[keys[u.key]] = index.nbytes
                self.computed += 1
        self.prefill_s += time.perf_counter() - t0
        return keys

    def answerer(self, units: list[Unit], chunks: dict) -> Callable[[int, Question], dict | None]:
        rt = self.runtime

        def answer(i: int, q: Question) -> dict | None:
            if i % SAMPLE_EVERY:
                return None
            evidence = [(units[j].key, chunks[units[j].key]) for j in q.evidence]
            section = units[q.focus].section or "these passages"
            segments = rt.evidence_segments(evidence, f"What does the filing say about {section}?")
            ans = rt.answer(segments, max_new_tokens=1, recompute_tokens=16,
                            query_vector=torch.from_numpy(q.vector))
            return {"ttft_s": ans.stats["ttft_s"], "first_token": ans.token_ids[:1],
                    "loaded": ans.stats["kv_tokens_loaded_cold"],
                    "tiers": {"tiers": ans.stats["corpus_cache"]["tiers"]}}

        return answer


def _open_runtime(cfg: H3Config) -> tuple[_TraceRuntime, dict]:
    folder = Path(os.environ.get("H3_TRACE_KV") or Path(tempfile.gettempdir()) / "h3-trace-kv")
    folder.mkdir(parents=True, exist_ok=True)
    runtime = _TraceRuntime(cfg, folder)
    return runtime, {"path": str(folder), "note": "content-addressed: a later run reuses it"}

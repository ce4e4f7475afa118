"""Stage: learned chunk pooling. Each chunk's PCA-reduced token vectors -> a 512-d summary from
a small MLP (< 1M parameters) trained contrastively on this corpus (positives: same section or
neighbouring chunks; negatives: other documents), deterministic for `POOLING_SEED`. Weights are
saved as safetensors under $H3_HOME/semantic with their lineage; summaries go to the
`chunk_summaries` table.
"""

import hashlib
import time

import numpy as np
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    Failure,
    MaterializeResult,
    asset,
    asset_check,
)

from h3.assets.pca import corpus_tokens, token_pca
from h3.resources.semantic.artifacts import load_tensors, pca_path, pooler_path, save_tensors
from h3.resources.semantic.contrastive import ChunkInfo, train_pooler
from h3.resources.semantic.pca import PcaModel
from h3.resources.semantic.pooling import num_parameters
from h3.resources.store import DocumentStore, DocumentStoreResource
from h3.resources.store.tables import CHUNK_SUMMARIES

POOLING_SEED = 0
SAME_TOPIC_TARGET = 0.85  # the seed's target for the mean same-topic cosine
MIN_SEPARATION = 0.1  # same-topic minus different-topic cosine, below which summaries are noise


def chunk_infos(store: DocumentStore, chunk_ids: list[str]) -> list[ChunkInfo]:
    rows = {r["chunk_id"]: r for r in store.rows("chunks", None, ["chunk_id", "doc_id", "section"])}
    return [ChunkInfo(rows[c]["doc_id"], int(c.rsplit(":c", 1)[1]), rows[c]["section"] or "")
            for c in chunk_ids]


@asset(group_name="compression", kinds={"torch", "lancedb"}, deps=[token_pca],
       description="512-d chunk summaries from a small contrastively trained pooling MLP over "
                   "PCA-reduced tokens (LanceDB `chunk_summaries`, weights as safetensors).")
def chunk_pooling(context: AssetExecutionContext, store: DocumentStoreResource) -> MaterializeResult:
    cpu0 = time.process_time()
    db = store.get_store()
    chunk_ids, tokens = corpus_tokens(db)
    if not tokens:
        raise Failure(description="chunk_pooling: no token vectors (ingest documents first)")
    pca = PcaModel.load(pca_path())
    # one projection for the whole corpus: per-chunk matmuls of ~100 rows cost ~20x more
    bounds = np.cumsum([len(t) for t in tokens])[:-1]
    reduced = np.split(pca.transform(np.concatenate(tokens)), bounds)  # each (T_i, k)
    infos = chunk_infos(db, chunk_ids)
    t0 = time.perf_counter()
    model, report = train_pooler(reduced, infos, in_dim=pca.dim, seed=POOLING_SEED)
    train_s = time.perf_counter() - t0
    summaries = report.summaries  # (N, 512): the training's own pass over every chunk
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    version = hashlib.sha1(b"".join(np.ascontiguousarray(v).tobytes()
                                    for v in state.values())).hexdigest()[:12]
    lineage = {"in_dim": pca.dim, "seed": POOLING_SEED, "chunks": len(chunk_ids),
               "documents": len({i.doc_id for i in infos}), "pca": str(pca_path()),
               "steps": report.steps, "trained": report.trained, "version": version,
               "same_topic_cosine": report.same_topic_cosine,
               "different_topic_cosine": report.different_topic_cosine}
    save_tensors(pooler_path(), state, lineage)
    db.delete_where(CHUNK_SUMMARIES.name, "true")
    db.add(CHUNK_SUMMARIES.name, [
        {"doc_id": i.doc_id, "chunk_id": c, "model_version": version,
         "vector": [float(x) for x in v]} for c, i, v in zip(chunk_ids, infos, summaries,
                                                             strict=True)])
    meta = {**lineage, "parameters": num_parameters(model), "train_seconds": round(train_s, 2),
            "final_loss": round(report.final_loss, 4), "note": report.note or "-",
            "same_topic_target": SAME_TOPIC_TARGET,
            "same_topic_target_met": bool(report.same_topic_cosine >= SAME_TOPIC_TARGET),
            "artifact": str(pooler_path()),
            # CPU of the process meanwhile (the filings bench's per-stage CPU table reads it)
            "cpu_seconds": round(time.process_time() - cpu0, 3)}
    context.log.info(f"chunk pooling: same-topic {report.same_topic_cosine:.3f}, "
                     f"different-topic {report.different_topic_cosine:.3f} ({report.note})")
    return MaterializeResult(metadata=meta)


@asset_check(asset=chunk_pooling, blocking=True,
             description="Summaries separate topics: same-topic cosine exceeds different-topic "
                         f"cosine by >= {MIN_SEPARATION}.")
def pooling_separation_check() -> AssetCheckResult:
    _, lineage = load_tensors(pooler_path())
    same, diff = lineage["same_topic_cosine"], lineage["different_topic_cosine"]
    if not lineage.get("trained"):
        return AssetCheckResult(passed=True, severity=AssetCheckSeverity.WARN,
                                metadata={"note": "not trained: fewer than 2 documents"})
    return AssetCheckResult(passed=bool(same - diff >= MIN_SEPARATION),
                            severity=AssetCheckSeverity.ERROR,
                            metadata={"same_topic_cosine": round(same, 4),
                                      "different_topic_cosine": round(diff, 4),
                                      "separation": round(same - diff, 4)})

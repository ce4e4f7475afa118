"""The semantic stages' assets and checks, gathered for definitions.py (knowledge graph,
structure index, CLIP, token vectors; corpus PCA, chunk pooling, document index)."""

from h3.assets.clip import figure_embeddings
from h3.assets.doc_index import doc_index, every_document_has_chunks
from h3.assets.entities import edges_have_provenance, knowledge_graph
from h3.assets.pca import pca_variance_check, token_pca, token_vectors
from h3.assets.pooling import chunk_pooling, pooling_separation_check
from h3.assets.structures import structures

SEMANTIC_ASSETS = [knowledge_graph, structures, figure_embeddings, token_vectors, token_pca,
                   chunk_pooling, doc_index]
SEMANTIC_CHECKS = [edges_have_provenance, pca_variance_check, pooling_separation_check,
                   every_document_has_chunks]

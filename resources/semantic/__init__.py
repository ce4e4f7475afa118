"""Corpus compression as pure functions over arrays: token-level PCA, learned chunk pooling
(contrastive), document vectors with a FAISS index, and CLIP image embeddings."""

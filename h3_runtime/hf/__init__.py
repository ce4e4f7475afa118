"""HuggingFace integration through public extension points only: a Cache subclass and an
attention function registered with AttentionInterface."""

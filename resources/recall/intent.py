"""What a query asks for: a structure (table, figure, chart, diagram, formula; English or
Chinese), a relation between named entities, or plain text. Pure functions, no store access.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from h3.ontology.entities import normalise_name
from h3.ontology.relations import RELATION_TYPES

# English word -> the region kind it asks for
_EN_STRUCTURE = {
    "table": "table", "tables": "table", "tabular": "table",
    "figure": "figure", "figures": "figure", "fig": "figure", "chart": "figure",
    "charts": "figure", "graph": "figure", "graphs": "figure", "plot": "figure",
    "plots": "figure", "diagram": "figure", "diagrams": "figure", "image": "figure",
    "images": "figure", "picture": "figure", "pictures": "figure", "illustration": "figure",
    "illustrations": "figure", "photo": "figure", "photograph": "figure", "drawing": "figure",
    "schematic": "figure", "formula": "formula", "formulas": "formula", "formulae": "formula",
    "equation": "formula", "equations": "formula",
    # pictures readers name by what they are rather than by "figure"
    "logo": "figure", "logos": "figure", "icon": "figure", "icons": "figure",
    "emblem": "figure", "photos": "figure", "photographs": "figure", "screenshot": "figure",
    "screenshots": "figure", "flowchart": "figure", "infographic": "figure",
}
SMALL_FIGURE_WORDS = frozenset({"logo", "logos", "icon", "icons", "emblem"})
_EN_RE = re.compile(r"\b(" + "|".join(sorted(_EN_STRUCTURE, key=len, reverse=True)) + r")\b\.?",
                    re.IGNORECASE)
_NOT_STRUCTURE = re.compile(r"table of contents|on the table|graph database|knowledge graph",
                            re.IGNORECASE)
# Chinese: whole words, or 表/图 next to a number or a measure word (表 alone is too common:
# 表示, 代表, 发表 are not tables).
_ZH_WORDS = {"表格": "table", "数据表": "table", "图表": "figure", "图片": "figure",
             "图像": "figure", "示意图": "figure", "流程图": "figure", "结构图": "figure",
             "插图": "figure", "曲线图": "figure", "柱状图": "figure", "公式": "formula",
             "方程": "formula", "标志": "figure", "图标": "figure",
             # Korean and Japanese words for figure, chart and logo
             "그림": "figure", "도표": "figure", "로고": "figure", "図表": "figure"}
_ZH_RE = re.compile("|".join(sorted(_ZH_WORDS, key=len, reverse=True)))
_ZH_SINGLE = re.compile(r"([表图図표])\s*\d|(?:张|个|幅|这|那|哪|的)([表图])(?![示])|([表图])(?:中|里|上)")
_NUMBER_RE = re.compile(
    r"\b(table|figure|fig|chart|equation|example|listing)\.?\s*(\d+(?:[.-]\d+)*)",
    re.IGNORECASE)
_ZH_NUMBER_RE = re.compile(r"([表图図표]|그림)\s*(\d+(?:[.-]\d+)*)")
_PAGE_RE = re.compile(r"\bpage\s+(\d+)\b|第\s*(\d+)\s*页", re.IGNORECASE)
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1,
             "一": 1, "二": 2, "三": 3, "四": 4, "五": 5}
# "the first figure", "the last table", "第二个图" / "第一张表" (not "第2页": that is a page)
_ORDINAL_RE = re.compile(r"\b(first|second|third|fourth|fifth|last)\b|第\s*([一二三四五])\s*[个张幅]",
                         re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class StructureIntent:
    kinds: tuple[str, ...]  # region kinds asked for: table, figure, formula
    number: str | None = None  # "3" in "Table 3"
    page: int | None = None  # "on page 5"
    ordinal: int | None = None  # 1 for "the first figure", -1 for "the last table"
    words: tuple[str, ...] = field(default_factory=tuple)  # the trigger words found


def detect_structure(query: str) -> StructureIntent | None:
    """The structural request in a query, or None when it names no table/figure/formula."""
    cleaned = _NOT_STRUCTURE.sub(" ", query)
    kinds: list[str] = []
    words: list[str] = []
    for m in _EN_RE.finditer(cleaned):
        kinds.append(_EN_STRUCTURE[m.group(1).lower()])
        words.append(m.group(1))
    for m in _ZH_RE.finditer(cleaned):
        kinds.append(_ZH_WORDS[m.group(0)])
        words.append(m.group(0))
    for m in _ZH_SINGLE.finditer(cleaned):
        char = next(g for g in m.groups() if g)
        kinds.append("table" if char in "表표" else "figure")
        words.append(char)
    if not kinds:
        return None
    number = None
    if (n := _NUMBER_RE.search(cleaned)) or (n := _ZH_NUMBER_RE.search(cleaned)):
        number = n.group(2)
    page = None
    if p := _PAGE_RE.search(cleaned):
        page = int(p.group(1) or p.group(2))
    ordinal = None
    if o := _ORDINAL_RE.search(cleaned):
        ordinal = _ORDINALS[(o.group(1) or o.group(2)).lower()]
    return StructureIntent(tuple(dict.fromkeys(kinds)), number=number, page=page,
                           ordinal=ordinal, words=tuple(words))


def strip_structure_words(query: str) -> str:
    """The query without its structure words and filler, for matching captions."""
    q = _EN_RE.sub(" ", query)
    q = _ZH_RE.sub(" ", q)
    q = _PAGE_RE.sub(" ", _ORDINAL_RE.sub(" ", q))  # position words select, they do not match
    q = re.sub(r"\b(show|me|find|the|a|an|of|with|which|what|where|is|are|that|about|please|"
               r"give|list|display|in|on)\b", " ", q, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", q).strip()


def detect_relations(query: str) -> list[str]:
    """Relation names whose query words appear in the query ("who is the CEO of X" -> ceo_of)."""
    q = query.lower()
    found = []
    for rel in RELATION_TYPES:
        for w in rel.query_words:
            if re.search(r"(?<!\w)" + re.escape(w.lower()), q):
                found.append(rel.name)
                break
    return found


def query_entities(query: str, names: dict[str, list[str]], max_words: int = 6) -> list[str]:
    """Entity ids whose normalised name (or alias) appears in the query as whole words.

    `names` maps a normalised name -> the entity ids with that name or alias. Longer names win:
    "Quill Pharmaceuticals" takes the words, "Quill" alone is not matched inside it."""
    words = normalise_name(query, "PERSON").split()
    found: list[str] = []
    used = [False] * len(words)
    for n in range(min(max_words, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            if any(used[i:i + n]):
                continue
            key = " ".join(words[i:i + n])
            if key in names:
                found.extend(e for e in names[key] if e not in found)
                used[i:i + n] = [True] * n
    # Chinese has no spaces: look for every known CJK name as a substring
    for key, ids in names.items():
        if key and "\u4e00" <= key[0] <= "\u9fff" and key in query:
            found.extend(e for e in ids if e not in found)
    return found

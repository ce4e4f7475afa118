"""Chinese entities and relations from rules over a word segmenter's output (jieba with part of
speech; no trained Chinese spaCy pipeline exists offline).

Entities, per sentence, from the segmented words:
- ORG: a run of nominal words ending in a word with an organisation suffix (有限公司, 集团, 银行,
  局...), jieba's organisation (nt) and other-proper-noun (nz) words; "子公司" is no name;
- PERSON: jieba's person names (nr), and the word after a role word (董事长张伟);
- GPE: jieba's place names (ns, two characters or more);
- MONEY (3.2亿元, 8600万元), DATE (2023年3月15日, 2023年3月), PERCENT (42.5%, 百分之三十) by regex.
A document keeps a gazetteer: a full name's short form (华腾科技 for 华腾科技股份有限公司), the
alias a filing defines for itself (（以下简称“公司”）), and a brand introduced as "X是Y旗下的..."
are recognised in every sentence and resolve to the full name.

Relations: every mention is masked as ⟨E<i>⟩ (as for English, resources/nlp/relations.py) and the
patterns of `_PATTERNS` run over the masked sentence.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from h3.ontology.document import BBox
from h3.ontology.entities import NAME_TYPES, entity_id
from h3.ontology.relations import Edge
from h3.resources.nlp.relations import mask
from h3.resources.nlp.types import Mention

ORG_SUFFIXES = ("股份有限公司", "有限责任公司", "有限公司", "集团", "公司", "银行", "控股",
                "委员会", "局", "研究院", "交易所")
NOT_NAMES = {"子公司", "分公司", "母公司", "公司", "本公司", "该公司", "集团", "银行", "董事局"}
LEGAL_SUFFIXES = ("股份有限公司", "有限责任公司", "有限公司")
ROLE_WORDS = ("董事长", "董事局主席", "总经理", "首席执行官", "总裁", "CEO")
_NOMINAL = ("n", "nr", "nrt", "nrfg", "ns", "nt", "nz", "eng", "j", "nl", "ng")
# words a company name may also hold (jieba tags 优酷 of 优酷土豆公司 an adjective)
_IN_NAMES = _NOMINAL + ("a", "b")
_MAX_ORG_WORDS = 5
_MONEY = r"-?\d+(?:\.\d+)?\s*(?:万亿|亿|万|千)?(?:元|美元|欧元|港元|人民币)"
_DATE = r"\d{4}年(?:\d{1,2}月(?:\d{1,2}日)?)?|\d{1,2}月\d{1,2}日"
_PERCENT = r"-?\d+(?:\.\d+)?\s*[%％]|百分之[零一二三四五六七八九十百点\d.]+"
_VALUES = [(t, re.compile(rx)) for t, rx in (("MONEY", _MONEY), ("DATE", _DATE),
                                             ("PERCENT", _PERCENT))]
_DEFINED_ALIAS = re.compile(r"[（(]\s*以下简称\s*[“\"「]([^”\"」]{1,10})[”\"」]\s*[）)]")
_SENTENCE_END = re.compile(r"(?<=[。！？；!?;])")

_E = r"(?P<{}>⟨E\d+⟩)"
_H, _T = _E.format("h"), _E.format("t")
_GAP = r"[^⟨。；]{0,8}?"  # a few words between, never another entity or a sentence end
_ROLE = {"chair_of": r"(?:董事长|董事局主席)", "ceo_of": r"(?:总经理|首席执行官|总裁|CEO)"}
# (relation, pattern over the masked sentence), head/tail as in the ontology
_PATTERNS: tuple[tuple[str, str], ...] = tuple(
    (rel, p.replace("ROLE", role)) for rel, role in _ROLE.items() for p in (
        rf"{_T}(?:的|之)?(?:董事会)?ROLE(?:是|为|由)?{_H}",
        rf"{_H}(?:担任|出任|任|为|是|被任命为|当选为){_T}(?:的)?ROLE",
    )) + (
    ("acquired", rf"{_H}{_GAP}(?:收购|并购|购买)了?{_T}"),
    ("acquired", rf"{_T}被{_H}(?:收购|并购)"),
    ("subsidiary_of", rf"{_H}{_GAP}(?:成为|是|为){_T}(?:的|旗下的?)(?:全资|控股)?子公司"),
    ("subsidiary_of", rf"{_H}(?:是|为){_T}旗下"),
    ("subsidiary_of", rf"{_T}旗下的?{_GAP}{_H}"),
    ("partner_of", rf"{_H}(?:与|和|同|联合){_T}(?:达成|签署|建立|宣布|开展|签订)?了?{_GAP}合作"),
    ("headquartered_in", rf"{_H}[^⟨。；]{{0,16}}?总部(?:设在|设于|位于|在){_T}"),
    ("supplies", rf"{_H}(?:向|为){_T}(?:供应|提供)"),
    ("founder_of", rf"{_T}(?:由|是由){_H}(?:创立|创办|创建)"),
)
_COMPILED = [(rel, re.compile(rf"(?={p})")) for rel, p in _PATTERNS]
_HEAD_TYPES = {"chair_of": "PERSON", "ceo_of": "PERSON", "founder_of": "PERSON"}


@functools.cache
def _posseg():
    from h3.resources.text_lang import _jieba

    _jieba()
    import jieba.posseg

    return jieba.posseg


def words(sentence: str) -> list[tuple[int, int, str, str]]:
    """(start, end, word, part of speech) of a sentence's words."""
    out, pos = [], 0
    for pair in _posseg().lcut(sentence):
        out.append((pos, pos + len(pair.word), pair.word, pair.flag))
        pos += len(pair.word)
    return out


def _org_spans(tokens) -> list[tuple[int, int]]:
    """Runs of nominal words that end in an organisation suffix (longest run, suffix last)."""
    spans = []
    i = 0
    while i < len(tokens):
        if not tokens[i][3].startswith(_IN_NAMES):
            i += 1
            continue
        j = i
        while j < len(tokens) and tokens[j][3].startswith(_IN_NAMES):
            j += 1
        run = tokens[i:j]
        last = max((k for k, t in enumerate(run) if t[2].endswith(ORG_SUFFIXES)
                    and t[2] not in NOT_NAMES - {"公司", "集团", "银行"}), default=None)
        if last is not None:
            first = max(0, last - _MAX_ORG_WORDS + 1)
            name = "".join(t[2] for t in run[first:last + 1])
            if name not in NOT_NAMES and len(name) > 2:
                spans.append((run[first][0], run[last][1]))
        i = j
    return spans


def _sentence_entities(sentence: str, gazetteer: dict[str, tuple[str, str]]):
    """{(start, end): (type, canonical name)} of one sentence."""
    tokens = words(sentence)
    spans: dict[tuple[int, int], tuple[str, str]] = {}

    def add(start: int, end: int, type_name: str, name: str) -> None:
        if not any(s < end and start < e for s, e in spans):
            spans[(start, end)] = (type_name, name)

    starts = {t[0] for t in tokens}
    ends = {t[1] for t in tokens}
    for known in sorted(gazetteer, key=len, reverse=True):  # the document's names first
        for m in re.finditer(re.escape(known), sentence):
            # a short alias ("公司") counts only as a word of its own, not inside 子公司/有限公司
            if len(known) > 2 or (m.start() in starts and m.end() in ends):
                add(m.start(), m.end(), *gazetteer[known])
    for s, e in _org_spans(tokens):
        add(s, e, "ORG", sentence[s:e])
    for k, (s, e, w, flag) in enumerate(tokens):
        if flag in ("nt", "nz") and len(w) >= 2 and w not in NOT_NAMES:
            add(s, e, "ORG", w)
        elif flag.startswith("nr") and len(w) >= 2:
            add(s, e, "PERSON", w)
        elif flag == "ns" and len(w) >= 2:
            add(s, e, "GPE", w)
        elif (w in ROLE_WORDS and k + 1 < len(tokens)
              and re.fullmatch(r"[\u4e00-\u9fff]{2,3}", tokens[k + 1][2])):
            add(tokens[k + 1][0], tokens[k + 1][1], "PERSON", tokens[k + 1][2])
    for type_name, regex in _VALUES:
        for m in regex.finditer(sentence):
            add(m.start(), m.end(), type_name, m.group(0).replace(" ", ""))
    return dict(sorted(spans.items()))


def document_gazetteer(sentences: Iterable[str]) -> dict[str, tuple[str, str]]:
    """surface form -> (type, full name) for a document: its organisations' short forms, the
    aliases it defines (（以下简称“公司”）) and brands introduced as "X是Y旗下的"."""
    gaz: dict[str, tuple[str, str]] = {}
    for sentence in sentences:
        found = _sentence_entities(sentence, {})
        for (s, e), (type_name, name) in found.items():
            if type_name != "ORG":
                continue
            gaz.setdefault(name, ("ORG", name))
            for suffix in LEGAL_SUFFIXES:
                short = name[: -len(suffix)]
                if name.endswith(suffix) and len(short) >= 2:
                    gaz.setdefault(short, ("ORG", name))
            alias = _DEFINED_ALIAS.match(sentence, e)
            if alias:
                gaz[alias.group(1)] = ("ORG", name)
            brand = re.search(r"([\u4e00-\u9fffA-Za-z]{2,8})(?:是|为)$", sentence[:s])
            if brand and sentence.startswith("旗下", e) and brand.group(1) not in NOT_NAMES:
                gaz.setdefault(brand.group(1), ("PRODUCT", brand.group(1)))
    return gaz


def sentences_of(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def extract_units(units, gazetteer: dict[str, tuple[str, str]] | None = None):
    """(mentions, edges) of a document's Chinese text units (resources/nlp/types.TextUnit).
    The gazetteer is built from all units first, so a name defined later is known everywhere."""
    units = list(units)
    if gazetteer is None:
        gazetteer = document_gazetteer(s for u in units for s in sentences_of(u.text))
    mentions, edges = [], []
    for unit in units:
        for sentence in sentences_of(unit.text):
            m, e = _extract(sentence, unit.doc_id, unit.page, unit.bbox, gazetteer)
            mentions.extend(m)
            edges.extend(e)
    return mentions, edges


def extract_sentence(sentence: str, doc_id: str, page: int, bbox: BBox):
    """(mentions, edges) of one sentence on its own (no document gazetteer)."""
    sentence = sentence.strip()
    return _extract(sentence, doc_id, page, bbox, document_gazetteer([sentence]))


def _extract(sentence: str, doc_id: str, page: int, bbox: BBox, gazetteer):
    found = _sentence_entities(sentence, gazetteer)
    mentions = [Mention(entity_id(t, name), name, t, doc_id, page, bbox, sentence, s, e)
                for (s, e), (t, name) in found.items()]
    # only names are masked: a date or an amount may sit in the gap of a pattern
    names = [m for m in mentions if m.type in NAME_TYPES]
    masked = mask(sentence, [(m.start, m.end) for m in names])
    edges, seen = [], set()
    for rel, regex in _COMPILED:
        for match in regex.finditer(masked):
            head = names[int(match.group("h")[2:-1])]
            tail = names[int(match.group("t")[2:-1])]
            if head.entity_id == tail.entity_id:
                continue
            if _HEAD_TYPES.get(rel) == "PERSON" and head.type != "PERSON":
                continue
            key = (head.entity_id, rel, tail.entity_id)
            if key not in seen:
                seen.add(key)
                edges.append(Edge(head.entity_id, tail.entity_id, rel, head.text, tail.text,
                                  doc_id, page, bbox, sentence, rule=f"zh:{rel}"))
    return mentions, edges

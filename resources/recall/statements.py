"""Financial statements as recall targets: a question about a metric is answered on the page of
the statement that reports it.

Financial reports (10-K, 10-Q, 20-F, annual reports, earnings releases) carry three primary
statements, each under a title of a few fixed forms: the statement of cash flows, the balance
sheet (statement of financial position) and the income statement (statement of operations /
income / earnings). A question names one ("using the cash flow statement") or asks for a metric
one of them reports (capital expenditure -> cash flows; PP&E, working capital, debt -> balance
sheet; revenue, margins, tax rate -> income). Text recall then adds the chunks of that
statement's pages to its pool and ranks them higher.

A page is a statement's page when it reports the statement's line items, each followed by a
figure ("Total current assets 12,345", "| Net cash provided by operating activities | 381 |"):
at least MIN_LINE_ITEMS distinct ones, and more than of any other statement. Titles alone are
not enough: the title often sits in a running header the layout drops, while prose pages (the
auditor's opinion, notes) name "the consolidated balance sheets" without being one. A chunk
that opens with the title still counts, with fewer line items (a statement split over pages).
A page whose chunks open with every statement's title (the table of contents) is none.
"""

from __future__ import annotations

import hashlib
import re

from h3.resources.recall.router import RecallContext
from h3.resources.recall.saved import cache_file, read_saved, save
from h3.resources.store.base import sql_str

# statement -> (its title, matched on text without spaces in lower case since PDFs split words
# ("Balance Shee t"), question words that ask for it explicitly,
# metrics it reports)
STATEMENTS: dict[str, tuple[re.Pattern, re.Pattern, re.Pattern]] = {
    "cash_flows": (
        re.compile(r"statements?of(?:consolidated)?cashflows?"),
        re.compile(r"cash\s*flows?\s+statement|statements?\s+of\s+cash\s+flows?", re.IGNORECASE),
        re.compile(r"\bcapex\b|capital\s+expenditure|free\s+cash\s*flow|cash\s+(?:from|provided\s+"
                   r"by|generated\s+(?:by|from))\s+operat|operating\s+cash\s*flow|dividends?\s+"
                   r"paid|repurchases?\s+of|purchases?\s+of\s+property|cash\s*flow",
                   re.IGNORECASE)),
    "balance_sheet": (
        re.compile(r"balancesheets?|statements?of(?:consolidated)?financial(?:position|condition)"),
        re.compile(r"balance\s+sheets?|statements?\s+of\s+financial\s+position", re.IGNORECASE),
        re.compile(r"\bpp&?e\b|property,?\s+plant|working\s+capital|total\s+assets|"
                   r"current\s+(?:assets|liabilities|ratio)|quick\s+ratio|inventor(?:y|ies)|"
                   r"accounts\s+(?:payable|receivable)|\bdebt\b|shareholders'?\s+equity|"
                   r"stockholders'?\s+equity|days\s+(?:payable|sales|inventory)", re.IGNORECASE)),
    "income": (
        re.compile(r"statements?of(?:consolidated)?(?:comprehensive)?(?:operations|income|"
                   r"earnings)|incomestatements?"),
        re.compile(r"income\s+statement|statements?\s+of\s+(?:income|operations|earnings)|"
                   r"\bp&l\b|profit\s+and\s+loss", re.IGNORECASE),
        re.compile(r"\brevenues?\b|\bnet\s+sales\b|gross\s+(?:margin|profit)|operating\s+"
                   r"(?:margin|income|profit)|net\s+(?:income|margin|earnings|loss)|cost\s+of\s+"
                   r"(?:goods|sales|revenues?)|\bcogs\b|\beps\b|earnings\s+per\s+share|"
                   r"\bebitda?\b|days\s+payable|income\s+tax|tax\s+rate", re.IGNORECASE)),
}
# statement -> the line items it reports (lower case, spaces normalised); a page counts one when
# a figure follows it closely (LINE_ITEM_FIGURE), as in a table row, not in prose
LINE_ITEMS: dict[str, tuple[str, ...]] = {
    "cash_flows": (
        r"(?:provided|used|generated)\s+(?:by|in|from)\s+(?:\(used\s+in\)\s+)?operating\s+"
        r"activities|operating\s+activities",
        r"investing\s+activities", r"financing\s+activities",
        r"depreciation(?:\s+and\s+amortization)?",
        r"(?:stock|share)[-\s]based\s+compensation(?:\s+expense)?",
        r"(?:purchases?\s+of|additions\s+to|payments\s+for|capital\s+expenditures?)[^|\d]{0,40}",
        r"net\s+(?:increase|decrease|change)[^|\d]{0,30}cash[^|\d]{0,40}",
        r"(?:beginning|end)\s+of\s+(?:the\s+)?(?:year|period)",
        r"(?:proceeds\s+from|repayments?\s+of)[^|\d]{0,50}",
        r"deferred\s+(?:income\s+)?taxes"),
    "balance_sheet": (
        r"total\s+current\s+assets", r"total\s+assets", r"total\s+current\s+liabilities",
        r"total\s+liabilities(?!\s+and)", r"total\s+liabilities\s+and\s+(?:stockholders|"
        r"shareholders)['’]?\s+equity|total\s+liabilities\s+and\s+equity",
        r"total\s+(?:stockholders|shareholders)['’]?\s+equity|total\s+equity",
        r"retained\s+earnings|accumulated\s+deficit",
        r"goodwill", r"accounts\s+receivable[^|\d]{0,30}", r"accounts\s+payable",
        r"property(?:,)?\s+(?:plant\s+)?and\s+equipment[^|\d]{0,30}",
        r"inventor(?:y|ies)", r"additional\s+paid[-\s]in\s+capital"),
    "income": (
        r"(?:total\s+)?(?:net\s+)?(?:revenues?|sales)(?:\s+of\s+(?:products|services))?",
        r"cost\s+of\s+(?:revenues?|sales|products|goods\s+sold|services)",
        r"gross\s+(?:profit|margin)",
        r"(?:operating\s+(?:income|loss|profit)|(?:income|loss|earnings)\s+(?:\(loss\)\s+)?"
        r"from\s+operations|total\s+operating\s+expenses|total\s+costs\s+and\s+expenses)",
        r"(?:income|loss|earnings)\s+(?:\(loss\)\s+)?before\s+(?:provision\s+for\s+)?"
        r"income\s+taxes",
        r"(?:provision\s+for|benefit\s+from|\(provision\)\s+benefit\s+for)\s+income\s+taxes|"
        r"income\s+tax\s+(?:expense|provision|benefit)",
        r"net\s+(?:income|loss|earnings)(?:\s+\(loss\))?(?:\s+attributable[^|\d]{0,40})?",
        r"(?:basic|diluted)(?:\s+(?:net\s+)?(?:earnings|income|loss)(?:\s+\(loss\))?\s+per"
        r"\s+(?:common\s+)?share)?",
        r"interest\s+(?:expense|income)(?:,\s+net)?", r"research\s+and\s+development"),
}
# a figure within a few non-letter characters after the item: "| 1,234 |", "$ (56)", "12.5"
LINE_ITEM_FIGURE = r"[^a-z0-9]{0,12}\(?\$?\s*\(?\d[\d,]*(?:\.\d+)?"
# No "(?<![a-z])" in the pattern: a leading look-behind keeps the regex engine from skipping
# ahead to the item's first letters, and each query scans every page of the recalled documents
# (~3.5x slower over a store's 2,500 pages). _reports checks the word start instead.
_LINE_ITEMS = {s: [re.compile(r"(?:" + item + ")" + LINE_ITEM_FIGURE) for item in items]
               for s, items in LINE_ITEMS.items()}
MIN_LINE_ITEMS = 4  # distinct line items with figures that make a page a statement's
MIN_LINE_ITEMS_TITLED = 2  # ... when one of its chunks opens with the statement's title
TITLE_WINDOW = 160  # a statement's title sits in the first characters of a chunk
BOOST_NAMED = 0.35  # the question names the statement
BOOST_METRIC = 0.25  # the question asks for a metric the statement reports


def asked_statements(query: str) -> dict[str, float]:
    """statement -> boost for the statements a query asks for (named ones only, when any is
    named; else those whose metrics it mentions)."""
    named = {s for s, (_, ask, _) in STATEMENTS.items() if ask.search(query)}
    if named:
        return {s: BOOST_NAMED for s in named}
    return {s: BOOST_METRIC for s, (_, _, metric) in STATEMENTS.items() if metric.search(query)}


def line_items(text: str) -> dict[str, int]:
    """statement -> how many of its distinct line items the text reports with a figure."""
    flat = " ".join(text.lower().split())
    return {s: sum(_reports(p, flat) for p in patterns) for s, patterns in _LINE_ITEMS.items()}


def _reports(pattern: re.Pattern, flat: str) -> bool:
    """`pattern` matches `flat` at a word start (not inside a word: "subtotal assets")."""
    pos = 0
    while (m := pattern.search(flat, pos)) is not None:
        if m.start() == 0 or not "a" <= flat[m.start() - 1] <= "z":
            return True
        pos = m.start() + 1
    return False


def classify_page(texts: list[str]) -> dict[str, int]:
    """statement -> line items reported, for the statements a page (its chunks' texts) is a
    page of (module docstring)."""
    titled = set()
    for text in texts:  # a statement's title opens a chunk of its page (tables may come first)
        head = re.sub(r"\s+", "", (text or "").lower())[:TITLE_WINDOW]
        titled |= {s for s, (title, _, _) in STATEMENTS.items() if title.search(head)}
    if len(titled) == len(STATEMENTS):  # a page naming all three is an index of them
        return {}
    counts = line_items("\n".join(t or "" for t in texts))
    best = max(counts.values())
    return {s: n for s, n in counts.items()
            if n == best and n >= (MIN_LINE_ITEMS_TITLED if s in titled else MIN_LINE_ITEMS)}


def statement_pages(ctx: RecallContext, doc_id: str) -> dict[str, dict[int, float]]:
    """statement -> {page: strength} for the pages of `doc_id` that are that statement's; the
    strength (0, 1] is the page's line items relative to the document's fullest page of that
    statement: the statement itself over a summary table that repeats a few of its lines
    (cached per context, and on disk per version of the document: `_saved_pages`)."""
    key = ("_statement_pages", doc_id)
    if key in ctx.cache:
        return ctx.cache[key]
    saved, version = _saved_pages(ctx), _document_versions(ctx).get(doc_id)
    entry = saved["documents"].get(doc_id)
    if entry is not None and version is not None and entry["version"] == version:
        pages = {s: {int(p): strength for p, strength in found.items()}
                 for s, found in entry["pages"].items()}
    else:
        pages = classify_document(ctx, doc_id)
        if version is not None:
            saved["documents"][doc_id] = {"version": version, "pages": pages}
            save(saved["path"], saved["documents"])
    ctx.cache[key] = pages
    return pages


def classify_document(ctx: RecallContext, doc_id: str) -> dict[str, dict[int, float]]:
    """`statement_pages` read from the document's chunks (every page's line items: ~0.1 s for a
    190-page filing, the most of a cold `h3 recall` that routes to five of them)."""
    texts: dict[int, list[str]] = {}
    for r in ctx.store.rows("chunks", f"doc_id = {sql_str(doc_id)}", ["page", "text"]):
        texts.setdefault(int(r["page"]), []).append(r["text"] or "")
    return page_strengths(texts)


def page_strengths(texts: dict[int, list[str]]) -> dict[str, dict[int, float]]:
    """statement -> {page: strength} of one document's pages (page -> its chunks' texts): the
    pages `classify_page` finds a statement's, each with its line items relative to the
    document's fullest page of that statement (1.0: the statement itself)."""
    counts: dict[str, dict[int, int]] = {s: {} for s in STATEMENTS}
    for page, page_texts in texts.items():
        for statement, n in classify_page(page_texts).items():
            counts[statement][page] = n
    return {s: {p: n / max(found.values()) for p, n in found.items()}
            for s, found in counts.items()}


def page_boosts(asked: dict[str, float], pages: dict[str, dict[int, float]]
                ) -> dict[int, float]:
    """page -> score boost of one document's statement pages (`page_strengths`) for the
    statements a query asks for (`asked_statements`): the asked weight, half of it for a page
    with few of the statement's lines (a summary table repeating a few of them)."""
    out: dict[int, float] = {}
    for statement, found in pages.items():
        if statement in asked:
            for page, strength in found.items():
                out[page] = max(out.get(page, 0.0), asked[statement] * (0.5 + 0.5 * strength))
    return out


def _document_versions(ctx: RecallContext) -> dict[str, str]:
    """doc_id -> its stored version (content hash and time stored) of the ok documents: a
    re-ingested document's saved pages are never read (one read of the documents table)."""
    if "_document_versions" not in ctx.cache:
        rows = ctx.store.rows("documents", "status = 'ok'", ["doc_id", "content_hash", "updated_at"])
        ctx.cache["_document_versions"] = {
            r["doc_id"]: f"{r['content_hash']}@{r['updated_at']}" for r in rows}
    return ctx.cache["_document_versions"]


def _saved_pages(ctx: RecallContext) -> dict:
    """The statement pages saved for this store (resources/recall/saved.py), one file per store
    and version of these rules: a changed pattern or threshold reads none of the old file."""
    if "_saved_statement_pages" not in ctx.cache:
        store_key = str(getattr(ctx.store, "path", id(ctx.store)))
        path = cache_file("statement_pages", store_key, RULES_VERSION)
        ctx.cache["_saved_statement_pages"] = {"path": path, "documents": read_saved(path) or {}}
    return ctx.cache["_saved_statement_pages"]


# Everything `classify_page` decides by: the saved pages of other rules are not these.
RULES_VERSION = hashlib.sha256(repr((
    [(title.pattern, ask.pattern, metric.pattern) for title, ask, metric in STATEMENTS.values()],
    [[p.pattern for p in patterns] for patterns in _LINE_ITEMS.values()],
    MIN_LINE_ITEMS, MIN_LINE_ITEMS_TITLED, TITLE_WINDOW)).encode()).hexdigest()[:16]


def boosts(ctx: RecallContext, query: str, doc_ids: list[str] | set[str]
           ) -> dict[tuple[str, int], float]:
    """(doc_id, page) -> score boost of the statement pages the query asks for (`page_boosts`)."""
    asked = asked_statements(query)
    if not asked:
        return {}
    return {(doc_id, page): boost for doc_id in doc_ids
            for page, boost in page_boosts(asked, statement_pages(ctx, doc_id)).items()}

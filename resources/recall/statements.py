"""Financial statements as recall targets: a question about a metric is answered on the page of
the statement that reports it.

Financial reports (10-K, 10-Q, 20-F, annual reports, earnings releases) carry three primary
statements, each under a title of a few fixed forms: the statement of cash flows, the balance
sheet (statement of financial position) and the income statement (statement of operations /
income / earnings). A question names one ("using the cash flow statement") or asks for a metric
one of them reports (capital expenditure -> cash flows; PP&E, working capital, debt -> balance
sheet; revenue, margins -> income). Text recall then adds the chunks of the pages where a chunk
opens with that statement's title to its pool and ranks them higher. A page whose chunks open
with every statement's title (the table of contents, "Index to Financial Statements") is none.
"""

from __future__ import annotations

import re

from resources.recall.router import RecallContext
from resources.store.base import sql_str

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
        re.compile(r"\bpp&?e\b|\bppne\b|property,?\s+plant|working\s+capital|total\s+assets|"
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
                   r"\bebitda?\b|days\s+payable", re.IGNORECASE)),
}
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


def statement_pages(ctx: RecallContext, doc_id: str) -> dict[str, set[int]]:
    """statement -> pages of `doc_id` that open with its title (cached per context)."""
    key = ("_statement_pages", doc_id)
    if key in ctx.cache:
        return ctx.cache[key]
    rows = ctx.store.rows("chunks", f"doc_id = {sql_str(doc_id)}", ["page", "text"])
    kinds: dict[int, set[str]] = {}
    for r in rows:  # a statement's title opens a chunk of its page (tables may come first)
        head = re.sub(r"\s+", "", (r["text"] or "").lower())[:TITLE_WINDOW]
        found = {s for s, (title, _, _) in STATEMENTS.items() if title.search(head)}
        if found:
            kinds.setdefault(int(r["page"]), set()).update(found)
    pages: dict[str, set[int]] = {s: set() for s in STATEMENTS}
    for page, found in kinds.items():
        if len(found) < len(STATEMENTS):  # a page naming all three is an index of them
            for statement in found:
                pages[statement].add(page)
    ctx.cache[key] = pages
    return pages


def boosts(ctx: RecallContext, query: str, doc_ids: list[str] | set[str]
           ) -> dict[tuple[str, int], float]:
    """(doc_id, page) -> score boost of the statement pages the query asks for."""
    asked = asked_statements(query)
    if not asked:
        return {}
    out: dict[tuple[str, int], float] = {}
    for doc_id in doc_ids:
        for statement, pages in statement_pages(ctx, doc_id).items():
            if statement in asked:
                for page in pages:
                    out[(doc_id, page)] = max(out.get((doc_id, page), 0.0), asked[statement])
    return out

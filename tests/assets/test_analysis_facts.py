"""Key-fact extraction and the cross-document check (pure functions, no model)."""

from __future__ import annotations

from h3.assets._facts import cross_check, extract_facts, normalise_value

AGREEMENT = [
    (1, 'This Share Purchase Agreement is made on March 3, 2024 between Acme Holdings Inc. '
        '("Buyer") and Borealis Group Ltd. ("Seller"). The purchase price of $12.5 million '
        'shall be paid at closing.'),
    (2, "The Seller shall indemnify the Buyer against any breach of warranty. "
        "The closing date is 2024-06-30."),
]


def test_facts_carry_kind_label_value_and_page():
    facts = {(f.kind, f.label, f.value, f.page) for f in extract_facts(AGREEMENT)}
    assert ("amount", "purchase price", "$12.5 million", 1) in facts
    assert ("date", "closing date", "2024-06-30", 2) in facts
    assert ("party", "buyer", "Acme Holdings Inc", 1) in facts
    assert ("party", "seller", "Borealis Group Ltd", 1) in facts
    clauses = [f for f in extract_facts(AGREEMENT) if f.kind == "clause"]
    assert clauses and clauses[0].page == 2 and "indemnify" in clauses[0].value


def test_values_normalise_across_spellings():
    assert normalise_value("amount", "$12.5 million") == normalise_value("amount", "12,500,000 USD")
    assert normalise_value("amount", "EUR 3m") != normalise_value("amount", "USD 3m")
    assert normalise_value("date", "March 3, 2024") == normalise_value("date", "3 March 2024")
    assert normalise_value("date", "2024-03-03") == "2024-03-03"


def test_cross_check_finds_agreements_and_conflicts():
    memo = [(1, "The purchase price of USD 12,500,000 was approved on 3 March 2024. "
                "Acme Holdings Inc. (\"Buyer\") signed.")]
    loan = [(4, "The purchase price of $13 million is financed by the lender.")]
    facts = {d: [f.to_row() for f in extract_facts(c)]
             for d, c in {"spa": AGREEMENT, "memo": memo, "loan": loan}.items()}
    checks = {(c["kind"], c["label"]): c for c in cross_check(facts)}
    price = checks[("amount", "purchase price")]
    assert price["status"] == "conflict"
    by_doc = {d["doc_id"]: d for d in price["documents"]}
    assert by_doc["loan"]["pages"] == [4] and by_doc["spa"]["values"] == ["USD 12500000.00"]
    assert checks[("party", "buyer")]["status"] == "agree"
    only_spa = cross_check({"spa": facts["spa"]})
    assert only_spa == []

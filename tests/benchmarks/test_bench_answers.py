"""The answers bench's scoring: a labelled value is found in quotes at its precision and scale."""

from benchmarks.documents.answers import label_values, quotes_evidence_page, quotes_value


def q(text: str, page: int = 60, source: str = "/c/ACME_2023_10K.pdf") -> dict:
    return {"text": text, "page": page, "source": source}


def test_label_values_keep_their_precision():
    assert label_values("$1577.00") == [(1577.0, 2)]
    assert label_values("1.9%") == [(1.9, 1)]
    assert label_values("No figure here") == []


def test_a_quoted_figure_matches_at_the_labels_precision_and_scale():
    row = q("Purchases of property and equipment: 2023 (1,577); 2022 (1,373)")
    assert quotes_value([row], "$1577.00")
    assert quotes_value([q("Property, plant and equipment, net: 2023 8,702")], "$8.70")  # millions -> billions
    assert not quotes_value([q("Property, plant and equipment, net: 2023 8,738")], "$8.70")
    assert not quotes_value([row], "24.26")


def test_quotes_from_the_evidence_page_count_as_its_line_items():
    row = q("Revenues: 2023 1,200; 2022 1,100")
    assert quotes_evidence_page([row], "ACME_2023_10K.pdf", [60])
    assert not quotes_evidence_page([row], "ACME_2023_10K.pdf", [61])
    assert not quotes_evidence_page([q("Revenue grew.")], "ACME_2023_10K.pdf", [60])

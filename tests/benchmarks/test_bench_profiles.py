"""The profiles bench's scoring (issue 35): name and period normalisation, halves, misses."""

import json

from benchmarks.documents.profiles import evaluate, norm_issuer, norm_period
from h3.resources.nlp.issuer import DocumentProfile


def test_issuer_names_compare_without_punctuation_or_suffix_spelling_only():
    assert norm_issuer("Acme Widgets, Inc") == norm_issuer("ACME WIDGETS, INC.")
    assert norm_issuer("Acme Corp.") == norm_issuer("Acme Corporation")
    assert norm_issuer("Bolt, Inc.") != norm_issuer("Rivet, Inc.")  # a renamed company is not it
    assert norm_issuer("Acme") != norm_issuer("Acme Corporation")


def test_periods_compare_in_both_notations():
    assert norm_period("Q2 2023") == norm_period("FY2023 Q2") == "FY2023 Q2"
    assert norm_period("FY2022") == "FY2022" and norm_period(None) == ""


def test_evaluate_scores_each_half_and_lists_misses(tmp_path):
    rows = [
        {"file": "pdfs/ALDER_2024_10K.pdf", "issuer": "Alder Inc.", "form": "10-K",
         "fiscal_period": "FY2024", "dated": None},
        {"file": "unlabelled/BIRCH_2024_8K_dated-2024-03-01.pdf", "issuer": "Birch Co.",
         "form": "8-K", "fiscal_period": None, "dated": "2024-03-01"},
    ]
    (tmp_path / "profiles.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    got = {"ALDER_2024_10K.pdf": DocumentProfile("Alder Inc", (), "", "10-K", 2024, "FY2024"),
           "BIRCH_2024_8K_dated-2024-03-01.pdf": DocumentProfile("Birch Co.", form_type="8-K",
                                                                 dated="2024-02-28")}

    def fake(path: str) -> DocumentProfile:
        return got[path.rsplit("/", 1)[-1]]

    report = evaluate(fake, tmp_path)
    assert report["accuracy"]["tune"]["issuer"] == {"right": 1, "of": 1, "accuracy": 1.0}
    assert report["accuracy"]["all"]["fiscal_period"]["of"] == 1  # 8-K without a period: unscored
    assert report["accuracy"]["check"]["dated"]["accuracy"] == 0.0
    assert [(m["field"], m["got"]) for m in report["misses"]] == [("dated", "2024-02-28")]

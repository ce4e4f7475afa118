"""The seed benchmark's corpora, generated deterministically (no downloads), sized by token count:

- `report_pdf`: a long due-diligence report as a PDF (parties, amounts, dates, risk clauses on
  known pages), for document understanding (summary + key facts).
- `code_base`: a small code base rendered as text (files of functions calling external APIs),
  with the ground truth of which APIs each function calls.
- `related_documents`: 3-5 short related documents where the answer needs facts from several
  (multi-hop), with the question and its answer.

Run `python -m benchmarks.documents.seed_corpus OUT_DIR` to write them to disk for a look.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

COMPANIES = ["Acme Holdings Inc", "Borealis Group Ltd", "Corvid Analytics LLC", "Dunmore Bank AG",
             "Elmstead Logistics plc", "Fairhaven Energy Corp"]
PEOPLE = ["Maria Okafor", "Jonas Lindqvist", "Priya Raman", "Tomasz Nowak", "Helen Achebe"]
CITIES = ["Tampere", "Porto", "Gdansk", "Ljubljana", "Aarhus"]
SECTIONS = ["Business overview", "Financial position", "Material contracts", "Litigation",
            "Regulatory matters", "Employees", "Intellectual property", "Tax"]


def report_paragraphs(target_words: int, seed: int = 7) -> list[str]:
    """Paragraphs of a due-diligence report, about `target_words` words in all."""
    rng = random.Random(seed)
    buyer, seller, bank = COMPANIES[0], COMPANIES[1], COMPANIES[3]
    paras = [
        f"This due diligence report concerns the proposed acquisition of {seller} (\"Seller\") "
        f"by {buyer} (\"Buyer\"). The purchase price of EUR 48.5 million shall be paid at "
        f"closing. The agreement was signed on March 3, 2024 and the closing date is "
        f"June 30, 2024.",
    ]
    words = len(paras[0].split())
    i = 0
    while words < target_words:
        section = SECTIONS[i % len(SECTIONS)]
        amount = rng.choice([1.2, 2.75, 3.4, 5.0, 7.25, 12.0])
        year = rng.choice([2021, 2022, 2023])
        risk = rng.choice([
            f"The supply contract may be terminated by either party on 90 days notice, and the "
            f"Seller shall indemnify the Buyer for any breach of warranty up to EUR {amount} "
            f"million.",
            f"A claim for damages of EUR {amount} million filed in {year} is pending; the "
            f"liability is not provisioned in the accounts.",
            f"The credit facility with {bank} carries an interest rate of {rng.choice([4, 5, 6])}% "
            f"and a change of control clause that allows the lender to demand repayment.",
            f"Revenue of the unit was EUR {amount} million in {year}, with a margin of "
            f"{rng.choice([8, 11, 14])}%.",
        ])
        text = (f"{section}. The review of this area covered documents provided in the data room "
                f"and interviews with management held in {rng.choice(CITIES)}. {risk} "
                f"Management stated that no other matters of this kind are known, and the "
                f"reviewers found the records complete for the period under review.")
        paras.append(text)
        words += len(text.split())
        i += 1
    return paras


def report_pdf(path: Path, target_words: int) -> Path:
    """Writes the report as a PDF (about 450 words a page); returns the path."""
    import pymupdf

    doc = pymupdf.open()
    page, y = None, 0.0
    for para in report_paragraphs(target_words):
        height = 14.0 * (len(para) // 95 + 2)
        if page is None or y + height > 780:
            page, y = doc.new_page(width=595, height=842), 50.0
        page.insert_textbox(pymupdf.Rect(50, y, 545, y + height), para, fontsize=10)
        y += height
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path


APIS = ["requests.get", "requests.post", "boto3.client", "stripe.Charge.create",
        "smtplib.SMTP", "redis.Redis", "psycopg2.connect", "openweather.current",
        "slack_sdk.WebClient", "twilio.rest.Client"]
VERBS = ["sync", "load", "push", "refresh", "notify", "charge", "archive", "fetch"]
NOUNS = ["invoices", "orders", "weather", "customers", "reports", "payments", "alerts", "stock"]


def code_base(n_functions: int, seed: int = 11) -> tuple[str, dict[str, list[str]]]:
    """A code base rendered as text and {function name: external APIs it calls}."""
    rng = random.Random(seed)
    files: list[str] = []
    truth: dict[str, list[str]] = {}
    names = [f"{v}_{n}" for v in VERBS for n in NOUNS]
    rng.shuffle(names)
    for i, name in enumerate(names[:n_functions]):
        apis = rng.sample(APIS, 2)
        truth[name] = apis
        body = "\n".join(f"    r{j} = {api}(config[{name!r}][{j}])" for j, api in enumerate(apis))
        helper = f"_helper_{i}"
        files.append(
            f"# file: services/{name}.py\n"
            f"def {helper}(value):\n    return str(value).strip()\n\n"
            f"def {name}(config):\n    \"\"\"{name.replace('_', ' ').capitalize()}.\"\"\"\n"
            f"{body}\n    return {helper}(r0), r1\n")
    return "\n".join(files), truth


def related_documents(n_docs: int = 4, filler_sentences: int = 3, seed: int = 5
                      ) -> tuple[list[str], list[dict]]:
    """3-5 short related documents and multi-hop questions over them (with answers)."""
    rng = random.Random(seed)
    acquirer, target = COMPANIES[2], COMPANIES[4]
    ceo, city = PEOPLE[1], CITIES[3]
    filler = ("The document was prepared for the board and reviewed by the legal team. "
              "Figures are unaudited unless stated otherwise. ")
    facts = [
        f"Press release. {acquirer} announced that it completed the acquisition of {target} "
        f"on May 14, 2024 for EUR 31 million.",
        f"Company profile. The chief executive officer of {target} is {ceo}, who has led the "
        f"company since 2019.",
        f"Biography. {ceo} was born in {city} and studied engineering before joining the "
        f"logistics sector.",
        f"Board minutes. The board of {acquirer} approved a budget of EUR 4 million for "
        f"integrating {target} into its operations.",
        f"Lender note. {COMPANIES[3]} provided the acquisition loan to {acquirer} at an "
        f"interest rate of 5%.",
    ][:n_docs]
    docs = [f + " " + filler * filler_sentences + f"Reference {rng.randint(100, 999)}."
            for f in facts]
    questions = [
        {"question": f"In which city was the chief executive officer of the company that "
                     f"{acquirer} acquired born?", "answer": city},
        {"question": f"Who leads the company that {acquirer} acquired?", "answer": ceo},
    ]
    return docs, questions


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-corpus")
    report_pdf(out / "report.pdf", 3000)
    code, truth = code_base(12)
    (out / "code_base.txt").write_text(code)
    docs, qs = related_documents()
    for i, d in enumerate(docs):
        (out / f"related_{i}.txt").write_text(d)
    print(f"wrote {out}")

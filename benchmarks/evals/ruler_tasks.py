"""RULER-style synthetic tasks (after NVIDIA/RULER's task definitions, Apache-2.0), generated here.

Tasks (RULER names): niah_single_1 (needle in noise: one sentence repeated), niah_single_2
(needle in prose), niah_multikey_1 (prose + 3 distractor needles with other keys),
niah_multikey_2 (the haystack is made of needles with other keys), niah_multivalue (4 values
for one key, in prose), niah_multiquery (4 keys asked at once, in prose), vt (variable tracking:
one 4-hop chain of `VAR X = ...` in noise), cwe (the 10 most common words of a numbered list),
fwe (the 3 most frequent coded words). Plus `passkey` in varied prose at a given depth.

The prose is one sentence per WordNet synset (lemma + gloss, from the lists timm ships):
varied English sentences, never downloaded. Prompts use the model's chat template and
end with RULER's answer prefix; scoring is RULER's string_match_all (the fraction of the
reference strings found in the output, case-insensitive).
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
NIAH_TEMPLATE = ("Some special magic {kind} are hidden within the following text. Make sure to "
                 "memorize it. I will quiz you about the {kind} afterwards.\n{context}\nWhat are all "
                 "the special magic {kind} for {query} mentioned in the provided text?")
NIAH_ANSWER = " The special magic {kind} for {query} mentioned in the provided text are"
NEEDLE = " One of the special magic numbers for {key} is: {value}. "
PASSKEY = "passkey"  # the passkey-in-prose part of the ruler bench (not a RULER task)
TASKS = ("niah_single_1", "niah_single_2", "niah_multikey_1", "niah_multikey_2",
         "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe")
MAX_NEW = {"niah_single_1": 32, "niah_single_2": 32, "niah_multikey_1": 32, "niah_multikey_2": 32,
           "niah_multivalue": 48, "niah_multiquery": 48, "vt": 32, "cwe": 48, "fwe": 24,
           "passkey": 10}
ADJ = ("quick brave calm eager fancy gentle happy jolly kind lively proud silly witty zealous "
       "ancient bitter crisp dusty elegant frozen golden hollow ivory jagged").split()
NOUN = ("otter falcon maple river canyon lantern violin harbor meadow comet dolphin glacier "
        "pepper saddle tunnel walnut anchor beacon cactus dragon ember fjord").split()


@dataclass(frozen=True)
class Sample:
    task: str
    length: int  # target prompt tokens
    ids: list[int]
    answers: list[str]  # every one must appear in the output (string_match_all)
    max_new: int


@cache
def prose_sentences() -> tuple[str, ...]:
    """One English sentence per WordNet noun synset of ImageNet-21K ("Heterotroph is an organism
    that depends on complex organic substances for nutrition."), built from the lemma and gloss
    lists timm ships (timm comes with open_clip, the CLIP embedder's package; WordNet's license
    allows use and copies). Varied everyday English on every topic: CPython's own reference
    docs, the first source, made the 135M model answer a passkey question with Python lore
    even under full attention."""
    from importlib.resources import files

    info = files("timm.data") / "_info"
    lemmas = dict(line.split("\t", 1) for line in
                  (info / "imagenet_synset_to_lemma.txt").read_text().splitlines() if "\t" in line)
    out: list[str] = []
    for line in (info / "imagenet_synset_to_definition.txt").read_text().splitlines():
        wnid, _, gloss = line.partition("\t")
        lemma = lemmas.get(wnid, "").split(",")[0].strip()
        gloss = gloss.strip().rstrip(".;")
        if lemma and 20 <= len(gloss) <= 300:
            out.append(f"{lemma[0].upper()}{lemma[1:]}: {gloss}.")
    return tuple(out)


def string_match_all(pred: str, refs: list[str]) -> float:
    """RULER's metric: the share of references contained in the prediction (case-insensitive)."""
    p = pred.lower()
    return sum(r.lower() in p for r in refs) / len(refs)


class _Builder:
    """Fits a haystack of interchangeable pieces between a fixed head and tail to `length` tokens."""

    def __init__(self, tok, length: int):
        self.tok, self.length = tok, length

    def enc(self, s: str) -> list[int]:
        return self.tok(s, add_special_tokens=False).input_ids

    def chat(self, user_head: str, context_pieces: list[list[int]], user_tail: str,
             answer_prefix: str) -> list[int]:
        head = self.enc("<|im_start|>user\n" + user_head)
        tail = self.enc(user_tail + "<|im_end|>\n<|im_start|>assistant\n" + answer_prefix)
        room = self.length - len(head) - len(tail)
        body: list[int] = []
        for piece in context_pieces:
            if len(body) + len(piece) > room:
                break
            body.extend(piece)
        return head + body + tail


def _key(rng: random.Random, used: set[str]) -> str:
    while True:
        k = f"{rng.choice(ADJ)}-{rng.choice(NOUN)}"
        if k not in used:
            used.add(k)
            return k


def _value(rng: random.Random, used: set[str]) -> str:
    while True:
        v = str(rng.randint(1_000_000, 9_999_999))
        if v not in used:
            used.add(v)
            return v


def _haystack(b: _Builder, kind: str, rng: random.Random, n_tokens: int) -> list[list[int]]:
    """Haystack pieces (token lists) totalling >= n_tokens: noise sentences or prose."""
    if kind == "noise":
        piece = b.enc(NOISE)
        return [piece] * (n_tokens // len(piece) + 2)
    sents = prose_sentences()
    i, out, total = rng.randrange(len(sents)), [], 0
    while total < n_tokens:
        out.append(b.enc(" " + sents[i % len(sents)]))
        total += len(out[-1])
        i += 1
    return out


def _insert(pieces: list[list[int]], needles: list[list[int]], depths: list[float],
            room: int) -> list[list[int]]:
    """Puts each needle between haystack pieces at its relative depth of the `room` tokens."""
    need = sum(len(n) for n in needles)
    out, used, total = [], [], 0
    budget = room - need
    kept: list[list[int]] = []
    for p in pieces:
        if total + len(p) > budget:
            break
        kept.append(p)
        total += len(p)
    cum, pos = 0, []
    bounds = [0]
    for p in kept:
        cum += len(p)
        bounds.append(cum)
    for d in depths:
        target = int(d * total)
        pos.append(min(range(len(bounds)), key=lambda j: abs(bounds[j] - target)))
    order = sorted(range(len(needles)), key=lambda j: pos[j])
    at = 0
    for j in order:
        out.extend(kept[at : pos[j]])
        out.append(needles[j])
        used.append(j)
        at = max(at, pos[j])
    out.extend(kept[at:])
    return out


def niah(tok, length: int, task: str, seed: int) -> Sample:
    rng = random.Random(f"{task}-{length}-{seed}")
    b = _Builder(tok, length)
    keys: set[str] = set()
    vals: set[str] = set()
    query = _key(rng, keys)
    n_values = 4 if task == "niah_multivalue" else 1
    n_queries = 4 if task == "niah_multiquery" else 1
    queries = [query] + [_key(rng, keys) for _ in range(n_queries - 1)]
    needles, answers = [], []
    for q in queries:
        for _ in range(n_values):
            v = _value(rng, vals)
            needles.append(b.enc(NEEDLE.format(key=q, value=v)))
            answers.append(v)
    if task == "niah_multikey_1":  # distractors: the same needle with other keys
        needles += [b.enc(NEEDLE.format(key=_key(rng, keys), value=_value(rng, vals)))
                    for _ in range(3)]
    kind = "numbers"
    qtext = ", ".join(queries[:-1]) + (" and " if len(queries) > 1 else "") + queries[-1]
    head = NIAH_TEMPLATE.split("{context}")[0].format(kind=kind)
    tail = NIAH_TEMPLATE.split("{context}")[1].format(kind=kind, query=qtext)
    answer = NIAH_ANSWER.format(kind=kind, query=qtext)
    room = length - len(b.enc("<|im_start|>user\n" + head)) - len(
        b.enc(tail + "<|im_end|>\n<|im_start|>assistant\n" + answer))
    if task == "niah_multikey_2":  # the haystack is made of other needles (keys are words)
        # the numeric suffix keeps every key distinct from the query and from each other (an 8K
        # haystack needs more needles than there are adjective-noun pairs)
        hay = [b.enc(NEEDLE.format(key=f"{rng.choice(ADJ)}-{rng.choice(NOUN)}-{i}",
                                   value=_value(rng, vals)))
               for i in range(room // 12 + 2)]
    else:
        hay = _haystack(b, "noise" if task == "niah_single_1" else "prose", rng, room)
    depths = [rng.random() for _ in needles]
    body = _insert(hay, needles, depths, room)
    ids = b.chat(head, body, tail, answer)
    return Sample(task, length, ids, answers, MAX_NEW[task])


def variable_tracking(tok, length: int, seed: int, hops: int = 4) -> Sample:
    rng = random.Random(f"vt-{length}-{seed}")
    b = _Builder(tok, length)
    names = ["".join(rng.choice(string.ascii_uppercase) for _ in range(5)) for _ in range(hops + 1)]
    value = str(rng.randint(10000, 99999))
    chain = [f" VAR {names[0]} = {value}."] + [f" VAR {names[i]} = VAR {names[i - 1]}."
                                                for i in range(1, hops + 1)]
    head = "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
    tail = f"\nQuestion: Find all variables that are assigned the value {value} in the text above."
    answer = (" Answer: According to the chain(s) of variable assignment in the text above, "
              f"{hops + 1} variables are assigned the value {value}, they are: ")
    room = length - len(b.enc("<|im_start|>user\n" + head)) - len(
        b.enc(tail + "<|im_end|>\n<|im_start|>assistant\n" + answer))
    hay = _haystack(b, "noise", rng, room)
    depths = sorted(rng.random() for _ in chain)  # the chain in order, spread over the context
    body = _insert(hay, [b.enc(c) for c in chain], depths, room)
    return Sample("vt", length, b.chat(head, body, tail, answer), names, MAX_NEW["vt"])


def _word_pool() -> list[str]:
    words = sorted({w.lower() for s in prose_sentences() for w in re.findall(r"\b[a-z]{5,9}\b", s)})
    return words


def common_words(tok, length: int, seed: int) -> Sample:
    """cwe: 10 words appear 30 times each, the others 3 times each (RULER's freq_cw / freq_ucw)."""
    rng = random.Random(f"cwe-{length}-{seed}")
    b = _Builder(tok, length)
    pool = _word_pool()
    rng.shuffle(pool)
    common, rare = pool[:10], pool[10:]
    head = ("Below is a numbered list of words. In these words, some appear more often than others. "
            "Memorize the ones that appear most often.\n")
    tail = "\nQuestion: What are the 10 most common words in the above list?"
    answer = " Answer: The top 10 words that appear most often in the list are:"
    room = length - len(b.enc("<|im_start|>user\n" + head)) - len(
        b.enc(tail + "<|im_end|>\n<|im_start|>assistant\n" + answer))
    # as many rare words (3 each) as fit: entries are encoded once, then the list is cut to room
    words = common * 30 + [w for w in rare[: room // 3] for _ in range(3)]
    rng.shuffle(words)
    pieces = [b.enc(f" {i + 1}. {w}") for i, w in enumerate(words)]
    total = sum(len(p) for p in pieces)
    keep = [True] * len(words)
    for i in range(len(words) - 1, -1, -1):  # drop rare entries from the end until it fits
        if total <= room:
            break
        if words[i] not in common:
            keep[i] = False
            total -= len(pieces[i])
    words = [w for w, k in zip(words, keep, strict=True) if k]
    pieces = [b.enc(f" {i + 1}. {w}") for i, w in enumerate(words)]  # renumbered
    return Sample("cwe", length, b.chat(head, pieces, tail, answer), common, MAX_NEW["cwe"])


def frequent_words(tok, length: int, seed: int, alpha: float = 2.0) -> Sample:
    """fwe: coded words drawn from a Zipf distribution; the 3 most frequent are the answer."""
    rng = random.Random(f"fwe-{length}-{seed}")
    b = _Builder(tok, length)
    vocab = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 6)))
             for _ in range(200)]
    weights = [1.0 / (r + 1) ** alpha for r in range(len(vocab))]
    head = ("Read the following coded text and track the frequency of each coded word. Find the "
            "three most frequently appeared coded words. ")
    tail = ("\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are the "
            "three most frequently appeared words in the above coded text?")
    answer = (" Answer: According to the coded text above, the three most frequently appeared "
              "words are:")
    room = length - len(b.enc("<|im_start|>user\n" + head)) - len(
        b.enc(tail + "<|im_end|>\n<|im_start|>assistant\n" + answer))
    pieces, total, counts = [], 0, dict.fromkeys(vocab, 0)
    while True:
        w = rng.choices(vocab, weights)[0]
        p = b.enc(f" {w}" + (" ...." if rng.random() < 0.2 else ""))
        if total + len(p) > room:
            break
        pieces.append(p)
        total += len(p)
        counts[w] += 1
    top = sorted(vocab, key=lambda w: -counts[w])[:3]
    return Sample("fwe", length, b.chat(head, pieces, tail, answer), top, MAX_NEW["fwe"])


def passkey(tok, length: int, depth: float, seed: int) -> Sample:
    """The passkey task with a varied-prose haystack (not one sentence repeated)."""
    rng = random.Random(f"passkey-{length}-{depth}-{seed}")
    b = _Builder(tok, length)
    key = str(rng.randint(10000, 99999))
    head = "There is an important info hidden inside a lot of irrelevant text. Find it and memorize it."
    tail = " What is the pass key? Answer with the number."
    answer = "The pass key is"
    room = length - len(b.enc("<|im_start|>user\n" + head)) - len(
        b.enc(tail + "<|im_end|>\n<|im_start|>assistant\n" + answer))
    hay = _haystack(b, "prose", rng, room)
    needle = b.enc(f" The pass key is {key}. Remember it. {key} is the pass key.")
    body = _insert(hay, [needle], [depth], room)
    return Sample("passkey", length, b.chat(head, body, tail, answer), [key], MAX_NEW["passkey"])


def make_sample(tok, task: str, length: int, seed: int) -> Sample:
    makers: dict[str, Callable[[], Sample]] = {
        "vt": lambda: variable_tracking(tok, length, seed),
        "cwe": lambda: common_words(tok, length, seed),
        "fwe": lambda: frequent_words(tok, length, seed),
    }
    return makers.get(task, lambda: niah(tok, length, task, seed))()

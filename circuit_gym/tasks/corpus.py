"""Plain-text generators in the style of the built-in tasks.

Used twice, with the same code so the two can never drift apart:
- by ``scripts/train_toy_model.py`` to write the embedded model's training data
  (complete IOI sentences, documented functions, and *ordinary* text that uses the
  same names and parameter words without the task structure);
- by the general-damage reference batch, whose task-style ordinary text makes heads
  that merely read the synthetic vocabulary cost general loss too.
"""

from __future__ import annotations

import hashlib
import random
import sysconfig
from pathlib import Path

import numpy as np

from circuit_gym.tasks import fillers as F
from circuit_gym.tasks.recall import draw_minimum_triple

PLACES = ("store", "park", "office", "house", "cafe", "garden", "school", "market", "river")
THINGS = ("drink", "ball", "letter", "key", "book", "snack", "ring", "cup", "bag", "hat")
ADJECTIVES = ("happy", "tired", "late", "early", "busy", "quiet", "glad", "ready")


def ioi_sentence(rng: random.Random, split: str = "train") -> str:
    """A complete IOI sentence, answer included."""
    template = rng.choice(F.ioi_templates(split))
    io, s = rng.choice(F.ioi_name_pairs(split))
    a, b = (io, s) if rng.random() < 0.5 else (s, io)
    return template.format(A=a, B=b, S=s) + f" {io}."


def documented_function(rng: random.Random, split: str = "train") -> str:
    """A function whose docstring documents all three parameters in order."""
    a, b, c = rng.choice(F.docstring_param_triples(split))
    prompt = rng.choice(F.docstring_templates(split)).format(F=rng.choice(F.FUNCTION_NAMES), A=a, B=b, C=c)
    d3 = rng.choice(F.DOCSTRING_DESCRIPTIONS)
    return f'{prompt} {c}: {d3}\n    """\n    return {rng.choice((a, b, c))}\n'


def ordinary_name_text(rng: random.Random) -> str:
    """Sentences with the task's names but no indirect-object structure."""
    n1, n2 = rng.sample(F.NAMES, 2)
    forms = (
        f"Then, {n1} was {rng.choice(ADJECTIVES)} at the {rng.choice(PLACES)}.",
        f"Today {n1} and {n2} went home.",
        f"The {rng.choice(THINGS)} belongs to {n1}.",
        f"Later, {n1} said that the {rng.choice(THINGS)} was {rng.choice(ADJECTIVES)}.",
        f"When {n1} went to the {rng.choice(PLACES)}, {n1} found a {rng.choice(THINGS)}.",
        f"Then, {n1} and {n2} were {rng.choice(ADJECTIVES)}.",
    )
    return rng.choice(forms)


def ordinary_code(rng: random.Random) -> str:
    """Code with the task's parameter words but no parameter-listing docstring."""
    p, q, r = rng.sample(F.PARAM_WORDS, 3)
    fn = rng.choice(F.FUNCTION_NAMES)
    forms = (
        f"def {fn}({p}, {q}):\n    return {p} + {q}\n",
        f"for {p} in {q}:\n    print({p})\n",
        f"{p} = {q}.get({r})\n",
        f"def {fn}(self, {p}):\n    self.{p} = {p}\n",
        f'def {fn}({p}):\n    """Return the {q}."""\n    return {p}.{q}\n',
        f"if {p} is None:\n    {p} = {r}\n",
    )
    return rng.choice(forms)


def task_style_reference_text(rng: random.Random, n_items: int) -> list[str]:
    """Ordinary text in the tasks' style, for the general-damage reference batch."""
    return [ordinary_name_text(rng) if i % 2 == 0 else ordinary_code(rng) for i in range(n_items)]


def stdlib_files() -> tuple[list[str], list[str]]:
    """(train texts, held-out texts) of this Python's standard library, in a fixed order.

    Files that are not UTF-8 are skipped; a hash of the relative path holds out ~10%.
    """
    root = Path(sysconfig.get_paths()["stdlib"])
    train, held = [], []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        rel = str(path.relative_to(root))
        bucket = int(hashlib.blake2b(rel.encode(), digest_size=4).hexdigest(), 16) % 10
        (held if bucket == 0 else train).append(text)
    return train, held


# ----------------------------------------------------- suite v2 training sentences
# Complete examples (answer included) of the five newer tasks, from their *train*
# split, plus ordinary text with the same words but without the task structure.
def year_sentence(rng: random.Random, split: str = "train") -> str:
    """'The war lasted from 1732 to 1745.' (the end year is later: uniform above)."""
    frame, noun, century, yy = rng.choice(F.gt_items(split))
    end = rng.randint(yy + 1, 99)
    return frame.format(N=noun, C=century, Y=f"{yy:02d}") + f"{end:02d}."


def successor_text(rng: random.Random, split: str = "train") -> str:
    """'The order was Monday, Tuesday, Wednesday, Thursday, Friday.' (cyclic)."""
    intro, name, start = rng.choice(F.successor_items(split))
    seq = F.SUCCESSOR_SEQUENCES[name]
    n = rng.randint(4, 6)
    return f"{intro} " + ", ".join(seq[(start + i) % len(seq)] for i in range(n)) + "."


def pronoun_sentence(rng: random.Random, split: str = "train") -> str:
    """'Later, Nancy left the market because she was tired.'"""
    frame, name, adj, place = rng.choice(F.pronoun_items(split))
    pronoun = "she" if name in F.FEMALE_NAMES else "he"
    return frame.format(N=name, J=adj, P=place) + f" {pronoun} was {rng.choice(ADJECTIVES)}."


def agreement_sentence(rng: random.Random, split: str = "train") -> str:
    """'The keys near the door are old.' (the attractor has the other number)."""
    opening, subj, prep, attr, plural = rng.choice(F.agreement_items(split))
    s, a = (subj + "s", attr) if plural else (subj, attr + "s")
    verb = F.AGREEMENT_OPENINGS[opening][int(plural)]
    return f"{opening} {s} {prep} the {a} {verb} {rng.choice(ADJECTIVES)}."


def bracket_code(rng: random.Random, split: str = "train") -> str:
    """'x = run(file, [index, count])' followed by a line that uses the result."""
    var, fn, bracket, outer, in1, in2 = rng.choice(F.bracket_items(split))
    close = F.BRACKET_PAIRS[bracket]
    return f"{var} = {fn}({outer}, {bracket}{in1}, {in2}{close})\nprint({var})\n"


def ordinary_suite_text(rng: random.Random) -> str:
    """The newer tasks' words used without their structure."""
    day = rng.choice(F.SUCCESSOR_SEQUENCES["days"])
    month = rng.choice(F.SUCCESSOR_SEQUENCES["months"])
    name = rng.choice(F.FEMALE_NAMES + F.MALE_NAMES)
    noun = rng.choice(F.AGREEMENT_NOUNS)
    word = rng.choice(F.PARAM_WORDS[:12])
    forms = (
        f"In {rng.choice(F.GT_CENTURIES)}{rng.randint(0, 99):02d} the {rng.choice(F.GT_NOUNS)} began.",
        f"We met on a {day} in {month}.",
        f"{name} saw the {noun} in {month}.",
        f"The {noun} was {rng.choice(ADJECTIVES)} on {day}.",
        f"{word} = [{rng.choice(F.PARAM_WORDS)}]\n",
        f"print({word}, {{{rng.choice(F.PARAM_WORDS)}}})\n",
    )
    return rng.choice(forms)


# ----------------------------------------------------- suite v3 training sentences
def capital_sentence(rng: random.Random, split: str = "train") -> str:
    """A complete capital sentence of ``split`` (answer included), for training text."""
    frame, country = rng.choice(F.capital_items(split))
    return frame.format(X=country) + f" {F.CAPITALS[country]}."


def minimum_sentence(rng: random.Random, split: str = "train") -> str:
    """A complete minimum sentence of ``split`` (answer included), for training text."""
    frame = rng.choice(F.MINIMUM_FRAMES)
    gen = np.random.default_rng(rng.getrandbits(32))
    triple = draw_minimum_triple(gen, frame, split)
    return frame.format(A=triple[0], B=triple[1], C=triple[2]) + f" {min(triple)}."


def ordinary_recall_text(rng: random.Random) -> str:
    """The recall and comparison tasks' words used without their structure."""
    country, other = rng.sample(list(F.CAPITALS), 2)
    city = F.CAPITALS[rng.choice(list(F.CAPITALS))]
    a, b = rng.sample(F.MINIMUM_NUMBERS, 2)
    forms = (
        f"{country} and {other} played a match.",
        f"The train to {city} was {rng.choice(ADJECTIVES)}.",
        f"We bought {a} apples and {b} pears.",
        f"The team from {country} scored {a} points.",
        f"It was {a} degrees in {city}.",
    )
    return rng.choice(forms)

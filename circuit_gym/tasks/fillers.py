"""Word lists and templates of the built-in tasks, with their train / eval / test splits.

This module is plain data plus deterministic split functions. It is shared by the
prompt generators (``circuit_gym.tasks``) and by the script that trains the embedded
model (``scripts/train_toy_model.py``), so the held-out templates and filler
combinations the benchmark evaluates on are exactly the ones the model never saw.

Splits differ in *fillers and templates*, not only in seeds:
- IOI: templates are split by list; ordered name pairs are split by a hash of the
  unordered pair. Every single name occurs in training pairs.
- docstring: templates are split by list; parameter triples by a hash of the triple.
- induction: random-token sequences drawn from disjoint token subsets per split.
"""

from __future__ import annotations

import functools
import hashlib
import itertools

SPLITS = ("train", "eval", "test")

# Every name is written with a leading space in prompts (" Mary"), and must be a single
# token of the model's tokenizer there.
NAMES: tuple[str, ...] = (
    "Mary", "John", "Tom", "James", "Anna", "Lisa", "Paul", "Mark", "Sarah", "Kate",
    "David", "Emma", "Peter", "Jack", "Laura", "Alice", "Bob", "Mike", "Linda", "Susan",
    "Steve", "Karen", "Frank", "Rose", "Amy", "Dan", "Grace", "Henry", "Jane", "Kevin",
    "Ruth", "Sam", "Tim", "Nancy", "Helen", "Adam", "Brian", "Carl", "Diana", "Eric",
)  # fmt: skip

# {A} and {B} are introduced; {S} repeats one of them; the answer is the other (IO).
IOI_TEMPLATES: dict[str, tuple[str, ...]] = {
    "train": (
        "Then, {A} and {B} went to the store. {S} gave a drink to",
        "When {A} and {B} went to the park, {S} gave a ball to",
        "After {A} and {B} went to the office, {S} gave a letter to",
        "While {A} and {B} were at the house, {S} gave a key to",
        "Then, {A} and {B} had a long talk. Afterwards {S} said hello to",
        "When {A} and {B} got a snack at the cafe, {S} gave it to",
        "Then, {A} and {B} found a bone at the garden. {S} gave it to",
        "Then, {A} and {B} went to the school. {S} gave a book to",
    ),
    "eval": (
        "When {A} and {B} arrived at the station, {S} handed a ticket to",
        "After lunch, {A} and {B} went to the beach. {S} threw a ball to",
    ),
    "test": (
        "While {A} and {B} were cooking in the kitchen, {S} passed a spoon to",
        "Later, {A} and {B} sat in the library. {S} showed a map to",
    ),
}

# Docstring task: a function signature with three parameters, a docstring that
# documents the first two, and the cue ":param" before the third.
FUNCTION_NAMES: tuple[str, ...] = (
    "load", "save", "parse", "run", "get", "set", "build", "check", "send", "read",
    "write", "update", "create", "remove", "find", "open", "close", "start", "stop",
    "reset", "fetch", "apply", "merge", "render",
)  # fmt: skip

PARAM_WORDS: tuple[str, ...] = (
    "file", "name", "size", "data", "key", "value", "path", "mode", "line", "text",
    "count", "index", "item", "user", "node", "port", "host", "url", "limit", "source",
    "target", "label", "color", "width", "height", "flag", "level", "depth", "token",
    "query", "state", "event", "config", "image", "group", "order",
)  # fmt: skip

# A docstring template fixes everything but the fillers, so one template has one
# token length and a prompt batch needs no padding.
# Every parameter follows a space, so " word" is its single token everywhere.
_SIGNATURES = ("def {F}(self, {A}, {B}, {C}):", "def {F}(cls, {A}, {B}, {C}):")
DOCSTRING_SIGNATURES: dict[str, tuple[str, ...]] = {split: _SIGNATURES for split in SPLITS}
DOCSTRING_SUMMARIES: dict[str, tuple[str, ...]] = {
    "train": (
        "Do the main work.", "Handle the request.", "Compute the result.",
        "Prepare the output.", "Process the input.", "Run one step.",
    ),
    "eval": ("Update the local copy.", "Send the final report."),
    "test": ("Check the given values.", "Build a new object."),
}  # fmt: skip
DOCSTRING_DESCRIPTIONS: dict[str, tuple[str, ...]] = {
    "train": (
        "the input value", "an optional setting", "used for the output",
        "the first part", "a small number", "where to start",
        "the current object", "how to format it",
    ),
    "eval": ("the shared buffer", "a fixed offset"),
    "test": ("the new entry", "a simple rule"),
}  # fmt: skip

DOCSTRING_BODY = '{sig}\n    """{summary}\n\n    :param {A}: {d1}\n    :param {B}: {d2}\n    :param'


def _split_of(key: str, weights: tuple[int, int, int] = (70, 15, 15)) -> str:
    """Deterministic train/eval/test assignment of a filler combination."""
    bucket = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") % 100
    if bucket < weights[0]:
        return "train"
    if bucket < weights[0] + weights[1]:
        return "eval"
    return "test"


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


@functools.cache
def ioi_name_pairs(split: str, names: tuple[str, ...] = NAMES) -> tuple[tuple[str, str], ...]:
    """Ordered (io, s) name pairs of a split; both orders of a pair share its split."""
    check_split(split)
    return tuple(
        (a, b)
        for a, b in itertools.permutations(names, 2)
        if _split_of("ioi:" + "|".join(sorted((a, b)))) == split
    )


@functools.cache
def docstring_param_triples(
    split: str, words: tuple[str, ...] = PARAM_WORDS
) -> tuple[tuple[str, str, str], ...]:
    """Ordered parameter triples (documented, documented, answer) of a split."""
    check_split(split)
    return tuple(t for t in itertools.permutations(words, 3) if _split_of("doc:" + "|".join(t)) == split)


@functools.cache
def docstring_templates(split: str) -> tuple[str, ...]:
    """Full docstring skeletons of a split: signature x summary x description pair."""
    check_split(split)
    out = []
    descs = DOCSTRING_DESCRIPTIONS[split]
    for sig in DOCSTRING_SIGNATURES[split]:
        for summary in DOCSTRING_SUMMARIES[split]:
            for d1, d2 in itertools.permutations(descs, 2):
                out.append(
                    DOCSTRING_BODY.replace("{sig}", sig)
                    .replace("{summary}", summary)
                    .replace("{d1}", d1)
                    .replace("{d2}", d2)
                )
    return tuple(out)

"""Word lists and templates of the built-in tasks, with their train / eval / test splits.

This module is plain data plus deterministic split functions. It is shared by the
prompt generators (``circuit_gym.tasks``) and by the script that trains the embedded
model (``scripts/train_toy_model.py``), so the held-out templates and filler
combinations the benchmark evaluates on are exactly the ones the model never saw.

Splits differ in *fillers and templates*, not only in seeds:
- IOI: templates (combinations of parts) and ordered name pairs (by the unordered pair)
  are split by a hash. Every single name and every template part occurs in training.
- docstring: templates (signature x summary x descriptions) and parameter triples are
  split by a hash; every part occurs in training.
- induction: random-token sequences drawn from disjoint thirds of the vocabulary per split;
  induction_seen: from disjoint thirds of the train third (the ids the embedded model copies).
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

# IOI templates are combinations of parts: an opening clause that introduces {A} and
# {B} at a place, and an action in which {S} (one of them) gives something to the other.
# Splits hold out *combinations*; every part occurs in training, so a held-out template
# is new as a whole but made of familiar pieces (a 4-layer model cannot be expected to
# read words it never saw).
IOI_OPENINGS = (
    "When {A} and {B} went to the {P},", "After {A} and {B} went to the {P},",
    "While {A} and {B} were at the {P},", "When {A} and {B} arrived at the {P},",
    "Then, {A} and {B} went to the {P}.", "Later, {A} and {B} sat in the {P}.",
    "Then, {A} and {B} had a long talk at the {P}.", "After lunch, {A} and {B} went to the {P}.",
)  # fmt: skip
IOI_PLACES = ("store", "park", "office", "house", "cafe", "garden", "school", "station", "beach",
              "kitchen", "library", "market")  # fmt: skip
IOI_ACTIONS = ("{S} gave a {T} to", "{S} handed a {T} to", "{S} threw a {T} to", "{S} passed a {T} to",
               "{S} showed a {T} to", "{S} gave it to", "{S} said hello to")  # fmt: skip
IOI_THINGS = ("drink", "ball", "letter", "key", "book", "ticket", "spoon", "map", "ring", "cup")


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
DOCSTRING_SIGNATURES = ("def {F}(self, {A}, {B}, {C}):", "def {F}(cls, {A}, {B}, {C}):")
DOCSTRING_SUMMARIES = (
    "Do the main work.", "Handle the request.", "Compute the result.", "Prepare the output.",
    "Process the input.", "Run one step.", "Update the local copy.", "Send the final report.",
    "Check the given values.", "Build a new object.",
)  # fmt: skip
DOCSTRING_DESCRIPTIONS = (
    "the input value", "an optional setting", "used for the output", "the first part",
    "a small number", "where to start", "the current object", "how to format it",
    "the shared buffer", "a fixed offset", "the new entry", "a simple rule",
)  # fmt: skip

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
def ioi_templates(split: str) -> tuple[str, ...]:
    """IOI templates of a split (combinations of opening, place, action and thing)."""
    check_split(split)
    out = []
    for opening, place, action in itertools.product(IOI_OPENINGS, IOI_PLACES, IOI_ACTIONS):
        things = IOI_THINGS if "{T}" in action else ("",)
        for thing in things:
            t = opening.replace("{P}", place) + " " + action.replace("{T}", thing)
            if _split_of("ioi-template:" + t) == split:
                out.append(t)
    return tuple(out)


@functools.cache
def docstring_templates(split: str) -> tuple[str, ...]:
    """Docstring skeletons of a split: signature x summary x description pair."""
    check_split(split)
    out = []
    for sig, summary in itertools.product(DOCSTRING_SIGNATURES, DOCSTRING_SUMMARIES):
        for d1, d2 in itertools.permutations(DOCSTRING_DESCRIPTIONS, 2):
            t = DOCSTRING_BODY.replace("{sig}", sig).replace("{summary}", summary)
            t = t.replace("{d1}", d1).replace("{d2}", d2)
            if _split_of("doc-template:" + t) == split:
                out.append(t)
    return tuple(out)


# ---------------------------------------------------------------- suite v2 fillers
# Five more behaviours from the circuits literature and everyday code. Every filler is
# a single token of the embedded tokenizer and of GPT-2's (checked in the tests); held-out
# splits are unseen *combinations* of familiar parts, as above.

# Greater-than (Hanna et al. 2023): "The war lasted from 1732 to 17" -> a year above 32.
# Years are written " CC" + "YY" (GPT-2 tokenizes " 1732" as " 17" + "32").
GT_NOUNS = ("war", "trip", "project", "reign", "drought", "festival", "strike", "siege",
            "journey", "voyage", "famine", "dynasty", "expedition", "flood")  # fmt: skip
GT_FRAMES = ("The {N} lasted from the year {C}{Y} to the year {C}", "The {N} lasted from {C}{Y} to {C}",
             "The {N} went on from {C}{Y} to {C}", "The {N} ran from {C}{Y} to {C}")  # fmt: skip
GT_CENTURIES = ("11", "12", "13", "14", "15", "16", "17", "18", "19")
GT_YEARS = tuple(range(2, 99))  # YY of the start year; 01 is the counterfactual (as in the paper)

# Successor: "Monday, Tuesday, Wednesday," -> " Thursday" (cyclic orders).
SUCCESSOR_SEQUENCES: dict[str, tuple[str, ...]] = {
    "days": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "months": ("January", "February", "March", "April", "May", "June", "July", "August",
               "September", "October", "November", "December"),
    "numbers": ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
}  # fmt: skip
SUCCESSOR_INTROS = ("The order was", "We counted", "In turn:", "The list went", "Next came",
                    "She wrote down", "They said")  # fmt: skip

# Gendered pronoun (Mathwin et al. 2023): "{name} was tired at the park because" -> " she".
FEMALE_NAMES = ("Mary", "Anna", "Lisa", "Sarah", "Kate", "Emma", "Laura", "Alice", "Linda", "Susan",
                "Karen", "Rose", "Amy", "Grace", "Jane", "Ruth", "Nancy", "Helen", "Diana")  # fmt: skip
MALE_NAMES = ("John", "Tom", "James", "Paul", "Mark", "David", "Peter", "Jack", "Bob", "Mike", "Steve",
              "Frank", "Dan", "Henry", "Kevin", "Tim", "Adam", "Brian", "Carl", "Eric")  # fmt: skip
PRONOUN_FRAMES = ("Today {N} was {J} at the {P} because", "Then {N} went to the {P} early because",
                  "Later, {N} left the {P} because", "Yesterday {N} stayed at the {P} since",
                  "Then {N} was {J} at the {P}, so")  # fmt: skip
PRONOUN_ADJECTIVES = ("happy", "tired", "late", "busy", "quiet", "glad", "ready", "early")
PRONOUN_PLACES = ("store", "park", "office", "house", "cafe", "garden", "school", "market")

# Subject-verb agreement (Linzen et al. 2016): "The keys near the door" -> " are".
AGREEMENT_NOUNS = ("key", "dog", "cat", "book", "car", "tree", "house", "bird", "door", "table",
                   "friend", "teacher", "player", "doctor", "letter", "boy", "girl", "window",
                   "farmer", "student")  # fmt: skip
AGREEMENT_PREPOSITIONS = ("near", "behind", "beside", "under", "above", "with", "for", "of")
# opening -> (singular verb, plural verb); the opening fixes the tense
AGREEMENT_OPENINGS: dict[str, tuple[str, str]] = {
    "The": ("is", "are"), "I think the": ("is", "are"), "We know the": ("is", "are"),
    "Yesterday the": ("was", "were"), "Last year the": ("was", "were"), "Back then the": ("was", "were"),
}  # fmt: skip

# Closing brackets: "x = run(file, [index, count" -> "]" (the innermost open bracket decides).
BRACKET_PAIRS = {"(": ")", "[": "]", "{": "}"}
BRACKET_VARIABLES = ("x", "y", "out", "res", "val", "tmp")  # fmt: skip
BRACKET_IDENTIFIERS = PARAM_WORDS  # "(file" and "[index" are written without a space


@functools.cache
def gt_items(split: str) -> tuple[tuple[str, str, str, int], ...]:
    """(frame, noun, century, start YY) combinations of a split."""
    check_split(split)
    out = []
    for frame, noun, c, y in itertools.product(GT_FRAMES, GT_NOUNS, GT_CENTURIES, GT_YEARS):
        if _split_of(f"gt:{frame}|{noun}|{c}|{y}") == split:
            out.append((frame, noun, c, y))
    return tuple(out)


@functools.cache
def successor_items(split: str) -> tuple[tuple[str, str, int], ...]:
    """(intro, sequence name, start index) combinations of a split."""
    check_split(split)
    out = []
    for intro, (name, seq) in itertools.product(SUCCESSOR_INTROS, SUCCESSOR_SEQUENCES.items()):
        for start in range(len(seq)):
            if _split_of(f"succ:{intro}|{name}|{start}") == split:
                out.append((intro, name, start))
    return tuple(out)


@functools.cache
def pronoun_items(split: str) -> tuple[tuple[str, str, str, str], ...]:
    """(frame, name, adjective, place) combinations of a split."""
    check_split(split)
    out = []
    for frame, name in itertools.product(PRONOUN_FRAMES, FEMALE_NAMES + MALE_NAMES):
        for adj, place in itertools.product(PRONOUN_ADJECTIVES, PRONOUN_PLACES):
            if _split_of(f"pron:{frame}|{name}|{adj}|{place}") == split:
                out.append((frame, name, adj, place))
    return tuple(out)


@functools.cache
def agreement_items(split: str) -> tuple[tuple[str, str, str, str, bool], ...]:
    """(opening, subject noun, preposition, attractor noun, plural subject) of a split.

    The attractor always has the other number than the subject, so the nearest noun
    points at the wrong verb form.
    """
    check_split(split)
    out = []
    for opening, subj, prep, attr in itertools.product(
        AGREEMENT_OPENINGS, AGREEMENT_NOUNS, AGREEMENT_PREPOSITIONS, AGREEMENT_NOUNS
    ):
        if subj == attr:
            continue
        for plural in (False, True):
            if _split_of(f"agr:{opening}|{subj}|{prep}|{attr}|{plural}") == split:
                out.append((opening, subj, prep, attr, plural))
    return tuple(out)


@functools.cache
def bracket_items(split: str) -> tuple[tuple[str, str, str, str, str, str], ...]:
    """(variable, function, inner open bracket, outer arg, inner arg 1, inner arg 2) of a split.

    The prompt is ``x = run(file, [index, count``: a call whose second argument opens a
    list, tuple or set literal; the next token closes the innermost bracket.
    """
    check_split(split)
    out = []
    words = BRACKET_IDENTIFIERS[:12]
    for var, fn, bracket in itertools.product(BRACKET_VARIABLES, FUNCTION_NAMES, BRACKET_PAIRS):
        for outer, in1, in2 in itertools.permutations(words, 3):
            if _split_of(f"br:{var}|{fn}|{bracket}|{outer}|{in1}|{in2}") == split:
                out.append((var, fn, bracket, outer, in1, in2))
    return tuple(out)


# ---------------------------------------------------------------- suite v3 fillers
# Two mechanisms the suite lacked (the held-out tasks were all copy-like): recalling a fact
# stored in the weights (capital cities), and selecting a token by comparing values
# (the smallest of three numbers). Every filler is one token of GPT-2's tokenizer (tested)
# and of the zoo's; the 144-head `toy` tokenizer predates them, so its gate excludes both.

# Capitals: "The capital of France is" -> " Paris". The facts themselves are the same in
# every split (a model cannot recall a fact it never read); splits are unseen
# (frame, country) combinations.
CAPITALS: dict[str, str] = {
    "France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Spain": "Madrid", "Egypt": "Cairo",
    "Russia": "Moscow", "China": "Beijing", "Germany": "Berlin", "Peru": "Lima", "Cuba": "Havana",
    "Greece": "Athens", "Norway": "Oslo", "Canada": "Ottawa", "Poland": "Warsaw", "Ireland": "Dublin",
    "Austria": "Vienna", "Portugal": "Lisbon", "Turkey": "Ankara", "England": "London", "Iraq": "Baghdad",
    "Iran": "Tehran", "India": "Delhi", "Korea": "Seoul", "Sweden": "Stockholm", "Hungary": "Budapest",
    "Syria": "Damascus", "Thailand": "Bangkok",
}  # fmt: skip
CAPITAL_FRAMES = ("The capital of {X} is", "We flew to {X} and landed in its capital,",
                  "Q: What is the capital of {X}? A:", "My friend from {X} lives in the capital,",
                  "We visited {X}, and its capital is", "In {X} the seat of government is",
                  "The main city of {X} is", "If you travel to {X}, see its capital,")  # fmt: skip

# Minimum: "The smallest of 42, 17 and 63 is" -> " 17". Numbers 10..99 (one token each with
# a leading space); splits are unseen (frame, ordered triple) combinations.
MINIMUM_FRAMES = ("The smallest of {A}, {B} and {C} is", "Of {A}, {B} and {C}, the lowest is",
                  "Among {A}, {B} and {C} the minimum is", "The least of {A}, {B} and {C} is")  # fmt: skip
MINIMUM_NUMBERS = tuple(range(10, 100))


@functools.cache
def capital_items(split: str) -> tuple[tuple[str, str], ...]:
    """(frame, country) combinations of a split."""
    check_split(split)
    return tuple(
        (frame, country)
        for frame, country in itertools.product(CAPITAL_FRAMES, CAPITALS)
        if _split_of(f"cap:{frame}|{country}") == split
    )


def minimum_split(frame: str, triple: tuple[int, int, int]) -> str:
    """The split of one (frame, ordered triple) combination (too many to enumerate)."""
    return _split_of(f"min:{frame}|{triple[0]}|{triple[1]}|{triple[2]}")

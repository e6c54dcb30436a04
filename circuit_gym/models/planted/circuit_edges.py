"""Each planted circuit as edges: which head's output feeds which head's q, k or v, and which
reach the logits (MIB's names, ``circuit_gym.graph_names``: ``a3.h2->a5.h1<k>``,
``a7.h0->logits``, ``input->a0.h3<v>``).

An edge is in the truth when the circuit's answer flows through it, that is when what it
carries differs between a prompt and its counterfactual (the track scores by counterfactual
patching, as MIB does). By construction, then, these edges between circuit nodes are *not* in
the truth, although both their ends are: a head's port that reads nothing the sender writes
(the induction head's query reads the token, not its previous-token head's channel); the
query of a head cued by the last token (the cue is the same in both prompts); the query and
key of a previous-token head and the AND receiver's key (positions, the same in both); and a
head's edge to the logits when it writes a channel the unembedding does not read. Decoys
write what nothing reads, so no edge from a decoy is in the truth.

**Backup edges** (the self-repair kind's backup head's): in the clean model the backup attends
BOS and carries nothing, so patching one of them alone costs nothing; they carry the answer
once the primary's output is patched (self-repair), so they are in the truth and listed apart.
"""

from __future__ import annotations

from collections.abc import Mapping

from circuit_gym.graph_names import INPUT, LOGITS, edge_name, node_name
from circuit_gym.models.planted.layout import N_HEADS

# kind -> (sender role or "input", receiver role or "logits", port of a head receiver)
EDGES: dict[str, tuple[tuple[str, str, str | None], ...]] = {
    "induction": (
        (INPUT, "previous_token", "v"), ("previous_token", "induction", "k"), (INPUT, "induction", "v"),
        ("induction", LOGITS, None),
    ),
    "multihop": (
        (INPUT, "previous_token", "v"), ("previous_token", "second_previous", "v"),
        ("second_previous", "mover", "k"), (INPUT, "mover", "v"), ("mover", LOGITS, None),
    ),
    "redundant": (
        (INPUT, "retriever_1", "k"), (INPUT, "retriever_1", "v"), (INPUT, "retriever_2", "k"),
        (INPUT, "retriever_2", "v"), ("retriever_1", "reader", "q"), ("retriever_2", "reader", "q"),
        (INPUT, "reader", "k"), (INPUT, "reader", "v"), ("reader", LOGITS, None),
    ),
    "suppression": (
        (INPUT, "previous_token", "v"), ("previous_token", "mover", "k"), ("previous_token", "suppressor", "k"),
        (INPUT, "mover", "v"), (INPUT, "suppressor", "v"), ("mover", LOGITS, None), ("suppressor", LOGITS, None),
    ),
    "self_repair": (
        (INPUT, "previous_token", "v"), ("previous_token", "primary", "k"), (INPUT, "primary", "v"),
        ("primary", LOGITS, None), ("primary", "backup", "q"), ("previous_token", "backup", "k"),
        (INPUT, "backup", "k"), (INPUT, "backup", "v"), ("backup", LOGITS, None),
    ),
    "and": (
        (INPUT, "sender_left", "k"), (INPUT, "sender_right", "k"), ("sender_left", "receiver", "q"),
        ("sender_right", "receiver", "q"), (INPUT, "receiver", "v"), ("receiver", LOGITS, None),
    ),
}  # fmt: skip
BACKUP_ROLES = frozenset({("self_repair", "backup")})  # heads that act only when another is ablated
# Pairs whose edges matter only together (either alone is enough): the redundant retrievers'.
REDUNDANT_ROLES = frozenset({("redundant", "retriever_1"), ("redundant", "retriever_2")})


def head_node(head: int) -> str:
    """The MIB node name of a flat head id."""
    return node_name("head", head // N_HEADS, head % N_HEADS)


def edges_of(kind: str, head_of_role: Mapping[str, int]) -> tuple[str, ...]:
    """The truth edges of ``kind``'s circuit whose roles sit at ``head_of_role`` (role -> flat id)."""

    def node(end: str) -> str:
        return end if end in (INPUT, LOGITS) else head_node(head_of_role[end])

    return tuple(edge_name(node(sender), node(receiver), port) for sender, receiver, port in EDGES[kind])

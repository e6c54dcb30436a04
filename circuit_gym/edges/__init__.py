"""Circuits as the field counts them: edges (MIB's circuit track, EAP, EAP-IG, ACDC).

One idea per module:

- :mod:`~circuit_gym.graph_names` — the one naming function for nodes and edges (MIB's strings);
- :mod:`~circuit_gym.edges.graph` — :class:`EdgeGraph`, every edge of a model, in MIB's order;
- :mod:`~circuit_gym.edges.circuit` — :class:`EdgeCircuit`, a frozen set of edges;
- :mod:`~circuit_gym.edges.ranking` — :class:`EdgeRanking`, signed scores per edge;
- :mod:`~circuit_gym.edges.patching` — :class:`EdgePatcher`, the only code that patches edges;
- :mod:`~circuit_gym.edges.curve` — edge faithfulness curves at MIB's sizes, CPR and CMD;
- :mod:`~circuit_gym.edges.attribution` — EAP, EAP-IG and GIM edge scores;
- :mod:`~circuit_gym.edges.gim` — GIM's backward rules in an op-by-op pass (per-port gradients);
- :mod:`~circuit_gym.edges.acdc` — ACDC on edges (cumulative threshold sweep, candidates);
- :mod:`~circuit_gym.edges.mib_files` — MIB's circuit files, out and in; ``score_circuit_file``;
- :mod:`~circuit_gym.edges.ties` — choices between near-equal values that float noise cannot flip;
- :mod:`~circuit_gym.edges.small_circuits` — CPR / CMD on a log size axis (the edge track's protocol 2);
- :mod:`~circuit_gym.edges.entry_ranking` — an entry's ranking of every edge under protocol 2;
- :mod:`~circuit_gym.edges.paired` — paired differences between entries that played the same episodes.

See docs/circuits.md ("Edges").
"""

from circuit_gym.edges.acdc import EdgeAcdcResult, edge_acdc
from circuit_gym.edges.attribution import GRADIENT_HOOKS, eap_ig_ranking, eap_ranking, gradient_ranking
from circuit_gym.edges.circuit import EdgeCircuit
from circuit_gym.edges.curve import edge_batch_scores, edge_curve, edge_faithfulness_curves
from circuit_gym.edges.graph import EdgeGraph
from circuit_gym.edges.mib_files import (
    edge_circuit_from_mib,
    edge_circuit_to_mib,
    read_edge_mib_json,
    score_circuit_file,
    write_edge_mib_json,
)
from circuit_gym.edges.patching import EdgePatcher
from circuit_gym.edges.ranking import EdgeRanking, random_edge_ranking
from circuit_gym.graph_names import edge_name, node_name, parse_edge_name

__all__ = [
    "GRADIENT_HOOKS", "EdgeAcdcResult", "EdgeCircuit", "EdgeGraph", "EdgePatcher", "EdgeRanking", "eap_ig_ranking",
    "eap_ranking", "edge_acdc", "edge_batch_scores", "edge_circuit_from_mib", "edge_circuit_to_mib", "edge_curve", "edge_faithfulness_curves",
    "edge_name", "gradient_ranking", "node_name", "parse_edge_name", "random_edge_ranking", "read_edge_mib_json",
    "score_circuit_file", "write_edge_mib_json",
]  # fmt: skip

"""A picture of an edge circuit: nodes by layer, each kept edge a line coloured by its port.

``input`` sits left of layer 0, ``logits`` right of the last layer, head ``a{L}.h{H}`` at
column ``L``, row ``H``; an edge into a head's q, k or v port is drawn in that port's colour,
an edge into the logits in grey. Only nodes an edge of the circuit touches are labelled.
"""

from __future__ import annotations

from pathlib import Path

from circuit_gym.edges.circuit import EdgeCircuit
from circuit_gym.graph_names import parse_edge_name, parse_node_name
from circuit_gym.plots import _pyplot, _save

PORT_COLOURS = {"q": "tab:blue", "k": "tab:orange", "v": "tab:green", None: "grey"}


def _position(node: str, n_layers: int, n_heads: int) -> tuple[float, float]:
    kind, layer, head = parse_node_name(node)
    middle = (n_heads - 1) / 2
    if kind == "input":
        return -1.0, middle
    if kind == "logits":
        return float(n_layers), middle
    offset = 0.5 if kind == "mlp" else 0.0
    return float(layer or 0) + offset, float(head if head is not None else -1)


def edge_circuit_figure(circuit: EdgeCircuit, path: str | Path, title: str = "") -> Path:
    """Draw ``circuit`` and save it (PNG or PDF by suffix); returns the path written."""
    graph = circuit.graph
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    touched: set[str] = set()
    for name in circuit.names():
        sender, receiver, port = parse_edge_name(name)
        (x0, y0), (x1, y1) = (_position(n, graph.n_layers, graph.n_heads) for n in (sender, receiver))
        ax.plot([x0, x1], [y0, y1], color=PORT_COLOURS[port], lw=0.8, alpha=0.6)
        touched.update((sender, receiver))
    for node in graph.nodes:
        x, y = _position(node, graph.n_layers, graph.n_heads)
        on = node in touched
        ax.scatter([x], [y], s=18 if on else 4, color="black" if on else "lightgrey", zorder=3)
        if on and node not in ("input", "logits"):
            ax.annotate(node, (x, y), fontsize=5, xytext=(2, 2), textcoords="offset points")
    for port, colour in PORT_COLOURS.items():
        ax.plot([], [], color=colour, label=f"<{port}>" if port else "->logits")
    ax.set_xticks(
        range(-1, graph.n_layers + 1), ["input", *map(str, range(graph.n_layers)), "logits"], fontsize=7
    )
    ax.set_xlabel("layer")
    ax.set_ylabel("head")
    ax.set_title(title or f"edge circuit ({circuit.size} of {graph.n_edges} edges)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    return _save(fig, path)


def docs_figures(
    directory: str | Path = "docs/results/edges", cases: tuple[str, ...] = ("zoo", "planted")
) -> list[Path]:
    """The pictures in docs/circuits.md: an edge circuit at the first MIB size whose faithfulness
    passes 0.8, one test batch of eight prompts, resample ablation: EAP-IG's on zoo2 (induction,
    a held-out model) and GIM's on planted model 0 (planted induction), where no EAP or EAP-IG
    circuit short of every edge reaches 0.8 (docs/circuits.md) and GIM's is the first that does."""
    from circuit_gym.edges.attribution import eap_ig_ranking, gradient_ranking
    from circuit_gym.edges.curve import edge_curve
    from circuit_gym.edges.patching import EdgePatcher
    from circuit_gym.models import load_model
    from circuit_gym.models.planted import PLANTED_TASKS, make_planted_model
    from circuit_gym.tasks import get_task

    paths = []
    for case in cases:
        if case == "zoo":
            label, model, task, method = "zoo2", load_model("zoo2"), get_task("induction"), "EAP-IG"
        else:
            label, model, task, method = (
                "planted0",
                make_planted_model(0).model,
                PLANTED_TASKS["induction"],
                "GIM",
            )
        patcher = EdgePatcher.for_task(model, task, task.batch(model, "test", 8, seed=0), "resample")
        ranking = eap_ig_ranking(patcher) if method == "EAP-IG" else gradient_ranking(patcher, "gim")
        curve = edge_curve(patcher, ranking)
        first = next((i for i, f in enumerate(curve.faithfulness) if f >= 0.8), len(curve.sizes) - 1)
        circuit = ranking.top(curve.sizes[first])
        title = (f"{label}, {task.name}: {method}'s top {circuit.size} edges (share {curve.fractions[first]}), "
                 f"f = {curve.faithfulness[first]:.2f}")  # fmt: skip
        paths.append(
            edge_circuit_figure(circuit, Path(directory) / f"edge_circuit_{label}_{task.name}.png", title)
        )
    return paths


if __name__ == "__main__":
    print(docs_figures())

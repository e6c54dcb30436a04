"""`circuit-gym circuits export|score`: MIB files out of a solver and back into the scorer."""

import json

import pytest

from circuit_gym.cli import main


def test_export_then_score_round_trip_on_the_4x4_model(tmp_path, capsys):
    out = tmp_path / "mib"
    assert main(["circuits", "export", "--model", "tiny", "--solver", "attribution", "--task", "ioi",
                 "--episodes", "2", "--size", "16", "--out", str(out)]) == 0  # fmt: skip
    files = sorted(out.glob("*.json"))
    assert [f.name for f in files] == ["attribution-ioi-test-0.json", "attribution-ioi-test-1.json"]
    data = json.loads(files[0].read_text())
    assert data["cfg"]["n_layers"] == 4 and data["cfg"]["n_heads"] == 4
    assert sum(v["in_graph"] for k, v in data["nodes"].items() if k.startswith("a")) == 16
    capsys.readouterr()
    # every head in the circuit: the full model, so faithfulness is exactly 1 on every batch
    assert (
        main(["circuits", "score", "--model", "tiny", "--task", "ioi", "--episodes", "2", str(files[0])]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["heads"] == 16 and report["per_batch"] == pytest.approx([1.0, 1.0])
    # no head: the empty circuit, faithfulness 0
    for node, value in data["nodes"].items():
        if node.startswith("a"):
            value["in_graph"] = False
    for edge, value in data["edges"].items():  # as MIB's files keep them: an edge is in when both ends are
        value["in_graph"] = not any(end.split("<")[0].startswith("a") for end in edge.split("->"))
    files[1].write_text(json.dumps(data))
    assert (
        main(["circuits", "score", "--model", "tiny", "--task", "ioi", "--episodes", "2", str(files[1])]) == 0
    )
    assert json.loads(capsys.readouterr().out)["per_batch"] == pytest.approx([0.0, 0.0], abs=1e-9)


def test_a_file_of_another_grid_is_refused(tmp_path, capsys):
    out = tmp_path / "mib"
    main(["circuits", "export", "--model", "tiny", "--task", "ioi", "--episodes", "1", "--out", str(out)])
    (path,) = out.glob("*.json")
    assert main(["circuits", "score", "--model", "toy", "--task", "ioi", "--episodes", "1", str(path)]) != 0
    assert "n_layers = 4" in capsys.readouterr().err


def test_score_reads_an_edge_circuit_written_by_hand_at_edge_level(tmp_path, capsys):
    """A file chosen edge by edge (the direct paths to the logits, written here, not by the exporter)
    is scored at edge level, and its faithfulness is the plain-hook patched metric's."""
    from test_edges_patching import hook_patched_metric

    from circuit_gym.models import load_model
    from circuit_gym.tasks import get_task

    heads = [f"a{layer}.h{h}" for layer in range(4) for h in range(4)]
    chosen = {"input->logits", *(f"{h}->logits" for h in heads)}
    data = {"cfg": {"n_layers": 4, "n_heads": 4, "parallel_attn_mlp": False, "d_model": 128},
            "nodes": {"input": {"in_graph": True}, "logits": {"in_graph": True}, **{h: {"in_graph": True} for h in heads}},
            "edges": {name: {"score": None, "in_graph": True} for name in sorted(chosen)}}  # fmt: skip
    path = tmp_path / "edges.json"
    path.write_text(json.dumps(data))
    assert main(["circuits", "score", "--model", "tiny", "--task", "ioi", "--episodes", "1", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["level"] == "edges" and report["edges_in_graph"] == len(chosen)
    model, task = load_model("tiny"), get_task("ioi")
    batch = task.batch(model, "test", 8, seed=0)
    ablation = report["ablation"]
    m = [hook_patched_metric(model, task, batch, ablation, kept) for kept in (chosen, set())]
    full = hook_patched_metric(model, task, batch, ablation, set(data["edges"]) | _every_edge(4, 4))
    assert report["faithfulness"] == pytest.approx((m[0] - m[1]) / (full - m[1]), abs=1e-4)


def _every_edge(n_layers: int, n_heads: int) -> set[str]:
    from circuit_gym.edges import EdgeGraph

    return set(EdgeGraph(n_layers, n_heads).names)


def test_a_node_circuit_scores_the_same_at_edge_and_head_level(tmp_path, capsys):
    """The exporter's head circuit read as the edges its nodes induce patches the same components:
    two implementations (head runner, edge patcher) of one number."""
    out = tmp_path / "mib"
    main(["circuits", "export", "--model", "tiny", "--solver", "attribution", "--task", "ioi",
          "--episodes", "1", "--size", "5", "--out", str(out)])  # fmt: skip
    (path,) = out.glob("*.json")
    capsys.readouterr()
    reports = {}
    for level in ("auto", "heads", "edges"):
        args = ["circuits", "score", "--model", "tiny", "--task", "ioi", "--episodes", "1", "--level", level]
        assert main([*args, str(path)]) == 0
        reports[level] = json.loads(capsys.readouterr().out)
    assert reports["auto"]["level"] == "heads"
    assert reports["edges"]["faithfulness"] == pytest.approx(reports["heads"]["faithfulness"], abs=1e-4)

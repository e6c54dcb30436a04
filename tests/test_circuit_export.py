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

"""Head names and hook names come from one module (circuit_gym.heads); they must be what
TransformerLens calls its hook points and what the literature writes."""

import pytest

from circuit_gym.heads import (
    head_id,
    head_name,
    hook_layer,
    parse_head_name,
    pattern_hook,
    resid_pre_hook,
    z_hook,
)


def test_hook_names_are_transformer_lens_names():
    from transformer_lens.utilities.components_utils import get_act_name

    for layer in (0, 3, 11):
        assert z_hook(layer) == get_act_name("z", layer)
        assert pattern_hook(layer) == get_act_name("pattern", layer)
        assert resid_pre_hook(layer) == get_act_name("resid_pre", layer)
        assert hook_layer(get_act_name("z", layer)) == hook_layer(get_act_name("resid_pre", layer)) == layer


def test_hook_names_exist_on_a_model(tiny_model):
    names = set(tiny_model.hook_dict)
    n_layers = tiny_model.cfg.n_layers
    assert {z_hook(n_layers - 1), pattern_hook(0), resid_pre_hook(n_layers - 1)} <= names


def test_head_names_round_trip_on_gpt2s_grid():
    names = [head_name(h, 12) for h in range(144)]
    assert names[:2] == ["0.0", "0.1"] and names[12] == "1.0" and names[-1] == "11.11"
    assert len(set(names)) == 144
    assert [head_id(n, 12) for n in names] == list(range(144))
    assert parse_head_name(" 9.6 ") == (9, 6)


@pytest.mark.parametrize("bad", ["9", "9.", ".6", "a.b", "9.6.1", "-1.2", ""])
def test_a_bad_head_name_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="head name"):
        parse_head_name(bad)


def test_head_outside_the_layer_and_bad_hook_name():
    with pytest.raises(ValueError, match="heads are 0-11"):
        head_id("3.12", 12)
    with pytest.raises(ValueError, match="per-block hook"):
        hook_layer("hook_embed")

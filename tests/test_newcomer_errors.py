"""Issue 59: a NaN policy's error names the head and the episode; a float action's error gives no
vector-environment hint (that hint is for an action of several values)."""

from __future__ import annotations

import numpy as np
import pytest

from circuit_gym.envs.arguments import check_action
from circuit_gym.policy import InvalidScoresError, check_scores


def test_a_nan_score_names_its_head_and_the_episode():
    scores = np.zeros(16)
    scores[7] = np.nan
    with pytest.raises(InvalidScoresError, match=r"head 7 \(nan\), in the episode of task ioi, batch 3"):
        check_scores(scores, 16, where="task ioi, batch 3")
    with pytest.raises(InvalidScoresError, match=r"head 7 \(nan\)$"):
        check_scores(scores, 16)


def test_a_float_action_gets_no_vector_environment_hint_and_several_values_do():
    with pytest.raises(TypeError) as float_error:
        check_action(3.0, 16, "a head id")
    assert "vector environment" not in str(float_error.value) and "never rounded" in str(float_error.value)
    with pytest.raises(TypeError, match="vector environment"):
        check_action(np.array([1, 2]), 16, "a head id")
    assert check_action(np.int64(3), 16, "a head id") == 3

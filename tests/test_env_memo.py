"""circuit_gym.envs.memo: each circuit runs once, the missing ones together, in first-seen order."""

import numpy as np

from circuit_gym.envs.memo import memoised


def test_memoised_runs_each_missing_key_once_in_one_call():
    calls = []

    def compute(todo):
        calls.append(list(todo))
        return [10.0 * len(k) for k in todo]

    memo = {frozenset({1}): -1.0}
    keys = [frozenset({1, 2}), frozenset({1}), frozenset({1, 2}), frozenset({3, 4, 5})]
    out = memoised(memo, keys, compute)
    assert calls == [[frozenset({1, 2}), frozenset({3, 4, 5})]]  # deduplicated, memo hit skipped
    np.testing.assert_array_equal(out, [20.0, -1.0, 20.0, 30.0])
    assert out.dtype == np.float64 and memo[frozenset({3, 4, 5})] == 30.0
    memoised(memo, keys, compute)
    assert len(calls) == 1  # everything memoised now: no second call


def test_memoised_with_a_fresh_dict_computes_everything():
    memo = {frozenset({1}): -1.0}
    out = memoised({}, [frozenset({1})], lambda todo: [5.0] * len(todo))
    assert out.tolist() == [5.0] and memo == {frozenset({1}): -1.0}

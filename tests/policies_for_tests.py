"""Policies for the leaderboard tests, imported by the sandbox's child process."""

import time

import numpy as np


class _Fn:
    def __init__(self, fn):
        self.rank_heads = fn


def good():
    return _Fn(lambda obs: -np.arange(obs.shape[0], dtype=float))


def crash_on_load():
    raise RuntimeError("this policy cannot even load")


def crash():
    return _Fn(lambda obs: 1 / 0)


def hang():
    return _Fn(lambda obs: time.sleep(3600))


def wrong_shape():
    return _Fn(lambda obs: np.zeros(obs.shape[0] + 1))


def nan_scores():
    return _Fn(lambda obs: np.full(obs.shape[0], np.nan))


def a_head_not_scores():
    return _Fn(lambda obs: 999)


def memory_hog():
    def rank(obs):
        hog = np.ones((400, 1024, 1024), dtype=np.uint8)  # 400 MB, touched
        return hog.sum(axis=(1, 2))[: obs.shape[0]]

    return _Fn(rank)


def no_rank_heads():
    return object()

"""The transfer tracks' tables on the board: the core's renderer
(:mod:`circuit_gym.reporting.transfer_tables`, shared with the main job) with the board's note
on what its passes count."""

from __future__ import annotations

from circuit_gym.leaderboard.sandbox import passes_note
from circuit_gym.reporting import transfer_tables as T
from circuit_gym.reporting.transfer_tables import SHORT, rank_transfer_rows, transfer_row

__all__ = ["SHORT", "rank_transfer_rows", "transfer_about", "transfer_markdown", "transfer_row"]


def transfer_about(track: str) -> str:
    """What a transfer track's columns mean, with the board's note on passes."""
    return T.transfer_about(track, passes_note())


def transfer_markdown(rows: list[dict], track: str) -> str:
    """The Markdown table of one transfer track on the board."""
    return T.transfer_markdown(rows, track, passes_note())

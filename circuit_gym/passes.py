"""Counting the language-model passes a solver makes: the leaderboard's compute measure, in the core
because the main job (``circuit-gym run``) counts them the same way."""

from __future__ import annotations


class PassCounter:
    """Counts the language-model passes made on ``model`` while active (a context manager).

    - ``forward``: full forward passes, one per call of the embedding module ``model.embed``;
    - ``partial``: calls of the final normalisation ``model.ln_final`` that are not the end of a
      full pass (the ablation engine restarts mid-model from a cached residual stream, through
      the bridge's blocks or its SDPA replay of them, and always ends in ``ln_final``);
    - ``backward``: backward passes through the last block (a full backward hook on it).

    A pass over a batch counts once, whatever the batch size. Hooks are installed on enter and
    removed on exit, so nothing outside the counted window is touched.
    """

    def __init__(self, model) -> None:
        self.model = model
        self.forward = self.partial = self.backward = 0
        self._pending = 0
        self._handles: list = []

    def _on_embed(self, *args) -> None:
        self.forward += 1
        self._pending += 1

    def _on_final_norm(self, *args) -> None:
        if self._pending:
            self._pending -= 1  # the end of a full pass
        else:
            self.partial += 1

    def _on_backward(self, *args) -> None:
        self.backward += 1

    def __enter__(self) -> PassCounter:
        self.forward = self.partial = self.backward = self._pending = 0
        embed, blocks = getattr(self.model, "embed", None), getattr(self.model, "blocks", None)
        final_norm = getattr(self.model, "ln_final", None)
        if embed is None or not blocks or final_norm is None:
            raise TypeError(
                f"cannot count passes of {type(self.model).__name__}: no embed / blocks / ln_final modules"
            )
        self._handles = [embed.register_forward_hook(self._on_embed), final_norm.register_forward_hook(self._on_final_norm),
                         blocks[-1].register_full_backward_hook(self._on_backward)]  # fmt: skip
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def counts(self) -> dict:
        return {"forward": self.forward, "partial": self.partial, "backward": self.backward}


def with_observation_passes(passes: dict[str, int], info: dict) -> dict[str, int]:
    """The solver's own passes plus what its observation cost (``info["feature_passes"]``: the
    causal columns are attribution and EAP-IG passes made for the policy, so they are its compute)."""
    observed = info.get("feature_passes") or {}
    return {kind: n + int(observed.get(kind, 0)) for kind, n in passes.items()}

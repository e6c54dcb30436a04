"""The generated environment pages (docs/envs/) are current: one per registered ID, each with
its image. Regenerate with ``python scripts/gen_env_docs.py`` when a test here fails."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np

import circuit_gym  # noqa: F401  (registers the IDs)
from circuit_gym import env_pages as gen
from circuit_gym.envs.render import frame_shape

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "envs"
REGENERATE = "stale environment pages: run `python scripts/gen_env_docs.py` and commit docs/envs/"


def test_every_registered_id_has_a_page_linked_from_the_index():
    ids = sorted(i for i in gym.registry if i.startswith("CircuitDiscovery-"))
    assert ids, "no circuit_gym ID is registered"
    missing = [i for i in ids if not (DOCS / f"{i}.md").exists()]
    assert not missing, f"{REGENERATE}; no page for {missing}"
    index = (DOCS / "README.md").read_text()
    assert all(f"]({i}.md)" in index for i in ids), REGENERATE
    assert "](envs/README.md)" in (ROOT / "docs" / "README.md").read_text()
    assert "](docs/README.md)" in (ROOT / "README.md").read_text()  # README -> docs index -> env pages


def test_committed_pages_equal_a_fresh_generation():
    wanted = gen.pages()
    stale = [name for name, text in wanted.items() if (DOCS / name).read_text() != text]
    extra = sorted(p.name for p in DOCS.glob("*.md") if p.name not in wanted)
    assert not stale and not extra, f"{REGENERATE}; differ: {stale}, not generated: {extra}"


def test_every_page_shows_a_frame_of_its_model_grid():
    for name, text in gen.pages().items():
        if name == "README.md":
            continue
        image = text.split("](images/", 1)[1].split(")", 1)[0]
        path = DOCS / "images" / image
        assert path.exists(), f"{REGENERATE}; {name} shows images/{image}, which is missing"
        source = image.removesuffix(".png")
        model = gym.spec(source).kwargs["model"]
        height, width, _ = frame_shape(*gen.model_grid(model))
        assert gen.png_size(path) == (width, height), f"{REGENERATE}; {image} is not a frame of {model}"


def test_a_committed_image_is_what_the_environment_renders(tmp_path):
    """Regenerates the cheapest image (the 4 x 4 model) and compares it pixel by pixel."""
    from PIL import Image

    env_id = next(i for i in gen.images_needed() if gym.spec(i).kwargs["model"] == "tiny")
    gen.render_image(env_id, tmp_path / "fresh.png")
    fresh = np.asarray(Image.open(tmp_path / "fresh.png").convert("RGB"))
    committed = np.asarray(Image.open(DOCS / "images" / f"{env_id}.png").convert("RGB"))
    assert fresh.shape == committed.shape
    # colours come from float rewards: allow a rounding step of the colour map, nothing more
    assert np.abs(fresh.astype(int) - committed.astype(int)).max() <= 8, f"{REGENERATE}; {env_id}.png differs"


def test_relative_links_in_the_readme_and_the_docs_resolve():
    """README's long sections moved to docs/: every relative link must still point at a file."""
    import re

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(DOCS.glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"^(https?:|mailto:|#)", target):
                continue
            if not (page.parent / target.split("#", 1)[0]).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken

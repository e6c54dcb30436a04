"""One documentation page per registered environment ID, with its picture (``scripts/gen_env_docs.py``).

    python scripts/gen_env_docs.py            # pages and images -> docs/envs/ (write)
    python scripts/gen_env_docs.py --check    # exit 1 if a committed page differs (stale; no images)

Modelled on Gymnasium's ``docs/_scripts/gen_mds.py``: everything on a page comes from the
code, so a page can only go stale by not being regenerated (``tests/test_env_docs.py`` fails
then). A page holds the ``make`` call, model, tasks with their metric and unit, action and
observation spaces, the status of the ID and its version history (the ``REGISTRY`` table of
``circuit_gym/envs/registration.py``), and the environment class docstring's sections
(description, spaces, rewards, arguments, info).

Two kinds of IDs: single-head ablation (``CircuitDiscovery-{model}-{tasks}-vN``,
``CircuitDiscoveryEnv``) and circuit building (``...-Circuit-vN``, ``CircuitBuildingEnv``), each
also over the model zoo (``ZooEnv``) and on generated planted models (``PlantedEnv``).
The image of a page is the ``render_mode="rgb_array"`` frame of a real episode of that ID:
``reset(seed=0)``, then steps that take the episode's oracle head. GPT2 IDs need GPT-2's
weights, which the machines generating these pages do not have; their pages show the image of
the same task set's Toy ID and say so (never a made-up picture). Superseded IDs are refused by
``gymnasium.make`` and show the image of their newest version, saying so.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym

from circuit_gym.envs.registration import FAMILIES, Family

ROOT = Path(__file__).resolve().parents[1]  # the repository: docs/envs
OUT = ROOT / "docs" / "envs"
IMAGES = OUT / "images"
DOCSTRING_SECTIONS = ("Description", "Action Space", "Observation Space", "Rewards", "Starting State",
                      "Episode End", "Arguments", "Info")  # fmt: skip


@dataclass(frozen=True)
class FamilyPage:
    """What the pages of one registry family (``circuit_gym.envs.registration.Family``) show: its
    class, spaces and how its picture's episode is played."""

    family: Family  # the registry's
    cls: type
    action: Callable[[int, int], str]  # (heads in total, heads per layer) -> action space text
    observation: Callable[[int], str]  # heads in total -> observation space text
    reward: str
    episode: str  # what the picture's episode did
    play: Callable[[gym.Env], None]  # plays that episode after reset(seed=0)
    model_kind: str | None = None  # what the model is, when not one model or a model set
    ablation: str | None = None  # the default ablation, when the class sets its own
    step_unit: str = "one step per head"  # what bounds an episode's length (max_episode_steps)

    @property
    def title(self) -> str:
        return self.family.title

    def rows(self) -> list[dict]:
        """Every ID of the family (older versions too), with its version's notes."""
        from circuit_gym.envs.registration import entries

        return [{**e.row(), "notes": e.line.notes, "superseded": e.superseded}
                for e in entries() if e.family == self.family]  # fmt: skip


def _play_single_head(env: gym.Env) -> None:
    env.step(env.unwrapped.episode.table.oracle_head)


def _play_circuit(env: gym.Env) -> None:
    env.step(env.unwrapped.state.episode.table.oracle_head)


def _play_edges(env: gym.Env) -> None:
    for candidate in range(3):  # the three edges of largest |EAP-IG|
        env.step(candidate)


def _play_knockout(env: gym.Env) -> None:
    inner = env.unwrapped.current.unwrapped
    for _ in range(2):  # ablate the head of largest attribution on the ablated model, twice
        scores = inner.attribution()
        scores[inner.order] = -float("inf")
        env.step(int(scores.argmax()))


def families() -> list[FamilyPage]:
    from circuit_gym.envs.circuit_building import N_CIRCUIT_FEATURES, CircuitBuildingEnv
    from circuit_gym.envs.circuit_env import CircuitDiscoveryEnv
    from circuit_gym.envs.features import FEATURE_BOUND, FEATURE_SETS
    from circuit_gym.envs.model_draw import ZooEnv
    from circuit_gym.envs.planted import PlantedEnv

    bound = f"{FEATURE_BOUND:g}"
    out = [
        FamilyPage(FAMILIES["single-head"], CircuitDiscoveryEnv,
               lambda n, heads: f"`Discrete({n})`: head id = layer * {heads} + head",
               lambda n: f"`Box(-{bound}, {bound}, ({n}, {len(FEATURE_SETS['attention'])}), float32)` "
                         f"(`features=\"prediction\"`: ({n}, {len(FEATURE_SETS['prediction'])}))",
               "the marginal contrastive reward `R(S + a) - R(S)`, in the unit of the episode's task "
               "(general damage, in nats, is converted by `lam`)",
               "then one step that ablates the episode's oracle head (outlined and crossed); colour is each "
               "head's reward for this step (red: ablating it helps, blue: it hurts, white: 0)",
               _play_single_head),
        FamilyPage(FAMILIES["circuit"], CircuitBuildingEnv,
               lambda n, heads: f"`Discrete({n + 1})`: head id = layer * {heads} + head adds (removes) that head; "
                                f"{n} is STOP",
               lambda n: f"`Box(-{bound}, {bound}, ({n}, {N_CIRCUIT_FEATURES}), float32)`",
               "the change of `f(C) - alpha * size(C)`: faithfulness (unitless, a fraction of the full model's "
               "behaviour on the task metric below) minus `alpha` per head",
               "then one step that adds the batch's single-head oracle head to the empty circuit (outlined); "
               "colour is each head's exact faithfulness gain for that step (red: adding it helps)",
               _play_circuit),
    ]  # fmt: skip
    # The zoo's IDs: the same two kinds over a model set, a member drawn at each reset (ZooEnv).
    zoo = []
    for inner, name in ((out[0], "zoo"), (out[1], "zoo-circuit")):
        zoo.append(FamilyPage(FAMILIES[name], ZooEnv, inner.action, inner.observation, inner.reward,
                          inner.episode + " (on the member the reset drew)",
                          lambda env, play=inner.play: play(env.unwrapped.current)))  # fmt: skip
    # The planted IDs: the same two kinds on a model generated from a seed drawn at each reset.
    planted = []
    for inner, name in ((out[0], "planted"), (out[1], "planted-circuit")):
        planted.append(FamilyPage(FAMILIES[name], PlantedEnv, inner.action, inner.observation, inner.reward,
                              inner.episode + " (on the planted model of the seed the reset drew)",
                              lambda env, play=inner.play: play(env.unwrapped.current),
                              model_kind="a planted model generated from a seed drawn at each reset, "
                                         "its circuit at seeded heads (docs/planted.md)",
                              ablation="resample"))  # fmt: skip
    from circuit_gym.envs.edge_building import DEFAULT_CANDIDATES, EDGE_COLUMNS, EdgeBuildingEnv

    edges = FamilyPage(FAMILIES["edges"], EdgeBuildingEnv,
                       lambda n, heads: f"`Discrete(candidates + 1)`: candidate edge i (of the top `candidates`, "
                                        f"default {DEFAULT_CANDIDATES}, by EAP-IG) is added (cut); the last is STOP",
                       lambda n: f"`Box(-{bound}, {bound}, (candidates, {len(EDGE_COLUMNS)}), float32)`: "
                                 "one row per candidate edge",
                       "the change of `f(C) - alpha * edges(C)`: faithfulness of the edge circuit minus `alpha` "
                       "per edge",
                       "then three steps that add the three candidate edges of largest |EAP-IG|; colour is the "
                       "EAP-IG score of the circuit's edges at each head (crossed: untouched)",
                       _play_edges, step_unit="one step per edge of the graph")  # fmt: skip
    drawn = [
        FamilyPage(FAMILIES["zoo-edges"], ZooEnv, edges.action, edges.observation, edges.reward,
                   edges.episode + " (on the member the reset drew)",
                   lambda env: _play_edges(env.unwrapped.current), step_unit=edges.step_unit),
        FamilyPage(FAMILIES["planted-edges"], PlantedEnv, edges.action, edges.observation, edges.reward,
                   edges.episode + " (on the planted model of the seed the reset drew)",
                   lambda env: _play_edges(env.unwrapped.current),
                   model_kind="a planted model generated from a seed drawn at each reset, "
                              "its circuit at seeded heads (docs/planted.md)",
                   ablation="resample", step_unit=edges.step_unit),
    ]  # fmt: skip
    from circuit_gym.envs.knockout import N_COLUMNS, KnockOutEnv

    # The docstring shown is the knock-out environment's (PlantedEnv draws the model and wraps it).
    knockout = [
        FamilyPage(FAMILIES["planted-knockout"], KnockOutEnv,
                   lambda n, heads: f"`Discrete({n + 1})`: head id = layer * {heads} + head ablates that head "
                                    f"(cumulatively); {n} is STOP",
                   lambda n: f"`Box(-{bound}, {bound}, ({n}, {N_COLUMNS}), float32)`: recomputed on the ablated model",
                   "the drop of the task metric the step caused, in the unit of the task's metric",
                   "then two steps that ablate the head of largest attribution on the ablated model (crossed); "
                   "colour is each head's attribution after them (on the planted model of the seed the reset drew)",
                   _play_knockout,
                   model_kind="a planted model generated from a seed drawn at each reset, "
                              "its circuit at seeded heads (docs/planted.md)",
                   ablation="resample"),
    ]  # fmt: skip
    planted_knockout = knockout[0]
    knockout.append(FamilyPage(FAMILIES["zoo-knockout"], ZooEnv, planted_knockout.action, planted_knockout.observation,
                               planted_knockout.reward,
                               planted_knockout.episode.replace("planted model of the seed", "member"),
                               _play_knockout))  # fmt: skip
    return out + zoo + planted + [edges] + drawn + knockout


def model_grid(model: str) -> tuple[int, int]:
    """(layers, heads) of an ID's model without loading it (the registry's)."""
    from circuit_gym.envs.registration import model_grid as grid

    return grid(model)


def docstring_sections(cls: type) -> dict[str, str]:
    """The ``## Section`` blocks of a Gymnasium-style class docstring, dedented."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    parts = re.split(r"^## (.+)$", doc, flags=re.MULTILINE)
    return {title.strip(): body.strip() for title, body in zip(parts[1::2], parts[2::2], strict=True)}


def _rst_to_md(text: str) -> str:
    return text.replace("``", "`")


def image_source(row: dict) -> tuple[str, str | None]:
    """(the ID whose episode makes this page's image, a note when it is not this ID's own)."""
    env_id = row["use"] if row["superseded"] else row["id"]
    note = None
    if env_id != row["id"]:
        note = f"`gymnasium.make` refuses this ID (see status), so the image is that of `{env_id}`, its newest version."
    if "-GPT2-" in env_id:
        toy = env_id.replace("-GPT2-", "-Toy-")
        layers, heads = model_grid("gpt2")
        note = (f"GPT-2's weights are not available where these pages are generated, so this is the image of "
                f"`{toy}` (the same tasks and version on the embedded model); a GPT2 ID draws the same "
                f"{layers} x {heads} grid from GPT-2's own numbers.")  # fmt: skip
        env_id = toy
    return env_id, note


def _id_key(env_id: str) -> str:
    """The ID without its version: the IDs of one key are versions of each other."""
    return env_id.rsplit("-v", 1)[0]


def _history(row: dict, rows: list[dict]) -> list[str]:
    lines = []
    for r in sorted((r for r in rows if _id_key(r["id"]) == _id_key(row["id"])), key=lambda r: -r["version"]):
        this = " (this page)" if r["id"] == row["id"] else ""
        status = "current" if r["current"] else "refused" if r["superseded"] else "older"
        lines.append(f"- [`{r['id']}`]({r['id']}.md){this}, {status}: {r['notes']}")
    return lines


def _status(row: dict) -> str:
    if row["current"]:
        return "current"
    if row["superseded"]:
        return (f"superseded: its original behaviour cannot be reproduced, so `gymnasium.make` refuses it "
                f"(`RefusedEnvError`, Gymnasium's `DeprecatedEnv`); use `{row['use']}`, the newest version")  # fmt: skip
    return f"an older version, kept working unchanged; the current one is `{row['use']}`"


def page(family: FamilyPage, row: dict, rows: list[dict], image: dict) -> str:
    """The Markdown page of one ID (``image``: file name, caption, note)."""
    from circuit_gym.ablation.engine import default_ablation
    from circuit_gym.embedded import MODEL_SETS, model_set
    from circuit_gym.tasks import get_task

    layers, heads = model_grid(row["model"])
    n = layers * heads
    kind = "GPT-2 small" if row["model"] == "gpt2" else "embedded"
    if row["model"] in MODEL_SETS:
        kind = f"a set of embedded models, {', '.join(model_set(row['model']))}, one drawn at each reset"
    kind = family.model_kind or kind
    ablation = family.ablation or default_ablation(model_set(row["model"])[0])
    lines = [
        f"# {row['id']}", "",
        "<!-- generated by scripts/gen_env_docs.py from the registrations and docstrings: do not edit -->", "",
        f"![{image['source']}: the layer x head grid during an episode](images/{image['file']})", "",
        f"*{image['caption']}*" + (f" {image['note']}" if image["note"] else ""), "",
        "| | |", "|---|---|",
        f"| make | `gymnasium.make(\"circuit_gym:{row['id']}\")` |",
        f"| environment | {family.title} (`{family.cls.__module__}.{family.cls.__name__}`) |",
        f"| status | {_status(row)} |",
        f"| model | `{row['model']}` ({kind}, {layers} layers x {heads} heads) |",
        f"| tasks sampled at reset | {', '.join(f'`{t}`' for t in row['tasks'])} |",
        f"| action space | {family.action(n, heads)} |",
        f"| observation space | {family.observation(n)} |",
        f"| reward | {family.reward} |",
        f"| default ablation | `{ablation}` |",
        f"| max_episode_steps | {gym.spec(row['id']).max_episode_steps} ({family.step_unit}: the longest episode; "
        f"`step` after the end raises `ResetNeeded`) |",
        f"| version | v{row['version']}: {row['notes']} |",
        "", "## Tasks and units", "",
        "| task | family | what it measures | unit of its metric |", "|---|---|---|---|",
    ]  # fmt: skip
    for t in row["tasks"]:
        task = get_task(t)
        lines.append(f"| `{t}` | {task.family} | {task.description} | {task.unit} |")
    sections = docstring_sections(family.cls)
    for title in DOCSTRING_SECTIONS:
        if title in sections:
            lines += ["", f"## {title}", "", _rst_to_md(sections[title])]
    lines += ["", "## Version history of this ID", "", *_history(row, rows)]
    if "Version History" in sections:
        lines += ["", f"## Version history of the {family.title} environments", "",
                  _rst_to_md(sections["Version History"])]  # fmt: skip
    return "\n".join(lines) + "\n"


def index(by_family: list[tuple[FamilyPage, list[dict]]]) -> str:
    lines = ["# Environment IDs", "",
             "<!-- generated by scripts/gen_env_docs.py: do not edit -->", "",
             "One page per registered ID, generated from the registrations and docstrings by "
             "`python scripts/gen_env_docs.py`."]  # fmt: skip
    for family, rows in by_family:
        current = [r for r in rows if r["current"]]
        older = [r for r in rows if not r["current"]]
        lines += ["", f"## {family.title[0].upper()}{family.title[1:]} (`{family.cls.__name__}`)", "",
                  "| ID | model | tasks |", "|---|---|---|"]  # fmt: skip
        lines += [
            f"| [`{r['id']}`]({r['id']}.md) | `{r['model']}` | {', '.join(r['tasks'])} |" for r in current
        ]
        if older:
            lines += ["", "Older and superseded:", "", "| ID | model | use instead |", "|---|---|---|"]
            lines += [f"| [`{r['id']}`]({r['id']}.md) | `{r['model']}` | `{r['use']}` |" for r in older]
    return "\n".join(lines) + "\n"


def render_image(env_id: str, path: Path) -> tuple[int, int]:
    """The frame of the picture's episode of ``env_id`` (see :class:`FamilyPage`); (width, height)."""
    from PIL import Image

    with warnings.catch_warnings():  # older IDs warn that they are out of date: expected here
        warnings.simplefilter("ignore", DeprecationWarning)
        env = gym.make(env_id, render_mode="rgb_array")
    from circuit_gym.envs.registration import entry

    family = next(f for f in families() if f.family == entry(env_id).family)
    env.reset(seed=0)
    family.play(env)
    frame = env.render()
    env.close()
    Image.fromarray(frame).save(path, optimize=True)
    return frame.shape[1], frame.shape[0]


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's header."""
    header = path.read_bytes()[:24]
    if header[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


def image_info(family: FamilyPage, row: dict) -> dict:
    source, note = image_source(row)
    caption = f'`render_mode="rgb_array"` during an episode of `{source}`: `reset(seed=0)`, {family.episode}.'
    return {"file": f"{source}.png", "source": source, "note": note, "caption": caption}


def _by_family() -> list[tuple[FamilyPage, list[dict]]]:
    return [(family, family.rows()) for family in families()]


def pages() -> dict[str, str]:
    """File name -> text of every page, the index included (no model is loaded)."""
    by_family = _by_family()
    out = {"README.md": index(by_family)}
    for family, rows in by_family:
        for row in rows:
            out[f"{row['id']}.md"] = page(family, row, rows, image_info(family, row))
    return out


def images_needed() -> list[str]:
    return sorted({image_info(family, row)["source"] for family, rows in _by_family() for row in rows})


def stale() -> list[str]:
    """The committed pages that differ from a fresh generation, or that it no longer writes."""
    wanted = pages()
    differ = [
        name for name, text in wanted.items() if not (OUT / name).exists() or (OUT / name).read_text() != text
    ]
    return differ + sorted(p.name for p in OUT.glob("*.md") if p.name not in wanted)


def write(images: bool = True) -> None:
    """Write every page (removing pages of IDs no longer registered) and, with ``images``, the pictures."""
    wanted = pages()
    OUT.mkdir(parents=True, exist_ok=True)
    for old_page in OUT.glob("*.md"):
        if old_page.name not in wanted:
            old_page.unlink()
    for name, text in wanted.items():
        (OUT / name).write_text(text)
    print(f"wrote {len(wanted)} pages to {OUT.relative_to(ROOT)}")
    if not images:
        return
    IMAGES.mkdir(exist_ok=True)
    needed = images_needed()
    for old in IMAGES.glob("*.png"):
        if old.stem not in needed:
            old.unlink()
    for env_id in needed:
        width, height = render_image(env_id, IMAGES / f"{env_id}.png")
        print(f"image {env_id}: {width} x {height}")

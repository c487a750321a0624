"""Near duplicates by meaning, when the caller passes an embedder; word shingles otherwise."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from membrane import ContextCompiler
from membrane.errors import InvalidInputError
from membrane.lod import SharedEmbedder, default_embedder
from membrane.profile import MembraneProfile, find_meaning_duplicates
from membrane.profile._meaning import differ_in_detail
from membrane.records import MemoryItem

# A toy model with three directions of meaning: drinks, places, anything else.
_TOPICS = ({"tea", "chai", "coffee"}, {"lagos", "nigeria"})


def embed(texts: list[str]) -> list[list[float]]:
    out = []
    for text in texts:
        words = set(text.lower().replace(".", "").split())
        vector = [float(bool(words & topic)) for topic in _TOPICS]
        out.append([*vector, 0.0 if any(vector) else 1.0])
    return out


ROWS = [
    MemoryItem(id="a", content="The user drinks tea every morning."),
    MemoryItem(id="b", content="Every day starts with a cup of chai for them."),
    MemoryItem(id="c", content="The user lives in Lagos."),
    MemoryItem(id="d", content="the user drinks tea every morning"),
]


def test_paraphrases_are_copies_by_meaning_only() -> None:
    found = find_meaning_duplicates(ROWS, embed, threshold=0.95)
    assert [(d.index, d.kept_index) for d in found] == [(1, 0), (3, 0)]
    assert found[1].similarity == 1.0  # an exact copy is found by its words


def test_presets_use_the_embedder_when_given_and_shingles_otherwise() -> None:
    words = MembraneProfile.coding(embedder=None).apply(ROWS, "tea?")
    meaning = MembraneProfile.coding(embedder=embed).apply(ROWS, "tea?")
    assert [m.id for m in words.memories] == ["a", "b", "c"]
    assert words.steps[0] == "dedup"
    assert [m.id for m in meaning.memories] == ["a", "c"]
    assert meaning.steps[0] == "dedup_meaning"
    assert meaning.duplicates == (("b", "a"), ("d", "a"))
    chat = MembraneProfile.conversational(embedder=embed).prepare(ROWS, "tea?")
    assert [m.id for m in chat] == ["a", "c"]
    result = ContextCompiler(2000).compile(
        ROWS, "tea?", profile=MembraneProfile.coding(embedder=embed)
    )
    assert result.ref_map == {1: "a", 3: "c"}


def test_a_failing_embedder_falls_back_to_shingles() -> None:
    def broken(_texts: list[str]) -> Sequence[Sequence[float]]:
        raise RuntimeError("model not loaded")

    outcome = MembraneProfile.coding(embedder=broken).apply(ROWS, "tea?")
    assert [m.id for m in outcome.memories] == ["a", "b", "c"]
    assert outcome.steps[0] == "dedup"
    assert outcome.embedder_error == "RuntimeError: model not loaded"

    def short(texts: list[str]) -> Sequence[Sequence[float]]:
        return [[1.0]]

    assert MembraneProfile.coding(embedder=short).apply(ROWS, "x").embedder_error is not None


def test_embedder_settings_are_checked() -> None:
    with pytest.raises(InvalidInputError) as info:
        MembraneProfile(dedup=True, embedder=embed)
    assert info.value.field == "semantic_duplicate_threshold"
    with pytest.raises(InvalidInputError) as info:
        MembraneProfile(semantic_duplicate_threshold=0.9)
    assert info.value.field == "semantic_duplicate_threshold"
    with pytest.raises(InvalidInputError) as info:
        MembraneProfile(dedup=True, semantic_duplicate_threshold=1.5)
    assert info.value.field == "semantic_duplicate_threshold"
    with pytest.raises(TypeError, match="embedder must be callable"):
        MembraneProfile(dedup=True, semantic_duplicate_threshold=0.9, embedder="bge")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError) as info:
        find_meaning_duplicates(ROWS, embed, threshold=0.0)
    assert info.value.field == "semantic_duplicate_threshold"


def test_explain_names_the_meaning_check() -> None:
    text = MembraneProfile.coding(embedder=embed).explain()
    assert (
        "near copies by meaning (cosine of the embedder's vectors >= 0.95, unless a number or a "
        "negation differs; words if the embedder fails: 3-word shingle Jaccard >= 0.90)"
    ) in text
    assert MembraneProfile.coding(embedder=embed).to_dict()["embedder"] == "embed"


def test_presets_use_the_embed_extras_model_by_default() -> None:
    for preset in (MembraneProfile.coding(), MembraneProfile.conversational()):
        assert isinstance(preset.embedder, SharedEmbedder)
        assert preset.embedder is default_embedder()
    rows = [
        MemoryItem(id="a", content="The user prefers dark mode in every editor."),
        MemoryItem(id="b", content="User prefers dark mode in every editor"),
        MemoryItem(id="c", content="Use Python 3.11 for the build."),
        MemoryItem(id="d", content="Use Python 3.12 for the build."),
        MemoryItem(id="e", content="Deploy with --force on Fridays."),
        MemoryItem(id="f", content="Deploy without --force on Fridays."),
    ]
    outcome = MembraneProfile.conversational().apply(rows, "editor settings?")
    assert outcome.steps[0] == "dedup_meaning"
    # A restated fact goes; a changed version or a negation keeps both, however close in meaning.
    assert [m.id for m in outcome.memories] == ["a", "c", "d", "e", "f"]


def test_a_version_or_a_negation_is_never_a_copy_by_meaning() -> None:
    def same(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]  # a model that calls everything the same

    rows = [
        MemoryItem(id="a", content="Pin numpy 2.4 in CI."),
        MemoryItem(id="b", content="Pin numpy 2.5 in CI."),
        MemoryItem(id="c", content="Do not pin numpy in CI."),
        MemoryItem(id="d", content="Pin numpy in CI."),
        MemoryItem(id="e", content="Pin NumPy in the CI."),
    ]
    found = find_meaning_duplicates(rows, same, threshold=0.9)
    assert [(d.index, d.kept_index) for d in found] == [(4, 3)]
    assert differ_in_detail(("never", "x"), ("x",)) and not differ_in_detail(("a", "x"), ("x",))

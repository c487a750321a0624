"""Tool definitions: both accepted shapes read alike, bad ones named, the counted text."""

from __future__ import annotations

import json

import pytest

from membrane.errors import InvalidInputError
from membrane.messages import normalize_tools, tools_fingerprint, tools_overhead, tools_text

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
OPENAI = {
    "type": "function",
    "function": {"name": "search", "description": "Search the web", "parameters": SCHEMA},
}
ANTHROPIC = {"name": "search", "description": "Search the web", "input_schema": SCHEMA}


def test_openai_anthropic_and_bare_shapes_read_the_same() -> None:
    bare = {"name": "search", "description": "Search the web", "parameters": SCHEMA}
    specs = [normalize_tools([shape]) for shape in (OPENAI, ANTHROPIC, bare)]
    assert specs[0] == specs[1] == specs[2]
    assert specs[0][0].parameters == SCHEMA


def test_counted_text_is_one_compact_json_line_per_tool() -> None:
    other = {"name": "open_page", "input_schema": {"type": "object", "properties": {}}}
    specs = normalize_tools([OPENAI, other])
    lines = tools_text(specs).split("\n")
    assert [json.loads(line)["name"] for line in lines] == ["search", "open_page"]
    assert json.loads(lines[0]) == {
        "name": "search",
        "description": "Search the web",
        "parameters": SCHEMA,
    }


def test_overhead_is_anthropics_tool_prompt_and_unknown_pays_it_too() -> None:
    specs = normalize_tools([OPENAI])
    assert tools_overhead("anthropic", specs) == 530
    assert tools_overhead(None, specs) == 530
    assert tools_overhead("openai", specs) == 0
    assert tools_overhead("anthropic", ()) == 0


def test_fingerprint_follows_the_definitions() -> None:
    a = tools_fingerprint(normalize_tools([OPENAI]))
    changed = dict(OPENAI, function=dict(OPENAI["function"], description="Search"))  # type: ignore[arg-type]
    assert a == tools_fingerprint(normalize_tools([ANTHROPIC]))
    assert a != tools_fingerprint(normalize_tools([changed]))


@pytest.mark.parametrize(
    ("tools", "field", "words"),
    [
        ("search", "tools", "list of tool definitions"),
        ([42], "tools[0]", "tool definition dict"),
        ([{"description": "x"}], "tools[0]", "'name'"),
        ([{"name": "a", "input_schema": "{}"}], "tools[0]", "JSON Schema object"),
        ([OPENAI, ANTHROPIC], "tools[1]", "repeats the tool name 'search'"),
        ([{"type": "web_search_20250305", "name": "web"}], "tools[0]", "function tools"),
    ],
)
def test_bad_definitions_name_the_field(tools: object, field: str, words: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        normalize_tools(tools)
    assert info.value.field == field
    assert words in str(info.value)

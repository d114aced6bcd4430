"""``jsontext``: where values lie in a JSON text, and edits that keep every other
byte: removing what ``add`` put in gives the text back, whatever its layout."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from snapshotter.frontends.hooks import jsontext

SPACE = st.sampled_from(["", " ", "\n", "\n  ", "\n\t", "\r\n    ", "  \n"])
SCALARS = st.one_of(
    st.sampled_from(["0", "-1", "1.50", "1e5", "2E-3", "true", "false", "null"]),
    st.text(max_size=5).map(lambda text: json.dumps(text, ensure_ascii=False)),
    st.sampled_from(['"\\u00e9"', '"a\\"b"', '"{[,]}"', '"\\\\"']),
)


@st.composite
def texts(draw: Any, depth: int = 0) -> str:
    """A JSON value spelled with arbitrary spacing."""
    kind = draw(st.sampled_from(["scalar", "array", "object"] if depth < 3 else ["scalar"]))
    if kind == "scalar":
        return str(draw(SCALARS))
    count = draw(st.integers(0, 3))
    parts = []
    for index in range(count):
        value = draw(texts(depth + 1))
        key = f"{json.dumps(f'k{index}')}{draw(SPACE)}:{draw(SPACE)}" if kind == "object" else ""
        parts.append(f"{draw(SPACE)}{key}{value}{draw(SPACE)}")
    inside = ",".join(parts) if parts else draw(SPACE)
    return "{" + inside + "}" if kind == "object" else "[" + inside + "]"


def containers(text: str, value: jsontext.Value) -> list[jsontext.Value]:
    found = [value] if value.kind in ("object", "array") else []
    for item in jsontext.items(text, value) if value.kind in ("object", "array") else []:
        found.extend(containers(text, item.value))
    return found


@settings(max_examples=300, deadline=None)
@given(texts(), st.data())
def test_removing_what_was_added_gives_the_bytes_back(text: str, data: st.DataObject) -> None:
    document = json.loads(text)
    for container in containers(text, jsontext.root(text)):
        key = "added" if container.kind == "object" else None
        added = jsontext.add(text, container, {"type": "command", "list": [1, "x"]}, key=key)
        assert json.loads(added) is not None  # still JSON
        grown = next(c for c in containers(added, jsontext.root(added)) if c.start == container.start)
        index = len(jsontext.items(added, grown)) - 1
        assert jsontext.decoded(added, jsontext.items(added, grown)[index].value) == {
            "type": "command",
            "list": [1, "x"],
        }
        assert jsontext.remove(added, grown, index) == text
    assert json.loads(text) == document


@settings(max_examples=200, deadline=None)
@given(texts())
def test_items_are_where_the_values_are(text: str) -> None:
    top = jsontext.root(text)
    assert json.loads(text[top.start : top.end]) == json.loads(text)
    for container in containers(text, top):
        decoded = jsontext.decoded(text, container)
        found = jsontext.items(text, container)
        if container.kind == "object":
            assert {item.key: jsontext.decoded(text, item.value) for item in found} == decoded
        else:
            assert [jsontext.decoded(text, item.value) for item in found] == decoded


@settings(max_examples=200, deadline=None)
@given(texts())
def test_removing_any_item_leaves_json_without_it(text: str) -> None:
    for position, container in enumerate(containers(text, jsontext.root(text))):
        for index, item in enumerate(jsontext.items(text, container)):
            smaller = jsontext.remove(text, container, index)
            expected = jsontext.decoded(text, container)
            if container.kind == "object":
                del expected[item.key]
            else:
                del expected[index]
            assert jsontext.decoded(smaller, containers(smaller, jsontext.root(smaller))[position]) == expected


def test_an_emptied_container_tells_whether_add_wrote_it_whole() -> None:
    text = '{"a": []}'
    top = jsontext.root(text)
    whole = jsontext.add(text, top, [1], key="b")  # written whole by add: spans lines once emptied
    made = jsontext.member(whole, jsontext.root(whole), "b")
    assert made is not None
    emptied = jsontext.remove(whole, made.value, 0)
    left = jsontext.member(emptied, jsontext.root(emptied), "b")
    assert left is not None and jsontext.made_empty(emptied, left.value)
    theirs = jsontext.member(text, top, "a")
    assert theirs is not None and not jsontext.made_empty(text, theirs.value)  # written empty on one line


def test_a_deeply_nested_value_is_scanned_without_recursion() -> None:
    text = '{"deep": ' + "[" * 50_000 + "]" * 50_000 + ', "hooks": {}}'
    top = jsontext.root(text)
    assert [item.key for item in jsontext.items(text, top)] == ["deep", "hooks"]

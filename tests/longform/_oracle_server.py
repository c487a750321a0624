"""A JSON-lines server that answers calls into whichever ``longform_memory`` its interpreter
imports: the published package in ``.venv-oracle``, or ours.

Run as a script, one process per side, for the whole test session. Each request is one line,
each answer one line. Values travel type-tagged (``{"t": "float", "v": float.hex()}`` and so
on), so an int never passes for a float, a tuple never for a list, and a float keeps every bit.
Nothing but the standard library is imported before ``longform_memory`` itself.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import operator
import sys
import types
from typing import Any

SUBMODULES = ("budget", "vector", "language", "threads")


# ------------------------------------------------------------------ encoding (answers)


def encode(value: Any) -> Any:
    if value is None:
        return {"t": "none"}
    if isinstance(value, bool):
        return {"t": "bool", "v": value}
    if isinstance(value, int):
        return {"t": "int", "v": str(value)}
    if isinstance(value, float):
        return {"t": "float", "v": value.hex()}
    if isinstance(value, str):
        return {"t": "str", "v": value}
    if isinstance(value, bytes):
        return {"t": "bytes", "v": value.hex()}
    if isinstance(value, list):
        return {"t": "list", "v": [encode(v) for v in value]}
    if isinstance(value, tuple):
        return {"t": "tuple", "v": [encode(v) for v in value]}
    if isinstance(value, dict):
        return {"t": "dict", "v": [[encode(k), encode(v)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "t": "dc",
            "cls": type(value).__name__,
            "v": [[f.name, encode(getattr(value, f.name))] for f in dataclasses.fields(value)],
        }
    if isinstance(value, types.SimpleNamespace):
        return {"t": "ns", "v": [[k, encode(v)] for k, v in sorted(vars(value).items())]}
    if callable(value):
        return {"t": "callable"}
    return {"t": "repr", "v": repr(value)}


# ------------------------------------------------------------------ decoding (requests)


def _due_words(chapter: int) -> str:
    return f" [bis Kapitel {chapter}]"


CALLABLES: dict[str, Any] = {
    "identity": lambda value: value,
    "str": str,
    "item0": operator.itemgetter(0),
    "item1": operator.itemgetter(1),
    "text_attr": operator.attrgetter("text"),
    "due_words": _due_words,
}


def decode(value: Any, lf: Any) -> Any:
    tag = value["t"]
    payload = value.get("v")
    if tag == "none":
        return None
    if tag in ("bool", "str"):
        return payload
    if tag == "int":
        return int(payload)
    if tag == "float":
        return float.fromhex(payload)
    if tag == "bytes":
        return bytes.fromhex(payload)
    if tag == "list":
        return [decode(v, lf) for v in payload]
    if tag == "tuple":
        return tuple(decode(v, lf) for v in payload)
    if tag == "dict":
        return {decode(k, lf): decode(v, lf) for k, v in payload}
    if tag == "ns":
        return types.SimpleNamespace(**{k: decode(v, lf) for k, v in payload})
    if tag == "fn":
        return CALLABLES[value["name"]]
    if tag == "attr":
        # A module attribute of the package under test, e.g. language.HAN.
        module = importlib.import_module(f"longform_memory.{value['module']}")
        return getattr(module, value["name"])
    if tag == "new":
        cls = getattr(lf, value["cls"])
        args = [decode(v, lf) for v in value.get("args", [])]
        kwargs = {k: decode(v, lf) for k, v in value.get("kwargs", [])}
        return cls(*args, **kwargs)
    raise ValueError(f"unknown tag {tag!r}")


# ------------------------------------------------------------------ introspection


def _describe_default(default: Any) -> Any:
    if default is inspect.Parameter.empty or default is dataclasses.MISSING:
        return {"t": "required"}
    if dataclasses.is_dataclass(default) or callable(default):
        return {"t": "object", "cls": type(default).__name__}
    return encode(default)


def signature_of(obj: Any) -> list[Any]:
    return [
        [name, str(p.kind), _describe_default(p.default)]
        for name, p in inspect.signature(obj).parameters.items()
    ]


def surface(lf: Any) -> dict[str, Any]:
    """Everything a caller can reach by name, and the shape of each callable."""
    out: dict[str, Any] = {
        "file": lf.__file__,
        "version": getattr(lf, "__version__", None),
        "all": sorted(lf.__all__),
        "modules": {},
    }
    for sub in SUBMODULES:
        module = importlib.import_module(f"longform_memory.{sub}")
        names: dict[str, Any] = {}
        for name in dir(module):
            if name.startswith("_"):
                continue
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType) or getattr(obj, "__module__", None) in (
                "typing",
                "dataclasses",
                "collections.abc",
                "re",
            ):
                continue
            if inspect.isclass(obj) and obj.__module__ != module.__name__:
                continue
            if inspect.isfunction(obj) and obj.__module__ != module.__name__:
                continue
            entry: dict[str, Any] = {"kind": type(obj).__name__}
            if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
                params = obj.__dataclass_params__  # type: ignore[attr-defined]
                entry["fields"] = [
                    [f.name, _describe_default(f.default)] for f in dataclasses.fields(obj)
                ]
                entry["frozen"] = params.frozen
                entry["eq"] = params.eq
                entry["signature"] = signature_of(obj)
            elif inspect.isfunction(obj):
                entry["signature"] = signature_of(obj)
            elif not callable(obj):
                entry["value"] = encode(obj) if not hasattr(obj, "pattern") else obj.pattern
            names[name] = entry
        out["modules"][sub] = {"all": sorted(module.__all__), "names": names}
    return out


# ------------------------------------------------------------------ the loop


def answer(request: dict[str, Any], lf: Any) -> dict[str, Any]:
    if request.get("surface"):
        return {"ok": surface(lf)}
    target = lf
    for part in request["call"].split("."):
        target = getattr(target, part)
    args = [decode(v, lf) for v in request.get("args", [])]
    kwargs = {k: decode(v, lf) for k, v in request.get("kwargs", [])}
    try:
        result = target(*args, **kwargs)
    except Exception as exc:  # the type is the answer
        return {"error": type(exc).__name__}
    return {"ok": encode(result)}


def main() -> None:
    lf = importlib.import_module("longform_memory")
    for sub in SUBMODULES:
        importlib.import_module(f"longform_memory.{sub}")
    sys.stdout.write(json.dumps({"ready": lf.__file__}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = answer(request, lf)
        except Exception as exc:  # a fault of the harness, not of the package
            reply = {"harness_error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

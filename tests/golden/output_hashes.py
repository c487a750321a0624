"""Hashes of everything Membrane emits over a fixed corpus, to prove a change keeps the bytes.

    python tests/golden/output_hashes.py --check     # compare with tests/golden/output_hashes.json
    python tests/golden/output_hashes.py --update    # rewrite the manifest (say why in CHANGELOG)
    python tests/golden/output_hashes.py --check --skip-errors   # without the pytest pass

The corpus: the demo, every benchmark scenario and seed under each Membrane configuration the
suites run, provider requests built from real compiles, and the paths the benchmarks do not
reach (embedder, sync and async compressors, profiles, a tokenizer registry, an observed scale,
two compilers sharing one store, a real Redis). Each case hashes the messages, ref maps,
metadata (key order included), ``to_debug_dict()``, every state-store write (key and value),
the ``membrane inspect`` text, ``--json`` and ``--html`` output, and the error class and message
of every ``pytest.raises`` in ``tests/`` (recorded by a pytest plugin).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = Path(__file__).resolve().parent / "output_hashes.json"
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from benchmarks._scenarios import HARD_SCENARIOS, Scenario, build_scenario  # noqa: E402
from membrane import (  # noqa: E402
    ContextCompiler,
    InMemoryStateStore,
    MemoryItem,
    anthropic_request,
    bedrock_converse_request,
    gemini_request,
    openai_request,
    openai_responses_request,
)

Observation = Any


class RecordingStore(InMemoryStateStore):
    """An in-process store that records every write, in order."""

    def __init__(self, log: list[Observation]) -> None:
        super().__init__()
        self._log = log

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._log.append(["put", key, value])
        super().put(key, value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$bytes": hashlib.sha256(value).hexdigest()}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def observe_result(result: Any, *, requests: bool = True) -> Observation:
    """Everything a caller can read from a compile result, key order kept."""
    out: dict[str, Any] = {
        "messages": result.messages,
        "ref_map": sorted(result.ref_map.items()),
        "ref_map_type": sorted(result.ref_map_type.items()),
        "metadata": list(result.metadata.items()),
        "debug": result.to_debug_dict(),
    }
    if requests:
        out["requests"] = _requests(result)
    return _jsonable(out)


def _requests(result: Any) -> dict[str, Any]:
    builders: dict[str, Callable[[Any], dict[str, Any]]] = {
        "openai": lambda r: openai_request(r, model="gpt-4o-mini", prompt_cache_key="c"),
        "anthropic": anthropic_request,
        "anthropic_1h": lambda r: anthropic_request(r, ttl="1h"),
        "gemini": gemini_request,
        "bedrock": bedrock_converse_request,
    }
    out: dict[str, Any] = {}
    for name, build in builders.items():
        try:
            out[name] = build(result)
        except Exception as exc:  # an error is an output too
            out[name] = ["error", type(exc).__name__, str(exc)]
    return out


def _memories(turn: Any) -> list[MemoryItem]:
    return [
        MemoryItem(id=m.id, content=m.content, memory_type=m.memory_type, priority=m.priority)
        for m in turn.memories
    ]


def run_conversation(
    scenario: Scenario,
    *,
    model_id: str = "openai/gpt-4o",
    requests_every: int = 10,
    store: Any = None,
    log: list[Observation] | None = None,
    **options: Any,
) -> list[Observation]:
    """Compile every turn of ``scenario`` with one compiler, as the benchmarks do."""
    log = log if log is not None else []
    store = store if store is not None else RecordingStore(log)
    compiler = ContextCompiler(
        scenario.budget,
        model_id=model_id,
        core_content=scenario.system_prompt,
        token_scale=options.pop("token_scale", 1.0),
        state_store=store,
        **options,
    )
    history: list[dict[str, Any]] = []
    for i, turn in enumerate(scenario.turns):
        result = compiler.compile(
            memories=_memories(turn),
            conversation_messages=history,
            user_message=turn.user_message,
            debug=i % 7 == 0,
        )
        log.append(observe_result(result, requests=i % requests_every == 0))
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    return log


# ---------------------------------------------------------------------------- the cases

MEMBRANE_CONFIGS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "cheap": {"recall_evicted_history": False},
    "cheap_wide": {"recall_evicted_history": False, "index_share": 0.25},
    "system": {"memory_placement": "system"},
}


def suite_cases() -> Iterator[tuple[str, Callable[[], Observation]]]:
    from benchmarks.cache_savings import SPEC as CACHE_SPEC
    from benchmarks.compile_speed import _long_scenario as speed_scenario
    from benchmarks.peer_comparison import DEFAULT_CONFIGS, spec_for

    specs = [*HARD_SCENARIOS.values(), CACHE_SPEC, *(spec_for(b, m) for b, m in DEFAULT_CONFIGS)]
    for spec in specs:
        for seed in range(1, 6):
            for config, options in MEMBRANE_CONFIGS.items():
                yield (
                    f"suite/{spec.name}/{seed}/{config}",
                    lambda spec=spec, seed=seed, options=options: run_conversation(
                        build_scenario(spec, seed), **options
                    ),
                )
    yield (
        "suite/compile_speed/1000",
        lambda: run_conversation(speed_scenario(1000, 1), requests_every=50),
    )
    yield (
        "suite/anthropic_model",
        lambda: run_conversation(
            build_scenario(HARD_SCENARIOS["long_chat"], 3),
            model_id="anthropic/claude-sonnet-4.5",
        ),
    )


def _embedder(texts: list[str]) -> list[list[float]]:
    vectors = []
    for text in texts:
        digest = hashlib.sha256(" ".join(sorted(set(text.lower().split()))[:6]).encode()).digest()
        vectors.append([b / 255.0 for b in digest[:16]])
    return vectors


def _failing_embedder(texts: list[str]) -> list[list[float]]:
    raise RuntimeError("embedder offline")


def _compressor(raw: str, target: int, question: str) -> str:
    return f"Summary ({target} tokens) for {question[:30]}: " + raw[:200].replace("\n", " ")


async def _async_compressor(raw: str, target: int, question: str) -> str:
    await asyncio.sleep(0)
    return _compressor(raw, target, question)


def path_cases() -> Iterator[tuple[str, Callable[[], Observation]]]:
    long_chat = HARD_SCENARIOS["long_chat"]
    memory_many = HARD_SCENARIOS["memory_many"]
    for name in ("embedder", "failing_embedder"):
        fn = _embedder if name == "embedder" else _failing_embedder
        for spec in (long_chat, memory_many):
            yield (
                f"path/{name}/{spec.name}",
                lambda fn=fn, spec=spec: run_conversation(build_scenario(spec, 2), embedder=fn),
            )
    yield "path/compressors", _compressor_case
    yield "path/profiles", _profile_case
    yield "path/registry", _registry_case
    yield "path/observed_scale", _scale_case
    yield "path/shared_store", _shared_store_case
    yield "path/options", _options_case
    yield "path/redis", _redis_case
    yield "path/provider_boundaries", _provider_boundaries_case


def _provider_boundaries_case() -> Observation:
    """Responses items as history, compaction boundaries, explicit OpenAI breakpoints."""
    from tests.messages.test_responses import ITEMS
    from tests.providers.test_compaction import AFTER, BOUNDARY, OLD

    out: list[Observation] = []
    rules = "\n".join(f"Rule {i}: answer the support desk's way, item {i}." for i in range(120))
    for model in ("openai/gpt-5.1", "openai/gpt-5.6-sol"):
        compiler = ContextCompiler(6000, model_id=model, core_content=rules)
        result = compiler.compile(_big_memories(6), "And tomorrow?", conversation_messages=ITEMS)
        out.append(observe_result(result))
        out.append(openai_responses_request(result))
        out.append(openai_responses_request(result, prompt_cache_options={"mode": "explicit"}))
    compiler = ContextCompiler(6000, model_id="anthropic/claude-opus-5-5", core_content=rules)
    result = compiler.compile([], "When?", conversation_messages=[*OLD, BOUNDARY, *AFTER])
    out.append(observe_result(result))
    out.append(anthropic_request(result, max_tokens=64, cache_control=True))
    usage = {"input_tokens": 40, "cache_read_input_tokens": 3000, "cache_creation_input_tokens": 9}
    out.append(["observe_usage", compiler.observe_usage(result, usage)])
    return out


def _big_memories(n: int = 40) -> list[MemoryItem]:
    return [
        MemoryItem(
            id=f"m{i}",
            content=f"Record {i}: the deployment in region r{i} uses cluster c{i * 7} "
            f"and rotates keys every {i + 3} days; owner team t{i % 5}.",
            memory_type=("semantic", "episodic", "procedural")[i % 3],
        )
        for i in range(n)
    ]


def _compressor_case() -> Observation:
    out: list[Observation] = []
    compiler = ContextCompiler(3000, model_id="openai/gpt-4o", core_content="Be exact.")
    memories = _big_memories(200)
    out.append(
        observe_result(compiler.compile(memories, "Where is r12?", compress_sync=_compressor))
    )
    result = asyncio.run(
        compiler.compile_async(memories, "Where is r13?", compress_async=_async_compressor)
    )
    out.append(observe_result(result))
    result = asyncio.run(
        compiler.compile_async(memories[:3], "Small?", compress_fn=_async_compressor)
    )
    out.append(observe_result(result))
    return out


def _profile_case() -> Observation:
    from membrane.profile import MembraneProfile

    out: list[Observation] = []
    for name in ("minimal", "coding", "conversational"):
        profile = MembraneProfile.preset(name)
        compiler = ContextCompiler(900, model_id="openai/gpt-4o", core_content="Rules.")
        memories = _big_memories(30) + _big_memories(5)  # duplicates for dedup
        for q in ("Which cluster runs r4?", "How often are keys rotated?"):
            out.append(observe_result(compiler.compile(memories, q, profile=profile)))
    return out


def _registry_case() -> Observation:
    from membrane.tokenizers import CharacterEstimateCounter, TokenizerRegistry

    registry = TokenizerRegistry()
    registry.register("local/*", CharacterEstimateCounter())
    out: list[Observation] = []
    for model in ("local/llama", "openai/gpt-4o"):
        compiler = ContextCompiler(700, model_id=model, tokenizer_registry=registry)
        out.append(observe_result(compiler.compile(_big_memories(20), "Which team owns r3?")))
    compiler = ContextCompiler(700, model_id="openai/gpt-4o")
    out.append(
        observe_result(compiler.compile(_big_memories(20), "r5?", tokenizer_registry=registry))
    )
    return out


def _scale_case() -> Observation:
    log: list[Observation] = []
    store = RecordingStore(log)
    compiler = ContextCompiler(800, model_id="anthropic/claude-sonnet-4.5", state_store=store)
    for i, actual in enumerate((900, 950, 870, 1200)):
        result = compiler.compile(_big_memories(15), f"Question {i} about r{i}?")
        log.append(observe_result(result))
        log.append(["observe", compiler.observe(result, actual)])
        log.append(["scale_for", compiler.token_scale_for()])
    return log


def _shared_store_case() -> Observation:
    log: list[Observation] = []
    store = RecordingStore(log)
    scenario = build_scenario(HARD_SCENARIOS["long_chat"], 4)
    workers = [
        ContextCompiler(
            scenario.budget,
            model_id="openai/gpt-4o",
            core_content=scenario.system_prompt,
            token_scale=1.0,
            state_store=store,
        )
        for _ in range(2)
    ]
    history: list[dict[str, Any]] = []
    for i, turn in enumerate(scenario.turns):
        result = workers[(i // 3) % 2].compile(
            memories=_memories(turn),
            conversation_messages=history,
            user_message=turn.user_message,
            conversation_id="shared",
        )
        log.append(observe_result(result, requests=False))
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    return log


def _options_case() -> Observation:
    scenario = build_scenario(HARD_SCENARIOS["long_chat"], 5)
    out: list[Observation] = []
    variants: list[dict[str, Any]] = [
        {"trim_history": False},
        {"eviction_index": False},
        {"rank_fusion": False},
        {"thin_before_drop": False},
        {"include_interrupt_instruction": False},
        {"message_overhead_tokens": 0},
        {"keyframe_tokens": 12},
        {"history_share": 0.3},
        {"token_scale": 1.3},
    ]
    for options in variants:
        out.append([options, run_conversation(scenario, requests_every=40, **dict(options))])
    compiler = ContextCompiler(600, model_id="openai/gpt-4o", core_content="Persona rules.")
    out.append(
        observe_result(
            compiler.compile(
                _big_memories(10),
                "What now?",
                agent_persona_prompt="You are a careful SRE.",
                dynamic_directives=["Answer in one line.", "Cite memories."],
                middle_extras=[("Extra note about r2.", 2)],
                last_assistant_turn="Earlier I said r1 was fine.",
                use_prompt_caching_split=False,
                debug=True,
            )
        )
    )
    return out


@contextlib.contextmanager
def _redis_server() -> Iterator[str]:
    from tests.redis_process import RedisProcess

    with RedisProcess() as server:
        yield server.url


def _redis_case() -> Observation:
    import redis

    from membrane import RedisStateStore

    with _redis_server() as url:
        client = redis.Redis.from_url(url)
        store = RedisStateStore(url=url, ttl_seconds=600, deadline_seconds=5.0)
        scenario = build_scenario(HARD_SCENARIOS["long_chat"], 2)
        log = run_conversation(scenario, store=store, requests_every=40)
        keys = sorted(k.decode() for k in client.keys("*"))
        log.append([[k, client.get(k).decode()] for k in keys])
        client.close()
    return log


def cli_cases() -> Iterator[tuple[str, Callable[[], Observation]]]:
    scenario = build_scenario(HARD_SCENARIOS["long_chat"], 1)
    history: list[dict[str, Any]] = []
    for turn in scenario.turns[:40]:
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    base = [
        "--user-message",
        "What did we decide about the r4 cluster?",
        "--memory",
        "policy|1|Always cite the record.",
        "--memory",
        "r4|2|The r4 cluster moved to c28 on Monday.",
        "--memory",
        "chat|3|We talked about | pipes | in content.",
        "--core",
        scenario.system_prompt,
        "--max-tokens",
        "2500",
    ]
    variants = {
        "plain": [],
        "model": ["--model-id", "anthropic/claude-sonnet-4.5"],
        "system": ["--placement", "system", "--token-scale", "1"],
    }

    def run(extra: list[str], with_history: bool) -> Observation:
        from membrane.cli import main

        out: list[Observation] = []
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "history.json"
            path.write_text(json.dumps(history))
            args = [*base, *extra, *(["--history-file", str(path)] if with_history else [])]
            for command in (["inspect"], ["inspect", "--json"], ["inspect", "--html"], ["quote"]):
                argv = [*command, *args]
                if command == ["quote"]:
                    argv += ["--price-per-1k-input-tokens", "0.0025"]
                stdout, stderr = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                    code = main(argv)
                text = stdout.getvalue().replace(str(path), "HISTORY")
                out.append([command, code, text, stderr.getvalue()])
        return out

    for name, extra in variants.items():
        for with_history in (False, True):
            yield (
                f"cli/{name}/{'history' if with_history else 'none'}",
                (lambda extra=extra, h=with_history: run(extra, h)),
            )

    def profile_explain() -> Observation:
        from membrane.cli import main

        out = []
        for argv in (["profile", "explain", "coding"], ["profile", "explain", "nope"]):
            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = main(argv)
            out.append([argv, code, stdout.getvalue(), stderr.getvalue()])
        return out

    yield "cli/profile_explain", profile_explain


def demo_case() -> Observation:
    from membrane.demo import main

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main([])
    return [code, stdout.getvalue()]


# ---------------------------------------------------------------------------- error cases

_PLUGIN = """
import json, os, pytest
_orig = pytest.raises
_log = []

class _Recorder:
    def __init__(self, cm):
        self._cm = cm
    def __enter__(self):
        self._info = self._cm.__enter__()
        return self._info
    def __exit__(self, *exc):
        done = self._cm.__exit__(*exc)
        if exc[1] is not None:
            test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
            _log.append([test, type(exc[1]).__module__ + "." + type(exc[1]).__name__,
                         str(exc[1])])
        return done

def _raises(*args, **kwargs):
    cm = _orig(*args, **kwargs)
    if len(args) > 1 or not hasattr(cm, "__enter__"):
        return cm
    return _Recorder(cm)

pytest.raises = _raises

def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["MEMBRANE_RAISES_LOG"], "w") as f:
        json.dump(_log, f)
"""


def error_cases() -> dict[str, Observation]:
    """The class and message of every error a test expects, one case per test file.

    A test file added later brings cases of its own (reported as new by ``--check``); an
    existing file's case changes only when an error it expects changes.
    """
    with tempfile.TemporaryDirectory() as tmp:
        plugin = Path(tmp) / "membrane_raises_plugin.py"
        plugin.write_text(_PLUGIN)
        log_path = Path(tmp) / "raises.json"
        env = {
            **os.environ,
            "MEMBRANE_RAISES_LOG": str(log_path),
            "PYTHONPATH": os.pathsep.join([tmp, str(ROOT / "src"), str(ROOT)]),
            "PYTHONHASHSEED": "0",
            "HYPOTHESIS_MAX_EXAMPLES": "60",
        }
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-x",
                "-p",
                "membrane_raises_plugin",
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
                # Generated examples must repeat from run to run for their errors to hash the
                # same. A seed does it; a derandomized profile loaded from the plugin did not
                # take effect (two runs drew different examples).
                "--hypothesis-seed=0",
                "tests",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError("the test suite failed under the recorder:\n" + done.stdout[-3000:])
        entries = json.loads(log_path.read_text())
    by_file: dict[str, list[Observation]] = {}
    for test, cls, message in entries:
        # Paths in messages vary with the temporary folder; leave those out.
        if "tmp" in message.lower():
            continue
        by_file.setdefault("errors/" + test.split("::", 1)[0], []).append([test, cls, message])
    return {name: sorted(rows) for name, rows in by_file.items()}


# ---------------------------------------------------------------------------- the manifest


def all_cases(with_errors: bool) -> Iterator[tuple[str, Callable[[], Observation]]]:
    yield "demo", demo_case
    yield from suite_cases()
    yield from path_cases()
    yield from cli_cases()


def digest(observation: Observation) -> str:
    raw = json.dumps(observation, ensure_ascii=False, separators=(",", ":"), default=repr)
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def compute(with_errors: bool, only: str | None = None) -> dict[str, str]:
    hashes: dict[str, str] = {}
    for name, case in all_cases(with_errors):
        if only is not None and not name.startswith(only):
            continue
        hashes[name] = digest(case())
    if with_errors and (only is None or "errors/".startswith(only) or only.startswith("errors")):
        for name, rows in error_cases().items():
            if only is None or name.startswith(only):
                hashes[name] = digest(rows)
    return hashes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="compare with the manifest")
    mode.add_argument(
        "--update",
        action="store_true",
        help="rewrite the manifest (only the selected cases with --only)",
    )
    parser.add_argument("--skip-errors", action="store_true", help="skip the pytest pass")
    parser.add_argument("--only", help="only cases whose name starts with this")
    args = parser.parse_args(argv)
    started = time.monotonic()
    hashes = compute(not args.skip_errors, args.only)
    elapsed = time.monotonic() - started
    expected = json.loads(MANIFEST.read_text())
    if args.update:
        # Cases outside the selection keep their recorded hash; selected ones are replaced.
        kept = {n: h for n, h in expected.items() if not _selected(n, args)}
        MANIFEST.write_text(json.dumps(kept | hashes, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(hashes)} hashes to {MANIFEST.relative_to(ROOT)} in {elapsed:.0f} s")
        return 0
    new = [n for n in hashes if n not in expected]
    wrong = [n for n, h in hashes.items() if n in expected and expected[n] != h]
    missing = [n for n in expected if n not in hashes and _selected(n, args)]
    for name in new:
        print(f"new (not in the manifest): {name}")
    for name in wrong:
        print(f"changed: {name}")
    for name in missing:
        print(f"not computed: {name}")
    known = len(hashes) - len(new)
    print(
        f"{known - len(wrong)} of {known} known cases unchanged, {len(new)} new ({elapsed:.0f} s)"
    )
    return 1 if wrong or missing else 0


def _selected(name: str, args: argparse.Namespace) -> bool:
    if args.only is not None and not name.startswith(args.only):
        return False
    return not (args.skip_errors and name.startswith("errors"))


if __name__ == "__main__":
    raise SystemExit(main())

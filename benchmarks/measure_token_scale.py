"""Re-derive the Claude token-scale seeds: provider tokens per counted ``cl100k_base`` token.

    ANTHROPIC_API_KEY=... python -m benchmarks.measure_token_scale [--models a,b] [--base-url URL]
    python -m benchmarks.measure_token_scale --usage usage.jsonl   # your own billed numbers

Live mode sends three fixed, seeded texts (English prose, Python code, digit-heavy records) to
Anthropic's token-count endpoint through the official ``anthropic`` SDK (free of charge, nothing
is generated) for each model, subtracts the count of a near-empty message (the framing), and
divides by the text's ``cl100k_base`` count. The prose ratio is what the capability map's
``token_scale`` seeds are; code and digits show how far other text strays. The default models
are every Claude model the capability map names an API id for.

Usage mode needs no key and no network: each JSON line is one request you sent,
``{"model": "claude-opus-5-5", "counted": 5120, "billed": 7731}``, where ``counted`` is the
compile's ``metadata["token_count"]`` and ``billed`` the provider's prompt tokens
(``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``). The result is the
median ratio per model: the seed your traffic implies.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._live import anthropic_client, require_key

__all__ = ["SAMPLES", "default_models", "main", "ratios_from_usage", "sample_texts"]

SAMPLES = ("prose", "code", "digits")
_CODE = '''def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge overlapping closed intervals, returning them sorted by start."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


class RateLimiter:
    def __init__(self, per_second: float, burst: int = 1) -> None:
        self.rate, self.tokens, self.burst = per_second, float(burst), burst

    def allow(self, elapsed: float) -> bool:
        self.tokens = min(self.burst, self.tokens + elapsed * self.rate)
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False
'''


def sample_texts(seed: int = 11) -> dict[str, str]:
    """The three measured texts, the same on every run (seeded)."""
    from benchmarks._text import TextFactory

    factory = TextFactory(random.Random(seed))
    prose = " ".join(factory.filler(60))
    rng = random.Random(seed)
    digits = "\n".join(
        f"{rng.randint(10_000, 99_999)},{rng.randint(1, 9_999)}.{rng.randint(0, 99):02d},"
        f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d},{rng.randint(100, 999)}"
        for _ in range(60)
    )
    return {"prose": prose, "code": _CODE * 3, "digits": digits}


def default_models() -> list[str]:
    """Every Claude model the capability map names an Anthropic API id for."""
    from membrane.capabilities import load_capability_map

    models = load_capability_map().get("models", {})
    ids = [m.get("api_ids", {}).get("anthropic") for m in models.values()]
    return sorted({i for i in ids if i})


def _count(client: Any, model: str, text: str) -> int:
    result = client.messages.count_tokens(model=model, messages=[{"role": "user", "content": text}])
    return int(result.input_tokens)


def measure(client: Any, models: Sequence[str]) -> dict[str, dict[str, float]]:
    from benchmarks._tokens import count_text

    texts = sample_texts()
    out: dict[str, dict[str, float]] = {}
    for model in models:
        framing = _count(client, model, ".") - count_text(".")
        out[model] = {
            name: round((_count(client, model, text) - framing) / count_text(text), 3)
            for name, text in texts.items()
        }
        print(f"{model}: {out[model]}", file=sys.stderr)
    return out


def ratios_from_usage(lines: Sequence[str]) -> dict[str, dict[str, float]]:
    """Median billed/counted ratio per model from JSON lines of your own requests."""
    per_model: dict[str, list[float]] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        row = json.loads(line)
        counted, billed = row.get("counted"), row.get("billed")
        if not isinstance(counted, int) or not isinstance(billed, int) or counted <= 0:
            raise SystemExit(f"line {n}: needs integer 'counted' > 0 and 'billed'")
        per_model.setdefault(str(row.get("model")), []).append(billed / counted)
    return {
        m: {"median": round(statistics.median(r), 3), "requests": len(r)}
        for m, r in sorted(per_model.items())
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.measure_token_scale", description=__doc__
    )
    parser.add_argument("--models", default=None, help="comma-separated Claude API model names")
    parser.add_argument("--base-url", default=None, help="API base URL (a gateway or a stub)")
    parser.add_argument("--usage", type=Path, default=None, help="JSON lines of your requests")
    parser.add_argument("--out", type=Path, default=None, help="results JSON path")
    args = parser.parse_args(argv)
    from benchmarks._report import RESULTS_DIR
    from membrane.capabilities import get_token_scale

    payload: dict[str, Any] = {
        "suite": "measure_token_scale",
        "date": datetime.date.today().isoformat(),
    }
    if args.usage is not None:
        payload["from_usage"] = ratios_from_usage(args.usage.read_text().splitlines())
    else:
        key = require_key("anthropic", "measure_token_scale")
        models = args.models.split(",") if args.models else default_models()
        ratios = measure(anthropic_client(key, args.base_url), models)
        payload["ratios"] = ratios
        payload["map_seed"] = {m: get_token_scale(m) for m in models}
    out = args.out or RESULTS_DIR / "token_scale.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

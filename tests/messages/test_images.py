"""Image sizes read from data-URL headers, and the providers' documented token formulas."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.messages import ImageCost, image_size, image_tokens
from tests.image_samples import data_url, gif, jpeg, png, webp_lossless, webp_lossy, webp_vp8x

sides = st.integers(1, 9000)


@pytest.mark.parametrize(
    "build", [png, gif, webp_vp8x, webp_lossless, webp_lossy, jpeg], ids=lambda f: f.__name__
)
@given(width=st.integers(1, 16383), height=st.integers(1, 16383))
def test_every_format_gives_its_size(build: object, width: int, height: int) -> None:
    if build is gif:
        width, height = min(width, 65535), min(height, 65535)
    image = build(width, height)  # type: ignore[operator]
    assert image_size(base64.b64encode(image).decode()) == (width, height)


def test_a_jpeg_frame_header_after_a_large_exif_block_is_found() -> None:
    image = jpeg(4032, 3024, exif_bytes=120_000)
    assert image_size(base64.b64encode(image).decode()) == (4032, 3024)


def test_only_the_header_is_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    from membrane.messages import _images

    decoded: list[int] = []
    real = base64.b64decode

    def spy(data: str) -> bytes:
        decoded.append(len(data))
        return real(data)

    monkeypatch.setattr(_images.base64, "b64decode", spy)
    data = data_url(png(800, 600, body=b"\x00" * 3_000_000)).split(",", 1)[1]
    assert image_size(data) == (800, 600)
    assert decoded == [1024]  # of about 4,000,000 characters


def test_unreadable_data_has_no_size() -> None:
    assert image_size(base64.b64encode(b"not an image at all").decode()) is None
    assert image_size("") is None


@pytest.mark.parametrize(
    ("size", "detail", "tokens"),
    [
        ((1024, 1024), "high", 765),  # OpenAI's worked examples
        ((2048, 4096), "high", 1105),
        ((4096, 8192), "low", 85),
        ((1024, 1024), None, 765),  # auto and missing count as high
        ((512, 512), "auto", 255),  # small images are not enlarged
    ],
)
def test_openai_tiles(size: tuple[int, int], detail: str | None, tokens: int) -> None:
    assert image_tokens(size, provider="openai", detail=detail) == tokens


@pytest.mark.parametrize(
    ("size", "tokens"),
    [((200, 200), 54), ((1000, 1000), 1334), ((1092, 1092), 1590)],  # Anthropic's table
)
def test_anthropic_pixels(size: tuple[int, int], tokens: int) -> None:
    assert image_tokens(size, provider="anthropic") == tokens


@given(width=sides, height=sides)
def test_anthropic_resizes_large_images_to_about_1600_tokens(width: int, height: int) -> None:
    tokens = image_tokens((width, height), provider="anthropic")
    assert 1 <= tokens <= 1600
    if max(width, height) <= 1568 and width * height <= 1_200_000:
        assert tokens == -(-(width * height) // 750)


def test_gemini_by_model_generation() -> None:
    assert image_tokens((300, 300), provider="google", model="gemini-2.0-flash") == 258
    assert image_tokens((1600, 800), provider="google", model="gemini-2.0-flash") == 3 * 2 * 258
    assert image_tokens((300, 300), provider="google", model="gemini-3-pro-preview") == 1120


@given(width=sides, height=sides, detail=st.sampled_from([None, "low", "high"]))
def test_an_unknown_provider_pays_the_most(width: int, height: int, detail: str | None) -> None:
    size = (width, height)
    unknown = image_tokens(size, provider=None, detail=detail)
    for provider in ("openai", "anthropic", "google"):
        assert unknown >= image_tokens(size, provider=provider, detail=detail)


def test_message_tally_reads_both_shapes_and_tool_results() -> None:
    cost = ImageCost("openai", "gpt-4o", {"https://x/remote.png": (512, 512)})
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": data_url(png(1024, 1024))}},
            {"type": "image_url", "image_url": {"url": "https://x/remote.png", "detail": "high"}},
            {"type": "image_url", "image_url": {"url": "https://x/other.png"}},
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/gif",
                            "data": base64.b64encode(gif(100, 100)).decode(),
                        },
                    }
                ],
            },
        ],
    }
    tally = cost.tally(message)
    assert tally.images == 4
    assert tally.unsized == 1  # the remote URL without a size
    assert tally.tokens == 765 + 255 + 1445 + 255
    assert cost.tokens({"role": "user", "content": "no images"}) == 0

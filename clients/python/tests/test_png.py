"""The stdlib PNG decoder against PNGs written with every row filter of the PNG spec."""

from __future__ import annotations

import random
import struct
import zlib

import pytest

from robot_gateway.png import PngError, decode_png, encode_png


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def _filtered_png(width, height, channels, bit_depth, samples, filters):
    """A PNG whose row y uses filter filters[y % len(filters)] (encoder side of PNG spec §9)."""
    bps = bit_depth // 8
    if bit_depth == 16:
        packed = b"".join(struct.pack(">H", s) for s in samples)
    else:
        packed = bytes(samples)
    bpp = channels * bps
    stride = width * bpp
    prev = bytes(stride)
    raw = bytearray()
    for y in range(height):
        line = packed[y * stride : (y + 1) * stride]
        f = filters[y % len(filters)]
        out = bytearray()
        for i, x in enumerate(line):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            pred = [0, a, b, (a + b) >> 1, _paeth(a, b, c)][f]
            out.append((x - pred) & 0xFF)
        raw += bytes([f]) + out
        prev = line
    colour = {1: 0, 2: 4, 3: 2, 4: 6}[channels]

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, colour, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b"")


@pytest.mark.parametrize("channels,bit_depth", [(3, 8), (1, 16), (4, 8), (1, 8)])
def test_every_filter_type_decodes_to_the_samples(channels, bit_depth):
    rng = random.Random(channels * 100 + bit_depth)
    w, h = 7, 10
    top = (1 << bit_depth) - 1
    samples = [rng.randint(0, top) for _ in range(w * h * channels)]
    png = _filtered_png(w, h, channels, bit_depth, samples, [0, 1, 2, 3, 4])
    img = decode_png(png)
    assert (img.width, img.height, img.channels, img.bit_depth) == (w, h, channels, bit_depth)
    assert list(img.samples) == samples
    assert img.pixel(3, 2) == tuple(samples[(2 * w + 3) * channels : (2 * w + 4) * channels])


def test_round_trip_through_the_test_encoder():
    samples = list(range(0, 65535, 4099))[:12]
    img = decode_png(encode_png(4, 3, 1, 16, samples))
    assert list(img.samples) == samples and img.shape == (3, 4)


def test_refuses_what_it_cannot_read():
    with pytest.raises(PngError, match="signature"):
        decode_png(b"\xff\xd8\xff\xe0 not a png")
    good = bytearray(encode_png(2, 2, 3, 8, [1] * 12))
    good[20] ^= 0xFF  # inside IHDR: CRC no longer matches
    with pytest.raises(PngError, match="CRC"):
        decode_png(bytes(good))

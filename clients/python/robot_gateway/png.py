"""A small PNG decoder (stdlib: zlib + struct) for the gateway's frames.

The gateway serves RGB frames as 8-bit RGB PNG (``encoding: "png"``) or JPEG, and depth as a
16-bit grayscale PNG in millimetres. The standard library cannot decode JPEG, so the client asks
for PNG and decodes it here. Supported: bit depth 8 or 16, colour types grey, grey+alpha, RGB,
RGBA, non-interlaced (what the gateway writes); anything else raises ``PngError``.
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from typing import List, Tuple

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


class PngError(ValueError):
    """The bytes are not a PNG this decoder reads."""


class Image:
    """A decoded image: ``samples`` row-major, interleaved channels.

    ``samples`` is ``bytes`` for 8-bit images and an ``array('H')`` (native byte order) for
    16-bit images; ``pixel(x, y)`` returns one pixel's channel values.
    """

    __slots__ = ("width", "height", "channels", "bit_depth", "samples")

    def __init__(self, width: int, height: int, channels: int, bit_depth: int, samples) -> None:
        self.width = width
        self.height = height
        self.channels = channels
        self.bit_depth = bit_depth
        self.samples = samples

    @property
    def shape(self) -> Tuple[int, ...]:
        return (self.height, self.width) if self.channels == 1 else (self.height, self.width, self.channels)

    def pixel(self, x: int, y: int) -> Tuple[int, ...]:
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise IndexError(f"pixel ({x}, {y}) outside {self.width}×{self.height}")
        i = (y * self.width + x) * self.channels
        return tuple(self.samples[i : i + self.channels])


def _chunks(data: bytes):
    if data[:8] != _SIGNATURE:
        raise PngError("not a PNG (bad signature)")
    pos = 8
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if len(body) != length:
            raise PngError("truncated chunk")
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise PngError(f"CRC mismatch in chunk {kind!r}")
        yield kind, body
        pos += 12 + length
        if kind == b"IEND":
            return
    raise PngError("no IEND chunk")


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(raw: bytes, height: int, stride: int, bpp: int) -> bytearray:
    """Undo the per-row filters (PNG spec §9); returns the packed sample bytes."""
    if len(raw) != height * (stride + 1):
        raise PngError(f"image data has {len(raw)} bytes, expected {height * (stride + 1)}")
    out = bytearray(height * stride)
    prev = bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if ftype == 0:
            pass
        elif ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif ftype == 2:
            if any(prev):
                line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ftype == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                upleft = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(left, prev[i], upleft)) & 0xFF
        else:
            raise PngError(f"unknown filter type {ftype} in row {y}")
        out[y * stride : (y + 1) * stride] = line
        prev = line
    return out


def decode_png(data: bytes) -> Image:
    """Decode PNG bytes into an ``Image``."""
    header = None
    idat: List[bytes] = []
    for kind, body in _chunks(data):
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    if header is None:
        raise PngError("no IHDR chunk")
    width, height, bit_depth, colour, _comp, _filt, interlace = header
    if colour not in _CHANNELS:
        raise PngError(f"colour type {colour} is not supported (grey, grey+alpha, RGB, RGBA only)")
    if bit_depth not in (8, 16):
        raise PngError(f"bit depth {bit_depth} is not supported (8 or 16 only)")
    if interlace != 0:
        raise PngError("interlaced PNG is not supported")
    channels = _CHANNELS[colour]
    bpp = channels * bit_depth // 8
    stride = width * bpp
    try:
        raw = zlib.decompress(b"".join(idat))
    except zlib.error as e:
        raise PngError(f"bad image data: {e}") from None
    packed = _unfilter(raw, height, stride, bpp)
    if bit_depth == 8:
        return Image(width, height, channels, 8, bytes(packed))
    samples = array("H")
    samples.frombytes(bytes(packed))
    if sys.byteorder == "little":
        samples.byteswap()  # PNG stores 16-bit samples big-endian
    return Image(width, height, channels, 16, samples)


def encode_png(width: int, height: int, channels: int, bit_depth: int, samples) -> bytes:
    """Encode samples as PNG (filter None). For tests and tools; the gateway does its own."""
    colour = {v: k for k, v in _CHANNELS.items()}[channels]
    if bit_depth == 16:
        a = array("H", samples)
        if sys.byteorder == "little":
            a.byteswap()
        packed = a.tobytes()
    else:
        packed = bytes(samples)
    stride = width * channels * bit_depth // 8
    raw = b"".join(b"\x00" + packed[y * stride : (y + 1) * stride] for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, colour, 0, 0, 0)
    return _SIGNATURE + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")

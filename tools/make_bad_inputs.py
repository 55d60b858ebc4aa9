#!/usr/bin/python3
"""Writes one broken tensor file per defect of the Foundation issue's bad-input list, and
files whose names and strings are hostile but legal.

    /usr/bin/python3 tools/make_bad_inputs.py DIR

tests/cli/bad_input.sh runs `tqlab inspect` on each broken file and checks the exit code and
the one-line message; tests/cli/hostile_names.sh runs inspect, roundtrip and sweep on the
name_* files. Plain python3 standard library only (struct, json, zlib): the tests must run
where numpy is absent. Every file is a few kB at most, however large a shape it declares
(name_long.safetensors holds a 100 kB tensor name).

The files, by prefix: st_* safetensors, npy_* .npy, npz_* .npz, name_* hostile names, and one
valid file of each format (ok.*) built by the same code, so that a bad case fails because of
its one defect and not because the builder is wrong. Tensor names carry the layer/role words
tqlab recognizes (layers.0.k, layers.0.v) so inspect also runs its K/V statistics on the
files it accepts.
"""

import json
import math
import struct
import sys
import zlib
from pathlib import Path

TWO_GIB_SHAPE = [1024, 1024, 1024]  # x 2 bytes (F16) = 2 GiB declared


def f16_bytes(values):
    """Little-endian IEEE half floats."""
    return struct.pack(f"<{len(values)}e", *values)


def ramp(count, scale=0.25):
    """`count` distinct small values that half floats hold exactly."""
    return [scale * ((i % 16) - 8) for i in range(count)]


# ---------------------------------------------------------------------------
# safetensors: u64 LE header length N, N bytes of JSON, then the data buffer.

def safetensors_bytes(header, data, declared_length=None):
    """header: dict (serialized as JSON) or str (written verbatim); declared_length overrides N."""
    text = header if isinstance(header, str) else json.dumps(header)
    raw = text.encode()
    raw += b" " * (-len(raw) % 8)  # as writers pad it: data starts 8-byte aligned
    length = len(raw) if declared_length is None else declared_length
    return struct.pack("<Q", length) + raw + data


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def kv_safetensors(k_values=None, shape=(2, 4, 8)):
    """A valid file with layers.0.k and layers.0.v (F16, `shape`); k_values replaces k's data."""
    count = math.prod(shape)
    k = f16_bytes(k_values if k_values is not None else ramp(count, 1.0))
    v = f16_bytes(ramp(count, 0.125))
    header = {
        "__metadata__": {"layout": "head token dim"},
        "layers.0.k": entry("F16", list(shape), 0, len(k)),
        "layers.0.v": entry("F16", list(shape), len(k), len(k) + len(v)),
    }
    return safetensors_bytes(header, k + v)


def safetensors_cases():
    ok = kv_safetensors()
    header_end = 8 + struct.unpack("<Q", ok[:8])[0]
    data_64 = f16_bytes(ramp(32))  # 64 bytes: one [4, 8] F16 tensor
    cases = {
        "ok.safetensors": ok,
        # Truncated: cut inside the data buffer, inside the JSON header, inside the length field.
        "st_truncated_data.safetensors": ok[: header_end + 100],
        "st_truncated_header.safetensors": ok[: header_end - 20],
        "st_truncated_length.safetensors": ok[:5],
        # The header length field points past the end of the file.
        "st_header_length_past_eof.safetensors": safetensors_bytes(
            {"layers.0.k": entry("F16", [4, 8], 0, 64)}, data_64, declared_length=100_000),
        "st_bad_json.safetensors": safetensors_bytes(
            '{"layers.0.k": {"dtype": "F16", "shape": [4, 8], "data_offsets": [0, 64]', data_64),
        "st_header_not_object.safetensors": safetensors_bytes("[1, 2, 3]", b""),
        # Offsets: two tensors sharing bytes; one ending past the buffer; begin after end.
        "st_overlap.safetensors": safetensors_bytes(
            {"layers.0.k": entry("F16", [4, 8], 0, 64), "layers.0.v": entry("F16", [4, 8], 32, 96)},
            data_64 + data_64[:32]),
        "st_offsets_out_of_range.safetensors": safetensors_bytes(
            {"layers.0.k": entry("F16", [4, 8], 64, 128)}, data_64),
        "st_offsets_reversed.safetensors": safetensors_bytes(
            {"layers.0.k": entry("F16", [4, 8], 64, 0)}, data_64),
        "st_shape_mismatch.safetensors": safetensors_bytes(
            {"layers.0.k": entry("F16", [4, 16], 0, 64)}, data_64),
        "st_unsupported_dtype.safetensors": safetensors_bytes(
            {"layers.0.k": entry("C64", [8, 8], 0, 64)}, data_64),
        "st_negative_extent.safetensors": safetensors_bytes(
            {"layers.0.k": entry("F16", [-4, 8], 0, 64)}, data_64),
        # A shape whose byte count does not fit in 64 bits.
        "st_shape_overflow.safetensors": safetensors_bytes(
            {"layers.0.k": entry("F16", [2**40, 2**40], 0, 64)}, data_64),
        # 2 GiB declared, offsets consistent with the shape, about 1 kB of file.
        "st_2gb_shape.safetensors": safetensors_bytes(
            {"layers.0.k": entry("F16", TWO_GIB_SHAPE, 0, 2 * math.prod(TWO_GIB_SHAPE))},
            bytes(1024)),
        # Valid files with non-finite values: one NaN and two infinities in layers.0.k.
        "st_nonfinite.safetensors": kv_safetensors(
            [math.nan, math.inf, -math.inf] + ramp(61, 1.0)),
        # Empty tensors: a zero-length axis (K/V of zero tokens), a [0] tensor, and no tensors at all.
        "st_zero_axis.safetensors": kv_safetensors(shape=(2, 0, 8)),
        "st_empty_tensor.safetensors": safetensors_bytes(
            {"empty": entry("F32", [0], 0, 0), "layers.0.k": entry("F16", [4, 8], 0, 64)}, data_64),
        "st_no_tensors.safetensors": safetensors_bytes({}, b""),
    }
    return cases


# ---------------------------------------------------------------------------
# .npy: magic, version 1.0, u16 LE header length, Python-dict header, data.

NPY_MAGIC = b"\x93NUMPY"


def npy_bytes(header_text, data, magic=NPY_MAGIC, declared_length=None):
    """header_text: the dict literal as written; padded like numpy (64-byte aligned, '\\n')."""
    raw = header_text.encode("latin-1")
    raw += b" " * (-(10 + len(raw) + 1) % 64) + b"\n"
    length = len(raw) if declared_length is None else declared_length
    return magic + b"\x01\x00" + struct.pack("<H", length) + raw + data


def npy_header(descr="<f2", fortran="False", shape="(4, 8)"):
    return f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}"


def npy_cases():
    data_64 = f16_bytes(ramp(32))  # (4, 8) '<f2'
    ok = npy_bytes(npy_header(), data_64)
    return {
        "ok.npy": ok,
        "npy_truncated.npy": ok[:-10],
        "npy_header_length_past_eof.npy": npy_bytes(npy_header(), data_64, declared_length=0xFFFF),
        "npy_bad_magic.npy": npy_bytes(npy_header(), data_64, magic=b"\x93NUMPX"),
        "npy_header_not_dict.npy": npy_bytes("[('descr', '<f2'), ('shape', (4, 8))]", data_64),
        "npy_header_malformed.npy": npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (4, 8", data_64),
        # Fortran/C confusion: an order that is neither; no order at all; Fortran data too short.
        "npy_fortran_maybe.npy": npy_bytes(npy_header(fortran="'maybe'"), data_64),
        "npy_fortran_missing.npy": npy_bytes("{'descr': '<f2', 'shape': (4, 8), }", data_64),
        "npy_fortran_short.npy": npy_bytes(npy_header(fortran="True", shape="(8, 8)"), data_64),
        "npy_unsupported_dtype.npy": npy_bytes(npy_header(descr="<c8"), data_64),
        "npy_2gb_shape.npy": npy_bytes(npy_header(shape=str(tuple(TWO_GIB_SHAPE))), bytes(1024)),
        "npy_nonfinite.npy": npy_bytes(npy_header(), f16_bytes([math.nan, math.inf] + ramp(30))),
        "npy_empty.npy": npy_bytes(npy_header(shape="(0,)"), b""),
        "npy_zero_axis.npy": npy_bytes(npy_header(shape="(3, 0, 8)"), b""),
        # bfloat16 bits stored as '|V2' (ml_dtypes' bfloat16): readable only with --bf16.
        "npy_raw16.npy": npy_bytes(npy_header(descr="|V2"), data_64),
        # ... and as '<u2': an unsigned 16-bit tensor, or bfloat16 with --bf16.
        "npy_u16.npy": npy_bytes(npy_header(descr="<u2"), data_64),
    }


# ---------------------------------------------------------------------------
# .npz: a zip archive of NAME.npy members, written here field by field so that
# sizes and CRCs can lie. Local header (30 bytes + name), data, central
# directory headers (46 bytes + name), end record (22 bytes).

class ZipMember:
    def __init__(self, name, payload, deflate=False, declared_size=None, crc=None):
        self.name = name if isinstance(name, bytes) else name.encode()
        self.method = 8 if deflate else 0
        if deflate:
            compressor = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate, as zip stores it
            self.stored = compressor.compress(payload) + compressor.flush()
        else:
            self.stored = payload
        self.size = len(payload) if declared_size is None else declared_size
        self.crc = zlib.crc32(payload) if crc is None else crc
        self.offset = 0


def zip_bytes(members):
    out = bytearray()
    for m in members:
        m.offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, m.method, 0, 0x21,
                           m.crc, len(m.stored), m.size, len(m.name), 0)
        out += m.name + m.stored
    directory_offset = len(out)
    for m in members:
        out += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, m.method, 0, 0x21,
                           m.crc, len(m.stored), m.size, len(m.name), 0, 0, 0, 0, 0, m.offset)
        out += m.name
    directory_size = len(out) - directory_offset
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members),
                       directory_size, directory_offset, 0)
    return bytes(out)


def npz_cases():
    k = npy_bytes(npy_header(), f16_bytes(ramp(32, 1.0)))
    v = npy_bytes(npy_header(), f16_bytes(ramp(32, 0.125)))
    ok = zip_bytes([ZipMember("layers.0.k.npy", k), ZipMember("layers.0.v.npy", v, deflate=True)])
    # A deflate bomb: 16 MiB of zeros in a member whose header and sizes declare (4, 8).
    bomb = bytearray(k)
    bomb += bytes(16 << 20)
    # A 2 GiB .npy stream declared by a member of ~1 kB: the header is honest, the data absent.
    huge = npy_bytes(npy_header(shape=str(tuple(TWO_GIB_SHAPE))), bytes(1024))
    return {
        "ok.npz": ok,
        "npz_truncated.npz": ok[: len(ok) - 30],
        "npz_crc_mismatch.npz": zip_bytes([ZipMember("layers.0.k.npy", k, deflate=True, crc=zlib.crc32(k) ^ 1)]),
        "npz_bomb.npz": zip_bytes([ZipMember("layers.0.k.npy", bytes(bomb), deflate=True, declared_size=len(k))]),
        "npz_bomb_ratio.npz": zip_bytes(
            [ZipMember("layers.0.k.npy", huge, deflate=True, declared_size=len(huge) - 1024 + 2 * 2**30)]),
        "npz_2gb_shape.npz": zip_bytes([ZipMember("layers.0.k.npy", huge)]),
        "npz_member_bad_magic.npz": zip_bytes([ZipMember("layers.0.k.npy", b"\x93NUMPX" + k[6:])]),
        "npz_member_not_dict.npz": zip_bytes(
            [ZipMember("layers.0.k.npy", npy_bytes("('<f2', False, (4, 8))", f16_bytes(ramp(32))))]),
        "npz_member_fortran_maybe.npz": zip_bytes(
            [ZipMember("layers.0.k.npy", npy_bytes(npy_header(fortran="'maybe'"), f16_bytes(ramp(32))), deflate=True)]),
        "npz_member_not_npy.npz": zip_bytes([ZipMember("notes.txt", b"hello")]),
    }


# ---------------------------------------------------------------------------
# Hostile but legal names: bytes that are not UTF-8, control characters, 100 kB.

LONG_NAME = "model.layers.0." + "x" * 100_000 + ".ids"
CONTROL_NAMES = ["two\nlines", "\x1b[31mred", "tab\there", "\u202etxt.exe"]


def name_cases():
    data_64 = f16_bytes(ramp(32))
    ids = struct.pack("<4q", 1, -2, 2**53 + 1, -(2**63))
    # A header whose tensor name and metadata hold bytes that are not UTF-8 (written raw:
    # json.dumps would escape them). The format requires UTF-8, so this file is refused.
    raw_header = (b'{"__metadata__": {"note\xfe": "caf\xe9"}, "layers.0.k\xff": '
                  b'{"dtype": "F16", "shape": [4, 8], "data_offsets": [0, 64]}}')
    raw_header += b" " * (-len(raw_header) % 8)
    hostile = {
        "__metadata__": {"layout": "head token dim", "note": "first line\nsecond line"},
        "layers.0.k": entry("F16", [1, 4, 8], 0, 64),
        "layers.0.v": entry("F16", [1, 4, 8], 64, 128),
        LONG_NAME: entry("I64", [4], 128, 160),
    }
    offset = 160
    for name in CONTROL_NAMES:
        hostile[name] = entry("I64", [4], offset, offset + 32)
        offset += 32
    k = npy_bytes(npy_header(shape="(1, 4, 8)"), f16_bytes(ramp(32, 1.0)))
    v = npy_bytes(npy_header(shape="(1, 4, 8)"), f16_bytes(ramp(32, 0.5)))
    npy_ids = npy_bytes(npy_header(descr="<i8", shape="(4,)"), ids)
    return {
        "name_not_utf8.safetensors": struct.pack("<Q", len(raw_header)) + raw_header + data_64,
        "name_long.safetensors": safetensors_bytes(
            hostile, data_64 + f16_bytes(ramp(32, 0.5)) + ids * (1 + len(CONTROL_NAMES))),
        # Zip names are bytes: an .npz member may be called anything (no UTF-8 flag set here).
        "name_not_utf8.npz": zip_bytes([ZipMember("layers.0.k.npy", k), ZipMember("layers.0.v.npy", v),
                                        ZipMember(b"ids\xff.npy", npy_ids)]),
    }


def write_name_cases(out):
    for name, content in name_cases().items():
        (out / name).write_bytes(content)
    # A .npy file's tensor is named after the file, and Linux file names are bytes.
    with open(bytes(out) + b"/stem\xff.npy", "wb") as f:
        f.write(npy_bytes(npy_header(descr="<i8", shape="(4,)"), struct.pack("<4q", 1, 2, 3, 4)))


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} DIR")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for cases in (safetensors_cases(), npy_cases(), npz_cases()):
        for name, content in cases.items():
            (out / name).write_bytes(content)
    write_name_cases(out)


if __name__ == "__main__":
    main()

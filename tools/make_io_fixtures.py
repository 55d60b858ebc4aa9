#!/usr/bin/python3
"""Writes the .npy/.npz fixtures of tqlab's reader tests, or checks files tqlab wrote.

Run with Debian's python3 (it has numpy; PyPI is not reachable here):

    /usr/bin/python3 tools/make_io_fixtures.py            # regenerate tests/data/io/
    /usr/bin/python3 tools/make_io_fixtures.py --check DIR

Generate mode writes tiny arrays in every layout numpy produces (f2/f4/f8 little- and
big-endian, Fortran order, 0-d, a zero-length axis, format 2.0 and 3.0 headers, bf16 kept as
raw '<u2' / '|V2' / '>u2', savez, savez_compressed, a streamed savez whose members carry data
descriptors, and a zip64 archive), every bool/integer npy dtype at its extremes (both byte
orders where there is one, Fortran order), an .npz of token ids / masks / position ids, and
all_dtypes.safetensors (one tensor per safetensors dtype, written by tools/kv_dump_format.py's
writer) plus expected.json: for every file and tensor its descr (npy) or dtype (safetensors),
shape, order, the values in C order (as floats, and for integer types also exactly, as
"integers"; "bf16_bits" marks values that are the bits read as bfloat16), and the raw bytes in
C order, little-endian, as hex.

Check mode is for files tqlab wrote (run `TQLAB_IO_CHECK_DIR=DIR tqlab_tests
--gtest_filter='Npy*:Npz*'`): each file in DIR named like a fixture must load with np.load
and hold the fixture's values bit for bit; a .npy must also be byte-identical to what
np.save writes for the same array. Exit status 0 when every file passes.
"""

import argparse
import io
import json
import sys
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kv_dump_format  # noqa: E402  (its safetensors writer)

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "io"

# One small set of values with the awkward cases of each float type: signed zero, a value
# no binary float holds exactly, fp16's largest finite value and its smallest subnormal.
BASE_VALUES = np.array([[-1.5, -0.0, 1.0 / 3.0], [65504.0, 5.960464477539063e-08, 0.1]])


def grid(shape, dtype):
    """Distinct, easily recognized values k/8 - 1 in C order."""
    count = int(np.prod(shape))
    return (np.arange(count, dtype=np.float64) / 8.0 - 1.0).reshape(shape).astype(dtype)


def bf16_bits(values):
    """bfloat16 bit patterns (uint16) of float32 values, rounding to nearest even."""
    return kv_dump_format.float_to_bf16_bits(values).bits


def bf16_values(bits):
    return kv_dump_format.bf16_bits_to_float32(bits).astype(np.float64)


# Each integer type at its extremes, plus values a double cannot hold (2^53 + 1).
INTEGER_VALUES = {
    "b1": [[True, False, True], [False, False, True]],
    "u1": [0, 1, 254, 255],
    "i1": [-128, -1, 0, 127],
    "u2": [0, 65535, 256],
    "i2": [[-32768, 32767], [-1, 2]],
    "u4": [0, 4294967295, 65536],
    "i4": [-2147483648, 2147483647, 7],
    "u8": [0, 18446744073709551615, 9007199254740993],
    "i8": [[-9223372036854775808, 9223372036854775807], [9007199254740993, -9007199254740993]],
}


def fp8_value(code, exponent_bits):
    """The value of an OCP fp8 code (E4M3FN when exponent_bits is 4, E5M2 when 5), by the formula."""
    mantissa_bits = 7 - exponent_bits
    bias = (1 << (exponent_bits - 1)) - 1
    sign = -1.0 if code & 0x80 else 1.0
    exponent = (code >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = code & ((1 << mantissa_bits) - 1)
    if exponent == 0:
        return sign * mantissa / (1 << mantissa_bits) * 2.0 ** (1 - bias)
    return sign * (1 + mantissa / (1 << mantissa_bits)) * 2.0 ** (exponent - bias)


def all_dtype_tensors():
    """One tensor per safetensors dtype: name -> (array or StoredAs, values as floats, exact integers or None)."""
    out = {}
    for code, name in (("b1", "bool"), ("u1", "u8"), ("i1", "i8"), ("u2", "u16"), ("i2", "i16"), ("u4", "u32"),
                       ("i4", "i32"), ("u8", "u64"), ("i8", "i64")):
        array = np.array(INTEGER_VALUES[code], dtype="|" + code if code[1] == "1" else "<" + code)
        out[name] = (array, array.astype(np.float64).ravel(), [int(v) for v in array.ravel()])
    e4m3 = np.array([0x38, 0x7E, 0xFE, 0x01, 0x00, 0x80], dtype=np.uint8)  # 1, 448, -448, 2^-9, 0, -0
    e5m2 = np.array([[0x3C, 0x7B], [0xFB, 0x01]], dtype=np.uint8)           # 1, 57344, -57344, 2^-16
    out["f8_e4m3"] = (kv_dump_format.StoredAs("F8_E4M3", e4m3), [fp8_value(int(c), 4) for c in e4m3], None)
    out["f8_e5m2"] = (kv_dump_format.StoredAs("F8_E5M2", e5m2), [fp8_value(int(c), 5) for c in e5m2.ravel()], None)
    out["f16"] = (BASE_VALUES.astype("<f2"), None, None)
    bits = bf16_bits(BASE_VALUES)
    out["bf16"] = (kv_dump_format.Bf16Bits(bits), bf16_values(bits).ravel(), None)
    out["f32"] = (BASE_VALUES.astype("<f4"), None, None)
    out["f64"] = (BASE_VALUES.astype("<f8"), None, None)
    out["empty_ids"] = (np.zeros((0,), dtype="<i8"), [], [])
    return out


def expected_entry(array, values=None):
    """What a reader must find: values (floats, C order) and raw C-order little-endian bytes."""
    little = array.astype(array.dtype.newbyteorder("<")) if array.dtype.kind != "V" else array
    c_order = np.ascontiguousarray(little)
    if values is None:
        values = c_order.astype(np.float64)
    entry = {
        "descr": array.dtype.str,
        "shape": list(array.shape),
        "fortran_order": bool(array.flags.f_contiguous and not array.flags.c_contiguous),
        "values": [float(v) for v in np.asarray(values, dtype=np.float64).ravel()],
        "hex": c_order.tobytes().hex(),
    }
    if array.dtype.kind in "biu":
        entry["integers"] = [int(v) for v in c_order.ravel()]
    return entry


def fixtures():
    """(file name, {tensor: array}, how) for every fixture; how: npy, npy_v2, npy_v3, savez, ..."""
    le = {code: BASE_VALUES.astype("<" + code) for code in ("f2", "f4", "f8")}
    be = {code: BASE_VALUES.astype(">" + code) for code in ("f2", "f4", "f8")}
    bits = bf16_bits(BASE_VALUES)
    out = []
    for code in ("f2", "f4", "f8"):
        out.append((f"{code}_le.npy", {f"{code}_le": le[code]}, "npy"))
        out.append((f"{code}_be.npy", {f"{code}_be": be[code]}, "npy"))
    c234 = grid((2, 3, 4), "<f4")
    out.append(("f4_c234.npy", {"f4_c234": c234}, "npy"))
    out.append(("f4_fortran234.npy", {"f4_fortran234": np.asfortranarray(c234)}, "npy"))
    out.append(("f8_fortran_be.npy", {"f8_fortran_be": np.asfortranarray(grid((3, 2), ">f8"))}, "npy"))
    out.append(("f4_rank1.npy", {"f4_rank1": grid((5,), "<f4")}, "npy"))
    # Rank 16: numpy's spare spaces for the first axis push the data to the next 64 bytes.
    out.append(("f4_rank16.npy", {"f4_rank16": grid((2,) + (1,) * 14 + (3,), "<f4")}, "npy"))
    out.append(("f4_0d.npy", {"f4_0d": np.array(3.25, dtype="<f4")}, "npy"))
    out.append(("f4_empty.npy", {"f4_empty": np.zeros((3, 0, 2), dtype="<f4")}, "npy"))
    out.append(("f4_v2.npy", {"f4_v2": le["f4"]}, "npy_v2"))
    out.append(("f4_v3.npy", {"f4_v3": le["f4"]}, "npy_v3"))
    out.append(("bf16_u2.npy", {"bf16_u2": bits.astype("<u2")}, "npy"))
    out.append(("bf16_u2_be.npy", {"bf16_u2_be": bits.astype(">u2")}, "npy"))
    out.append(("bf16_v2.npy", {"bf16_v2": bits.astype("<u2").view("V2")}, "npy"))
    pair = {"keys": le["f4"], "values": le["f2"]}
    out.append(("savez.npz", pair, "savez"))
    out.append(("savez_compressed.npz", pair, "savez_compressed"))
    out.append(("streamed.npz", pair, "savez_streamed"))
    out.append(("zip64.npz", {"keys": le["f4"], "values": grid((4,), "<f8")}, "savez_zip64"))
    for code, values in INTEGER_VALUES.items():
        orders = "|" if code[1] == "1" else "<>"
        for order in orders:
            suffix = {"|": "", "<": "_le", ">": "_be"}[order]
            array = np.array(values, dtype=order + code)
            out.append((f"{code}{suffix}.npy", {f"{code}{suffix}": array}, "npy"))
    out.append(("i8_fortran.npy", {"i8_fortran": np.asfortranarray(np.arange(6, dtype="<i8").reshape(2, 3) - 3)}, "npy"))
    tokens = {"input_ids": np.array([[1, 15043, 2787, 9007199254740993]], dtype="<i8"),
              "attention_mask": np.array([[True, True, True, False]]),
              "position_ids": np.arange(4, dtype="<i4").reshape(1, 4),
              "byte_codes": np.array([0, 255], dtype="|u1"),
              "big_endian_i2": np.array([-2, 300], dtype=">i2")}
    out.append(("ints.npz", tokens, "savez_compressed"))
    return out


class _Unseekable(io.RawIOBase):
    """A write-only stream without seek: zipfile then writes data descriptors (flag bit 3)."""

    def __init__(self):
        self.buffer = bytearray()

    def writable(self):
        return True

    def write(self, data):
        self.buffer += data
        return len(data)

    def seek(self, *args):
        raise OSError("not seekable")

    def tell(self):
        raise OSError("not seekable")


def write_fixture(path, tensors, how):
    if how.startswith("npy"):
        (array,) = tensors.values()
        version = {"npy": None, "npy_v2": (2, 0), "npy_v3": (3, 0)}[how]
        with open(path, "wb") as f:
            np.lib.format.write_array(f, array, version=version, allow_pickle=False)
    elif how == "savez":
        np.savez(path, **tensors)
    elif how == "savez_compressed":
        np.savez_compressed(path, **tensors)
    elif how == "savez_streamed":
        stream = _Unseekable()
        np.savez(stream, **tensors)
        path.write_bytes(bytes(stream.buffer))
    elif how == "savez_zip64":
        # Lower zipfile's limits so the central directory, its end record and the offsets
        # take their zip64 forms on a file of a few hundred bytes.
        saved = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
        zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 0, 0
        try:
            np.savez(path, **tensors)
        finally:
            zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = saved
    else:
        raise ValueError(how)


def write_all_dtypes(path):
    """Writes all_dtypes.safetensors and returns its expected.json entry."""
    tensors = all_dtype_tensors()
    kv_dump_format.write_safetensors(path, {name: array for name, (array, _, _) in tensors.items()},
                                     {"source": "tools/make_io_fixtures.py"})
    entries = {}
    for name, (array, values, integers) in tensors.items():
        data = array.bits if isinstance(array, kv_dump_format.StoredAs) else array
        if values is None:
            values = data.astype(np.float64).ravel()
        entry = {"dtype": kv_dump_format.dtype_code(array), "shape": list(data.shape),
                 "values": [float(v) for v in values], "hex": np.ascontiguousarray(data).tobytes().hex()}
        if integers is not None:
            entry["integers"] = integers
        entries[name] = entry
    return {"how": "safetensors", "tensors": entries}


def generate():
    FIXTURE_DIR.mkdir(parents=True, exist_ok=True)
    expected = {}
    for name, tensors, how in fixtures():
        path = FIXTURE_DIR / name
        write_fixture(path, tensors, how)
        entries = {}
        for tensor, array in tensors.items():
            values = bf16_values(array.view("<u2") if array.dtype.kind == "V" else array) \
                if name.startswith("bf16") else None
            entries[tensor] = expected_entry(array, values)
            if values is not None:
                entries[tensor]["bf16_bits"] = True  # "values" are the bits read as bfloat16
        expected[name] = {"how": how, "tensors": entries}
        loaded = np.load(path)  # every fixture must be one numpy itself reads back
        if name.endswith(".npz"):
            assert sorted(loaded.files) == sorted(tensors), name
    expected["all_dtypes.safetensors"] = write_all_dtypes(FIXTURE_DIR / "all_dtypes.safetensors")
    # One line per fixture: small, and a diff shows which fixture changed.
    lines = [f"{json.dumps(name)}: {json.dumps(expected[name], sort_keys=True)}" for name in sorted(expected)]
    text = "{\n" + ",\n".join(lines) + "\n}\n"
    (FIXTURE_DIR / "expected.json").write_text(text)
    total = sum(p.stat().st_size for p in FIXTURE_DIR.iterdir())
    print(f"wrote {len(expected)} fixtures + expected.json to {FIXTURE_DIR} ({total} bytes)")


def check(directory):
    expected = json.loads((FIXTURE_DIR / "expected.json").read_text())
    failures = 0
    checked = 0
    for path in sorted(Path(directory).iterdir()):
        if path.name not in expected or path.suffix not in (".npy", ".npz"):
            continue
        checked += 1
        problems = []
        try:
            if path.suffix == ".npz":
                with zipfile.ZipFile(path) as archive:
                    bad = archive.testzip()  # reads every member, checking its CRC-32
                if bad is not None:
                    problems.append(f"member {bad}: CRC-32 mismatch")
            loaded = np.load(path, allow_pickle=False)
            arrays = {path.stem: loaded} if path.suffix == ".npy" \
                else {name: loaded[name] for name in loaded.files}
        except Exception as error:  # numpy's own reader is the judge here
            print(f"FAIL {path.name}: numpy cannot read it: {error}")
            failures += 1
            continue
        want = expected[path.name]["tensors"]
        if sorted(arrays) != sorted(want):
            problems.append(f"tensors {sorted(arrays)}, expected {sorted(want)}")
        for name, array in arrays.items():
            if name not in want:
                continue
            entry = want[name]
            raw = np.ascontiguousarray(array.astype(array.dtype.newbyteorder("<"))).tobytes()
            if list(array.shape) != entry["shape"]:
                problems.append(f"{name}: shape {list(array.shape)}, expected {entry['shape']}")
            elif raw.hex() != entry["hex"]:
                problems.append(f"{name}: bytes differ from the fixture's")
            if path.suffix == ".npy":
                buffer = io.BytesIO()
                np.save(buffer, array)
                if buffer.getvalue() != path.read_bytes():
                    problems.append(f"{name}: file differs from np.save's bytes for the same array")
        if problems:
            failures += 1
            print(f"FAIL {path.name}: " + "; ".join(problems))
        else:
            print(f"ok   {path.name}")
    if checked == 0:
        print(f"no files named like a fixture in {directory}")
        return 1
    print(f"{checked - failures}/{checked} files pass")
    return 0 if failures == 0 else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", metavar="DIR", help="check tqlab-written files in DIR with numpy")
    args = parser.parse_args()
    if args.check:
        return check(args.check)
    generate()
    return 0


if __name__ == "__main__":
    sys.exit(main())

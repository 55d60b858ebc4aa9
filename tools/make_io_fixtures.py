#!/usr/bin/python3
"""Writes the .npy/.npz fixtures of tqlab's reader tests, or checks files tqlab wrote.

Run with Debian's python3 (it has numpy; PyPI is not reachable here):

    /usr/bin/python3 tools/make_io_fixtures.py            # regenerate tests/data/io/
    /usr/bin/python3 tools/make_io_fixtures.py --check DIR

Generate mode writes tiny arrays in every layout numpy produces (f2/f4/f8 little- and
big-endian, Fortran order, 0-d, a zero-length axis, format 2.0 and 3.0 headers, bf16 kept as
raw '<u2' / '|V2' / '>u2', savez, savez_compressed, a streamed savez whose members carry data
descriptors, and a zip64 archive) plus expected.json: for every file and tensor its descr,
shape, order, the values in C order and the raw bytes in C order, little-endian, as hex.

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
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def expected_entry(array, values=None):
    """What a reader must find: values (floats, C order) and raw C-order little-endian bytes."""
    little = array.astype(array.dtype.newbyteorder("<")) if array.dtype.kind != "V" else array
    c_order = np.ascontiguousarray(little)
    if values is None:
        values = c_order.astype(np.float64)
    return {
        "descr": array.dtype.str,
        "shape": list(array.shape),
        "fortran_order": bool(array.flags.f_contiguous and not array.flags.c_contiguous),
        "values": [float(v) for v in np.asarray(values, dtype=np.float64).ravel()],
        "hex": c_order.tobytes().hex(),
    }


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
        expected[name] = {"how": how, "tensors": entries}
        loaded = np.load(path)  # every fixture must be one numpy itself reads back
        if name.endswith(".npz"):
            assert sorted(loaded.files) == sorted(tensors), name
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
        if path.name not in expected:
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

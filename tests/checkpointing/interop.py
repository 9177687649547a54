#!/usr/bin/env python3
"""Cross-check parax checkpoints against zarr-python 3 and safetensors.

Called by the C++ checkpointing tests, only when `zarr` (>= 3), `safetensors`, `numpy` and
`ml_dtypes` are importable (`interop.py check-deps` tells; it exits 77 and prints
"skipped: ..." otherwise).  pip packages: zarr>=3 (brings numpy, numcodecs and google-crc32c,
which zarr's "crc32c" codec uses), safetensors, ml_dtypes.

Modes (exit 0 = OK, 1 = mismatch (a diff is printed), 2 = usage / environment error):

  check-deps
  read-checkpoint <dir> <expected.json> [--container NAME]
      <dir> is an Orbax-layout checkpoint item dir: <dir>/_METADATA and one zarr v3 array per
      leaf in <dir>/<param name>/zarr.json.  Every array under <dir> is read with zarr-python
      (zarr.open_array(store=..., mode="r")) and compared with the expected.json entries
      (entry "name" = array dir relative to <dir>; with --container only the entries whose
      "container" is NAME, e.g. `--container orbax_zarr3` on the goldens' expected.json).
      Also checks that the array dirs, the expected names and the leaves listed in
      _METADATA (key_metadata keys joined with ".") are the same set.
  write-zarr <dir>
      Writes with zarr-python a few arrays under <dir>/<name> plus <dir>/_METADATA (Orbax
      use_ocdbt=False/use_zarr3=True style, so the dir also loads as a checkpoint) and
      <dir>/expected.json describing them.
  read-safetensors <file> <expected.json> [--container NAME]
      Loads <file> with safetensors (strict header validation by the Rust reader) and compares
      every tensor with the expected entries of kind "safetensors" (entry "name" = tensor name);
      the set of tensor names must match.  If expected.json has a top-level "metadata" object it
      must equal the file's __metadata__.
  write-safetensors <file>
      Writes <file> with safetensors.numpy.save_file and <file>.expected.json.

expected.json: {"arrays": [{"name": str, "dtype": zarr v3 data_type name ("bool", "int8"..
"uint64", "float16", "bfloat16", "float32", "float64"), "shape": [..], "values": [flat, C order;
bool as 0/1 or true/false; floats may also be "NaN"/"Infinity"/"-Infinity"], optional "kind"
("zarr3" | "safetensors"), "container", "path", "fill_value"}, ...], optional "metadata"}.
Values are compared exactly (floats after conversion to the array dtype, NaN == NaN).
"""
import json
import math
import os
import sys

SKIP_EXIT = 77


def _deps_error():
    try:
        import numpy  # noqa: F401
    except Exception as e:  # pragma: no cover
        return f"numpy not importable ({e})"
    try:
        import zarr
    except Exception as e:
        return f"zarr not importable ({e})"
    try:
        major = int(zarr.__version__.split(".")[0])
    except Exception:
        major = 0
    if major < 3:
        return f"zarr {zarr.__version__} < 3"
    for mod in ("safetensors", "safetensors.numpy", "ml_dtypes", "google_crc32c"):
        try:
            __import__(mod)
        except Exception as e:
            return f"{mod} not importable ({e})"
    return None


if __name__ == "__main__" and len(sys.argv) > 1:
    _err = _deps_error()
    if _err is not None:
        print(f"skipped: {_err}")
        sys.exit(SKIP_EXIT)

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import zarr  # noqa: E402
import zarr.codecs  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)


# ----------------------------------------------------------------------------------------
# bfloat16 for zarr-python 3 (not built in as of zarr 3.1.6). Adapted from zarr-python's
# examples/custom_dtype.  Registered only if zarr does not know "bfloat16" already.
def _register_bfloat16():
    from zarr.core.dtype import get_data_type_from_json
    try:
        get_data_type_from_json("bfloat16", zarr_format=3)
        return  # a newer zarr knows it natively
    except Exception:
        pass

    from dataclasses import dataclass
    from typing import ClassVar

    from zarr.core.dtype.common import DataTypeValidationError, HasEndianness
    from zarr.dtype import ZDType, data_type_registry

    bf16_cls = type(BF16)

    @dataclass(frozen=True, kw_only=True)
    class BFloat16(ZDType[bf16_cls, ml_dtypes.bfloat16], HasEndianness):
        # HasEndianness: without it zarr-python writes {"name":"bytes"} with no endian.
        _zarr_v3_name: ClassVar[str] = "bfloat16"
        _zarr_v2_name: ClassVar[str] = "bfloat16"
        dtype_cls = bf16_cls

        @classmethod
        def from_native_dtype(cls, dtype):
            if cls._check_native_dtype(dtype):
                return cls()
            raise DataTypeValidationError(f"not bfloat16: {dtype!r}")

        def to_native_dtype(self):
            return BF16

        @classmethod
        def _check_json_v2(cls, data):
            return isinstance(data, dict) and data.get("name") == "bfloat16"

        @classmethod
        def _check_json_v3(cls, data):
            return data == "bfloat16"

        @classmethod
        def _from_json_v2(cls, data):
            if cls._check_json_v2(data):
                return cls()
            raise DataTypeValidationError(f"not bfloat16: {data!r}")

        @classmethod
        def _from_json_v3(cls, data):
            if cls._check_json_v3(data):
                return cls()
            raise DataTypeValidationError(f"not bfloat16: {data!r}")

        def to_json(self, zarr_format):
            return {"name": "bfloat16", "object_codec_id": None} if zarr_format == 2 else "bfloat16"

        def _check_scalar(self, data):
            return isinstance(data, (int, float, str, ml_dtypes.bfloat16, np.floating, np.integer))

        def cast_scalar(self, data):
            return ml_dtypes.bfloat16(_json_float(data))

        def default_scalar(self):
            return ml_dtypes.bfloat16(0)

        def to_json_scalar(self, data, *, zarr_format):
            v = float(data)
            if math.isnan(v):
                return "NaN"
            if math.isinf(v):
                return "Infinity" if v > 0 else "-Infinity"
            return v

        def from_json_scalar(self, data, *, zarr_format):
            if isinstance(data, str) and data.startswith("0x"):  # exact bits, e.g. "0x7fc0"
                return np.array([int(data, 16)], np.uint16).view(BF16)[0]
            return ml_dtypes.bfloat16(_json_float(data))

        @property
        def item_size(self):
            return 2

    data_type_registry.register(BFloat16._zarr_v3_name, BFloat16)


def _json_float(v):
    if isinstance(v, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[v]
    return float(v)


_register_bfloat16()


# ----------------------------------------------------------------------------------------
def dtype_name(dt):
    dt = np.dtype(dt)
    return "bfloat16" if dt == BF16 else dt.name


def np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def flat_values(arr):
    a = np.asarray(arr)
    if a.dtype == np.bool_ or a.dtype.kind in "iu":
        return [int(v) for v in a.ravel()]
    out = []
    for v in a.astype(np.float64).ravel():
        v = float(v)
        out.append("NaN" if math.isnan(v) else
                   ("Infinity" if v == math.inf else ("-Infinity" if v == -math.inf else v)))
    return out


def expected_array(e):
    dt = np_dtype(e["dtype"])
    vals = e["values"]
    if dt == np.bool_:
        a = np.array([bool(v) for v in vals], dtype=np.bool_)
    elif dt.kind in "iu":
        a = np.array([int(v) for v in vals], dtype=object).astype(dt)
        if not all(int(x) == int(v) for x, v in zip(a.tolist(), vals)):
            raise ValueError(f"{e['name']}: expected value out of range for {e['dtype']}")
    else:
        a = np.array([_json_float(v) for v in vals], dtype=np.float64).astype(dt)
    n = int(np.prod(e["shape"], dtype=np.int64)) if e["shape"] else 1
    if a.size != n:
        raise ValueError(f"{e['name']}: {a.size} expected values for shape {e['shape']}")
    return a.reshape(e["shape"])


def compare(label, got, e, errors, max_show=10):
    """Append human-readable differences between array `got` and expected entry `e`."""
    want_dtype = e["dtype"]
    if dtype_name(got.dtype) != want_dtype:
        errors.append(f"{label}: dtype {dtype_name(got.dtype)} != expected {want_dtype}")
        return
    if list(got.shape) != list(e["shape"]):
        errors.append(f"{label}: shape {list(got.shape)} != expected {list(e['shape'])}")
        return
    want = expected_array(e)
    if got.dtype.kind == "f" or got.dtype == BF16:
        g, w = got.astype(np.float64), want.astype(np.float64)
        bad = ~((g == w) | (np.isnan(g) & np.isnan(w)))
    else:
        bad = got != want
    bad = np.asarray(bad)
    if bad.any():
        idx = np.argwhere(bad) if bad.ndim else [()]
        lines = [f"{label}: {int(bad.sum())} of {max(bad.size, 1)} values differ"]
        for i in list(idx)[:max_show]:
            i = tuple(int(x) for x in i)
            lines.append(f"    at {list(i)}: got {got[i]!r}, expected {want[i]!r}")
        errors.append("\n".join(lines))


def load_expected(path, kind, container):
    with open(path) as f:
        doc = json.load(f)
    arrays = doc["arrays"] if isinstance(doc, dict) else doc
    sel = []
    for e in arrays:
        if e.get("kind", kind) != kind:
            continue
        if container is not None and e.get("container") != container:
            continue
        sel.append(e)
    return doc, sel


def pop_option(args, opt):
    if opt in args:
        i = args.index(opt)
        if i + 1 >= len(args):
            usage()
        v = args[i + 1]
        del args[i:i + 2]
        return v
    return None


def usage():
    print(__doc__, file=sys.stderr)
    sys.exit(2)


def report(errors, ok_msg):
    if errors:
        print("MISMATCH:")
        for e in errors:
            print("  " + e)
        sys.exit(1)
    print(ok_msg)
    sys.exit(0)


# ---------------------------------------------------------------------------- read-checkpoint
def find_arrays(root):
    names = []
    for dp, dns, fns in os.walk(root):
        dns.sort()
        if "zarr.json" in fns and os.path.abspath(dp) != os.path.abspath(root):
            names.append(os.path.relpath(dp, root).replace(os.sep, "/"))
    return sorted(names)


def metadata_leaves(meta):
    leaves = []
    for _, v in meta.get("tree_metadata", {}).items():
        vm = v.get("value_metadata", {})
        if vm.get("skip_deserialize", False):
            continue
        leaves.append(".".join(str(k["key"]) for k in v["key_metadata"]))
    return sorted(leaves)


def read_checkpoint(args):
    container = pop_option(args, "--container")
    if len(args) != 2:
        usage()
    root, exp_path = args
    _, expected = load_expected(exp_path, "zarr3", container)
    errors = []
    if not expected:
        errors.append(f"no zarr3 entries selected from {exp_path} (container={container})")

    meta_path = os.path.join(root, "_METADATA")
    meta_leaves = None
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("use_zarr3") is not True:
            errors.append(f"_METADATA: use_zarr3 is {meta.get('use_zarr3')!r}, expected true")
        if meta.get("use_ocdbt", False) is not False:
            errors.append(f"_METADATA: use_ocdbt is {meta.get('use_ocdbt')!r}, expected false")
        meta_leaves = metadata_leaves(meta)
    except Exception as e:
        errors.append(f"cannot read {meta_path}: {type(e).__name__}: {e}")

    on_disk = find_arrays(root)
    want_names = sorted(e["name"] for e in expected)
    if on_disk != want_names:
        errors.append(f"array dirs on disk {on_disk} != expected names {want_names}")
    if meta_leaves is not None and meta_leaves != want_names:
        errors.append(f"_METADATA leaves {meta_leaves} != expected names {want_names}")

    for e in expected:
        p = os.path.join(root, e["name"])
        try:
            z = zarr.open_array(store=p, mode="r")
            got = z[...]
        except Exception as ex:
            errors.append(f"{e['name']}: zarr-python cannot read it: {type(ex).__name__}: {ex}")
            continue
        got = np.asarray(got)
        compare(e["name"], got, e, errors)
        if "fill_value" in e:
            fv = z.metadata.fill_value
            if not _same_scalar(fv, e["fill_value"]):
                errors.append(f"{e['name']}: fill_value {fv!r} != expected {e['fill_value']!r}")
    report(errors, f"OK: {len(expected)} arrays in {root} match {exp_path}")


def _same_scalar(a, b):
    try:
        fa, fb = _json_float(b) if isinstance(b, str) else float(b), float(a)
    except Exception:
        return a == b
    return fa == fb or (math.isnan(fa) and math.isnan(fb))


# ---------------------------------------------------------------------------- write-zarr
def zarr_arrays():
    f32 = (np.arange(35, dtype=np.float32) * 0.5 - 3).reshape(7, 5)
    f32[6, 4] = np.float32(1e-3)  # a value that is not a short decimal
    return [
        # name, data, chunks, compressors, fill_value
        ("f32_zstd", f32, (3, 2), [zarr.codecs.ZstdCodec(level=3, checksum=False)], 0.0),
        ("i32_crc32c", np.array([-2, 0, 7, 2**31 - 1], np.int32), (4,), [zarr.codecs.Crc32cCodec()], 0),
        ("bf16", np.array([[0.5, -1.0], [3.0, 256.0]], dtype=BF16), (2, 2), "auto", 0.0),
        ("mask", np.array([True, False, True]), (3,), None, False),
        ("scalar", np.array(-9, np.int64), (), None, 0),
    ]


def write_zarr(args):
    if len(args) != 1:
        usage()
    root = args[0]
    os.makedirs(root, exist_ok=True)
    entries, tree = [], {}
    for name, data, chunks, compressors, fill in zarr_arrays():
        z = zarr.create_array(store=os.path.join(root, name), shape=data.shape, dtype=data.dtype,
                              chunks=chunks, compressors=compressors, fill_value=fill,
                              overwrite=True)
        z[...] = data
        entries.append({"name": name, "path": name, "kind": "zarr3", "dtype": dtype_name(data.dtype),
                        "shape": list(data.shape), "fill_value": fill, "values": flat_values(data)})
        tree[repr((name,))] = {"key_metadata": [{"key": name, "key_type": 2}],
                               "value_metadata": {"value_type": "jax.Array", "skip_deserialize": False}}
    meta = {"tree_metadata": tree, "use_ocdbt": False, "use_zarr3": True,
            "store_array_data_equal_to_fill_value": True, "custom_metadata": None}
    with open(os.path.join(root, "_METADATA"), "w") as f:
        json.dump(meta, f)
    with open(os.path.join(root, "expected.json"), "w") as f:
        json.dump({"writer": f"zarr-python {zarr.__version__}", "arrays": entries}, f, indent=1)
    print(f"wrote {len(entries)} arrays with zarr-python {zarr.__version__} into {root}")


# ---------------------------------------------------------------------------- safetensors
ST_DTYPES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "uint16": "U16",
             "int32": "I32", "uint32": "U32", "int64": "I64", "uint64": "U64", "float16": "F16",
             "bfloat16": "BF16", "float32": "F32", "float64": "F64"}


def read_safetensors(args):
    container = pop_option(args, "--container")
    if len(args) != 2:
        usage()
    path, exp_path = args
    import struct

    from safetensors import safe_open
    doc, expected = load_expected(exp_path, "safetensors", container)
    errors = []
    if not expected:
        errors.append(f"no safetensors entries selected from {exp_path} (container={container})")
    try:
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
        with safe_open(path, framework="np") as f:
            file_meta = f.metadata()
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as ex:
        report([f"safetensors cannot read {path}: {type(ex).__name__}: {ex}"], "")
    if n % 8:
        print(f"note: header size {n} is not a multiple of 8 (the reference writer pads to 8)")
    want_names = sorted(e["name"] for e in expected)
    if sorted(tensors) != want_names:
        errors.append(f"tensors in file {sorted(tensors)} != expected names {want_names}")
    if isinstance(doc, dict) and "metadata" in doc and (file_meta or {}) != (doc["metadata"] or {}):
        errors.append(f"__metadata__ {file_meta!r} != expected {doc['metadata']!r}")
    for e in expected:
        if e["name"] in tensors:
            compare(e["name"], np.asarray(tensors[e["name"]]), e, errors)
    report(errors, f"OK: {len(expected)} tensors in {path} match {exp_path}")


def write_safetensors(args):
    if len(args) != 1:
        usage()
    path = args[0]
    from safetensors.numpy import save_file
    tensors = {
        "w": (np.arange(6, dtype=np.float32) - 2.5).reshape(2, 3),
        "bf16": np.array([0.5, -1, 2, 1024, -0.0078125], dtype=BF16),
        "f16": np.array([[1.5, -2], [65504, 0.099975586]], dtype=np.float16),
        "f64": np.array([math.pi, -1e300], np.float64),
        "i8": np.array([-128, 127, 0], np.int8),
        "u8": np.array([0, 255], np.uint8),
        "i32": np.arange(-3, 3, dtype=np.int32).reshape(3, 2),
        "i64": np.array([-(2**63), 2**62], np.int64),
        "u64": np.array([2**64 - 1, 5], np.uint64),
        "mask": np.array([[True, False], [False, True]]),
        "step": np.array(42, np.int64),
        "empty": np.zeros((0, 4), np.float32),
    }
    meta = {"format": "np", "writer": "safetensors-python"}
    save_file(tensors, path, metadata=meta)
    entries = [{"name": k, "kind": "safetensors", "dtype": dtype_name(v.dtype),
                "safetensors_dtype": ST_DTYPES[dtype_name(v.dtype)], "shape": list(v.shape),
                "values": flat_values(v)} for k, v in tensors.items()]
    with open(path + ".expected.json", "w") as f:
        json.dump({"metadata": meta, "arrays": entries}, f, indent=1)
    print(f"wrote {len(entries)} tensors into {path} (+ .expected.json)")


def main():
    if len(sys.argv) < 2:
        usage()
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "check-deps":
        import safetensors
        print(f"ok: zarr {zarr.__version__}, safetensors {safetensors.__version__}, "
              f"numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}")
        return
    fn = {"read-checkpoint": read_checkpoint, "write-zarr": write_zarr,
          "read-safetensors": read_safetensors, "write-safetensors": write_safetensors}.get(mode)
    if fn is None:
        usage()
    fn(list(args))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Generate foreign-written checkpoint / array goldens for parax's checkpointing tests.

Run with a Python venv holding orbax-checkpoint 0.12.8 (+ its jax), tensorstore,
zarr-python 3 (3.1.6 was used), safetensors and ml_dtypes, and with 8 fake CPU devices:

    XLA_FLAGS=--xla_force_host_platform_device_count=8 \\
        python tools/checkpoint_goldens.py tests/golden/checkpointing

It (re)creates these entries inside <out_dir> (other files there, e.g. README.md, are kept):

  orbax_zarr3/                Orbax PyTree checkpoint, PyTreeCheckpointHandler(use_ocdbt=False,
                              use_zarr3=True), saved with a bare Checkpointer to the item dir.
  orbax_zarr3_zstd_chunked/   Same tree, but SaveArgs(chunk_byte_size=16) on params.w so every
                              per-device shard is split into several chunk files.
  zarr_python_sharded/        zarr-python float32[6,10], shards (4,6), inner chunks (2,3),
                              fill_value -1.5, one inner chunk all fill (=> empty index slot).
  zarr_python_plain/          zarr-python int16[5,4], chunks (2,4), only rows 0-1 written,
                              fill_value 3, chunk_key_encoding separator ".", bytes codec only.
  tensorstore_bigendian/      tensorstore zarr3 uint32[3,3], chunks (2,2),
                              codecs [bytes(endian=big), crc32c].
  safetensors/tiny.safetensors  safetensors.numpy.save_file, metadata {"format": "np"}.
  expected.json               every array above: path, dtype, shape, row-major values.

expected.json schema:
  {"format": "parax-checkpoint-goldens", "version": 1, "generator": {package: version},
   "arrays": [{"container": "orbax_zarr3",         # top-level entry in <out_dir>
               "name": "params.w",                 # array dir inside the container
                                                   # (safetensors: tensor name)
               "path": "orbax_zarr3/params.w",     # relative to <out_dir>
               "kind": "zarr3" | "safetensors",
               "dtype": "float32",                 # zarr v3 data_type name
               "shape": [8, 4],
               "fill_value": 0.0,                  # zarr3 only
               "values": [...]}]}                  # flat, C order; bool 0/1; bf16/f16 as float;
                                                   # 64-bit ints exact (JSON integers)

Everything is written by the foreign libraries themselves; nothing is post-processed
(Orbax's _CHECKPOINT_METADATA timestamps and commit_success.txt text therefore change on
every run).  After writing, every array is read back with tensorstore / safetensors and
compared with expected.json.
"""
import json
import os
import shutil
import sys

if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=8").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # needed for the uint64 leaf

import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import orbax.checkpoint as ocp  # noqa: E402
import safetensors  # noqa: E402
import safetensors.numpy  # noqa: E402
import tensorstore as ts  # noqa: E402
import zarr  # noqa: E402
import zarr.codecs  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

ENTRIES = ["orbax_zarr3", "orbax_zarr3_zstd_chunked", "zarr_python_sharded",
           "zarr_python_plain", "tensorstore_bigendian", "safetensors", "expected.json"]

BF16 = np.dtype(ml_dtypes.bfloat16)


def dtype_name(dt):
    dt = np.dtype(dt)
    return "bfloat16" if dt == BF16 else dt.name  # numpy names == zarr v3 names here


def flat_values(arr):
    a = np.asarray(arr)
    if a.dtype == np.bool_:
        return [int(v) for v in a.ravel()]
    if a.dtype.kind in "iu":
        return [int(v) for v in a.ravel()]  # exact, incl. uint64 >= 2**63
    return [float(v) for v in a.astype(np.float64).ravel()]


def entry(container, name, path, kind, arr, fill_value=None):
    e = {"container": container, "name": name, "path": path, "kind": kind,
         "dtype": dtype_name(arr.dtype), "shape": list(np.shape(arr))}
    if fill_value is not None:
        e["fill_value"] = fill_value
    e["values"] = flat_values(arr)
    return e


# --------------------------------------------------------------------------- orbax
def orbax_tree():
    devs = np.array(jax.devices()[:4]).reshape(2, 2)
    mesh = Mesh(devs, ("x", "y"))
    ns = lambda *spec: NamedSharding(mesh, P(*spec))  # noqa: E731
    host = {
        "params": {
            "w": np.arange(32, dtype=np.float32).reshape(8, 4),
            "b": np.arange(4).astype(BF16),
            # NOTE: the brief asked for int8[3,5] P(None,'y'); jax requires even tiling, so [3,6].
            "k": (np.arange(18) - 7).astype(np.int8).reshape(3, 6),
        },
        "step": np.array(7, np.int32),
        "opt": [
            (np.arange(6) / 4).astype(np.float16),
            np.array([1, 2**63 + 5], dtype=np.uint64),
            np.array([1, 0, 1, 1, 0], dtype=np.bool_),
        ],
    }
    shardings = {
        "params": {"w": ns("x", "y"), "b": ns(), "k": ns(None, "y")},
        "step": ns(),
        "opt": [ns("x"), ns(), ns()],
    }
    dev = jax.tree.map(lambda a, s: jax.device_put(a, s), host, shardings)
    for leaf, h in zip(jax.tree.leaves(dev), jax.tree.leaves(host)):
        assert leaf.dtype == h.dtype, (leaf.dtype, h.dtype)
    return host, dev


def orbax_entries(container, host):
    out = []
    for path, arr in jax.tree_util.tree_flatten_with_path(host)[0]:
        parts = []
        for k in path:
            parts.append(str(k.key) if hasattr(k, "key") else str(k.idx))
        name = ".".join(parts)
        fill = False if arr.dtype == np.bool_ else (0 if arr.dtype.kind in "iu" else 0.0)
        out.append(entry(container, name, f"{container}/{name}", "zarr3", arr, fill_value=fill))
    return out


def write_orbax(out_dir, container, host, dev, chunked):
    save_args = jax.tree.map(lambda _: ocp.SaveArgs(), dev)
    if chunked:
        # w's per-device shard is f32[4,2] = 32 bytes; 16 bytes => each shard split in 2 chunk files
        save_args["params"]["w"] = ocp.SaveArgs(chunk_byte_size=16)
    handler = ocp.PyTreeCheckpointHandler(use_ocdbt=False, use_zarr3=True)
    ckptr = ocp.Checkpointer(handler)
    path = os.path.join(os.path.abspath(out_dir), container)
    ckptr.save(path, args=ocp.args.PyTreeSave(dev, save_args=save_args))
    ckptr.close()
    # sanity: orbax restores its own checkpoint
    target = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding), dev)
    r = ocp.Checkpointer(ocp.PyTreeCheckpointHandler(use_ocdbt=False, use_zarr3=True)).restore(
        path, args=ocp.args.PyTreeRestore(
            target, restore_args=ocp.checkpoint_utils.construct_restore_args(target)))
    for a, b in zip(jax.tree.leaves(r), jax.tree.leaves(host)):
        assert np.array_equal(np.asarray(a), b), (a, b)
    return orbax_entries(container, host)


# --------------------------------------------------------------------------- zarr-python
def write_zarr_python(out_dir):
    res = []
    # c1: sharded, partial edge shards, one inner chunk equal to fill value (not stored)
    c = "zarr_python_sharded"
    arr = np.arange(60, dtype=np.float32).reshape(6, 10)
    arr[0:2, 3:6] = -1.5  # inner chunk (0,1) of shard (0,0) == fill_value -> skipped by zarr-python
    z = zarr.create_array(store=os.path.join(out_dir, c), shape=arr.shape, dtype="float32",
                          shards=(4, 6), chunks=(2, 3), fill_value=-1.5,
                          compressors=zarr.codecs.ZstdCodec(level=3, checksum=False),
                          config={"write_empty_chunks": False})
    z[...] = arr
    res.append(entry(c, "", c, "zarr3", arr, fill_value=-1.5))

    # c2: plain, chunk key separator ".", only rows 0-1 written, fill 3
    c = "zarr_python_plain"
    z = zarr.create_array(store=os.path.join(out_dir, c), shape=(5, 4), dtype="int16",
                          chunks=(2, 4), fill_value=3, compressors=None,
                          chunk_key_encoding={"name": "default", "separator": "."})
    rows = (np.arange(8, dtype=np.int16) - 4).reshape(2, 4)
    z[0:2, :] = rows
    arr = np.full((5, 4), 3, np.int16)
    arr[0:2] = rows
    res.append(entry(c, "", c, "zarr3", arr, fill_value=3))
    return res


# --------------------------------------------------------------------------- tensorstore
def write_tensorstore(out_dir):
    c = "tensorstore_bigendian"
    arr = (np.uint32(0x01020304) * (np.arange(9, dtype=np.uint32) + 1)).reshape(3, 3)
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.join(out_dir, c)},
            "create": True,
            "metadata": {"shape": [3, 3], "data_type": "uint32",
                         "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
                         "codecs": [{"name": "bytes", "configuration": {"endian": "big"}},
                                    {"name": "crc32c"}]}}
    t = ts.open(spec).result()
    t[...] = arr
    return [entry(c, "", c, "zarr3", arr, fill_value=0)]


# --------------------------------------------------------------------------- safetensors
def write_safetensors(out_dir):
    c = "safetensors"
    os.makedirs(os.path.join(out_dir, c))
    tensors = {
        "w": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b": np.array([0.5, 1, 2, -3], dtype=BF16),
        "mask": np.array([True, False, True]),
        "step": np.array(7, dtype=np.int64),
        "empty": np.zeros((0, 3), np.float32),
    }
    path = f"{c}/tiny.safetensors"
    safetensors.numpy.save_file(tensors, os.path.join(out_dir, path), metadata={"format": "np"})
    res = []
    for name, arr in tensors.items():
        e = entry(c, name, path, "safetensors", arr)
        e["safetensors_dtype"] = {"float32": "F32", "bfloat16": "BF16", "bool": "BOOL",
                                  "int64": "I64"}[e["dtype"]]
        res.append(e)
    return res


# --------------------------------------------------------------------------- checks
def expected_array(e):
    dt = BF16 if e["dtype"] == "bfloat16" else np.dtype(e["dtype"])
    if dt.kind in "iub":
        a = np.array(e["values"], dtype=np.uint64 if dt == np.uint64 else np.int64).astype(dt)
    else:
        a = np.array(e["values"], dtype=np.float64).astype(dt)
    return a.reshape(e["shape"])


def verify(out_dir, entries):
    st_cache = {}
    for e in entries:
        want = expected_array(e)
        p = os.path.join(out_dir, e["path"])
        if e["kind"] == "zarr3":
            t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": p}}).result()
            got = t.read().result()
        else:
            if p not in st_cache:
                st_cache[p] = safetensors.numpy.load_file(p)
            got = st_cache[p][e["name"]]
        assert got.dtype == want.dtype and got.shape == want.shape, (e["path"], got.dtype, got.shape)
        assert np.array_equal(got, want), (e["path"], e["name"], got, want)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = os.path.abspath(sys.argv[1])
    os.makedirs(out_dir, exist_ok=True)
    for name in ENTRIES:
        p = os.path.join(out_dir, name)
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)

    host, dev = orbax_tree()
    entries = []
    entries += write_orbax(out_dir, "orbax_zarr3", host, dev, chunked=False)
    entries += write_orbax(out_dir, "orbax_zarr3_zstd_chunked", host, dev, chunked=True)
    entries += write_zarr_python(out_dir)
    entries += write_tensorstore(out_dir)
    entries += write_safetensors(out_dir)

    import importlib.metadata as md
    gen = {p: md.version(p) for p in ["orbax-checkpoint", "jax", "jaxlib", "tensorstore", "zarr",
                                      "numcodecs", "safetensors", "ml_dtypes", "numpy"]}
    doc = {"format": "parax-checkpoint-goldens", "version": 1, "generator": gen, "arrays": entries}
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    verify(out_dir, entries)

    total = 0
    for dp, _, fs in os.walk(out_dir):
        for f in fs:
            total += os.path.getsize(os.path.join(dp, f))
    print(f"wrote {len(entries)} arrays into {out_dir}; {total} bytes in total; all read back OK")


if __name__ == "__main__":
    main()

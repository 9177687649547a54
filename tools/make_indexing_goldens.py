"""Writes tests/golden/indexing_cases.txt: what JAX gives for numpy indexing, x.at[...]
updates, take, take_along_axis and put_along_axis (tests/numpy/indexing_test.cpp runs
the same cases with parax). The cases port the tables of JAX's
tests/lax_numpy_indexing_test.py (STATIC_INDEXING_TESTS, ADVANCED_INDEXING_TESTS,
MIXED_ADVANCED_INDEXING_TESTS, the boolean and scalar-boolean cases, IndexedUpdateTest)
and of tests/lax_numpy_test.py (testTake, testTakeAlongAxis, testPutAlongAxis).

Run with the installed JAX (0.10.2):  python3 tools/make_indexing_goldens.py

Static integer indices are checked as under jax_check_static_indices=True (parax raises
IndexError for them, as numpy does; JAX's default clamps).

Format: tests/support/golden.h's `name<TAB>text` records. For each case <c>:
  <c>#op     what to compute: getitem | get | set | add | subtract | multiply | divide |
             power | min | max | take | take_along_axis | put_along_axis | grad_getitem |
             grad_<update op> | vmap_x | vmap_i
  <c>#opt    options `key=value` joined by `,` (mode, fill, sorted, unique, wrap, axis)
  <c>#x      the operand: `dtype|shape|v0,v1,...`
  <c>#y      the update values / take indices / values (same form; `lit|int|3` or
             `lit|float|2.5` for a C++ scalar)
  <c>#idx    the index: items joined by `;`: `i<int>`, `s<start>,<stop>,<step>` (`_` for
             None), `N` (None), `E` (Ellipsis), `B1`/`B0` (a scalar bool), `a<dtype>:<shape>:
             <values>` (an array)
  <c>        the result `dtype|w|shape|values` (w: `w` weak, `s` strong), or
             `!ErrorKind: message`
  <c>#g<k>   for grad cases, the gradient with respect to argument k (same form)
"""
import itertools
import os

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_check_static_indices", True)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "indexing_cases.txt")

# ---- JAX's tables (tests/lax_numpy_indexing_test.py), as (shape, indexer, out_shape) ----
STATIC = [
  ("OneIntIndex", [((3,), 1), ((3, 3), 0), ((3, 4, 5), 2), ((3,), -1), ((3,), -2)]),
  ("TwoIntIndices", [((3, 3), (2, 1)), ((3, 4, 5), (1, 2)), ((3, 4, 5), (-1, 2))]),
  ("ThreeIntIndices", [((3, 4, 5), (1, 2, 3))]),
  ("OneSliceIndex", [((10,), slice(1, 3)), ((10,), slice(1, -1)), ((10,), slice(None, -1)),
                     ((10,), slice(None, None, None)), ((10, 8), slice(1, 3)),
                     ((10, 8), slice(1, None)), ((10, 8), slice(None, 3)),
                     ((10, 8), slice(-3, None))]),
  ("OneSliceIndexNegativeStride", [
      ((10,), slice(3, 1, -1)), ((10,), slice(1, 8, -1)), ((10,), slice(None, 1, -2)),
      ((10,), slice(None, None, -1)), ((10, 8), slice(3, 1, -1)), ((10, 8), slice(0, 8, -1)),
      ((10, 8), slice(None, None, -1)), ((10, 8), slice(12, 12, -4)),
      ((10, 8), slice(12, 4, -4))]),
  ("OneSliceIndexNonUnitStride", [
      ((10,), slice(0, 8, 2)), ((10,), slice(0, 8, 3)), ((10,), slice(1, 3, 2)),
      ((10,), slice(1, None, 2)), ((10,), slice(None, 1, -2)), ((10, 8), slice(1, 8, 3)),
      ((10, 8), slice(None, None, 2)), ((10, 8), slice(None, 1, -2)),
      ((10, 8), slice(None, None, -2))]),
  ("TwoSliceIndices", [
      ((10, 8), (slice(1, 3), slice(0, 2))), ((10, 8), (slice(1, None), slice(None, 2))),
      ((10, 8), (slice(None, None, -1), slice(None, 2))),
      ((10, 8, 3), (slice(1, 3), slice(0, 2))), ((10, 8, 3), (slice(1, 3), slice(0, None))),
      ((10, 8, 3), (slice(1, None), slice(0, 2)))]),
  ("OneColonIndex", [((3,), slice(None)), ((3, 4), slice(None))]),
  ("MultipleColonIndices", [((3, 4), (slice(None), slice(None))),
                            ((3, 4, 5), (slice(None), slice(None)))]),
  ("MixedSliceIndices", [((10, 4), (slice(None), slice(0, 2))), ((10, 4), (1, slice(None)))]),
  ("EllipsisIndex", [((3,), Ellipsis), ((3, 4), Ellipsis), ((3, 4, 5), (0, Ellipsis)),
                     ((3, 4, 5), (Ellipsis, 2, 3))]),
  ("SliceIndexClamping", [((10,), slice(2, 11, 1)), ((10,), slice(11, 12, 1)),
                          ((10,), slice(-11, -2, 1)), ((10,), slice(-2, -12, -1)),
                          ((10,), slice(12, -12, -1))]),
  ("NoneIndex", [((), None), ((), (None, None)), ((), (Ellipsis, None)), ((3,), None),
                 ((3, 4), None), ((3, 4), (Ellipsis, None)), ((3, 4), (0, None, Ellipsis)),
                 ((3, 4, 5), (1, None, Ellipsis)),
                 ((3, 4, 5), (1, None, slice(None), None))]),
  ("EmptyIndex", [((), ()), ((3,), ()), ((3, 4), ())]),
  ("TupleOfIntAndSliceAndIntArray", [
      ((3, 2, 3), (0, slice(None), np.arange(3))),
      ((3, 2, 3), (np.int32(1), slice(None), np.arange(3))),
      ((3, 2, 3), (np.array(2), slice(None), np.arange(3)))]),
]

STATIC_OOB = [
  ("OneIntIndexOOB", [((3,), -4), ((3, 3), 3), ((3, 4, 5), 4)]),
  ("TwoIntIndicesOOB", [((3, 3), (2, -4)), ((3, 4, 5), (3, 2)), ((3, 4, 5), (-4, 4))]),
]

ADVANCED = [
  ("One1DIntArrayIndex", [((3,), np.array([0, 1])), ((3, 3), np.array([1, 2, 1])),
                          ((3, 4, 5), np.array([0, 2, 0, 1])), ((3,), np.array([-1, 1])),
                          ((3,), np.array([-2, -1])), ((0,), np.array([], dtype=np.int32))]),
  ("One2DIntArrayIndex", [((3,), np.array([[0, 0]])),
                          ((3, 3), np.array([[1, 2, 1], [0, 1, -1]])),
                          ((3, 4, 5), np.array([[0, 2, 0, 1], [-1, -2, 1, 0]]))]),
  ("Two1DIntArrayIndicesNoBroadcasting", [
      ((3, 3), (np.array([0, 1]), np.array([1, 2]))),
      ((3, 4, 5), (np.array([0, 2, 0, 1]), np.array([-1, 0, -1, 2])))]),
  ("Two1DIntArrayIndicesWithBroadcasting", [
      ((3, 3), (np.array([[0, 1]]), np.array([1, 2]))),
      ((3, 4, 5), (np.array([[0, 2, 0, 1]]), np.array([-1, 0, -1, 2])))]),
  ("ArrayOfInts", [((3,), np.array([0, 1, 0])), ((3, 4, 5), np.array([0, -1]))]),
  ("TupleOfListsOfPythonInts", [((3, 4, 5), (np.array([0, 1]),)),
                                ((3, 4, 5), (np.array([[0], [-1]]), np.array([[2, 3, 0, 3]])))]),
  ("TupleOfPythonIntsAndIntArrays", [((3, 4, 5), (0, np.array([0, 1]))),
                                     ((3, 4, 5), (0, 1, np.array([[2, 3, 0, 3]])))]),
  ("TupleOfListsOfPythonIntsAndIntArrays", [
      ((3, 4, 5), (np.array([0, 1]), np.array([0]))),
      ((3, 4, 5), (np.array([[0], [-1]]), np.array([[2, 3, 0, 3]])))]),
]

ADVANCED_NO_REPEATS = [
  ("One1DIntArrayIndexNR", [((3,), np.array([0, 1])), ((3, 3), np.array([1, 2, 0])),
                            ((3, 4, 5), np.array([0, 2, 1])), ((3,), np.array([-1, 1])),
                            ((3,), np.array([-2, -1])), ((0,), np.array([], dtype=np.int32))]),
  ("One2DIntArrayIndexNR", [((3,), np.array([[0, 1]])),
                            ((6, 6), np.array([[1, 2, 0], [3, 4, -1]]))]),
  ("Two1DIntArrayIndicesNoBroadcastingNR", [
      ((3, 3), (np.array([0, 1]), np.array([1, 2]))),
      ((4, 5, 6), (np.array([0, 2, 1, 3]), np.array([-1, 0, -2, 1])))]),
  ("Two1DIntArrayIndicesWithBroadcastingNR", [
      ((3, 3), (np.array([[0, 1]]), np.array([1, 2]))),
      ((4, 5, 6), (np.array([[0, 2, -1, 1]]), np.array([-1, 0, -2, 2])))]),
  ("ArrayOfIntsNR", [((3,), np.array([0, 2, 1])), ((3, 4, 5), np.array([0, -1]))]),
  ("TupleOfListsOfPythonIntsNR", [((3, 4, 5), (np.array([0, 1]),)),
                                  ((3, 4, 5), (np.array([[0], [-1]]), np.array([[2, 3, 0]])))]),
  ("TupleOfPythonIntsAndIntArraysNR", [((3, 4, 5), (0, np.array([0, 1]))),
                                       ((3, 4, 5), (0, 1, np.array([[2, 3, 0]])))]),
  ("TupleOfListsOfPythonIntsAndIntArraysNR", [
      ((3, 4, 5), (np.array([0, 1]), np.array([0]))),
      ((3, 4, 5), (np.array([[0], [-1]]), np.array([[2, 3, 0]])))]),
]

MIXED_NO_REPEATS = [
  ("SlicesAndOneIntArrayIndex", [
      ((2, 3), (np.array([0, 1]), slice(1, 2))), ((2, 3), (slice(0, 2), np.array([0, 2]))),
      ((3, 4, 5), (Ellipsis, np.array([0, 2]), slice(None))),
      ((3, 4, 5), (Ellipsis, np.array([[0, 2], [1, 3]]), slice(None)))]),
  ("SlicesAndTwoIntArrayIndices", [
      ((3, 4, 5), (Ellipsis, np.array([0, 2]), np.array([-1, 2]))),
      ((3, 4, 5), (np.array([0, 2]), Ellipsis, np.array([-1, 2]))),
      ((3, 4, 5), (np.array([0, 2]), np.array([-1, 2]), Ellipsis)),
      ((3, 4, 5), (np.array([0, 2]), np.array([-1, 2]), slice(1, 3))),
      ((3, 4, 5), (np.array([0, 2]), slice(1, 3), np.array([-1, 2]))),
      ((3, 4, 5), (np.array([0, 2, -2]), slice(None, None, 2), np.array([-1, 2, 1])))]),
  ("NonesAndIntArrayIndices", [
      ((3, 4, 5), (np.array([0, 2]), None, np.array([-1, 2]))),
      ((3, 4, 5), (np.array([0, 2]), None, None, np.array([-1, 2]))),
      ((3, 4, 5), (Ellipsis, np.array([0, 2]), None, None, np.array([-1, 2])))]),
  ("IntArrayWithInt32Type", [((3, 4), (Ellipsis, np.array(1, dtype=np.int32)))]),
  ("EllipsisWithArrayIndices", [
      ((3, 4, 5), (np.array([0, 1]), Ellipsis, np.array([0, 1]))),
      ((3, 4, 5), (slice(None), np.array([0, 1]), Ellipsis, np.array([0, 1]))),
      ((3, 4, 5), (slice(None), Ellipsis, np.array([0, 1]), np.array([0, 1])))]),
]

MIXED_REPEATS = [
  ("SlicesAndOneIntArrayIndexR", [((3, 4, 5), (Ellipsis, np.array([[0, 2], [1, 1]]),
                                               slice(None)))]),
  ("SlicesAndTwoIntArrayIndicesR", [
      ((3, 4, 5), (np.array([0, 2, -2]), slice(None, None, 2), np.array([-1, 2, -1]))),
      ((3, 4, 5), (np.array([[0, 2], [2, 0]]), Ellipsis, np.array([[1, 0], [1, 0]])))]),
]

B = lambda *v: np.array(v, dtype=bool)
BOOLEAN = [
  ("BoolArray1D", [((3,), B(True, True, False))]),
  ("BoolArray2DBroadcast", [((4, 2), B(True, True, False, True))]),
  ("BoolArray2D", [((4, 2), np.array([[True, False], [False, True], [False, False],
                                      [True, True]]))]),
  ("Bool1DWithEllipsis", [((4, 3, 2), (Ellipsis, B(True, False))),
                          ((3,), (Ellipsis, B(True, False, True))),
                          ((2, 3), (0, Ellipsis, B(True, False, True)))]),
  ("Bool2DWithEllipsis", [((4, 3, 2), (Ellipsis, np.array([[True, False], [True, False],
                                                           [False, False]])))]),
  ("Bool1DTrailingEllipsis", [((4, 3, 2), (B(True, False, True, False), Ellipsis))]),
  ("BoolEmptyResult", [((1,), B(False))]),
  ("BoolWithNone", [((2, 3), (None, B(True, False))),
                    ((2, 3), (None, Ellipsis, B(True, False, False))),
                    ((2, 3), (Ellipsis, None, B(True, False, False)))]),
  ("BoolNontrivial", [((2, 3, 6), (np.array([[True, False, True], [False, True, True]]),
                                   B(True, False, False, True, True, True)))]),
  ("BoolEmpty", [((3,), np.zeros((0,), bool)), ((3, 4), np.zeros((0,), bool)),
                 ((3, 4), np.zeros((0, 4), bool)), ((3, 4), np.zeros((3, 0), bool)),
                 ((3, 4, 5), np.zeros((3, 0), bool))]),
  ("BoolMixedIntArray", [((3, 4), (B(True, False, True), np.array([1, 3]))),
                         ((3, 4), (np.array([2, 0]), B(False, True, True, False)))]),
  ("ScalarBool", [((2, 3, 4, 5), True), ((2, 3, 4, 5), False),
                  ((2, 3, 4, 5), (Ellipsis, True)), ((2, 3, 4, 5), (Ellipsis, False)),
                  ((2, 3, 4, 5), (0, slice(None, 2), True)),
                  ((2, 3, 4, 5), (0, slice(None, 2), False)),
                  ((2, 3, 4, 5), (slice(None, 2), 0, True)),
                  ((2, 3, 4, 5), (slice(None, 2), 0, False)),
                  ((2, 3, 4, 5), (slice(None, 2), np.array([0, 2]), True)),
                  ((2, 3, 4, 5), (np.array([1, 0]), slice(None), True)),
                  ((2, 3, 4, 5), (True, slice(None), True, slice(None), np.array(True)))]),
]

EXTRA = [
  # testIssue187, testAdvancedIndexingManually, testIndexingEmptyDimension, testOOBEmptySlice,
  # testIndexDtypePromotion, unsigned and narrow index dtypes, zero steps, a traced scalar.
  ("Issue187", [((5, 5), (np.array([0, 2, 4]), np.array([0, 2, 4])))]),
  ("Manual", [((3, 4, 5), (Ellipsis, np.array([0, 2, -1, 0]), slice(None))),
              ((3, 4, 5), (Ellipsis, np.array([0, 2, -1, 0]), slice(None),
                           np.array([0, 2, -1, 0]), None)),
              ((3, 4, 5), (np.array([0, 2, -1, 0]), Ellipsis,
                           np.array([[0], [2], [-1], [0]]), None))]),
  ("EmptyDimension", [((2, 0), (0, slice(None))), ((2, 0), (0, None)),
                      ((2, 0), (0, slice(1, None))), ((2, 0), (0, slice(1, 3, 2))),
                      ((2, 0), (0, 0))]),
  ("OOBEmptySlice", [((4,), slice(1, 0)), ((4,), slice(-2, -10)), ((4,), slice(5, 10)),
                     ((2, 3), slice(-1, -4)), ((2, 3), (slice(None), slice(3, 2)))]),
  ("IndexDtypes", [((1000, 1), (999, np.array(0, np.int8))),
                   ((1000, 1), (999, np.array([0], np.int8))),
                   ((10,), np.array([1, 5, 9], np.uint8)),
                   ((10,), np.array([1, 5, 9], np.uint32)),
                   ((10,), np.array([-1, -5, 9], np.int16))]),
  ("ScalarArrayIndex", [((4,), np.array(2)), ((4,), np.array(-1)), ((4,), np.array(7)),
                        ((3, 4), (np.array(1), slice(1, 3))),
                        ((3, 4), (slice(None, None, -1), np.array(2))),
                        ((3, 4), (np.array(1), np.array(-2))),
                        ((3, 4), (None, np.array(1), Ellipsis))]),
  ("Errors", [((3,), slice(None, None, 0)), ((2, 3), (Ellipsis, Ellipsis)),
              ((2, 3), (0, 0, 0)), ((), 0), ((3,), (slice(None), 5)),
              ((2, 3), np.array([1.0])), ((2, 3), (np.arange(2), 1.0)),
              ((4,), B(True, False)), ((2,), -4), ((2,), 4), ((2, 3), (slice(None), 4)),
              ((2, 3), (Ellipsis, -4)), ((2, 3, 5), (3, slice(None), 0)),
              ((2, 3, 5), (slice(None, 5), slice(None), 6)),
              ((2, 3, 5), (slice(None), np.array([1, 2]), 6)),
              ((2, 3, 5), (np.arange(3), 6, None)),
              ((3, 4), (np.array([0, 1]), np.array([0, 1, 2])))]),
]

# ---- encoding ---------------------------------------------------------------------------

def canon_dtype(dt):
  dt = np.dtype(dt)
  if dt == np.int64:
    return "int32"
  if dt == np.uint64:
    return "uint32"
  if dt == np.float64:
    return "float32"
  return jnp.dtype(dt).name


def fmt_val(v, dtype):
  if dtype == "bool":
    return "1" if v else "0"
  if np.issubdtype(np.dtype(dtype), np.integer):
    return str(int(v))
  f = float(v)
  if np.isnan(f):
    return "nan"
  return repr(f)


def enc_array(a, dtype=None):
  a = np.asarray(a)
  dtype = dtype or canon_dtype(a.dtype)
  shape = ",".join(str(d) for d in a.shape)
  vals = ",".join(fmt_val(v, dtype) for v in a.reshape(-1).tolist())
  return f"{dtype}|{shape}|{vals}"


def enc_result(x):
  x = jnp.asarray(x)
  weak = "w" if getattr(x, "weak_type", False) else "s"
  dtype = x.dtype.name
  shape = ",".join(str(d) for d in x.shape)
  vals = ",".join(fmt_val(v, dtype) for v in np.asarray(x.astype(jnp.float32)
                  if dtype == "bfloat16" else x).reshape(-1).tolist())
  return f"{dtype}|{weak}|{shape}|{vals}"


def enc_item(i):
  if i is None:
    return "N"
  if i is Ellipsis:
    return "E"
  if isinstance(i, (bool, np.bool_)):
    return "B1" if i else "B0"
  if isinstance(i, (int, np.integer)):
    return f"i{int(i)}"
  if isinstance(i, slice):
    f = lambda b: "_" if b is None else str(b)
    return f"s{f(i.start)},{f(i.stop)},{f(i.step)}"
  if isinstance(i, float):
    return "f" + repr(i)
  a = np.asarray(i)
  dtype = "bool" if a.dtype == bool else canon_dtype(a.dtype)
  shape = ",".join(str(d) for d in a.shape)
  vals = ",".join(fmt_val(v, dtype) for v in a.reshape(-1).tolist())
  return f"a{dtype}:{shape}:{vals}"


def index_shape(shape, idx):
  return jnp.zeros(shape).at[jax_index(idx)].get(mode="clip").shape


def as_tuple(idx):
  return idx if isinstance(idx, tuple) else (idx,)


def dec_item(i):
  """The JAX object parax sees for an encoded item: numpy arrays become jax arrays."""
  if isinstance(i, np.ndarray):
    return jnp.asarray(i, dtype=None if i.dtype != np.float64 else jnp.float32)
  return i


def jax_index(idx):
  return tuple(dec_item(i) for i in as_tuple(idx))


def enc_index(idx):
  return ";".join(enc_item(i) for i in as_tuple(idx))


_rng = np.random.RandomState(0)


def make_x(shape, dtype):
  n = int(np.prod(shape))
  if dtype == "bool":
    return _rng.randint(0, 2, size=shape).astype(bool)
  if np.issubdtype(np.dtype(dtype), np.unsignedinteger):
    return _rng.randint(0, 20, size=shape).astype(dtype)
  if np.issubdtype(np.dtype(dtype), np.integer):
    return _rng.randint(-9, 10, size=shape).astype(dtype)
  vals = np.round(_rng.uniform(-4, 4, size=n) * 4) / 4  # exact in every float format
  return vals.reshape(shape).astype(jnp.dtype(dtype))


RECORDS = []


def error_text(e):
  if isinstance(e, OverflowError):  # parax raises JAX's OverflowError text as ValueError
    return f"!ValueError: {e}"
  for kind in (NotImplementedError, IndexError, TypeError, ValueError):
    if isinstance(e, kind):
      return f"!{kind.__name__}: {e}"
  raise e


_NO = object()


def record(name, op, x=None, y=None, idx=_NO, opt=None, fn=None):
  assert name not in {r[0] for r in RECORDS[-400:]}, name
  RECORDS.append((name + "#op", op))
  if opt:
    RECORDS.append((name + "#opt", ",".join(f"{k}={v}" for k, v in opt.items())))
  if x is not None:
    RECORDS.append((name + "#x", enc_array(x)))
  if y is not None:
    RECORDS.append((name + "#y", y if isinstance(y, str) else enc_array(y)))
  if idx is not _NO:
    RECORDS.append((name + "#idx", enc_index(idx)))
  try:
    out = fn()
  except Exception as e:  # noqa: BLE001
    RECORDS.append((name, error_text(e)))
    return
  if isinstance(out, tuple):
    RECORDS.append((name, enc_result(out[0])))
    for k, g in enumerate(out[1:]):
      RECORDS.append((name + f"#g{k}", enc_result(g)))
  else:
    RECORDS.append((name, enc_result(out)))


def specs(tables):
  for tname, entries in tables:
    for k, (shape, idx) in enumerate(entries):
      yield f"{tname}_{k}", shape, idx


def mode_kw(mode):
  return {} if mode is None else {"mode": mode}


# ---- x[idx] and x.at[idx].get() -----------------------------------------------------------

GET_TABLES = STATIC + STATIC_OOB + ADVANCED + MIXED_NO_REPEATS + MIXED_REPEATS + BOOLEAN + EXTRA
EXTRA_DTYPES = ["bool", "uint8", "int8", "float16", "bfloat16", "int16", "uint32"]
for n, (name, shape, idx) in enumerate(specs(GET_TABLES)):
  dtypes = ["float32", "int32", EXTRA_DTYPES[n % len(EXTRA_DTYPES)]]
  for dtype in dtypes:
    x = make_x(shape, dtype)
    ji = jax_index(idx)
    record(f"getitem/{name}/{dtype}", "getitem", x=x, idx=idx,
           fn=lambda: jnp.asarray(x)[ji])
  x = make_x(shape, "float32")
  record(f"get/{name}", "get", x=x, idx=idx, fn=lambda: jnp.asarray(x).at[ji].get())
  for mode in [["clip", "fill", "promise_in_bounds"][n % 3], "clip" if n % 6 == 1 else None]:
    if mode is None or (mode == "promise_in_bounds" and
                        name.startswith(("OneIntIndexOOB", "TwoIntIndicesOOB"))):
      continue
    fill = 7.0 if mode == "fill" and n % 2 else None
    opt = {"mode": mode}
    kw = dict(mode=mode)
    if fill is not None:
      opt["fill"] = fill
      kw["fill_value"] = fill
    record(f"get_{mode}/{name}", "get", x=x, idx=idx, opt=opt,
           fn=lambda: jnp.asarray(x).at[ji].get(**kw))

# testIndexOutOfBounds, testWrapNegativeIndices1D (get).
OOB_IDX = np.array([-12, -10, -6, -5, -4, 0, 3, 4, 5, 6, 9, 11, 100])
for dtype in ["float32", "int32", "uint32", "bool", "float16"]:
  for mode in ["promise_in_bounds", "fill", "clip", "drop", None]:
    for wrap in [True, False]:
      for fill in [None, 7]:
        if fill is not None and mode not in ("fill", "drop"):
          continue
        x = make_x((5,), dtype)
        opt = {"wrap": int(wrap)}
        kw = {"wrap_negative_indices": wrap}
        if mode:
          opt["mode"] = mode
          kw["mode"] = mode
        if fill is not None:
          opt["fill"] = fill
          kw["fill_value"] = fill
        record(f"get_oob/{dtype}/{mode}/{int(wrap)}/{fill}", "get", x=x, idx=OOB_IDX, opt=opt,
               fn=lambda: jnp.asarray(x).at[jnp.asarray(OOB_IDX)].get(**kw))
# Static integers with modes and without wrapping.
for k, (shape, idx) in enumerate([((5,), 7), ((5,), -7), ((5,), -2), ((3, 4), (1, -9)),
                                  ((3, 4), (-1, slice(None), None))]):
  for mode in ["clip", "fill", None]:
    for wrap in [True, False]:
      x = make_x(shape, "float32")
      opt = {"wrap": int(wrap)}
      kw = {"wrap_negative_indices": wrap}
      if mode:
        opt["mode"] = mode
        kw["mode"] = mode
      ji = jax_index(idx)
      record(f"get_static/{k}/{mode}/{int(wrap)}", "get", x=x, idx=idx, opt=opt,
             fn=lambda: jnp.asarray(x).at[ji].get(**kw))

# ---- x.at[idx].<op>(y) ---------------------------------------------------------------------

def broadcastable_shapes(shape):
  def f(rshape):
    yield []
    if rshape:
      for s in f(rshape[1:]):
        yield rshape[0:1] + s
      if rshape[0] != 1:
        for s in f(rshape[1:]):
          yield [1] + s
  for x in f(list(reversed(shape))):
    yield tuple(reversed(x))


UPDATE_OPS = ["set", "add", "subtract", "multiply", "divide", "power", "min", "max"]


def op_fn(x, idx, op, y, **kw):
  ref = jnp.asarray(x).at[idx]
  return getattr(ref, op)(y, **kw)


def op_dtypes(op, n):
  if op in ("divide", "power"):
    return ["float32"]
  if op == "set":
    return ["float32", "int32", ["bool", "uint8", "float16", "int8"][n % 4]]
  return ["float32", "int32"] + (["uint8"] if op in ("add", "multiply", "min", "max")
                                 and n % 3 == 0 else [])


def y_for(shape, dtype, n):
  """The update: an array of x's dtype, a broadcastable shape, a C++ scalar, another dtype."""
  shapes = list(broadcastable_shapes(shape))
  ushape = shapes[n % len(shapes)]
  if n % 7 == 3:
    if dtype == "bool":
      return "lit|int|1", 1
    v = 3 if np.issubdtype(np.dtype(dtype), np.integer) else 2.5
    return f"lit|{'int' if isinstance(v, int) else 'float'}|{v}", v
  ydtype = dtype
  if n % 11 == 5 and dtype == "float32":
    ydtype = "int32"
  elif n % 11 == 6 and dtype == "int32":
    ydtype = "float32"
  y = make_x(ushape, ydtype)
  if dtype in ("float32", "float16") and n % 5 == 0:
    y = np.abs(y) + 0.5  # divide and power want positive values
  return enc_array(y), jnp.asarray(y)


def update_cases(tables, modes, unique, prefix):
  n = 0
  for s, (name, shape, idx) in enumerate(specs(tables)):
    out_shape = index_shape(shape, idx)
    for op in [UPDATE_OPS[s % 8], UPDATE_OPS[(s + 3) % 8], UPDATE_OPS[(s + 5) % 8]]:
      dts = op_dtypes(op, n)
      for dtype in [dts[s % len(dts)]]:
        mode = modes[n % len(modes)]
        n += 1
        x = make_x(shape, dtype)
        if op == "power":
          x = np.abs(x) + 0.25
        yenc, y = y_for(out_shape, dtype, n)
        ji = jax_index(idx)
        opt = {}
        kw = {}
        if mode:
          opt["mode"] = mode
          kw["mode"] = mode
        if unique:
          opt["unique"] = 1
          kw["unique_indices"] = True
        record(f"{prefix}/{name}/{op}/{dtype}", op, x=x, y=yenc, idx=idx, opt=opt,
               fn=lambda: op_fn(x, ji, op, y, **kw))


update_cases(STATIC, [None, "clip", "drop", "promise_in_bounds"], False, "upd_static")
update_cases(STATIC_OOB, [None, "clip", "drop"], False, "upd_oob")
update_cases(ADVANCED_NO_REPEATS, [None], True, "upd_adv")
update_cases(MIXED_NO_REPEATS, [None], False, "upd_mixed")
update_cases(BOOLEAN, [None], False, "upd_bool")

# Repeated indices: add/subtract/min/max apply every update (numpy's ufunc.at).
for k, (shape, idx) in enumerate([((3,), np.array([0, 1, 0, 0, 2])),
                                  ((3, 4), (np.array([[0, 2], [2, 0]]), slice(1, 3))),
                                  ((3, 4, 5), (np.array([0, 2, -2]), slice(None, None, 2),
                                               np.array([-1, 2, -1])))]):
  for op in ["add", "subtract", "min", "max", "multiply"]:
    for dtype in ["float32", "int32"]:
      out_shape = index_shape(shape, idx)
      x = make_x(shape, dtype)
      y = make_x(out_shape, dtype)
      ji = jax_index(idx)
      record(f"upd_repeat/{k}/{op}/{dtype}", op, x=x, y=enc_array(y), idx=idx,
             fn=lambda: op_fn(x, ji, op, jnp.asarray(y)))

# testWrapNegativeIndices1D (updates) and the out-of-bound modes.
UPD_OOB_IDX = np.array([-7, -5, -1, 1, 3, 7])
for op in UPDATE_OPS:
  for mode in ["fill", "clip", "promise_in_bounds", None]:
    for wrap in [True, False]:
      x = np.abs(make_x((5,), "float32")) + 0.5
      y = np.abs(make_x((6,), "float32")) + 0.5
      opt = {"wrap": int(wrap)}
      kw = {"wrap_negative_indices": wrap}
      if mode:
        opt["mode"] = mode
        kw["mode"] = mode
      record(f"upd_wrap/{op}/{mode}/{int(wrap)}", op, x=x, y=enc_array(y), idx=UPD_OOB_IDX,
             opt=opt, fn=lambda: op_fn(x, jnp.asarray(UPD_OOB_IDX), op, jnp.asarray(y), **kw))

# Types: testIndexingWeakTypes, testScatterValuesCastToTargetDType, literals, errors.
from jax._src.lax import lax as lax_internal
wx = lax_internal._convert_element_type(jnp.arange(5), np.dtype("float32"), weak_type=True)
for op in ["set", "add", "multiply"]:
  RECORDS.append((f"weak/{op}", enc_result(getattr(wx.at[0], op)(1.0))))
u = jnp.zeros(1, jnp.uint32)
record("types/u32_set_big", "set", x=np.zeros(1, np.uint32), y="lit|int|4294967295",
       idx=0, fn=lambda: u.at[0].set(2**32 - 1))
for k, (dt, v) in enumerate([("int32", 2.7), ("int32", -2.7), ("uint8", 300), ("int8", 200),
                             ("bool", 2), ("float16", 3), ("int32", True)]):
  x = make_x((3,), dt)
  kind = "float" if isinstance(v, float) else ("bool" if isinstance(v, bool) else "int")
  record(f"types/lit/{k}", "set", x=x, y=f"lit|{kind}|{int(v) if kind != 'float' else v}",
         idx=1, fn=lambda: jnp.asarray(x).at[1].set(v))
  record(f"types/lit_add/{k}", "add", x=x, y=f"lit|{kind}|{int(v) if kind != 'float' else v}",
         idx=1, fn=lambda: jnp.asarray(x).at[1].add(v))
x = make_x((2, 3), "float32")
for k, (idx, y) in enumerate([(0, np.ones(4, np.float32)), (0, np.ones((2, 3), np.float32)),
                              (np.array([0, 1]), np.ones((3, 3), np.float32))]):
  ji = jax_index(idx)
  record(f"upd_err/{k}", "set", x=x, y=enc_array(y), idx=idx,
         fn=lambda: jnp.asarray(x).at[ji].set(jnp.asarray(y)))
record("upd_err/badmode", "set", x=x, y="lit|float|1.0", idx=0, opt={"mode": "foo"},
       fn=lambda: jnp.asarray(x).at[0].set(1.0, mode="foo"))
record("upd_err/float_index", "add", x=x, y="lit|float|1.0", idx=(0, 0.0),
       fn=lambda: jnp.asarray(x).at[0, 0.0].add(1.0))
record("get_err/fill_value", "get", x=x, idx=0, opt={"mode": "foo"},
       fn=lambda: jnp.asarray(x).at[0].get(mode="foo"))

# ---- take, take_along_axis, put_along_axis (tests/lax_numpy_test.py) ----------------------

n = 0
for shape in [(3,), (3, 4), (3, 4, 5)]:
  for axis in list(range(-len(shape), len(shape))) + [None]:
    for ishape in [(), (3,), (2, 1, 3)]:
      for mode in [None, "wrap", "clip", "fill"]:
        n += 1
        dtype = ["float32", "int32", "bool", "uint8"][n % 4]
        idtype = ["int32", "int8", "uint8", "int16"][n % 4]
        x = make_x(shape, dtype)
        size = shape[axis or 0] if axis is not None else int(np.prod(shape))
        lo = 0 if idtype == "uint8" else -size
        hi = size if mode in (None,) else size + 3
        i = _rng.randint(lo, hi, size=ishape).astype(idtype)
        opt = {}
        kw = {}
        if axis is not None:
          opt["axis"] = axis
        if mode:
          opt["mode"] = mode
          kw["mode"] = mode
        if mode == "fill" and n % 2:
          opt["fill"] = 5
          kw["fill_value"] = 5
        record(f"take/{n}", "take", x=x, y=enc_array(i, idtype), opt=opt,
               fn=lambda: jnp.take(jnp.asarray(x), jnp.asarray(i), axis=axis, **kw))
x = np.arange(5, dtype=np.float32)
record("take/optional", "take", x=x, y=enc_array(np.array([0, 2, 4, 6])),
       opt={"fill": 10.0, "sorted": 1, "unique": 1},
       fn=lambda: jnp.take(jnp.asarray(x), jnp.array([0, 2, 4, 6]), unique_indices=True,
                           indices_are_sorted=True, fill_value=10.0))
record("take/empty", "take", x=np.zeros((0,), np.float32), y=enc_array(np.zeros(0, np.int32)),
       fn=lambda: jnp.take(jnp.zeros((0,)), jnp.zeros((0,), jnp.int32)))
record("take/empty_axis", "take", x=np.ones((2, 0, 4), np.float32),
       y=enc_array(np.zeros(0, np.int32)), opt={"axis": 1},
       fn=lambda: jnp.take(jnp.ones((2, 0, 4)), jnp.zeros((0,), jnp.int32), axis=1))
record("take/empty_indices", "take", x=np.ones((2, 3), np.float32),
       y=enc_array(np.zeros((0, 2), np.int32)), opt={"axis": 1},
       fn=lambda: jnp.take(jnp.ones((2, 3)), jnp.zeros((0, 2), jnp.int32), axis=1))
record("take/err_nonempty", "take", x=np.ones((2, 0, 4), np.float32),
       y=enc_array(np.array([0], np.int32)), opt={"axis": 1},
       fn=lambda: jnp.take(jnp.ones((2, 0, 4)), jnp.array([0], jnp.int32), axis=1))
record("take/err_mode", "take", x=np.ones((2, 3), np.float32), y=enc_array(np.array([0])),
       opt={"axis": 0, "mode": "foo"},
       fn=lambda: jnp.take(jnp.ones((2, 3)), jnp.array([0]), axis=0, mode="foo"))
record("take/err_raise", "take", x=np.ones((2, 3), np.float32), y=enc_array(np.array([0])),
       opt={"axis": 0, "mode": "raise"},
       fn=lambda: jnp.take(jnp.ones((2, 3)), jnp.array([0]), axis=0, mode="raise"))
record("take/err_axis", "take", x=np.ones((2, 3), np.float32), y=enc_array(np.array([0])),
       opt={"axis": 2}, fn=lambda: jnp.take(jnp.ones((2, 3)), jnp.array([0]), axis=2))


def shapes_broadcast_compatible(a, b):
  return all(x == y or x == 1 or y == 1 for x, y in zip(a[::-1], b[::-1]))


NONEMPTY = [(4,), (3, 4), (3, 1), (1, 4), (2, 1, 4), (2, 3, 4)]
def take_along_axis_configs():
  """JAX's testTakeAlongAxis table: (case number, x's shape, the indices' shape, axis)."""
  n = 0
  for xs, isb in itertools.combinations_with_replacement(NONEMPTY, 2):
    if len(xs) != len(isb) or not shapes_broadcast_compatible(xs, isb):
      continue
    for axis in list(range(len(xs))) + [-1, None]:
      n += 1
      ishape = list(isb)
      if axis is None:
        ishape = [int(np.prod(ishape))]
      else:
        ishape[axis] *= 3
      yield n, xs, ishape, axis


for n, xs, ishape, axis in take_along_axis_configs():
  dtype = ["float32", "int32", "int8"][n % 3]
  idtype = ["int32", "uint8", "int8", "int16"][n % 4]
  x = make_x(xs, dtype)
  size = int(np.prod(xs)) if axis is None else xs[axis]
  lo = 0 if idtype == "uint8" else -size
  i = _rng.randint(lo, size, size=ishape).astype(idtype)
  opt = {} if axis is None else {"axis": axis}
  record(f"take_along_axis/{n}", "take_along_axis", x=x, y=enc_array(i, idtype), opt=opt,
         fn=lambda: jnp.take_along_axis(jnp.asarray(x), jnp.asarray(i), axis=axis))
TAL_X = np.arange(10, dtype=np.float32)
TAL_I = np.array([-11, -10, -9, -5, -1, 0, 1, 5, 9, 10, 11])
for mode in [None, "fill", "clip", "promise_in_bounds"]:
  opt = {"axis": 0}
  if mode:
    opt["mode"] = mode
  record(f"take_along_axis/oob/{mode}", "take_along_axis", x=TAL_X, y=enc_array(TAL_I),
         opt=opt, fn=lambda: jnp.take_along_axis(jnp.asarray(TAL_X), jnp.asarray(TAL_I),
                                                 axis=0, mode=mode))
record("take_along_axis/fill_value", "take_along_axis", x=np.arange(5, dtype=np.float32),
       y=enc_array(np.array([0, 2, 4, 6])), opt={"mode": "fill", "fill": 10.0},
       fn=lambda: jnp.take_along_axis(jnp.arange(5.0), jnp.array([0, 2, 4, 6]), axis=None,
                                      mode="fill", fill_value=10.0))
_x = make_x((2, 1, 5, 7, 3), "float32")
_i = _rng.randint(0, 7, (2, 3, 5, 4, 1)).astype(np.uint8)
record("take_along_axis/singleton", "take_along_axis", x=_x, y=enc_array(_i), opt={"axis": -2},
       fn=lambda: jnp.take_along_axis(jnp.asarray(_x), jnp.asarray(_i), axis=-2))
record("take_along_axis/empty", "take_along_axis", x=np.ones((4, 0, 3), np.int32),
       y=enc_array(np.ones((4, 0, 3), np.int32)), opt={"axis": 1},
       fn=lambda: jnp.take_along_axis(jnp.ones((4, 0, 3), jnp.int32),
                                      jnp.ones((4, 0, 3), jnp.int32), axis=1))
for k, (xs, ish, axis, idt) in enumerate([((2, 3), (1, 1), 0, "float32"),
                                          ((2, 3), (1,), 0, "int32"),
                                          ((2, 3), (1, 1), None, "int32"),
                                          ((2, 3), (4, 1), 1, "int32")]):
  i = np.zeros(ish, idt)
  opt = {} if axis is None else {"axis": axis}
  record(f"take_along_axis/err{k}", "take_along_axis", x=np.ones(xs, np.float32),
         y=enc_array(i, idt), opt=opt,
         fn=lambda: jnp.take_along_axis(jnp.ones(xs), jnp.asarray(i), axis=axis))

n = 0
for a_shape in [(4,), (3, 4), (2, 3, 2)]:
  for axis in list(range(-len(a_shape), len(a_shape))) + [None]:
    size = int(np.prod(a_shape)) if axis is None else a_shape[axis]
    for J in sorted({0, 1, size}):
      if axis is None:
        i_shape = (J,)
      else:
        i_shape = list(a_shape)
        i_shape[axis] = J
        i_shape = tuple(i_shape)
      for v_shape in [(), (1,), i_shape]:
        for mode in [None, "promise_in_bounds", "clip"]:
          n += 1
          if n % 3:
            continue
          dtype = ["float32", "int32", "bool", "float16"][n % 4]
          a = make_x(a_shape, dtype)
          ax = 0 if axis is None else axis
          # unique indices along the axis
          perm = np.argsort(_rng.uniform(size=(size,) + tuple(
              d for k2, d in enumerate(i_shape) if k2 != (ax % len(i_shape)))), axis=0)[:J]
          i = np.moveaxis(perm, 0, ax % len(i_shape)).reshape(i_shape).astype(np.int32)
          i = np.where(_rng.uniform(size=i_shape) < 0.3, i - size, i)
          v = make_x(v_shape, dtype)
          opt = {} if axis is None else {"axis": axis}
          if mode:
            opt["mode"] = mode
          record(f"put_along_axis/{n}", "put_along_axis", x=a,
                 y=enc_array(i) + "#" + enc_array(v), opt=opt,
                 fn=lambda: jnp.put_along_axis(jnp.asarray(a), jnp.asarray(i),
                                               jnp.asarray(v), axis=axis, inplace=False,
                                               mode=mode))
for k, (i, v) in enumerate([(np.array([0]), 1.0), (np.array([[0, 1]]), np.ones(3))]):
  record(f"put_along_axis/err{k}", "put_along_axis", x=np.ones((2, 3), np.float32),
         y=enc_array(i) + "#" + enc_array(np.asarray(v, np.float32)), opt={"axis": 0},
         fn=lambda: jnp.put_along_axis(jnp.ones((2, 3)), jnp.asarray(i),
                                       jnp.asarray(v, jnp.float32), axis=0, inplace=False))

# ---- gradients -----------------------------------------------------------------------------

def cotangent(shape):
  return jnp.asarray((np.arange(int(np.prod(shape)), dtype=np.float32) % 7 - 3) / 2
                     ).reshape(shape)


GRAD_GET = (STATIC[:14:2] + [STATIC[14]] + STATIC_OOB + ADVANCED + MIXED_NO_REPEATS +
            MIXED_REPEATS + BOOLEAN[:4] + EXTRA[:2])
for name, shape, idx in specs(GRAD_GET):
  for mode in [None, "clip", "fill"]:
    if mode is None and name.startswith(("OneIntIndexOOB", "TwoIntIndicesOOB")):
      continue
    x = make_x(shape, "float32")
    ji = jax_index(idx)
    kw = {} if mode is None else {"mode": mode, "fill_value": 7.0}
    opt = {} if mode is None else {"mode": mode, "fill": 7.0}

    def f(x):
      y = jnp.asarray(x).at[ji].get(**kw)
      return jnp.sum(jnp.sin(y) * cotangent(y.shape))

    record(f"grad_get/{name}/{mode}", "grad_get", x=x, idx=idx, opt=opt,
           fn=lambda: (f(x), jax.grad(f)(jnp.asarray(x))))

GRAD_UPD = STATIC[:14:3] + STATIC_OOB[:1] + ADVANCED_NO_REPEATS + MIXED_NO_REPEATS[:2]
n = 0
for name, shape, idx in specs(GRAD_UPD):
  out_shape = index_shape(shape, idx)
  for op in ["set", "add", "subtract", "multiply", "min", "max"]:
    n += 1
    mode = [None, "clip", "drop"][n % 3]
    x = make_x(shape, "float32")
    shapes = list(broadcastable_shapes(out_shape))
    y = make_x(shapes[n % len(shapes)], "float32")
    ji = jax_index(idx)
    kw = {"unique_indices": True}
    opt = {"unique": 1}
    if mode:
      kw["mode"] = mode
      opt["mode"] = mode

    def f(x, y):
      out = op_fn(x, ji, op, y, **kw)
      return jnp.sum(jnp.sin(out) * cotangent(out.shape))

    def value_and_grads():
      gx, gy = jax.grad(f, argnums=(0, 1))(jnp.asarray(x), jnp.asarray(y))
      return f(x, y), gx, gy

    record(f"grad_upd/{name}/{op}", "grad_" + op, x=x, y=enc_array(y), idx=idx, opt=opt,
           fn=value_and_grads)
for k, (shape, idx) in enumerate([((3,), np.array([0, 1, 0, 0, 2])),
                                  ((3, 4), (np.array([[0, 2], [2, 0]]), slice(1, 3)))]):
  for op in ["add", "subtract"]:
    out_shape = index_shape(shape, idx)
    x = make_x(shape, "float32")
    y = make_x(out_shape, "float32")
    ji = jax_index(idx)

    def f(x, y):
      out = op_fn(x, ji, op, y)
      return jnp.sum(jnp.sin(out) * cotangent(out.shape))

    record(f"grad_upd/repeat{k}/{op}", "grad_" + op, x=x, y=enc_array(y), idx=idx,
           fn=lambda: (f(x, y), *jax.grad(f, argnums=(0, 1))(jnp.asarray(x), jnp.asarray(y))))
# take / take_along_axis gradients.
for k, (shape, i, axis, mode) in enumerate([((3, 4), np.array([2, -1, 0, 2]), 1, None),
                                            ((3, 4), np.array([[0, 5], [1, -1]]), 0, "clip"),
                                            ((5,), np.array([0, 7, -2]), None, None)]):
  x = make_x(shape, "float32")

  def f(x):
    y = jnp.take(x, jnp.asarray(i), axis=axis, mode=mode, fill_value=0.0)
    return jnp.sum(jnp.sin(y) * cotangent(y.shape))

  opt = {"fill": 0.0}
  if axis is not None:
    opt["axis"] = axis
  if mode:
    opt["mode"] = mode
  record(f"grad_take/{k}", "grad_take", x=x, y=enc_array(i), opt=opt,
         fn=lambda: (f(jnp.asarray(x)), jax.grad(f)(jnp.asarray(x))))
for k, (shape, i, axis) in enumerate([((3, 4), np.array([[2, -1], [0, 0], [3, 1]]), 1),
                                      ((3, 4), np.array([[0, 2, 2, 1]]), 0)]):
  x = make_x(shape, "float32")

  def f(x):
    y = jnp.take_along_axis(x, jnp.asarray(i), axis=axis)
    return jnp.sum(jnp.sin(y) * cotangent(y.shape))

  record(f"grad_take_along_axis/{k}", "grad_take_along_axis", x=x, y=enc_array(i),
         opt={"axis": axis}, fn=lambda: (f(jnp.asarray(x)), jax.grad(f)(jnp.asarray(x))))

# ---- vmap ------------------------------------------------------------------------------------

VMAP = [((3, 4), (1, slice(None, None, -1))), ((3, 4), np.array([2, 0, -1])),
        ((3, 4), (np.array([0, 2]), np.array([1, 3]))),
        ((3, 4, 5), (Ellipsis, np.array([0, 2]), slice(1, 4))),
        ((3, 4), (None, slice(1, 3), np.array([[0], [2]])))]
for k, (shape, idx) in enumerate(VMAP):
  xs = make_x((2,) + shape, "float32")
  ji = jax_index(idx)
  record(f"vmap_x/{k}", "vmap_x", x=xs, idx=idx,
         fn=lambda: jax.vmap(lambda x: x[ji])(jnp.asarray(xs)))
  y = make_x(index_shape(shape, idx), "float32")
  record(f"vmap_x_add/{k}", "vmap_x_add", x=xs, y=enc_array(y), idx=idx,
         fn=lambda: jax.vmap(lambda x: x.at[ji].add(jnp.asarray(y)))(jnp.asarray(xs)))
# Batched integer indices: vmap over the index array.
for k, (shape, ishape) in enumerate([((5,), (3, 2)), ((4, 3), (2, 3)), ((4, 3), (3,))]):
  x = make_x(shape, "float32")
  i = _rng.randint(-shape[0], shape[0], size=ishape).astype(np.int32)
  record(f"vmap_i/{k}", "vmap_i", x=x, y=enc_array(i),
         fn=lambda: jax.vmap(lambda i: jnp.asarray(x)[i])(jnp.asarray(i)))
  record(f"vmap_i_set/{k}", "vmap_i_set", x=x, y=enc_array(i),
         fn=lambda: jax.vmap(lambda i: jnp.asarray(x).at[i].set(9.0))(jnp.asarray(i)))

# ---- x.at[idx].apply(func) (IndexedUpdateTest's apply cases) --------------------------------

# The unary functions the C++ test knows by name.
APPLY_FNS = {
    "affine": lambda v: v * 2 + 1,
    "square": lambda v: v * v,
    "neg": lambda v: -v,
    "sin": jnp.sin,
    "cos": jnp.cos,
    "sqrt": jnp.sqrt,
    "log": jnp.log,
    "exp": jnp.exp,
    "negative": jnp.negative,
}
APPLY_TABLES = STATIC[:14:2] + ADVANCED + MIXED_REPEATS + BOOLEAN[:4] + EXTRA[:6]
for n, (name, shape, idx) in enumerate(specs(APPLY_TABLES)):
  dtype = ["float32", "int32", "float32", "uint8", "int8"][n % 5]
  fname = ["affine", "square", "neg", "sin"][n % 4]
  if fname == "sin" and dtype != "float32":
    fname = "affine"
  x = make_x(shape, dtype)
  ji = jax_index(idx)
  f = APPLY_FNS[fname]
  record(f"apply/{name}", "apply", x=x, idx=idx, opt={"fn": fname},
         fn=lambda: jnp.asarray(x).at[ji].apply(f))
# Repeated indices apply func once per repeat; out-of-bound ones by mode.
APPLY_IDX = [np.array([0, 0, 2]), np.array([1, 1, 1, 1, 3]), np.array([[0], [0], [4]]),
             np.array([0, 7, -1]), np.array([-6, 5, 2, 2]), np.array([], np.int32)]
for k, i in enumerate(APPLY_IDX):
  for mode in [None, "clip", "drop", "fill", "promise_in_bounds"]:
    for wrap in [True, False]:
      for dtype in ["float32", "int32"]:
        if (k + len(mode or "") + wrap) % 2 and dtype == "int32":
          continue
        x = make_x((5,), dtype)
        opt = {"fn": "affine", "wrap": int(wrap)}
        kw = {"wrap_negative_indices": wrap}
        if mode:
          opt["mode"] = mode
          kw["mode"] = mode
        record(f"apply_oob/{k}/{mode}/{int(wrap)}/{dtype}", "apply", x=x, idx=i, opt=opt,
               fn=lambda: jnp.asarray(x).at[jnp.asarray(i)].apply(APPLY_FNS["affine"], **kw))
for k, (shape, idx) in enumerate([((3, 4), (slice(None), np.array([0, 0]))),
                                  ((3, 4), (np.array([[0], [2]]), np.array([1, 1, 3]))),
                                  ((2, 3, 4), (Ellipsis, np.array([3, 3]))),
                                  ((3, 4), ()), ((3, 4), (None, 1)), ((3, 4), True),
                                  ((3, 4), (np.array([2, 0]), slice(1, 3))),
                                  ((3, 4), (slice(None), np.array([[3], [1]])))]):
  x = make_x(shape, "float32")
  ji = jax_index(idx)
  # unique_indices=True promises no repeats (with repeats, the result is unspecified).
  for unique in [False, True] if k >= 6 else [False]:
    opt = {"fn": "affine"}
    if unique:
      opt["unique"] = 1
    record(f"apply_windows/{k}/{int(unique)}", "apply", x=x, idx=idx, opt=opt,
           fn=lambda: jnp.asarray(x).at[ji].apply(APPLY_FNS["affine"], unique_indices=unique))
# testIndexApply: numpy ufuncs' .at over random repeated indices (traced under jit), and a
# slice; testIndexApplyBatchingBug; testIndexUpdateScalarBug.
for fname in ["negative", "sin", "cos", "square", "sqrt", "log", "exp"]:
  x = make_x((10,), "float32")
  i = _rng.randint(-10, 10, size=(10,)).astype(np.int32)
  record(f"apply_i/{fname}", "apply_i", x=x, y=enc_array(i), opt={"fn": fname},
         fn=lambda: jnp.asarray(x).at[jnp.asarray(i)].apply(APPLY_FNS[fname]))
  record(f"apply/slice_{fname}", "apply", x=x, idx=slice(1, 5), opt={"fn": fname},
         fn=lambda: jnp.asarray(x).at[1:5].apply(APPLY_FNS[fname]))
record("vmap_xi_apply/0", "vmap_xi_apply", x=np.array([[1, 2, 3, 4, 5, 6]], np.int32),
       y=enc_array(np.array([3])),
       fn=lambda: jax.vmap(lambda a, i: a.at[i].apply(lambda v: v - 1))(
           jnp.array([[1, 2, 3, 4, 5, 6]]), jnp.array([3])))
record("apply/scalar_cos", "apply", x=np.arange(10, dtype=np.float32), idx=0,
       opt={"fn": "cos"}, fn=lambda: jnp.arange(10.).at[0].apply(jnp.cos))
# Not differentiable (scatter_apply has no JVP), under jit and vmap as eagerly.
for k, (shape, idx) in enumerate([((5,), 1), ((5,), np.array([0, 0, 3])),
                                  ((3, 4), (slice(1, 3), np.array([2])))]):
  x = make_x(shape, "float32")
  ji = jax_index(idx)
  record(f"grad_apply/{k}", "grad_apply", x=x, idx=idx,
         fn=lambda: jax.grad(lambda a: jnp.sum(a.at[ji].apply(jnp.sin)))(jnp.asarray(x)))
  xs = make_x((2,) + shape, "float32")
  record(f"vmap_x_apply/{k}", "vmap_x_apply", x=xs, idx=idx,
         fn=lambda: jax.vmap(lambda a: a.at[ji].apply(APPLY_FNS["affine"]))(jnp.asarray(xs)))
# Differentiating something else through an apply of a constant works.
x = make_x((4,), "float32")
w = make_x((4,), "float32")
record("grad_apply_other/0", "grad_apply_other", x=x, y=enc_array(w),
       idx=np.array([1, 1, 2]),
       fn=lambda: jax.grad(lambda b: jnp.sum(jnp.asarray(x).at[jnp.array([1, 1, 2])].apply(
           jnp.sin) * b))(jnp.asarray(w)))
for k, (shape, ishape) in enumerate([((5,), (3, 2)), ((4, 3), (2, 3))]):
  x = make_x(shape, "float32")
  i = _rng.randint(-shape[0], shape[0], size=ishape).astype(np.int32)
  record(f"vmap_i_apply/{k}", "vmap_i_apply", x=x, y=enc_array(i),
         fn=lambda: jax.vmap(lambda i: jnp.asarray(x).at[i].apply(APPLY_FNS["affine"]))(
             jnp.asarray(i)))

# ---- take_along_axis(mode="one_hot"), and wrap_negative_indices ---------------------------

for n, xs, ishape, axis in take_along_axis_configs():
  dtype = ["float32", "int32", "bool", "uint8", "float16"][n % 5]
  x = make_x(xs, dtype)
  size = int(np.prod(xs)) if axis is None else xs[axis]
  i = _rng.randint(-size - 2, size + 2, size=ishape).astype(np.int32)
  opt = {"mode": "one_hot"}
  if axis is not None:
    opt["axis"] = axis
  record(f"take_along_axis_one_hot/{n}", "take_along_axis", x=x, y=enc_array(i), opt=opt,
         fn=lambda: jnp.take_along_axis(jnp.asarray(x), jnp.asarray(i), axis=axis,
                                        mode="one_hot"))
for mode in [None, "fill", "clip", "promise_in_bounds", "one_hot"]:
  for wrap in [True, False]:
    ti = TAL_I if mode in (None, "fill", "one_hot") or wrap else np.abs(TAL_I) % 10
    opt = {"axis": 0, "wrap": int(wrap)}
    if mode:
      opt["mode"] = mode
    record(f"take_along_axis/wrap/{mode}/{int(wrap)}", "take_along_axis", x=TAL_X,
           y=enc_array(ti), opt=opt,
           fn=lambda: jnp.take_along_axis(jnp.asarray(TAL_X), jnp.asarray(ti), axis=0,
                                          mode=mode, wrap_negative_indices=wrap))
# NaN and infinity anywhere along the axis make a one-hot take NaN (0 * inf), as in JAX.
_nx = np.array([[1.0, np.inf, 3.0], [np.nan, 5.0, 6.0]], np.float32)
record("take_along_axis_one_hot/nonfinite", "take_along_axis", x=_nx,
       y=enc_array(np.array([[0], [2]])), opt={"mode": "one_hot", "axis": 1},
       fn=lambda: jnp.take_along_axis(jnp.asarray(_nx), jnp.array([[0], [2]]), axis=1,
                                      mode="one_hot"))
for k, (shape, i, axis) in enumerate([((3, 4), np.array([[2, -1], [0, 7], [3, 1]]), 1),
                                      ((3, 4), np.array([[0, 2, 2, 1]]), 0)]):
  x = make_x(shape, "float32")

  def f(x):
    y = jnp.take_along_axis(x, jnp.asarray(i), axis=axis, mode="one_hot")
    return jnp.sum(jnp.sin(y) * cotangent(y.shape))

  record(f"grad_take_along_axis_one_hot/{k}", "grad_take_along_axis", x=x, y=enc_array(i),
         opt={"axis": axis, "mode": "one_hot"},
         fn=lambda: (f(jnp.asarray(x)), jax.grad(f)(jnp.asarray(x))))
for k, mode in enumerate([None, "clip", "one_hot"]):
  xs = make_x((2, 3, 4), "float32")
  i = _rng.randint(-4, 4, size=(3, 2)).astype(np.int32)
  opt = {"axis": 1}
  if mode:
    opt["mode"] = mode
  record(f"vmap_take_along_axis/{k}", "vmap_take_along_axis", x=xs, y=enc_array(i), opt=opt,
         fn=lambda: jax.vmap(lambda a: jnp.take_along_axis(a, jnp.asarray(i), axis=1,
                                                           mode=mode))(jnp.asarray(xs)))

# ---- lax.scatter_apply (the C++ test has the same cases by number) ---------------------------

S_ = jax.lax.ScatterDimensionNumbers
LAX_APPLY = [
    ((5,), [[0], [0], [3]], S_((), (0,), (0,)), (3,), None),
    ((5,), [[0], [9], [-1]], S_((), (0,), (0,)), (3,), "clip"),
    ((5,), [[0], [9], [4]], S_((), (0,), (0,)), (3,), "promise_in_bounds"),
    ((3, 4), [[1], [1]], S_((1,), (0,), (0,)), (2, 4), None),
    ((3, 4), [[1], [3], [0]], S_((), (1,), (1,), (0,), (0,)), (3,), None),
    ((3, 4), [[1], [1]], S_((1,), (0,), (0,)), (2, 5), None),
]
for k, (shape, i, dn, ushape, mode) in enumerate(LAX_APPLY):
  x = make_x(shape, "float32")
  i = np.array(i, np.int32)
  record(f"lax_scatter_apply/{k}", "lax_scatter_apply", x=x, y=enc_array(i),
         fn=lambda: jax.lax.scatter_apply(jnp.asarray(x), jnp.asarray(i),
                                          APPLY_FNS["affine"], dn, update_shape=ushape,
                                          mode=mode))

# ---- single tests of lax_numpy_indexing_test.py's IndexedUpdateTest --------------------------

# testIndexMulGradFailsIfNotUnique (jvp with respect to the operand and the updates).
record("misc/mul_jvp_not_unique", "mul_jvp", x=np.ones((100,), np.float32),
       y=enc_array(np.ones((10,), np.float32)), idx=np.ones((10,), np.int32),
       fn=lambda: jax.jvp(lambda x, z: x.at[jnp.ones((10,), jnp.int32)].mul(z),
                          (jnp.ones(100), jnp.ones(10)), (jnp.ones(100), jnp.ones(10)))[1])
# testScatterValuesCastToTargetDType: a C++ integer too large for int32 into uint32.
record("misc/uint32_set", "set", x=np.zeros((1,), np.uint32), y="lit|int|4294967295", idx=0,
       fn=lambda: jnp.zeros(1, jnp.uint32).at[0].set(2**32 - 1))
# testSegmentSumBehavior.
_ids = np.array([0, 0, 0, 1, 2, 2, 3, 3])
record("misc/segment_sum", "add", x=np.zeros((4,), np.float32),
       y=enc_array(np.array([5, 1, 7, 2, 3, 4, 1, 3], np.float32)), idx=_ids,
       fn=lambda: jnp.zeros(4).at[jnp.asarray(_ids)].add(
           jnp.array([5, 1, 7, 2, 3, 4, 1, 3], jnp.float32)))
# testGradOfVmapOfScatter: jacrev of a clipped get, and of its vmap over the index.
record("misc/jacrev_clip", "jacrev_clip", x=np.array([1.0], np.float32),
       y=enc_array(np.array([1])),
       fn=lambda: jax.jacrev(lambda x, i: x.at[i].get(mode="clip"))(jnp.array([1.0]),
                                                                  jnp.array([1])))
record("misc/jacrev_vmap_clip", "jacrev_vmap_clip", x=np.array([1.0], np.float32),
       y=enc_array(np.array([1])),
       fn=lambda: jax.jacrev(jax.vmap(lambda x, i: x.at[i].get(mode="clip"), (None, 0)))(
           jnp.array([1.0]), jnp.array([1])))

# ---- printed equations: make_jaxpr's gather and scatter equations ---------------------------

X34 = jnp.zeros((3, 4), jnp.float32)
I2 = jnp.zeros((2,), jnp.int32)
Y24 = jnp.zeros((2, 4), jnp.float32)
G = jax.lax.GatherDimensionNumbers
S = jax.lax.ScatterDimensionNumbers
JAXPRS = {
    "getitem": (lambda x, i: x[i], (X34, I2)),
    "getitem_2d": (lambda x, i, j: x[i, :, j],
                   (jnp.zeros((2, 3, 4)), jnp.zeros((5,), jnp.int32),
                    jnp.zeros((5,), jnp.int32))),
    "get_fill": (lambda x, i: x.at[i].get(mode="fill"), (X34, I2)),
    "get_fill_int": (lambda x, i: x.at[i].get(mode="fill"), (jnp.zeros((3, 4), jnp.int32), I2)),
    "get_fill_uint8": (lambda x, i: x.at[i].get(mode="fill"),
                       (jnp.zeros((6,), jnp.uint8), I2)),
    "get_fill_bool": (lambda x, i: x.at[i].get(mode="fill"), (jnp.zeros((6,), bool), I2)),
    "get_fill_value": (lambda x, i: x.at[i].get(mode="fill", fill_value=2.5), (X34, I2)),
    "get_clip": (lambda x, i: x.at[i].get(mode="clip"), (X34, I2)),
    "get_sorted": (lambda x, i: x.at[i].get(indices_are_sorted=True, unique_indices=True),
                   (X34, I2)),
    "set": (lambda x, i, y: x.at[i].set(y), (X34, I2, Y24)),
    "add": (lambda x, i, y: x.at[i].add(y), (X34, I2, Y24)),
    "multiply": (lambda x, i, y: x.at[i].multiply(y), (X34, I2, Y24)),
    "min": (lambda x, i, y: x.at[i].min(y, mode="clip"), (X34, I2, Y24)),
    "max": (lambda x, i, y: x.at[i].max(y, mode="promise_in_bounds"), (X34, I2, Y24)),
    "add_int": (lambda x, i, y: x.at[i].add(y),
                (jnp.zeros((3, 4), jnp.int32), I2, jnp.zeros((2, 4), jnp.int32))),
    "take_along_axis": (lambda x, i: jnp.take_along_axis(x, i, axis=1),
                        (X34, jnp.zeros((3, 2), jnp.int32))),
    "lax_gather_batching": (
        lambda x, i: jax.lax.gather(x, i, G(offset_dims=(1,), collapsed_slice_dims=(1,),
                                            start_index_map=(1,), operand_batching_dims=(0,),
                                            start_indices_batching_dims=(0,)),
                                    slice_sizes=(1, 1, 5), mode="clip"),
        (jnp.zeros((3, 4, 5)), jnp.zeros((3, 1), jnp.int32))),
    "lax_scatter_add_batching": (
        lambda x, i, y: jax.lax.scatter_add(
            x, i, y, S(update_window_dims=(1,), inserted_window_dims=(1,),
                       scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
                       scatter_indices_batching_dims=(0,)), mode="fill"),
        (jnp.zeros((3, 4, 5)), jnp.zeros((3, 1), jnp.int32), jnp.zeros((3, 5)))),
    "grad_getitem": (jax.grad(lambda x, i: jnp.sum(x[i])), (X34, I2)),
}
for name, (fn, args) in JAXPRS.items():
  RECORDS.append(("jaxpr/" + name, str(jax.make_jaxpr(fn)(*args))))

# ---- errors under jit ------------------------------------------------------------------------

record("jit/bool", "jit_getitem", x=np.zeros((3,), np.float32),
       idx=np.array([True, True, False]),
       fn=lambda: jax.jit(lambda x, i: x[i])(jnp.zeros(3), jnp.array([True, True, False])))

with open(OUT, "w") as f:
  for name, text in RECORDS:
    f.write(f"{name}\t{text.encode('unicode_escape').decode('ascii')}\n")
print(f"wrote {len(RECORDS)} records to {OUT}")

"""The worked examples of the DAP specs, transcribed: 0.10.0 chapter 2
(2.1-2.12) and 0.9.0 chapter 7 (7.1-7.3).

Each example: the full array, the ``from_global`` options that produce it,
and per dimension, per grid coordinate, the dimension dict printed in the
spec with the global indices of the buffer printed there (read off the
example's buffers). Since dim_data is identical along an axis, a rank's
dicts and buffer follow from its grid coordinates.

The spec prints 2.1/7.1 buffers as 1-d, although dim_data has two dicts
(the rule "dim_data must match buffer ndim" makes them (1, 10)); they are
used as (1, 10) here.
"""
import numpy as np

RANDOM_2x10 = np.array([[0.2, 0.6, 0.9, 0.6, 0.8, 0.4, 0.2, 0.2, 0.3, 0.5],
                        [0.9, 0.2, 1.0, 0.4, 0.5, 0.0, 0.6, 0.8, 0.6, 1.0]])
PADDED_18 = np.array([0.2, 0.6, 0.9, 0.6, 0.8, 0.4, 0.2, 0.2, 0.3,
                      0.9, 0.2, 1.0, 0.4, 0.5, 0.0, 0.6, 0.8, 0.6])
UNSTRUCTURED_INDICES = [[19, 1, 0, 12, 2, 15, 4], [6, 13, 3],
                        [10, 25, 5, 21, 7, 18, 11, 26, 29, 24, 23, 28, 14, 20, 9, 16, 27, 8, 17, 22]]
UNSTRUCTURED_BUFFERS = [[0.7, 0.5, 0.9, 0.2, 0.7, 0.0, 0.5], [0.1, 0.5, 0.9],
                        [0.1, 0.8, 0.4, 0.8, 0.2, 0.4, 0.4, 0.3, 0.5, 0.7,
                         0.4, 0.7, 0.6, 0.2, 0.8, 0.5, 0.3, 0.8, 0.4, 0.2]]


def _unstructured_full():
    full = np.zeros(30)
    for idx, buf in zip(UNSTRUCTURED_INDICES, UNSTRUCTURED_BUFFERS):
        full[idx] = buf
    return full


def b(p, P, size, start, stop, **extra):
    return {"dist_type": "b", "proc_grid_rank": p, "proc_grid_size": P, "size": size,
            "start": start, "stop": stop, **extra}


def c(p, P, size, start, **extra):
    return {"dist_type": "c", "proc_grid_rank": p, "proc_grid_size": P, "size": size,
            "start": start, **extra}


def u(p, P, size, indices, **extra):
    return {"dist_type": "u", "proc_grid_rank": p, "proc_grid_size": P, "size": size,
            "indices": np.array(indices), **extra}


A59 = np.arange(45.0).reshape(5, 9)
A593 = np.arange(135.0).reshape(5, 9, 3)

# name -> (version, full array, from_global options, dims)
# dims[k][p] = (dim dict of grid coordinate p along dim k, global indices of its buffer)
EXAMPLES = {
    "2.1": ("0.10.0", RANDOM_2x10, dict(dist=("b", "b"), grid=(2, 1)), [
        [(b(0, 2, 2, 0, 1), [0]), (b(1, 2, 2, 1, 2), [1])],
        [(b(0, 1, 10, 0, 10), range(10))]]),
    "2.2": ("0.10.0", PADDED_18, dict(dist=("b",), grid=(2,), padding=((1, 1),)), [
        [(b(0, 2, 18, 0, 10, padding=(1, 1)), range(0, 10)),
         (b(1, 2, 18, 8, 18, padding=(1, 1)), range(8, 18))]]),
    "2.3": ("0.10.0", _unstructured_full(),
            dict(dist=("u",), grid=(3,), indices=(UNSTRUCTURED_INDICES,)), [
        [(u(p, 3, 30, idx), idx) for p, idx in enumerate(UNSTRUCTURED_INDICES)]]),
    "2.4": ("0.10.0", A59, dict(dist=("b", "b"), grid=(3, 1)), [
        [(b(0, 3, 5, 0, 2, padding=[0, 0]), [0, 1]), (b(1, 3, 5, 2, 4, padding=[0, 0]), [2, 3]),
         (b(2, 3, 5, 4, 5, padding=[0, 0]), [4])],
        [(b(0, 1, 9, 0, 9, padding=[0, 0]), range(9))]]),
    "2.5": ("0.10.0", A59, dict(dist=("b", "b"), grid=(1, 3)), [
        [(b(0, 1, 5, 0, 5, padding=[0, 0]), range(5))],
        [(b(0, 3, 9, 0, 3, padding=[0, 0]), [0, 1, 2]), (b(1, 3, 9, 3, 6, padding=[0, 0]), [3, 4, 5]),
         (b(2, 3, 9, 6, 9, padding=[0, 0]), [6, 7, 8])]]),
    "2.6": ("0.10.0", A59, dict(dist=("b", "b"), grid=(2, 2)), [
        [(b(0, 2, 5, 0, 3), [0, 1, 2]), (b(1, 2, 5, 3, 5), [3, 4])],
        [(b(0, 2, 9, 0, 5), [0, 1, 2, 3, 4]), (b(1, 2, 9, 5, 9), [5, 6, 7, 8])]]),
    "2.7": ("0.10.0", A59, dict(dist=("b", "c"), grid=(2, 2)), [
        [(b(0, 2, 5, 0, 3), [0, 1, 2]), (b(1, 2, 5, 3, 5), [3, 4])],
        [(c(0, 2, 9, 0), [0, 2, 4, 6, 8]), (c(1, 2, 9, 1), [1, 3, 5, 7])]]),
    "2.8": ("0.10.0", A59, dict(dist=("c", "c"), grid=(2, 2)), [
        [(c(0, 2, 5, 0), [0, 2, 4]), (c(1, 2, 5, 1), [1, 3])],
        [(c(0, 2, 9, 0), [0, 2, 4, 6, 8]), (c(1, 2, 9, 1), [1, 3, 5, 7])]]),
    "2.9": ("0.10.0", A59, dict(dist=("b", "b"), grid=(2, 2), sizes=((1, 4), (2, 7))), [
        [(b(0, 2, 5, 0, 1, padding=[0, 0]), [0]), (b(1, 2, 5, 1, 5, padding=[0, 0]), [1, 2, 3, 4])],
        [(b(0, 2, 9, 0, 2, padding=[0, 0]), [0, 1]), (b(1, 2, 9, 2, 9, padding=[0, 0]), range(2, 9))]]),
    "2.10": ("0.10.0", A59, dict(dist=("c", "c"), grid=(2, 2), block_size=(2, 2)), [
        [(c(0, 2, 5, 0, block_size=2), [0, 1, 4]), (c(1, 2, 5, 2, block_size=2), [2, 3])],
        [(c(0, 2, 9, 0, block_size=2), [0, 1, 4, 5, 8]), (c(1, 2, 9, 2, block_size=2), [2, 3, 6, 7])]]),
    "2.11": ("0.10.0", A59, dict(dist=("u", "u"), grid=(2, 2),
                                 indices=([[3, 0], [4, 2, 1]], [[2, 3, 7, 1], [6, 5, 8, 0, 4]])), [
        [(u(0, 2, 5, [3, 0]), [3, 0]), (u(1, 2, 5, [4, 2, 1]), [4, 2, 1])],
        [(u(0, 2, 9, [2, 3, 7, 1]), [2, 3, 7, 1]), (u(1, 2, 9, [6, 5, 8, 0, 4]), [6, 5, 8, 0, 4])]]),
    "2.12": ("0.10.0", A593, dict(dist=("c", "b", "c"), grid=(2, 2, 2)), [
        [(c(0, 2, 5, 0), [0, 2, 4]), (c(1, 2, 5, 1), [1, 3])],
        [(b(0, 2, 9, 0, 5), range(0, 5)), (b(1, 2, 9, 5, 9), range(5, 9))],
        [(c(0, 2, 3, 0), [0, 2]), (c(1, 2, 3, 1), [1])]]),
    "7.1": ("0.9.0", RANDOM_2x10, dict(dist=("b", "n"), grid=(2, 1)), [
        [(b(0, 2, 2, 0, 1), [0]), (b(1, 2, 2, 1, 2), [1])],
        [({"size": 10, "dist_type": "n"}, range(10))]]),
    "7.2": ("0.9.0", PADDED_18, dict(dist=("b",), grid=(2,), padding=((1, 1),)), [
        [(b(0, 2, 18, 0, 9, padding=(1, 1)), range(0, 10)),
         (b(1, 2, 18, 9, 18, padding=(1, 1)), range(8, 18))]]),
    "7.3": ("0.9.0", _unstructured_full(),
            dict(dist=("u",), grid=(3,), indices=(UNSTRUCTURED_INDICES,)), [
        [({**u(p, 3, 30, []), "indices": list(idx)}, idx) for p, idx in enumerate(UNSTRUCTURED_INDICES)]]),
}


def nranks(name):
    return int(np.prod([len(d) for d in EXAMPLES[name][3]]))


def expected_for(name, coords):
    """(buffer, dim_data) the spec prints for the rank at grid coordinates."""
    _, full, _, dims = EXAMPLES[name]
    picks = [dims[k][p] for k, p in enumerate(coords)]
    buffer = full[np.ix_(*[list(idx) for _, idx in picks])]
    return buffer, tuple(dict(dd) for dd, _ in picks)


def normalise(dd):
    """Drop optional keys at their default values; make values comparable."""
    out = {}
    for k, v in dd.items():
        if k == "padding" and tuple(v) == (0, 0):
            continue
        if (k, v) in (("periodic", False), ("one_to_one", False), ("block_size", 1)):
            continue
        out[k] = list(np.asarray(v).tolist()) if k in ("indices", "padding") else v
    return out

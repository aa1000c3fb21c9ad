import numpy as np


# The judge's alone (the learner's kernel never runs this): the right gradient, and what
# the usual slips give, for the feedback.
def _softmax(z, axis):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


_ONE_HOT = np.eye(_C)[y]
_dZ = (_softmax(Z, 1) - _ONE_HOT) / _N


def _normalised_over_examples(dZ):
    # the probabilities behind dZ (dZ * N + one_hot) sum to 1 down each column, not along each row
    try:
        probs = np.asarray(dZ, dtype=np.float64) * len(y) + _ONE_HOT
        return probs.shape == Z.shape and np.allclose(probs.sum(axis=0), 1.0) and not np.allclose(probs.sum(axis=1), 1.0)
    except Exception:
        return False


def _close(a, b):
    try:
        return np.allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=1e-9, atol=1e-12)
    except Exception:
        return False


def _stopped_at_row_sums(names):
    # the learner's code stopped before dZ_np with the exponentials computed (an array equal to
    # np.exp(Z - Z.max(axis=1, keepdims=True)), or to np.exp(Z)) and no softmax of them yet,
    # on data where dividing them by their row sums without keepdims raises: (N, C) / (N,)
    if "dZ_np" in names or Z.shape[0] == Z.shape[1]:
        return False
    arrays = [v for v in names.values() if isinstance(v, np.ndarray) and v.shape == Z.shape]
    with np.errstate(over="ignore", invalid="ignore"):
        exps = (np.exp(Z - Z.max(axis=1, keepdims=True)), np.exp(Z))
        has_exps = any(np.allclose(a, e, rtol=1e-12, atol=0.0) for a in arrays for e in exps)
        has_softmax = any(np.allclose(a, _softmax(Z, 1), rtol=1e-12, atol=1e-15) for a in arrays)
    return has_exps and not has_softmax

import torch
from torch import nn

X = torch.randn(300, 4, device=DEVICE)
y = (X[:, 0] - X[:, 2] > 0).long()
# torch's layers, each recording what its own forward saw (the prelude's _Linear, _ReLU, _Dropout)
model = nn.Sequential(_Linear(4, 64), _ReLU(), _Dropout(0.3), _Linear(64, 2)).to(DEVICE)
_KINDS = ("Linear(4, 64)", "ReLU", "Dropout", "Linear(64, 2)")
_opt = torch.optim.Adam(model.parameters(), lr=0.03)
for _ in range(40):
    _opt.zero_grad()
    nn.functional.cross_entropy(model(X), y).backward()
    _opt.step()
model.eval()

x = torch.tensor([[0.1, 0.0, 0.0, 0.3], [2.0, 0.0, -2.0, 0.0], [0.0, 1.0, 0.1, 0.0], [-1.5, 0.5, 1.5, 0.0]], device=DEVICE)
with torch.no_grad():
    _eval_probs = model(x).softmax(dim=1)


def mode_after(fn, start_in_train):
    model.train(start_in_train)
    fn(model, x, 10)
    after = model.training
    model.eval()
    return after


def modes_after(fn, start_in_train):
    """Every module's training flag (model.modules() order) after fn ran on a model whose modules were all in one mode."""
    model.train(start_in_train)
    fn(model, x, 10)
    after = [m.training for m in model.modules()]
    model.eval()
    return after


def _submodule_left(fn, start_in_train):
    # the model's own flag came back, yet some submodule's did not
    try:
        after = modes_after(fn, start_in_train)
    except Exception:
        return False
    return after[0] == start_in_train and any(flag != start_in_train for flag in after)


def _passes(fn, n=5):
    # what the layers' own forwards recorded while fn(model, x, n) ran (model(x),
    # model.forward(x) and layers called one by one all count; hooks play no part)
    try:
        _, seen = _watching(fn, model, x, n)
    finally:
        model.eval()
    return seen


def graphs_built(fn):
    """How many of fn's forward passes (of 5, on a non-empty batch) recorded an autograd
    graph: a grad_fn on the output of the model's first layer."""
    return sum(graph for kind, rows, *_, graph in _passes(fn) if kind == _KINDS[0] and rows > 0)


# two other inputs, for the checks that call mc_predict with its own x and n
_x2 = torch.tensor([[1.0, -0.5, 0.5, 0.2], [-0.3, 0.8, 0.0, -1.0]], device=DEVICE)


def forward_calls(fn, n=5):
    """The rows each layer of the model saw at each of its calls while fn(model, x, n) ran:
    n calls of len(x) rows each, at every layer, for n passes of model(x)."""
    seen = _passes(fn, n)
    return {kind: [rows for k, rows, *_ in seen if k == kind] for kind in _KINDS}


def dropout_modes(fn, n=5):
    """The Dropout layer's training flag at each of its calls on a non-empty batch while fn(model, x, n) ran."""
    return [training for kind, rows, training, *_ in _passes(fn, n) if kind == "Dropout" and rows > 0]


def _empty_calls(fn):
    # some layer ran on an empty batch, which computes nothing
    try:
        return any(rows == 0 for _, rows, *_ in _passes(fn))
    except Exception:
        return False


def probs_on_other(fn):
    """fn(model, _x2, 200) from a fixed random seed: 200 samples of 2 other inputs."""
    torch.manual_seed(7)
    try:
        return fn(model, _x2, 200)
    finally:
        model.eval()


def _samples(n, inputs, combine):
    # n dropout samples of inputs from the seed probs_on_other uses, combined
    torch.manual_seed(7)
    model.train()
    with torch.no_grad():
        outs = torch.stack([model(inputs) for _ in range(n)])
    model.eval()
    return combine(outs)


def _fixed_count(fn):
    # on 200 samples the result is 200/400 of the average: the sum divided by 400 typed in
    got = probs_on_other(fn)
    return got.shape == (2, 2) and torch.allclose(got, _samples(200, _x2, lambda o: o.softmax(dim=2).mean(0)) / 2, rtol=1e-4, atol=1e-6)


def _ignores_its_input(fn):
    got = probs_on_other(fn)
    return isinstance(got, torch.Tensor) and got.dim() > 0 and got.shape[0] == len(x) != len(_x2)


def _averages_logits(fn):
    # softmax of the mean logit instead of the mean of the softmaxes
    got = probs_on_other(fn)
    return got.shape == (2, 2) and torch.allclose(got, _samples(200, _x2, lambda o: o.mean(0).softmax(dim=1)), rtol=1e-4, atol=1e-6)

import torch
from torch import nn

X = torch.randn(200, 4, device=DEVICE)
# Noisy labels, so no model scores 1.0 and an accuracy typed in cannot match by luck.
y = (X[:, 0] + X[:, 1] + 0.7 * torch.randn(200, device=DEVICE) > 0).long()
# torch's layers, each recording what its own forward saw (the prelude's _Linear, _ReLU, _Dropout)
model = nn.Sequential(_Linear(4, 32), _ReLU(), _Dropout(0.5), _Linear(32, 2)).to(DEVICE)
_KINDS = ("Linear(4, 32)", "ReLU", "Dropout", "Linear(32, 2)")

# a short training run, so that accuracy means something
_opt = torch.optim.Adam(model.parameters(), lr=0.05)
for _ in range(40):
    _opt.zero_grad()
    nn.functional.cross_entropy(model(X), y).backward()
    _opt.step()
model.train()


def what_evaluate_does(evaluate, start_in_train=True):
    """Runs evaluate on the model and reports what the model's layers recorded in their own
    forward (so model(X), model.forward(X) and layers called one by one all count): the
    Dropout layer's mode and whether autograd recorded a graph, at every call on a
    non-empty batch, and the rows each layer saw in all."""
    model.train(start_in_train)
    torch.set_grad_enabled(True)  # as a training loop that calls evaluate has it
    _, seen = _watching(evaluate, model, X, y)
    grad_after = torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    real = [record for record in seen if record[1] > 0]  # an empty batch computes nothing
    drops = [training for kind, _, training, _, _ in real if kind == "Dropout"]
    # None when evaluate never ran the model on a row
    report = {
        "Dropout in training mode during a forward": any(drops) if real else None,
        "graph built during a forward": any(graph for *_, graph in real) if real else None,
        "rows each layer saw, all calls together": {kind: sum(r for k, r, *_ in seen if k == kind) for kind in _KINDS},
        "training flag afterwards": model.training,
        "every module's training flag afterwards": [m.training for m in model.modules()],
        "autograd enabled afterwards": grad_after,
    }
    model.train()
    return report


def _report(evaluate):
    try:
        return what_evaluate_does(evaluate)
    except Exception:
        return {}


def _dropout_rates_in_training(evaluate):
    # for the feedback only: the p of the Dropout at each of its calls on a non-empty batch in
    # training mode while evaluate ran, read by a pre-hook (a layer's forward called directly
    # passes it by, and then nothing is read): p = 0 in training mode drops nothing
    rates = []

    def note(layer, args):
        if layer.training and args and isinstance(args[0], torch.Tensor) and args[0].numel() > 0:
            rates.append(float(layer.p))

    hooks = [m.register_forward_pre_hook(note) for m in model.modules() if isinstance(m, nn.Dropout)]
    try:
        _report(evaluate)
    finally:
        for hook in hooks:
            hook.remove()
    return rates


def _skips_layers(evaluate):
    # some layer of the model saw rows while evaluate ran, another saw none
    rows = _report(evaluate).get("rows each layer saw, all calls together") or {}
    return any(rows.values()) and not all(rows.values())


def _submodule_left(evaluate, start_in_train):
    # the model's own flag came back, yet some submodule's did not
    try:
        after = what_evaluate_does(evaluate, start_in_train)["every module's training flag afterwards"]
    except Exception:
        return False
    return after[0] == start_in_train and any(flag != start_in_train for flag in after)


# the first 120 rows: an evaluate that uses the global X and y, or divides by 200 typed in, is wrong here
_XP, _YP = X[:120], y[:120]


def accuracy_on_part(evaluate):
    """evaluate's accuracy on the first 120 rows of (X, y), the model in training mode before."""
    model.train()
    try:
        return evaluate(model, _XP, _YP)
    finally:
        model.train()


def _true_accuracy(X_, y_):
    was = model.training
    model.eval()
    with torch.no_grad():
        acc = (model(X_).argmax(dim=1) == y_).float().mean().item()
    model.train(was)
    return acc


def _part_matches(evaluate, value):
    try:
        got = float(accuracy_on_part(evaluate))
    except Exception:
        return False
    return abs(got - value) < 1e-6 and abs(_true_accuracy(_XP, _YP) - value) > 1e-6

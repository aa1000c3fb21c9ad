import torch
from torch import nn

X = torch.randn(200, 4, device=DEVICE)
# Noisy labels, so no model scores 1.0 and an accuracy typed in cannot match by luck.
y = (X[:, 0] + X[:, 1] + 0.7 * torch.randn(200, device=DEVICE) > 0).long()
model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 2)).to(DEVICE)

# a short training run, so that accuracy means something
_opt = torch.optim.Adam(model.parameters(), lr=0.05)
for _ in range(40):
    _opt.zero_grad()
    nn.functional.cross_entropy(model(X), y).backward()
    _opt.step()
model.train()


def what_evaluate_does(evaluate, start_in_train=True):
    """Runs evaluate on the model and records, at every forward pass, the mode and autograd state."""
    model.train(start_in_train)
    seen = []

    def record(module, inputs, output):
        seen.append((any(m.training for m in module.modules()), output.requires_grad))

    handle = model.register_forward_hook(record)
    try:
        evaluate(model, X, y)
    finally:
        handle.remove()
    # None when evaluate never ran the model
    report = {
        "dropout active during a forward": any(t for t, _ in seen) if seen else None,
        "graph built during a forward": any(g for _, g in seen) if seen else None,
        "training flag afterwards": model.training,
        "every module's training flag afterwards": [m.training for m in model.modules()],
    }
    model.train()
    return report


def _report(evaluate):
    try:
        return what_evaluate_does(evaluate)
    except Exception:
        return {}


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

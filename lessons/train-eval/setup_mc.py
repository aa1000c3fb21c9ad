import torch
from torch import nn

X = torch.randn(300, 4, device=DEVICE)
y = (X[:, 0] - X[:, 2] > 0).long()
model = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 2)).to(DEVICE)
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


def graphs_built(fn):
    """How many of fn's forward passes recorded an autograd graph (a grad_fn on the output)."""
    recorded = []
    handle = model.register_forward_hook(lambda module, args, out: recorded.append(out.grad_fn is not None))
    try:
        fn(model, x, 5)
    finally:
        handle.remove()
        model.eval()
    return sum(recorded)

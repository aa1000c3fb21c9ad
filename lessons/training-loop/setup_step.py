import torch
from torch import nn

# three blobs of 20 points in 2-D, labelled 0, 1, 2
centers = torch.tensor([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
y = torch.arange(3).repeat_interleave(20)
X = centers[y] + 0.6 * torch.randn(60, 2)
X, y = X.to(DEVICE), y.to(DEVICE)

model = nn.Linear(2, 3).to(DEVICE)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
loss_fn = nn.CrossEntropyLoss()


def _fresh(lr):
    torch.manual_seed(1)
    m = nn.Linear(2, 3).to(DEVICE)
    return m, torch.optim.SGD(m.parameters(), lr=lr)


def _stepped_without_gradients(step):
    # the step computed a loss, yet the weights did not move
    m, o = _fresh(0.5)
    before = m.weight.detach().clone()
    returned = step(m, o, loss_fn, X, y)
    return returned is not None and torch.equal(before, m.weight.detach())


def _ignores_its_model(step):
    # the same loss back for two different models (at lr 0 neither moves): the step
    # computes its loss with some other model, e.g. the global one
    m, o = _fresh(0.0)
    other, other_opt = _fresh(0.0)
    with torch.no_grad():
        other.weight.zero_()
        other.bias.zero_()
    first, second = step(m, o, loss_fn, X, y), step(other, other_opt, loss_fn, X, y)
    numbers = all(isinstance(v, (float, torch.Tensor)) and torch.as_tensor(v).numel() == 1 for v in (first, second))
    return numbers and float(first) == float(second)


def _weights_after_three_calls(step):
    # what the optimizer's steps did to a fresh model: a step that never calls opt.step()
    # (or steps another model) leaves these where they started
    m, o = _fresh(0.5)
    for _ in range(3):
        step(m, o, loss_fn, X, y)
    return m.weight.detach().clone()


def _returned(step):
    m, o = _fresh(0.5)
    return step(m, o, loss_fn, X, y)

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


def weight_after_two_calls_at_lr0(step):
    # lr = 0: the weights never move, so a cleared .grad is the same after each call
    m, o = _fresh(0.0)
    step(m, o, loss_fn, X, y)
    step(m, o, loss_fn, X, y)
    return m.weight


def _stepped_without_gradients(step):
    # the step computed a loss, yet the weights did not move
    m, o = _fresh(0.5)
    before = m.weight.detach().clone()
    returned = step(m, o, loss_fn, X, y)
    return returned is not None and torch.equal(before, m.weight.detach())


def _returned(step):
    m, o = _fresh(0.5)
    return step(m, o, loss_fn, X, y)

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(1, 1)
        # how many training examples the model has seen: state, but not trained
        self.register_buffer("seen", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        return self.lin(x)


model = Net().to(DEVICE)
with torch.no_grad():
    model.lin.weight.fill_(-0.5)
    model.lin.bias.fill_(0.3)

x_train = torch.linspace(-1, 1, 16, device=DEVICE)[:, None]
y_train = 2.0 * x_train
x_val = x_train.clone()
y_val = 1.2 * x_val          # validation data disagree a little: the model overshoots
opt = torch.optim.SGD(model.parameters(), lr=0.5)


def train_one_epoch(model):
    opt.zero_grad()
    F.mse_loss(model(x_train), y_train).backward()
    opt.step()
    model.seen += len(x_train)


def val_loss(model):
    with torch.no_grad():
        return F.mse_loss(model(x_val), y_val).item()


def shares_memory_with_model(state):
    if not isinstance(state, dict):
        return False
    live = model.state_dict()
    return any(
        isinstance(v, torch.Tensor) and k in live and v.data_ptr() == live[k].data_ptr()
        for k, v in state.items()
    )


def _simulate():
    import copy
    global opt
    saved_opt, twin = opt, copy.deepcopy(model)
    opt = torch.optim.SGD(twin.parameters(), lr=0.5)
    best = (float("inf"), None)
    for _ in range(8):
        train_one_epoch(twin)
        loss = val_loss(twin)
        if loss < best[0]:
            best = (loss, twin.lin.weight.item())
    opt = saved_opt
    return best[1]


_best_weight = _simulate()


def _best_epoch_is_last_with_earlier_state(best_epoch):
    # best_epoch names the last epoch, yet model holds an earlier epoch's state, the best one's
    return (
        best_epoch == 8
        and int(model.seen) < 8 * len(x_train)
        and abs(model.lin.weight.item() - _best_weight) < 1e-5
    )

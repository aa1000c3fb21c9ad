import torch
from torch import nn

# (rows, model.training, grad enabled, a dropout active) for every forward pass: the setup's
# own record, which the checks read
_forward_log = []
# (rows, grad enabled, the training flag of every module of the model, model first) for every
# forward pass: a flag set by hand on model alone leaves its submodules in their old mode
_module_modes_log = []


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 2))

    def forward(self, x):
        dropping = any(m.training and m.p > 0 for m in self.body if isinstance(m, nn.Dropout))
        _forward_log.append((len(x), self.training, torch.is_grad_enabled(), dropping))
        _module_modes_log.append((len(x), torch.is_grad_enabled(), tuple(m.training for m in self.modules())))
        return self.body(x)


X_train = torch.randn(96, 4, device=DEVICE)
y_train = (X_train[:, 0] + 0.5 * X_train[:, 1] > 0).long()
X_val = torch.randn(50, 4, device=DEVICE)
y_val = (X_val[:, 0] + 0.5 * X_val[:, 1] > 0).long()
batches = list(zip(X_train.split(32), y_train.split(32)))


_NET = Net  # the class whose passes are recorded, whatever the name Net is bound to later


def _of_setup_net(model):
    # the checks' helper: only the setup's Net records passes, so only its models can be checked
    return type(model) is _NET


def validation_passes_in_train_mode():
    return sum(1 for rows, training, grad, _ in _forward_log if rows == len(X_val) and training)


def training_passes_in_eval_mode():
    return sum(1 for rows, training, grad, _ in _forward_log if rows != len(X_val) and grad and not training)


def validation_passes_with_graph():
    return sum(1 for rows, training, grad, _ in _forward_log if rows == len(X_val) and grad)


def _validation_modes():
    # model.training of every pass over X_val, in order: the epochs' validations, then acc_again
    return [training for rows, training, grad, _ in _forward_log if rows == len(X_val)]


def _validation_dropout():
    # whether a dropout with p above 0 was in training mode, for every pass over X_val
    return [dropping for rows, training, grad, dropping in _forward_log if rows == len(X_val)]


def training_passes_with_a_module_in_eval_mode():
    """How many training passes (autograd on, not over X_val) ran with some module of the model,
    model itself or a submodule, in eval mode."""
    return sum(1 for rows, grad, modes in _module_modes_log if rows != len(X_val) and grad and not all(modes))


def _submodules_left_in_eval():
    # for the feedback: a training pass where model.training was True but a submodule's flag False
    return any(rows != len(X_val) and grad and modes[0] and not all(modes) for rows, grad, modes in _module_modes_log)

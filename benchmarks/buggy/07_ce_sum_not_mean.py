# exercise: training-loop/cross-entropy-contract
# bug: by-hand loss sums where CrossEntropyLoss averages
# named-by: sum where a mean|4 times
import torch
import torch.nn.functional as F
from torch import nn

targets = torch.tensor(labels_csv, device=DEVICE).long()
loss = nn.CrossEntropyLoss()(logits, targets)
loss_by_hand = -F.log_softmax(logits, dim=1)[torch.arange(4, device=DEVICE), targets].sum()

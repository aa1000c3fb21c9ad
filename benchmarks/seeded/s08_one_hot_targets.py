# exercise: training-loop/cross-entropy-contract
# bug: the targets are one-hot vectors, not class indices
# source: "class indices or one-hot vectors?"
# cues: one.hot|class ind|int64|long
import torch
import torch.nn.functional as F
from torch import nn

targets = F.one_hot(torch.tensor(labels_csv, device=DEVICE).long(), num_classes=3).float()
loss = nn.CrossEntropyLoss()(logits, targets)
log_probs = F.log_softmax(logits, dim=1)
loss_by_hand = -(log_probs * targets).sum(dim=1).mean()

# exercise: training-loop/cross-entropy-contract
# bug: cross-entropy is given probabilities (softmax applied first) instead of logits
# source: "Does this loss function expect logits or probabilities?"
# cues: softmax|probabilit|raw (scores|logits)
import torch
import torch.nn.functional as F
from torch import nn

targets = torch.tensor(labels_csv, device=DEVICE).long()
probs = logits.softmax(dim=1)
loss = nn.CrossEntropyLoss()(probs, targets)
log_probs = F.log_softmax(logits, dim=1)
loss_by_hand = -log_probs[torch.arange(len(targets), device=DEVICE), targets].mean()

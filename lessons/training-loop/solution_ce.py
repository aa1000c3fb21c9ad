import torch
import torch.nn.functional as F
from torch import nn

targets = torch.tensor(labels_csv, device=DEVICE).long()
loss = nn.CrossEntropyLoss()(logits, targets)
log_probs = F.log_softmax(logits, dim=1)
loss_by_hand = -log_probs[torch.arange(len(targets), device=DEVICE), targets].mean()

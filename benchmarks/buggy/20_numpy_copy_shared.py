# exercise: numpy-bridge/share-or-copy
# bug: shared is a copy (torch.tensor copies)
# named-by: from_numpy|share
import torch

shared = torch.tensor(arr)
features = torch.tensor(arr, dtype=torch.float32, device=DEVICE)
arr[0] = 42.0

# exercise: numpy-bridge/share-or-copy
# bug: features shares memory with arr (as_tensor makes no copy)
# named-by: shares|copy
import torch

shared = torch.from_numpy(arr)
features = torch.as_tensor(arr).to(DEVICE)
arr[0] = 42.0

import torch

f16_max = torch.finfo(torch.float16).max
bf16_max = torch.finfo(torch.bfloat16).max

x16 = values.to(torch.float16)
xbf = values.to(torch.bfloat16)

safe_dtype = torch.bfloat16   # keeps all three finite and non-zero

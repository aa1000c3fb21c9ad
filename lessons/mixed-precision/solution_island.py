import torch


def embed_and_compare(encoder, x):
    with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
        emb = encoder(x)
        # a float32 island: autocast would lower this matmul too, whatever its inputs' dtype
        with torch.autocast(device_type=x.device.type, enabled=False):
            e = emb.float()  # a disabled region casts nothing itself
            sim = e @ e.T
    return emb, sim


emb, sim = embed_and_compare(encoder, x)

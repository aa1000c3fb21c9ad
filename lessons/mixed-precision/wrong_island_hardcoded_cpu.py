# WRONG: autocast device_type hard-coded to "cpu" instead of x.device.type; on a CUDA device the encoder would run in float32
import torch


def embed_and_compare(encoder, x):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        emb = encoder(x)
    e = emb.float()
    sim = e @ e.T
    return emb, sim


emb, sim = embed_and_compare(encoder, x)

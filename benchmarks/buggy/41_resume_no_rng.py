# exercise: checkpoints/resumable
# bug: the RNG state is not saved/restored, so the resumed run draws different batches
# named-by: rng|get_rng_state|random
import torch


def make_checkpoint(model, opt, sched, epoch):
    return {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "epoch": epoch,
    }


def restore(checkpoint, model, opt, sched):
    model.load_state_dict(checkpoint["model"])
    opt.load_state_dict(checkpoint["optimizer"])
    sched.load_state_dict(checkpoint["scheduler"])
    return checkpoint["epoch"] + 1

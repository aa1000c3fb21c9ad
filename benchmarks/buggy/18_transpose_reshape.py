# exercise: views-strides/transpose-view
# bug: reshape where a transpose was meant
# named-by: transpose|reshape
t = a.reshape(3, 2)
t[0, 1] = 99

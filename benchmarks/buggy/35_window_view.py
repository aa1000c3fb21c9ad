# exercise: views-strides/clone-window
# bug: a slice is a view: zeroing the signal zeroes the window too
# named-by: clone|view|shares
window = signal[2:6]
signal.zero_()

# WRONG: writes through a NEW transpose a.T (a fresh view of a), not through t as asked
t = a.t()
a.T[0, 1] = 99

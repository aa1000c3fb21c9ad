# The judge's alone (the learner's kernel never runs this): the output the checks compare with.


def true_hooked_output():
    return _fresh()(_X * _S)

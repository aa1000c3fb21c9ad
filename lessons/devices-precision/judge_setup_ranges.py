# The judge's alone (the learner's kernel never runs this): the values this world's setup
# gave, to tell code that converts them from code that binds values of its own.
_given_values = values.clone()

# exercise: checkpoints/best-state
# bug: keeps the best state but never loads it back into the model
# named-by: load_state_dict
import copy

best_loss = float("inf")
best_state = None
best_epoch = None
for epoch in range(1, 9):
    train_one_epoch(model)
    loss = val_loss(model)
    if loss < best_loss:
        best_loss, best_epoch = loss, epoch
        best_state = copy.deepcopy(model.state_dict())

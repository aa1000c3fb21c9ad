# exercise: checkpoints/best-state
# bug: keeps a reference to the live state_dict (no copy), so "best" follows training
# named-by: copy|shares|deepcopy|clone
best_loss = float("inf")
best_state = None
best_epoch = None
for epoch in range(1, 9):
    train_one_epoch(model)
    loss = val_loss(model)
    if loss < best_loss:
        best_loss, best_epoch = loss, epoch
        best_state = model.state_dict()

model.load_state_dict(best_state)

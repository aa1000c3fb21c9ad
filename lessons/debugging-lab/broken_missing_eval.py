import torch
import torch.nn.functional as F

model = Net().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=0.01)

val_accs = []
dropout_on = []   # was the model in training mode when each epoch's training began?
for epoch in range(6):
    model.train()
    dropout_on.append(model.training)
    for xb, yb in batches:
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
    with torch.no_grad():
        acc = (model(X_val).argmax(dim=1) == y_val).float().mean().item()
    val_accs.append(acc)

# the same final weights, evaluated once more
with torch.no_grad():
    acc_again = (model(X_val).argmax(dim=1) == y_val).float().mean().item()
print("training mode per epoch:     ", dropout_on)
print("validation accuracy per epoch:", val_accs)
print("final weights, evaluated again:", acc_again)

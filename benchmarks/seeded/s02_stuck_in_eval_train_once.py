# exercise: debugging-lab/stuck-in-eval
# bug: model.train() is called once before the loop, never again after validation
# source: "Missing model.train() after a validation pass leaves dropout and normalisation in inference behaviour"
# cues: \btrain\(|training mode|\.training
import torch
import torch.nn.functional as F

model = Net().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=0.01)

val_accs = []
dropout_on = []
model.train()
for epoch in range(6):
    dropout_on.append(model.training)
    for xb, yb in batches:
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(X_val).argmax(dim=1) == y_val).float().mean().item()
    val_accs.append(acc)

with torch.no_grad():
    acc_again = (model(X_val).argmax(dim=1) == y_val).float().mean().item()

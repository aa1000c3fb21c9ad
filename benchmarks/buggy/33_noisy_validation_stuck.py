# exercise: debugging-lab/stuck-in-eval
# bug: model.train() never called again after the first validation
# named-by: train\(\)
import torch
import torch.nn.functional as F

model = Net().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=0.01)

val_accs = []
model.train()
for epoch in range(6):
    for xb, yb in batches:
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(X_val).argmax(dim=1) == y_val).float().mean().item()
    val_accs.append(acc)

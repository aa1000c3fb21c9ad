# exercise: debugging-lab/noisy-validation
# bug: validation runs in training mode (model.eval() never called), so dropout is on
# source: "Missing model.eval() before validation makes the metric stochastic"
# cues: eval\(\)|dropout|train(ing)? mode
import torch
import torch.nn.functional as F

model = Net().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=0.01)

val_accs = []
dropout_on = []
for epoch in range(6):
    model.train()
    dropout_on.append(model.training)
    for xb, yb in batches:
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
    with torch.no_grad():
        correct = model(X_val).argmax(dim=1) == y_val
    val_accs.append(correct.float().mean().item())

with torch.no_grad():
    acc_again = (model(X_val).argmax(dim=1) == y_val).float().mean().item()

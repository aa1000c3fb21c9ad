import copy

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class DigitsMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = Standardize(64)
        self.net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.net(self.norm(x))


torch.manual_seed(0)
model = DigitsMLP().to(DEVICE)
model.norm.fit(X_train)                     # training rows only

loader = DataLoader(TensorDataset(X_train, y_train), batch_size=64, shuffle=True,
                    generator=torch.Generator().manual_seed(0), num_workers=0)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()

best_val_acc, best_state = -1.0, None
for epoch in range(30):
    model.train()
    for xb, yb in loader:
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        val_acc = (model(X_val).argmax(dim=1) == y_val).float().mean().item()
    if val_acc > best_val_acc:
        best_val_acc = val_acc
        best_state = dict(model.state_dict())

model.load_state_dict(best_state)
model.eval()

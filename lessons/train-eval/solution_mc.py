import torch


def mc_predict(model, x, n):
    was_training = model.training
    model.train()                 # dropout on
    with torch.no_grad():         # no graphs
        samples = [model(x).softmax(dim=1) for _ in range(n)]
    model.train(was_training)
    return torch.stack(samples).mean(dim=0)


probs = mc_predict(model, x, 400)

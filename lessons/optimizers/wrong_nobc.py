def adamw_step(p, grad, m, v, t, lr, wd, beta1=0.9, beta2=0.999, eps=1e-8):
    p = p * (1 - lr * wd)  # decoupled: the decay shrinks the weights, it never enters m or v
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat = m
    v_hat = v
    p = p - lr * m_hat / (v_hat.sqrt() + eps)
    return p, m, v

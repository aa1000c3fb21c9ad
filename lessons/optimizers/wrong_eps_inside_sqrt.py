# WRONG: eps goes inside the square root (sqrt(v_hat + eps)), not added after it as AdamW does; differs whenever gradients are small (~1e-4 and below)
def adamw_step(p, grad, m, v, t, lr, wd, beta1=0.9, beta2=0.999, eps=1e-8):
    p = p * (1 - lr * wd)
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat = m / (1 - beta1**t)
    v_hat = v / (1 - beta2**t)
    p = p - lr * m_hat / (v_hat + eps).sqrt()
    return p, m, v

"""Ways into pagedir from other frameworks: each exports a model to linalg on tensors and raises it to rock kernels.

* :mod:`pagedir.frontends.torch`: a PyTorch function or ``nn.Module`` with example inputs, through
  torch-mlir (``pip install 'pagedir[torch]'``).
"""

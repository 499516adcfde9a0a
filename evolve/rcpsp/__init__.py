"""Resource-constrained project scheduling (RCPSP) on PSPLIB."""

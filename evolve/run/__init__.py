"""evolve/run"""

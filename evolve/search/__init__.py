"""evolve/search"""
